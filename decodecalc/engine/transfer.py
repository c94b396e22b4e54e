"""A release line's parameters carried to a GPU family it has no points on (issue 28:
today's release by default): its operation rates transfer through the hardware's own
figures, then a vendor factor fitted on that vendor's newest points scales the step.

The efficiencies are shares of the GPU's own bandwidth and FLOP/s per format, so they
carry over as shares: within a vendor as they are, across vendors the streaming ones at
the share of bandwidth each vendor's kernel tables show its GEMMs reaching (a kernel
streaming at 0.8 of an H100's 3.35 TB/s is priced at 0.8 x 0.68 / 0.80 = 0.68 of an
MI355X's 8 TB/s: KERNEL_STREAM_SHARE). The fixed costs (per step, layer, MoE layer,
sequence) are kernels and runtime of the source vendor's stack: within a vendor they
carry as times, across
vendors they scale by the two vendors' kernel fixed times, and where one is unknown
(Apple, or a vendor nobody measured) they stay the source's times (fixed_costs_across);
the per-MoE-layer cost is the target's own fused MoE kernel's fixed time where its tables
hold one (KERNEL_MOE_FIXED_S). The all-reduce
latency a fit on the source found is the source's link and gives way to the target
link's preset (across, which any parameters standing in on another vendor's family go
through). What differs between vendors' kernels beyond that
is a factor, the median of measured / transferred over the vendor's points of the last
twelve months, one for dense models and one for MoE models, whose grouped-GEMM kernels are
the vendor's own code (validation/fit_engines.py: vendor_factors): efficiencies divided by
it, fixed costs multiplied by it, so the engine's step is that many times slower (faster
below 1)."""

from __future__ import annotations

from decodecalc.engine.profile import FIXED_COSTS, EngineParams
from decodecalc.record import record, replace


@record
class VendorFactor:
    """How much slower (above 1) an engine's step runs on ``family`` than its parameters
    fitted on ``source`` say, transferred through the hardware's figures."""

    family: str
    source: str
    factor: float
    """For dense models (every model where the MoE points are too few)."""
    band: tuple[float, float]
    """The conformal interval of measured / (transferred x factor) over the points."""
    points: int
    fitted_on: str
    """The points it was fitted on, in words ('vllm@0.10 on mi300x')."""
    moe_factor: float = 1.0
    """For MoE models, over ``factor``."""


def transferred(params: EngineParams, vendor: VendorFactor, engine: str, line: str) -> EngineParams:
    """``params`` (a line's, fitted on ``vendor.source``) as that line would run on
    ``vendor.family``: scaled by the vendor's factor, the band the wider of the
    parameters' own and the factor's, the link's all-reduce latency, no points of their
    own and no fitted range (every scenario there is a transfer, which a note says)."""
    moe = vendor.factor * vendor.moe_factor
    source, target = vendor_of(vendor.source), vendor_of(vendor.family)
    ratio = fixed_time_ratio(source, target)
    stream = stream_share_ratio(source, target)
    kernels = f", its streaming x{stream:.2f} (the kernels' share of bandwidth)" if stream else ""
    launches = f" and its fixed costs x{ratio:.2f} (the kernels' fixed times)" if ratio else ""
    if source != target and target in KERNEL_MOE_FIXED_S:
        launches += f", {KERNEL_MOE_FIXED_S[target] * 1e6:.1f} us per MoE layer (its MoE kernel's)"
    words = (
        f"{engine}@{line}'s {vendor.source} rates through the GPU's bandwidth and FLOP/s"
        f"{kernels}{launches}, "
        f"x{vendor.factor:.2f} for {vendor.family} dense models and x{moe:.2f} for MoE "
        f"models (medians of measured / transferred over {vendor.points} of the vendor's "
        f"points of the last 12 months: {vendor.fitted_on})"
    )
    return replace(
        scaled(across(params, vendor.source, vendor.family), vendor.factor),
        band=(min(params.band[0], vendor.band[0]), max(params.band[1], vendor.band[1])),
        points=0,
        mma_fitted=False,
        kernel_source="",
        range=None,
        transferred=words,
        moe_factor=vendor.moe_factor,
    )


def vendor_of(family: str) -> str:
    """The vendor of a GPU family ('nvidia' for both NVIDIA families): whose kernels,
    runtime and links the family's parameters were measured with."""
    return family.split("-", 1)[0]


