"""explain's answer: one decode step at one context with every figure its worked text shows,
so that views/explain.py only words and formats them (docs/physics.md sections 1 to 6, and
section 7 as an engine's profile would measure the step)."""

from __future__ import annotations

from fractions import Fraction

from decodecalc.answers.estimate import Estimate, estimate
from decodecalc.engine.profile import EngineParams
from decodecalc.model.kernels import AllReduceRates
from decodecalc.model.kvcache import KVCurve, fixed_kv_bytes_per_token, read_pattern
from decodecalc.model.layer_kind import CacheTerms
from decodecalc.record import record
from decodecalc.scenarios.scenario import Scenario
from decodecalc.step.flops import matmul_params, step_flops
from decodecalc.step.step import EngineStep, GroupRead, Row, StepModel, engine_step, v_elements


@record
class CacheRead:
    """Section 2: the cache one step reads at the context, per GPU."""

    layers: tuple[tuple[CacheTerms, int], ...]
    """Each kind of layer as it describes its cache, with how many layers are of it."""
    elements: int | Fraction
    """Elements a sequence's step reads, summed over layers."""
    pattern: str
    """How chunked and top-k layers read (kvcache.read_pattern; "" when none)."""
    kv_bytes: int
    """Bytes read in the KV format(s), the batch's sequences on this GPU together."""
    split: tuple[int | Fraction, int | Fraction] | None
    """``elements`` as K and V where V has a format of its own (None: one format)."""
    fixed_bytes_per_token: int
    """Bytes per token of caches in a fixed format (index keys)."""
    fixed_bytes: int
    """Those bytes at the context for the batch."""
    state_bytes: int
    """A constant recurrent state, the same at every context."""

    @property
    def cache_bytes(self) -> int:
        """What the step reads of caches that grow: KV and index keys together."""
        return self.kv_bytes + self.fixed_bytes


@record
class EngineWorking:
    """Section 7: one engine profile's step, named as the engine calls it."""

    name: str
    params: EngineParams
    step: EngineStep
    allreduce: AllReduceRates | None = None
    """The engine's own all-reduce as the GPU's kernel tables measured it at the group's
    size, where it prices tensor parallelism's all-reduces (Communication.measured)."""


@record
class Explanation:
    """One step of a scenario at one context, figure by figure."""

    estimate: Estimate
    """The estimate at this context alone: its row, headline and notes."""
    step: StepModel
    context: int
    row: Row
    weight_groups: tuple[GroupRead, ...]
    cache: CacheRead
    flops: float
    """The step's FLOPs, all GPUs together."""
    multiplied_params: int
    """Parameters a token multiplies (matmul_params)."""
    peak: tuple[str, float] | None
    """The matmuls' peak rate class and FLOP/s (None: not known for this GPU and format)."""
    crossover: Fraction | None
    crossover_closed_form: bool
    """Whether T* is weight bytes over the batch's KV bytes per token (one global curve)."""
    kv_bytes_per_token: Fraction
    """Per sequence, per GPU, as the closed form divides by it."""
    engines: tuple[EngineWorking, ...]
    """Each profile of the scenario's engine, where it expects a step (else none)."""
    grouped_experts: bool
    """Whether any GEMM is a grouped (expert) one."""
    assumptions: tuple[str, ...]


def explain(scenario: Scenario, context: int) -> Explanation:
    """Everything ``decodecalc explain`` shows for a scenario at one context."""
    step = StepModel.of(scenario)
    row = step.row(context)
    curve = step.kv_curve
    return Explanation(
        estimate=estimate(scenario, [context], crossover_row=False),
        step=step,
        context=context,
        row=row,
        weight_groups=step.group_reads(),
        cache=cache_read(step, context),
        flops=step_flops(scenario.model, scenario.batch, context),
        multiplied_params=matmul_params(scenario.model),
        peak=scenario.peak_flops(),
        crossover=step.crossover(),
        crossover_closed_form=curve.regular
        and len(curve.segments) == 1
        and curve.segments[0][0] is None,
        kv_bytes_per_token=step.kv_units.elements_per_token * step.kv_unit_bytes,
        engines=_engine_workings(step, row),
        grouped_experts=any(op.grouped for op in step.weight_ops),
        assumptions=tuple(_assumptions(scenario)),
    )


def cache_read(step: StepModel, context: int) -> CacheRead:
    """Section 2's figures: each kind's cache, and what the batch reads of them at T."""
    s = step.scenario
    layers: dict[CacheTerms, int] = {}
    for m in s.model.mixers():
        terms = m.cache_terms(s.attention_tp)
        layers[terms] = layers.get(terms, 0) + 1
    per_token = fixed_kv_bytes_per_token(s.model.mixers())
    fixed = per_token * context * s.sequences_per_gpu
    elements = step.kv_curve.elements(context)
    split = None
    if s.v_dtype is not None:  # MLA latents count as K: only attention layers have a V half
        curve = KVCurve.for_layers(s.model.mixer_counts(), s.attention_tp, v_elements)
        split = (elements - curve.elements(context), curve.elements(context))
    return CacheRead(
        layers=tuple(layers.items()),
        elements=elements,
        pattern=read_pattern(s.model.mixers()),
        kv_bytes=step.kv_bytes(context) - fixed,
        split=split,
        fixed_bytes_per_token=per_token,
        fixed_bytes=fixed,
        state_bytes=step.state_bytes,
    )


def _engine_workings(step: StepModel, row: Row) -> tuple[EngineWorking, ...]:
    engine = step.scenario.engine
    if engine.is_roofline or row.expected is None:
        return ()
    names = engine.names or (engine.id,) * len(engine.params)
    return tuple(
        EngineWorking(
            name,
            params,
            engine_step(step, row, params),
            None if step.comm is None else step.comm.measured(params.allreduce_rates),
        )
        for name, params in zip(names, engine.params, strict=True)
    )


def _assumptions(s: Scenario) -> list[str]:
    notes = [
        "every weight is stored in one format; scales are counted in its bits per value"
        if not s.weight_overrides
        else f"each tensor group is stored as {s.weights_recipe} says; scales are counted in "
        "its format's bits per value",
        "each step reads every weight it uses once, and all of the live KV cache",
        "efficiency scales bandwidth only; compute uses the datasheet's dense peak",
    ]
    if s.model.moe() is not None:
        notes.append("experts are chosen uniformly at random, independently per token")
    if s.tp > 1:
        notes.append("TP splits matrices evenly; norms stay whole on every GPU")
    if any(m.kv_replicated(s.tp) for m in s.model.mixers()):
        notes.append("past the KV-head count (and for MLA always) every GPU reads whole KV heads")
    return notes
