"""Engine profiles: what a real engine's step costs beyond the roofline, per GPU family
(docs/physics.md section 7), and the scheduler defaults it serves with.

An engine's parameters differ by GPU family (kernels are written per vendor and class of
chip), so a profile holds one set per family it has data for; engine/select.py says what
stands in on a family it has none for. The step they enter is step/engine_terms.py."""

from __future__ import annotations

import enum
import functools
import re
from collections.abc import Callable
from typing import TYPE_CHECKING

from decodecalc.model.hardware import GpuSpec
from decodecalc.record import record
from decodecalc.units import GIB, MIB

if TYPE_CHECKING:
    from decodecalc.model.hardware import GpuSpec
    from decodecalc.model.kernels import AllReduceRates

GPU_FAMILIES = ("nvidia-datacenter", "nvidia-consumer", "amd-instinct", "apple", "other")
"""GPU families an engine's kernels behave alike on."""

KV_READS = ("once", "per-query-head")

FIXED_COSTS = ("per_step", "per_layer", "per_moe_layer", "per_sequence")
"""The fixed costs of a step, each an EngineParams field with ``_s`` added: times the
engine's kernels and runtime spend beyond the bytes and FLOPs (step/engine_terms.py)."""

MMA_EFFICIENCY = 0.6
"""e_mma where neither the points nor the GPU's kernel tables tell it: a prior, not a
measurement. It matters only once a GEMM is compute-bound (hundreds of rows, or a grouped
GEMM's padded rows), and is fitted wherever the points are."""

TILE_ROWS = 16
"""The block M of the grouped MoE kernels at decode batches: vLLM's and SGLang's fused_moe
default configuration takes BLOCK_SIZE_M 16 while the tokens number no more than the
experts (get_default_config, `M <= E`)."""


@functools.cache  # a query sorts and compares a dozen lines some fifty times
def release_order(line: str) -> tuple[int, ...]:
    """A release line as numbers, oldest first: '0.7' < '0.10' < '0.11', '2023-12' <
    '2024-05' (one engine's lines are all of one kind).

    >>> release_order("0.10") > release_order("0.7")
    True
    """
    return tuple(int(n) for n in re.findall(r"\d+", line))


def gpu_family(gpu: GpuSpec | None) -> str:
    """The family of a GPU: its preset's own ``family``, else from vendor and memory
    (NVIDIA with HBM is datacenter, other NVIDIA memory consumer or desktop)."""
    if gpu is None:
        return "other"
    if gpu.family:
        return gpu.family
    vendor = gpu.vendor.lower()
    if vendor == "nvidia":
        return (
            "nvidia-datacenter" if gpu.memory_kind.upper().startswith("HBM") else "nvidia-consumer"
        )
    if vendor == "amd":
        return "amd-instinct"
    if vendor == "apple":
        return "apple"
    return "other"