def across(params: EngineParams, source: str, family: str) -> EngineParams:
    """Parameters fitted on ``source`` as they stand in on another vendor's ``family``
    with no factor (a fallback, or a vendor with no points to fit one): through that
    vendor's hardware figures. The efficiencies are shares of the target GPU's bandwidth
    and FLOP/s (a fitted e_mma too), the streaming ones (e_w, e_kv) at the share of its
    bandwidth the target vendor's GEMMs reach against the source's (stream_share_ratio:
    x0.85 from NVIDIA to AMD); what a fit on the source measured of the
    source's hardware and runtime goes: the fixed costs are the target's
    (fixed_costs_across), the all-reduce latency fitted there is the source's link
    (NVLink's 56 us a call in vLLM 0.11's H100 fit, where an MI300X's Infinity Fabric has
    its own preset), and rates read from the source GPU's kernel tables give way to the
    target's. Within one vendor they stay: the same kernels on the same links.
    Measured on validation/points.yaml with each vendor left out: the NVLink latency
    carried to MI300X made vLLM's Llama-3.1-70B at TP 8 1.7x too slow (160 calls x 56 us
    = 9 ms of a measured 8.4 ms step); docs/accuracy.md."""
    if vendor_of(source) == vendor_of(family):
        return params
    stream = stream_share_ratio(vendor_of(source), vendor_of(family)) or 1.0
    return replace(
        params,
        weight_efficiency=min(1.0, params.weight_efficiency * stream),
        kv_efficiency=min(1.0, params.kv_efficiency * stream),
        allreduce_latency_s=None,
        grouped_mma_efficiency=None,
        kernel_source="",
        **fixed_costs_across(params, vendor_of(source), vendor_of(family)),
    )


KERNEL_FIXED_S = {"nvidia": 6.53e-6, "amd": 7.21e-6}
"""One kernel's fixed time on a vendor's GPUs, like for like: the FP8 weight GEMM's (the one
format both vendors' kernel tables hold), its time at no bytes and no FLOPs in the rate
fitted to the tables. NVIDIA's from aiconfigurator's vLLM 0.24.0 tables on the H100 SXM
(presets/kernels/h100-sxm.yaml, vllm gemm fp8 ``fixed``), AMD's from ROCm/aiter's tuned
block-scaled FP8 GEMMs on the MI300X (presets/kernels/mi300x.yaml, gemm fp8-128x128
``fixed``); their grouped FP8 block-128 MoE GEMMs differ alike (40.79 and 43.03 us,
x1.05). The tables' ``launch`` figures (2.73 and 5.91 us) are not like for like: an
H100's smallest BF16 GEMM against aiter's smallest FP8 block-scaled one; through them,
NVIDIA's costs made vLLM's Llama-3.1 on MI300X at TP 8 1.25-1.65x too slow with AMD left
out (docs/accuracy.md). Apple's GPUs have no kernel tables: to and from them the fixed costs
keep the source's times (fixed_costs_across)."""


KERNEL_STREAM_SHARE = {"nvidia": 0.800, "amd": 0.680}
"""The share of a vendor's datasheet bandwidth its weight GEMMs stream at in decode, like for
like: the ``memory_efficiency`` of the same FP8 GEMM rows as KERNEL_FIXED_S (the H100 SXM's
vLLM block of aiconfigurator's tables: 0.800 of 3.35 TB/s; the MI300X's aiter block-scaled
FP8 GEMMs: 0.680 of 5.3 TB/s). An efficiency fitted on one vendor is a share of that
vendor's bandwidth its kernels reach; on the other vendor's GPUs the same engine's kernels
reach that vendor's share instead: x0.85 from NVIDIA to AMD, x1.18 back. Measured on
validation/points.yaml with each vendor left out (docs/accuracy.md): AMD's efficiencies
carried to NVIDIA GPUs as they were made small dense models 1.12-1.32x too slow there."""


def stream_share_ratio(source: str, target: str) -> float | None:
    """The target vendor's streaming share over the source vendor's (KERNEL_STREAM_SHARE),
    or None where either is not known."""
    if source not in KERNEL_STREAM_SHARE or target not in KERNEL_STREAM_SHARE:
        return None
    return KERNEL_STREAM_SHARE[target] / KERNEL_STREAM_SHARE[source]


def fixed_time_ratio(source: str, target: str) -> float | None:
    """The target vendor's kernel fixed time over the source vendor's (KERNEL_FIXED_S), or
    None where either is not known."""
    if source not in KERNEL_FIXED_S or target not in KERNEL_FIXED_S:
        return None
    return KERNEL_FIXED_S[target] / KERNEL_FIXED_S[source]


