"""A release line's parameters carried to a GPU family it has no points on (issue 28:
today's release by default): its operation rates transfer through the hardware's own
figures, then a vendor factor fitted on that vendor's newest points scales the step.

The efficiencies are shares of the GPU's own bandwidth and FLOP/s per format, so they
carry over as they are: a kernel streaming at 0.8 of an H100's 3.35 TB/s is priced at 0.8
of an MI355X's 8 TB/s. The fixed costs (per step, layer, MoE layer, sequence, request)
carry as times: no launch latency is known for GPUs without kernel tables, so none
rescales them. The all-reduce latency a fit on the source found is the source's link and
gives way to the target link's preset (across, which any parameters standing in on
another vendor's family go through). What differs between vendors' kernels beyond that
is a factor, the median of measured / transferred over the vendor's points of the last
twelve months, one for dense models and one for MoE models, whose grouped-GEMM kernels are
the vendor's own code (validation/fit_engines.py: vendor_factors): efficiencies divided by
it, fixed costs multiplied by it, so the engine's step is that many times slower (faster
below 1)."""

from __future__ import annotations

from decodecalc.engine.profile import EngineParams
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
    words = (
        f"{engine}@{line}'s {vendor.source} rates through the GPU's bandwidth and FLOP/s, "
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
    and FLOP/s already (a fitted e_mma too); what a fit on the source measured of the
    source's hardware goes: the all-reduce latency fitted there is the source's link
    (NVLink's 56 us a call in vLLM 0.11's H100 fit, where an MI300X's Infinity Fabric has
    its own preset), and rates read from the source GPU's kernel tables give way to the
    target's. Within one vendor they stay: the same kernels on the same links.
    Measured on validation/points.yaml with each vendor left out: the NVLink latency
    carried to MI300X made vLLM's Llama-3.1-70B at TP 8 1.7x too slow (160 calls x 56 us
    = 9 ms of a measured 8.4 ms step); docs/accuracy.md."""
    if vendor_of(source) == vendor_of(family):
        return params
    return replace(
        params,
        allreduce_latency_s=None,
        grouped_mma_efficiency=None,
        kernel_source="",
    )


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