@record
class EngineParams:
    """One engine on one GPU family."""

    weight_efficiency: float
    """e_w: share of peak bandwidth the weight GEMVs stream at."""
    kv_efficiency: float
    """e_kv: share of peak bandwidth attention reads the KV cache (and state) at."""
    per_layer_s: float = 0.0
    per_step_s: float = 0.0
    allreduce_latency_s: float | None = None
    """Per all-reduce call; None: the link preset's."""
    kv_read: str = "once"
    """'once', or 'per-query-head' for kernels that re-read a KV head for each query head."""
    band: tuple[float, float] = (1.0, 1.0)
    """Expected x low and x high for a scenario inside the fitted range (``range``): the
    conformal interval of the left-out errors of predictions made inside a fit's range
    (calibration/validation.py outside_bands); outside it, ``range.outside_band``."""
    points: int = 0
    """Measured points the parameters were fitted on (0: carried over, not fitted)."""
    per_moe_layer_s: float = 0.0
    """c_moe: per MoE layer per step."""
    per_sequence_s: float = 0.0
    """c_seq: per sequence in the batch and per pass through a layer (sequence_passes), as
    profiles and saved fits from before the running costs below hold it; no longer fitted
    (calibration/engine_fit.py fits the running costs in its place)."""
    per_ffn_pass_s: float = 0.0
    """c_ffn: per token feed-forward pass (a dense layer's MLP once, an MoE layer's once per
    routed expert: the rows, gathers and scatters of one token in one GEMM group;
    step/running.py). Fitted from an engine's own batch sweeps, in the fitted sets those
    at concurrency up to 128-256: validation/points.yaml's dstack DeepSeek-R1 series on 8 x
    MI300X (SGLang 0.4.2, vLLM 0.7.3), its vLLM 0.10 Llama-3.1 70B/405B series on MI300X,
    and the fitted share of validation/points-2026-thin-regimes.yaml (ATOM and vLLM 0.19
    on MI355X, concurrency 4-256)."""
    per_running_s: float = 0.0
    """c_run: per running request per step, whatever the model: the scheduler's and the
    sampler's time for one more request (step/running.py); from the same points, where
    models of different feed-forward pass counts are swept."""
    per_mixer_sequence_s: float = 0.0
    """c_mixer: per sequence per layer's token mixer, attention or recurrent (the work of
    one more sequence beyond reading its cache or state); from the same points, where
    models of different layer counts are swept (all of them attention: step/running.py
    says why it is charged to recurrent layers too)."""
    per_state_sequence_s: float = 0.0
    """c_state: per sequence per recurrent or linear-attention layer beyond c_mixer (its
    state updated in place); fitted only where a model with such layers is measured at
    several batches (none of the fitted points is: hybrid models stay out of sample, so it
    is 0 in every shipped profile)."""
    prefill_efficiency: float = 1.0
    """e_p: share of peak FLOP/s a server's prefill chunks compute at (answers/serving.py);
    1 where no time to first token was measured for the engine or its GPU family."""
    per_request_s: float = 0.0
    """c_req: per request, outside the steps (tokenising, scheduling, the API server): in
    a server's TTFT and end-to-end latency."""
    mma_efficiency: float = MMA_EFFICIENCY
    """e_mma: share of the GPU's peak FLOP/s a weight GEMM multiplies at once it is
    compute-bound (a large batch, or a grouped GEMM's padded rows); step/step.py
    weight_ops prices each tensor group as the slower of streaming and multiplying."""
    tile_rows: int = TILE_ROWS
    """Rows a grouped expert GEMM multiplies at least for each expert it runs (the kernel's
    block M): an expert sent 3 tokens is computed as this many rows."""
    mma_fitted: bool = False
    """Whether e_mma came from measured points; if not, a GPU's kernel tables replace it
    (loading/kernels.py with_kernel_rates)."""
    grouped_mma_efficiency: float | None = None
    """e_mma of the grouped expert GEMMs where the GPU's kernel tables give their own
    (None: mma_efficiency)."""
    kernel_source: str = ""
    """The kernel tables e_mma and the tile were taken from, if any (explain says so)."""
    range: FitRange | None = None
    """What the parameters were fitted on, and the band outside it (None: not recorded)."""
    transferred: str = ""
    """Where parameters of a release line on a family it has no points on came from, in
    words (engine/transfer.py); empty: fitted on the family's own points."""
    moe_factor: float = 1.0
    """Of transferred parameters: how much slower an MoE model's step runs than these
    say, which hold the vendor's factor for dense models (engine/transfer.py for_kind)."""
    lent: tuple[str, ...] = ()
    """The fixed costs (FIXED_COSTS' names) the parameters' own points could not identify,
    taken from one fit over every engine's points on their GPU family
    (calibration/validation.py family_prior): that family's runtime,
    not this engine's, as the presets record it for their reader. A transfer prices them
    as the engine's own (engine/transfer.py fixed_costs_across: dropped where the target's
    kernel fixed time is unknown, they priced Apple's kernels as free)."""
    allreduce_rates: tuple[AllReduceRates, ...] = ()
    """The engine's own all-reduce measured per tensor-parallel size (the GPU's kernel
    tables, loading/kernels.py with_kernel_rates): where they hold the group's size, they
    price tensor parallelism's all-reduces instead of allreduce_latency_s and the link."""


@record
class FitRange:
    """The setups a parameter set was fitted on: a scenario beyond them is extrapolated
    and takes ``outside_band`` (engine/select.py: extrapolated, widened).

    ``outside_band`` is the conformal band of every left-out residual on the family, each
    way of leaving out on its own and the widest taken, and of those that lay outside the
    range of the parameters that predicted them (calibration/validation.py:
    outside_bands), never narrower than the parameters' own band, which holds only the
    residuals predicted inside a range."""

    params_min: int
    """Model parameters, the smallest and largest model fitted."""
    params_max: int
    kinds: tuple[str, ...]
    """'dense', 'moe' or both."""
    batch_min: int
    batch_max: int
    context_min: int
    context_max: int
    gpus: tuple[str, ...]
    """GPU preset ids."""
    lines: tuple[str, ...] = ()
    """Release lines of the points ('0.10'); empty where none says its line."""
    outside_band: tuple[float, float] = (1.0, 1.0)
    sizes: tuple[int, ...] = ()
    """Each fitted model's parameters, smallest first: a model is inside the range when
    it lies within engine/select.py SIZE_SLACK of one of them, not merely between the
    smallest and the largest (a fit on 70B and 671B models has seen no 405B step; empty:
    not recorded, the pair above decides)."""