KERNEL_MOE_FIXED_S = {"nvidia": 40.79e-6, "amd": 43.03e-6}
"""One MoE layer's fixed time on a vendor's GPUs, like for like: the grouped FP8 block-128
MoE GEMM's time at no bytes and no FLOPs in the rate fitted to the kernel tables, the one
MoE format both vendors' tables hold. NVIDIA's from aiconfigurator's vLLM 0.24.0 tables on
the H100 SXM (presets/kernels/h100-sxm.yaml, vllm moe fp8-128x128 ``fixed``), AMD's from
ROCm/aiter e4048607a535's tuned fused-MoE configs on the MI300X (presets/kernels/mi300x.yaml,
moe fp8-128x128 ``fixed``, a8w8_blockscale_tuned_fmoe_*.csv). A step prices the expert
GEMMs' bytes and FLOPs at the engine's rates but not this time, so across vendors it
stands for the per-MoE-layer cost (fixed_costs_across). A fitted per-MoE-layer cost is
not a hardware figure but a release's stack (routing, permutation and grouped kernels each
vendor writes for itself): the shipped fits put vLLM 0.11's at 83 us on NVIDIA datacenter
GPUs and SGLang 0.5's at 8 us, vLLM's 2025 lines' at 595 us on the MI300X and vLLM 0.19's
at 45 us on the MI355X, where the tables' fixed times are 1.05x apart; carried across
vendors it made llama.cpp's MoE models on DGX Spark 1.9-2.1x too slow with NVIDIA left
out (docs/accuracy.md). What a vendor's MoE kernels lose beyond this is the vendor
factor's MoE part (transferred)."""


def fixed_costs_across(params: EngineParams, source: str, target: str) -> dict[str, float]:
    """The fixed costs (FIXED_COSTS, as EngineParams fields) of parameters fitted on the
    ``source`` vendor's GPUs as they stand on the ``target`` vendor's: each is kernels
    and runtime of the source vendor's stack. Where both vendors' kernel fixed times are
    known (KERNEL_FIXED_S), each cost is scaled by their ratio (the same kernels, each
    taking the target's fixed time: x1.10 from NVIDIA to AMD). Where one is not (Apple,
    or a vendor nobody measured), each cost, lent by the source family's pooled fit or
    the engine's own, stays the source's time: every GPU's kernels take a fixed time, and
    with no figure of the target's the source's is the nearest known (a public Metal
    microbenchmark runs a 155 kB mat-vec on an M3 Pro in 4.9-5.2 us all told, the order of
    an H100's 6.53 us: docs/accuracy.md). Dropping the lent costs there, as this once did,
    priced an Apple step as if its kernels were free: with Apple left out (points.yaml),
    llama.cpp on Apple GPUs ran 0.82 of the measured step at the median, 18.3% off, and
    0.88, 11.9%, with the costs kept. The per-MoE-layer cost, where the target's kernel
    tables hold its MoE kernel's fixed time (KERNEL_MOE_FIXED_S), is that time instead:
    the source's fitted cost is its own stack's MoE dispatch, no figure of the target's.
    Measured on validation/points.yaml with each vendor left out (docs/accuracy.md):
    carried as times, AMD's lent 1.39 ms per step and its 2025 MoE-layer costs slowed
    NVIDIA steps 1.15-3.3x."""
    ratio = fixed_time_ratio(source, target) or 1.0
    out = {}
    for cost in FIXED_COSTS:
        value: float = getattr(params, f"{cost}_s")
        moe = cost == "per_moe_layer" and target in KERNEL_MOE_FIXED_S
        out[f"{cost}_s"] = KERNEL_MOE_FIXED_S[target] if moe else value * ratio
    return out


def for_kind(params: EngineParams, kind: str) -> EngineParams:
    """Transferred parameters for a model of ``kind`` ('moe' or 'dense'): an MoE model's
    scaled by the vendor's MoE factor over the dense one they hold."""
    if kind != "moe" or params.moe_factor == 1:
        return params
    return replace(scaled(params, params.moe_factor), moe_factor=1.0)


def scaled(params: EngineParams, factor: float) -> EngineParams:
    """A step ``factor`` times slower: efficiencies / factor (never above 1), fixed costs
    x factor."""

    def share(value: float) -> float:
        return min(1.0, value / factor)

    return replace(
        params,
        weight_efficiency=share(params.weight_efficiency),
        kv_efficiency=share(params.kv_efficiency),
        mma_efficiency=share(params.mma_efficiency),
        grouped_mma_efficiency=None,
        prefill_efficiency=share(params.prefill_efficiency),
        per_layer_s=params.per_layer_s * factor,
        per_step_s=params.per_step_s * factor,
        per_moe_layer_s=params.per_moe_layer_s * factor,
        per_sequence_s=params.per_sequence_s * factor,
        per_request_s=params.per_request_s * factor,
        per_running_s=params.per_running_s * factor,
        per_ffn_pass_s=params.per_ffn_pass_s * factor,
        per_mixer_sequence_s=params.per_mixer_sequence_s * factor,
        per_state_sequence_s=params.per_state_sequence_s * factor,
    )
