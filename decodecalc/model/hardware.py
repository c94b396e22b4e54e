"""Accelerators: what decode needs to know about them."""

from __future__ import annotations

from decodecalc.record import record


@record
class GpuSpec:
    """One accelerator (per device, not per board or system).

    Bandwidth is the vendor's peak in bytes/s (decimal units, as datasheets quote it);
    memory is the capacity the device reports to software, in bytes (an "80GB" H100 exposes
    81,559 MiB, 79.65 GiB, in nvidia-smi).
    """

    id: str
    name: str
    vendor: str
    bandwidth_bytes_per_s: int
    memory_bytes: int
    memory_kind: str
    aliases: tuple[str, ...] = ()
    notes: str = ""
    source: str = ""
    flops_per_s: tuple[tuple[str, int], ...] = ()
    """Dense peak FLOP/s per matmul class (bf16, fp8, fp4), from the datasheet."""
    flops_source: str = ""
    link: str | None = None
    """The interconnect tensor parallelism uses by default (a link preset id)."""
    sustained_bandwidth_bytes_per_s: int | None = None
    """Bandwidth a public benchmark measured, for --efficiency sustained."""
    sustained_source: str = ""
    family: str = ""
    """The GPU family engine profiles are fitted per (empty: from vendor and memory kind)."""
    power_w: float | None = None
    """Board power (TDP) in watts from the datasheet: an upper bound on what decode draws."""
    power_source: str = ""
    announced: str = ""
    """Where an announced, not yet shipping part was announced (empty: in service): its
    figures are the vendor's announcement, not a datasheet of a product one can measure."""
    memory_nominal: bool = False
    """The capacity is the nominal figure (the preset's memory_source says "nominal"), not
    one the device was seen to report: on unified memory, the whole RAM, of which the OS
    gives the GPU only part by default."""

    def peak_flops(self, matmul: str) -> tuple[str, int] | None:
        """The rate for a matmul class, falling back to a wider class the chip has
        (FP4 runs at FP8 or BF16 speed on a chip without FP4); None when unknown."""
        rates = dict(self.flops_per_s)
        for cls in FALLBACK.get(matmul, (matmul,)):
            if cls in rates:
                return cls, rates[cls]
        return None


FALLBACK = {
    "fp4": ("fp4", "fp8", "bf16"),
    "fp8": ("fp8", "bf16"),
    "bf16": ("bf16",),
    "fp32": ("fp32",),
}


@record
class Link:
    """An interconnect between GPUs: the one a tensor-parallel all-reduce crosses within a
    node, or a network between nodes (InfiniBand, RoCE) that larger groups and pipeline
    stages cross."""

    id: str
    name: str
    bandwidth_bytes_per_s: int
    """Per GPU, one direction."""
    latency_s: float
    """Per all-reduce of a small message."""
    source: str = ""
    aliases: tuple[str, ...] = ()
    gpus: int | None = None
    """GPUs one domain of this link joins (8 for an HGX board's NVSwitch, 72 for a GB200
    NVL72 rack): a group larger than this crosses the network between nodes. None: a
    network itself, joining any number."""

    def slowest_hop(self, network: Link) -> Link:
        """What a ring over this link within nodes and ``network`` between them runs at:
        each step waits for its slowest hop, so the lower bandwidth and the higher latency
        of the two (PCIe GPUs on InfiniBand: PCIe's 32 GB/s, the network's 20 us). The
        network itself where it is the slower in both."""
        if (
            network.bandwidth_bytes_per_s <= self.bandwidth_bytes_per_s
            and network.latency_s >= self.latency_s
        ):
            return network
        return Link(
            id=network.id,
            name=f"{self.name} within nodes and {network.name} between them",
            bandwidth_bytes_per_s=min(self.bandwidth_bytes_per_s, network.bandwidth_bytes_per_s),
            latency_s=max(self.latency_s, network.latency_s),
            source=network.source,
        )