class EngineKind(enum.Enum):
    """How an engine's parameters were chosen (engine/choice.py choose_engine)."""

    ROOFLINE = "roofline"
    """Physics alone: no parameters, the figures are the bound."""
    PROFILE = "profile"
    """One profile fitted on the GPU's family."""
    TYPICAL = "typical"
    """The band across every profile measured on the family."""
    FALLBACK = "fallback"
    """A profile without data on the family, standing with those that have."""


@record
class Engine:
    """The engine a scenario's expected figures are for: a profile's parameters for the
    scenario's GPU family, several profiles' (``typical``, or a ``fallback`` where the
    profile has no data on the family), or none (ROOFLINE, the only kind without
    parameters). Every scenario carries one."""

    id: str
    params: tuple[EngineParams, ...] = ()
    family: str = "other"
    names: tuple[str, ...] = ()
    """The profile each of ``params`` comes from, for people reading a typical band."""
    serving: ServingDefaults | None = None
    """The profile's scheduler defaults (step/kv_pool.py); None: vLLM's."""
    kind: EngineKind = EngineKind.PROFILE
    line: str | None = None
    """The release line the parameters stand for (None: every line pooled, or none kept)."""

    def __post_init__(self) -> None:
        if (self.kind is EngineKind.ROOFLINE) == bool(self.params):
            raise ValueError(
                "the roofline has no engine parameters, and every other engine has some"
            )

    @property
    def is_roofline(self) -> bool:
        """Whether figures are the bound alone (no expected step)."""
        return self.kind is EngineKind.ROOFLINE


def roofline(family: str = "other", id: str = "roofline") -> Engine:
    """The engine of physics alone on a GPU family."""
    return Engine(id, (), family, kind=EngineKind.ROOFLINE)


ROOFLINE = roofline()
"""A scenario's engine where none is named through resolve (a Scenario built by hand)."""


@record
class ReleaseLine:
    """One release line of an engine ('0.5' for SGLang 0.5.x; 'YYYY-MM' for builds named by
    date): the versions and dates of its points, and its parameters on each GPU family
    where it has enough points of its own (validation/fit_engines.py)."""

    release: str
    versions: tuple[str, ...] = ()
    dates: tuple[str, ...] = ()
    """When the versions behind the points were released or built (YYYY-MM-DD or
    YYYY-MM), where the points' sources say."""
    families: tuple[tuple[str, EngineParams], ...] = ()
    points: int = 0
    """The line's points over every family (some may be too few to fit a family)."""


