"""What a real engine measures: the roofline's terms at the engine's own efficiencies, plus
the fixed costs no kernel streams bytes for (docs/physics.md section 7).

No engine reaches the bandwidth roofline. Its step is

    t = W / (BW x e_w) + KV_read / (BW x e_kv) + L x c_layer + c_step + TP communication
        + L_moe x c_moe + B x P x c_seq

where weight streaming runs at one efficiency e_w and attention reads the KV cache at
another, e_kv (flash-attention kernels about 0.85 of e_w, others much less); KV_read is the
cache as the kernel reads it (a GQA-unaware kernel reads each KV head once per query head);
c_layer covers launches, norms, RoPE and small GEMV tails in every layer, c_step the
scheduler and sampler; TP all-reduces pay the engine's own latency per call. Two costs
only some points show: c_moe per MoE layer (routing, top-k, token permutation and the
grouped-GEMM launches a dense MLP has none of) and c_seq per sequence and per pass P a
token makes through the layers (a dense layer is one pass, an MoE layer one per expert a
token is routed to): per-token work that grows with the batch B far below any compute
bound (attention set-up, expert gather and scatter, small-GEMM tiles). The step is never
shorter than its compute at the GPU's peak.

An engine's parameters differ by GPU family (kernels are written per vendor and class of
chip), so a profile holds one set per family it has data for (engine_for says what
stands in on a family it has none for).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import TYPE_CHECKING

from decodecalc.physics.hardware import GpuSpec
from decodecalc.record import record

if TYPE_CHECKING:
    from decodecalc.physics.estimator import Row, StepModel
    from decodecalc.physics.kv_pool import ServingDefaults
    from decodecalc.physics.model import Model

GPU_FAMILIES = ("nvidia-datacenter", "nvidia-consumer", "amd-instinct", "apple", "other")
"""GPU families an engine's kernels behave alike on."""

KV_READS = ("once", "per-query-head")


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
    """Expected x low and x high: the spread of the fit's residuals."""
    points: int = 0
    """Measured points the parameters were fitted on (0: carried over, not fitted)."""
    per_moe_layer_s: float = 0.0
    """c_moe: per MoE layer per step."""
    per_sequence_s: float = 0.0
    """c_seq: per sequence in the batch and per pass through a layer (sequence_passes)."""
    prefill_efficiency: float = 1.0
    """e_p: share of peak FLOP/s a server's prefill chunks compute at (physics/serving.py);
    1 where no time to first token was measured for the engine or its GPU family."""
    per_request_s: float = 0.0
    """c_req: per request, outside the steps (tokenising, scheduling, the API server): in
    a server's TTFT and end-to-end latency."""


@record
class Engine:
    """The engine a scenario's expected figures are for: a profile's parameters for the
    scenario's GPU family, several profiles' (``typical``), or none (``roofline``)."""

    id: str
    params: tuple[EngineParams, ...] = ()
    family: str = "other"
    names: tuple[str, ...] = ()
    """The profile each of ``params`` comes from, for people reading a typical band."""
    serving: ServingDefaults | None = None
    """The profile's scheduler defaults (physics/kv_pool.py); None: vLLM's."""


@record
class EngineProfile:
    """An engine preset: parameters per GPU family, with where they came from."""

    id: str
    name: str
    families: tuple[tuple[str, EngineParams], ...]
    versions: tuple[str, ...] = ()
    source: str = ""
    notes: str = ""
    aliases: tuple[str, ...] = ()
    serving: ServingDefaults | None = None
    """Scheduler defaults, each value sourced (the preset's hand-written ``serving:``)."""

    def params_for(self, family: str) -> tuple[EngineParams, str]:
        """The parameters for a family, and the family they were fitted on: the same one,
        or, without data for it, the family with the most points (the caller says so)."""
        table = dict(self.families)
        if family in table:
            return table[family], family
        fallback = max(self.families, key=lambda item: item[1].points)
        return fallback[1], fallback[0]


@record
class Expected:
    """A step as an engine would measure it: a central figure inside a band."""

    seconds: float
    low_seconds: float
    high_seconds: float


def kv_read_factor(step: StepModel) -> float:
    """KV elements a GQA-unaware kernel reads per element cached: each query head reads its
    KV head again, so attention layers cost heads / KV heads times their cache. MLA and
    linear attention read their cache once."""
    from decodecalc.physics.layers import Attention

    s = step.scenario
    cached = read = 0
    for m in s.model.mixers():
        elements = m.kv_elements_per_token(s.tp)
        cached += elements
        if isinstance(m, Attention):
            read += m.kv_dim * math.ceil(m.num_heads / s.tp)
        else:
            read += elements
    return read / cached if cached else 1.0


def moe_layers(model: Model) -> int:
    """Layers whose feed-forward block is a mixture of experts."""
    return sum(1 for layer in model.layers if layer.ffn.routed)


def sequence_passes(model: Model) -> int:
    """Passes one token makes through the layers in a step: one per dense layer, one per
    routed expert in an MoE layer (each is its own slice of a grouped GEMM, gathered and
    scattered per token). Counted so, the published batch sweeps on 8 x MI300X grow, past
    their weight and KV bytes at peak bandwidth, by a similar time per pass: vLLM on
    Llama-3.1-70B 1.3 us, 405B 2.0 us, DeepSeek-V3 0.8 us, SGLang on DeepSeek-V3 1.5 us;
    counting each layer once, DeepSeek-V3's would be 6 and 11 us (docs/accuracy.md)."""
    from decodecalc.physics.moe import MoE

    return sum(
        layer.ffn.experts_per_token if isinstance(layer.ffn, MoE) else 1 for layer in model.layers
    )


@record
class StepCounts:
    """What a step's fixed costs are counted in."""

    layers: int
    moe_layers: int
    passes: int
    """Sequence passes: the batch x sequence_passes."""

    @classmethod
    def of(cls, model: Model, batch: int) -> StepCounts:
        return cls(len(model.layers), moe_layers(model), batch * sequence_passes(model))

    def fixed_seconds(self, params: EngineParams) -> float:
        """The costs no byte count scales: per layer, per step, per MoE layer and per
        sequence pass."""
        return (
            self.layers * params.per_layer_s
            + params.per_step_s
            + self.moe_layers * params.per_moe_layer_s
            + self.passes * params.per_sequence_s
        )


@record
class EngineTerms:
    """One engine's step at a scenario, reduced to what varies with the context: a step
    is max(constant + KV bytes x per_kv_byte, compute) + added. StepModel.of computes it
    once per scenario, so a million-row sweep pays a few operations a row."""

    constant_s: float
    """Weights at e_w and the recurrent state at e_kv."""
    per_kv_byte_s: float
    """Seconds per cached KV byte: the kernel's read factor over bandwidth x e_kv."""
    added_s: float
    """The fixed costs (StepCounts.fixed_seconds) and the all-reduces at the engine's
    latency."""
    band: tuple[float, float]

    @classmethod
    def of(cls, step: StepModel, params: EngineParams, comm_s: float) -> EngineTerms:
        s = step.scenario
        bandwidth = s.bandwidth_bytes_per_s
        factor = kv_read_factor(step) if params.kv_read == "per-query-head" else 1.0
        comm = comm_s
        if step.comm is not None and params.allreduce_latency_s is not None:
            calls = step.comm.calls
            comm += calls * (params.allreduce_latency_s - step.comm.group_link.latency_s)
        fixed = StepCounts.of(s.model, s.batch).fixed_seconds(params)
        return cls(
            constant_s=step.weight_bytes / (bandwidth * params.weight_efficiency)
            + step.state_bytes / (bandwidth * params.kv_efficiency),
            per_kv_byte_s=factor / (bandwidth * params.kv_efficiency),
            added_s=fixed + max(comm, 0.0),
            band=params.band,
        )

    def seconds(self, kv_bytes: int, compute_s: float) -> float:
        return max(self.constant_s + kv_bytes * self.per_kv_byte_s, compute_s) + self.added_s


def expected_step(step: StepModel, row: Row, params: EngineParams) -> float:
    """The step time one engine's parameters give at a row's context."""
    terms = EngineTerms.of(step, params, row.comm_seconds)
    return terms.seconds(row.kv_bytes, row.compute_seconds or 0.0)


def expected(step: StepModel, row: Row) -> Expected:
    """Expected step and its band for the scenario's engine (see within_band); the row's
    own time for the roofline."""
    return _expected(step, row, step.engine_terms)