@record
class EngineProfile:
    """An engine preset: parameters per GPU family, with where they came from."""

    id: str
    name: str
    params_by_family: tuple[tuple[str, EngineParams], ...] = ()
    """(GPU family, parameters) fitted on every point of the engine, whatever its line: the
    line-less fallback. Read them as ``families`` or family(): a preset's are parsed on
    first use (``pending_families``); given ones take precedence."""
    versions: tuple[str, ...] = ()
    source: str = ""
    notes: str = ""
    aliases: tuple[str, ...] = ()
    serving: ServingDefaults | None = None
    """Scheduler defaults, each value sourced (the preset's hand-written ``serving:``)."""
    lines: tuple[ReleaseLine, ...] = ()
    """Release lines, oldest first (release_order); the last is the newest. Read them
    through release_lines(): a preset's are parsed on first use."""
    pending_lines: Callable[[], tuple[ReleaseLine, ...]] | None = None
    """A preset's lines, parsed when first asked for (loading/presets.py): a query on the
    default engine selection never asks, and parsing every profile's would cost it a
    tenth of its start-up."""
    line: str | None = None
    """The line this profile's ``families`` stand for (engine/select.py: at_line); None:
    every line pooled."""
    latest_dates: tuple[tuple[str, str], ...] | None = None
    """(GPU family, the latest date of its lines fitted there: 'YYYY-MM-DD' or 'YYYY-MM'),
    as a preset states them before its lines are parsed (loading/presets.py); None: not
    stated, read the lines (engine/select.py recent_on)."""
    pending_families: PendingFamilies | None = None
    """A preset's families, each parsed when first asked for (loading/presets.py): the
    default selection needs one family of every profile, and parsing them all cost a
    query 0.8 ms of the 19 it spends past importing Typer."""

    def __post_init__(self) -> None:
        if not self.params_by_family and self.pending_families is None:
            raise ValueError(f"engine profile {self.id!r} has parameters for no GPU family")

    def release_lines(self) -> tuple[ReleaseLine, ...]:
        """The release lines, oldest first (``lines``, or the preset's pending ones)."""
        return self.pending_lines() if self.pending_lines is not None else self.lines

    def family(self, name: str) -> EngineParams | None:
        """The parameters fitted on one GPU family (None: the profile has none there)."""
        pending = self.pending_families
        if self.params_by_family or pending is None:
            return dict(self.params_by_family).get(name)
        return pending.parse(name) if name in pending.names else None

    @property
    def family_names(self) -> tuple[str, ...]:
        """The GPU families the profile was fitted on, none of them parsed for it."""
        pending = self.pending_families
        if self.params_by_family or pending is None:
            return tuple(name for name, _ in self.params_by_family)
        return pending.names

    @property
    def families(self) -> tuple[tuple[str, EngineParams], ...]:
        """(GPU family, parameters) for every family the profile was fitted on."""
        pending = self.pending_families
        if self.params_by_family or pending is None:
            return self.params_by_family
        return tuple((name, pending.parse(name)) for name in pending.names)

    def params_for(self, family: str) -> tuple[EngineParams, str]:
        """The parameters for a family, and the family they were fitted on: the same one,
        or, without data for it, the family with the most points (the caller says so)."""
        own = self.family(family)
        if own is not None:
            return own, family
        fallback = max(self.families, key=lambda item: item[1].points)
        return fallback[1], fallback[0]


@record
class PendingFamilies:
    """A preset's GPU families, named when it is read and each parsed (and checked) on
    first use: ``parse`` keeps what it built, so every use sees one object."""

    names: tuple[str, ...]
    parse: Callable[[str], EngineParams]


CUDA_HIDDEN_BYTES = 450 * MIB
"""Memory nvidia-smi counts but CUDA never reports as the device's total, which is what
vLLM multiplies by the utilization: 79.19 GiB on an H100 80GB (nvidia-smi 81,559 MiB,
468 MiB more), 23.58 GiB on an RTX 3090 (24,576 MiB, 430 MiB more)."""


@record
class GpuRule:
    """Defaults an engine picks for large GPUs: vLLM gives GPUs of at least 70 GiB (A100s
    excepted, where a larger budget measured slower) a bigger chunked-prefill budget."""

    min_memory_bytes: int
    excluded: tuple[str, ...]
    """Words in a GPU's id or name that keep it on the base defaults ('a100')."""
    max_num_batched_tokens: int
    max_num_seqs: int

    def applies(self, gpu: GpuSpec) -> bool:
        words = f"{gpu.id} {gpu.name}".lower()
        visible = gpu.memory_bytes - CUDA_HIDDEN_BYTES
        return visible >= self.min_memory_bytes and not any(w in words for w in self.excluded)


@record
class ServingDefaults:
    """An engine's scheduler defaults as its source sets them (presets/engines ``serving:``)."""

    max_num_batched_tokens: int
    max_num_seqs: int
    block_size: int
    memory_utilization: float
    reserve_bytes: int
    """Per GPU: memory allocated outside PyTorch during the profile (cuBLAS, streams)."""
    tp_reserve_bytes: int
    """Per GPU, added when TP > 1: the all-reduce buffers (NCCL, custom all-reduce)."""
    source: str
    large_gpu: GpuRule | None = None


VLLM_DEFAULTS = ServingDefaults(
    max_num_batched_tokens=2048,
    max_num_seqs=256,
    block_size=16,
    memory_utilization=0.9,
    reserve_bytes=GIB // 4,
    tp_reserve_bytes=GIB * 185 // 100,
    source="vLLM 0.19.0 OpenAI-server defaults (vllm/engine/arg_utils.py get_batch_defaults)",
    large_gpu=GpuRule(70 * GIB, ("a100",), 8192, 1024),
)
"""Used when the scenario names no engine with a ``serving:`` block (the roofline, the
typical band): vLLM is the engine most deployments size their pool with."""