def expected_for(step: StepModel, row: Row, engine: Engine) -> Expected:
    """The same for an engine other than the scenario's own: a fit being judged
    (calibrate) or a profile refitted without the points it predicts (validate)."""
    terms = packed([EngineTerms.of(step, p, row.comm_seconds) for p in engine.params])
    return _expected(step, row, terms)


def _expected(step: StepModel, row: Row, terms: Packed) -> Expected:
    if not terms:
        return Expected(row.seconds_per_token, row.seconds_per_token, row.seconds_per_token)
    floor = max(row.total_bytes / step.scenario.bandwidth_bytes_per_s, row.compute_seconds or 0.0)
    compute = row.compute_seconds or 0.0
    return Expected(*within_band(terms, row.kv_bytes, compute, floor + row.comm_seconds))


Packed = tuple[tuple[float, float, float, float, float], ...]
"""EngineTerms as plain tuples (constant, per KV byte, added, band low, band high)."""


def packed(terms: Sequence[EngineTerms]) -> Packed:
    return tuple((t.constant_s, t.per_kv_byte_s, t.added_s, *t.band) for t in terms)


def within_band(
    terms: Packed, kv_bytes: int, compute_s: float, floor_s: float
) -> tuple[float, float, float]:
    """(expected, low, high), never below the physics: the roofline at efficiency 1 with
    no overhead (``floor``) bounds the low end, so roofline <= low <= expected <= high. With
    several profiles (typical) the centre is their median and the band spans all of theirs.
    EngineTerms.seconds written out on plain tuples: a sweep calls this for every row."""
    central = []
    low = high = floor_s
    first = True
    for constant, per_kv, added, band_low, band_high in terms:
        t = constant + kv_bytes * per_kv
        if t < compute_s:
            t = compute_s
        t += added
        if t < floor_s:
            t = floor_s
        central.append(t)
        lo, hi = t * band_low, t * band_high
        if first or lo < low:
            low = lo
        if first or hi > high:
            high = hi
        first = False
    central.sort()
    n = len(central)
    middle = central[n // 2] if n % 2 else (central[n // 2 - 1] + central[n // 2]) / 2
    low = max(low, floor_s)
    return middle, min(low, middle), max(high, middle)


def measured_on(profiles: Sequence[EngineProfile], family: str) -> list[tuple[str, EngineParams]]:
    """Each profile fitted on this family's own measurements, by id (a profile carried over
    from another engine, with no points of its own, would count that engine twice)."""
    return [
        (p.id, found)
        for p in profiles
        if (found := dict(p.families).get(family)) is not None and found.points > 0
    ]


def typical(profiles: Sequence[EngineProfile], family: str) -> Engine:
    """The band across every profile measured on this family. On a family none has
    measured, across every family every profile was measured on: engines measured on other
    chips are nearer than the roofline, which none of them reaches."""
    chosen = measured_on(profiles, family) or [
        (f"{p.id} ({measured})", params)
        for p in profiles
        for measured, params in p.families
        if params.points
    ]
    return Engine("typical", tuple(f for _, f in chosen), family, tuple(name for name, _ in chosen))


def engine_for(
    profile: EngineProfile, family: str, profiles: Sequence[EngineProfile]
) -> tuple[Engine, str | None]:
    """A profile's engine on a GPU family, and the family its own parameters come from
    when it has none for this one (None when it has).

    Without data for the family, the profile's best-measured family is one vote among the
    profiles measured on this one: the median of them all is the centre and the band spans
    them. Across the published points, one engine's step differs by 2x or more between GPU
    vendors (its kernels are written per vendor) while engines measured on one family
    differ by a few percent on the same model, so the family's engines say as much as the
    engine's other chips; neither alone transfers (docs/accuracy.md). `decodecalc validate`
    predicts each left-out group by this same rule, so its leave-one-group-out error is
    what a user of such a fallback gets."""
    own = dict(profile.families).get(family)
    if own is not None:
        return Engine(profile.id, (own,), family, (profile.id,), profile.serving), None
    params, fitted = profile.params_for(family)
    others = [(name, p) for name, p in measured_on(profiles, family) if name != profile.id]
    return (
        Engine(
            profile.id,
            (params, *(p for _, p in others)),
            family,
            (f"{profile.id} ({fitted})", *(name for name, _ in others)),
            profile.serving,
        ),
        fitted,
    )
