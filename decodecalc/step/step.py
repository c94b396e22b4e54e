"""The step model: what one decode step of a scenario streams, computes and sends per GPU,
and its time, at the roofline and as the scenario's engine would measure it.

Per GPU, one decode step streams the weights once and the KV cache of every sequence:

    step_bytes(T) = weight_bytes + B * kv_bytes_per_sequence(T)
    t_step(T)     = max(step_bytes(T) / (bandwidth * efficiency), FLOPs / peak) + comm + overhead

Everything that does not depend on the context is computed once per scenario (StepModel.of),
so a table of many contexts costs a few multiplications per row."""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from fractions import Fraction
from functools import cached_property
from typing import TYPE_CHECKING

from decodecalc.engine.profile import Engine, EngineParams
from decodecalc.engine.scheduler import SchedulerLimits, scheduler_limits
from decodecalc.model.dtypes import DType, ceil_bytes
from decodecalc.model.kvcache import KVCurve
from decodecalc.model.model import counted
from decodecalc.model.precision import group_dtype, weight_bytes
from decodecalc.model.tensors import TensorGroup
from decodecalc.record import record, replace
from decodecalc.scenarios.scenario import Scenario
from decodecalc.step.engine_terms import (
    EngineTerms,
    Expected,
    Packed,
    StepCounts,
    kv_read_factor,
    packed,
    within_band,
)
from decodecalc.step.flops import step_flops
from decodecalc.step.kv_pool import kv_pool
from decodecalc.step.kv_pool import v_elements as v_elements
from decodecalc.step.memory import (
    MemoryFit,
    ServerRoom,
    memory_fit,
    server_room,
    stored_weight_bytes,
)
from decodecalc.step.operations import MIN_TILE_ROWS as MIN_TILE_ROWS
from decodecalc.step.operations import (
    OPERATION_CLASSES,
    MixerWork,
    Operation,
    StepWork,
    WeightOp,
    by_class,
    step_operations,
    terms_of,
    weight_ops,
)
from decodecalc.step.operations import gemm_excess_s as gemm_excess_s
from decodecalc.step.operations import kernel_tile as kernel_tile
from decodecalc.step.parallelism import (
    CommSplit,
    Communication,
    communication,
    gpu_params,
    read_share,
    stage_groups,
    stage_layer_counts,
)

if TYPE_CHECKING:
    from decodecalc.model.hardware import GpuSpec
    from decodecalc.model.layers import Mixer


def roofline_seconds(
    memory_s: float, compute_s: float | None, comm_s: float, overhead_s: float
) -> float:
    """The step at the roofline, the one formula every pass is priced by: the slower of
    streaming and computing (compute None: the GPU's rate is not known, memory alone), then
    the transfers between GPUs and the fixed overhead, which overlap neither."""
    return max(memory_s, compute_s or 0.0) + comm_s + overhead_s


@record
class Row:
    """One context of a table: bytes per GPU per step and the resulting speed."""

    context_tokens: int
    weight_bytes: int
    kv_bytes: int
    state_bytes: int
    """Recurrent (linear-attention) state of all sequences: constant in the context."""
    total_bytes: int
    kv_share: float
    seconds_per_token: float
    """The step: max(memory, compute) + communication + overhead."""
    tokens_per_s: float
    """Per sequence: 1 / t_step."""
    throughput_tokens_per_s: float
    """All sequences together: B / t_step."""
    is_crossover: bool = False
    fits: bool | None = None
    """Weights, KV and state within the memory budget (None: no GPU capacity known)."""
    memory_seconds: float = 0.0
    compute_seconds: float | None = None
    """Step FLOPs per GPU / peak FLOP/s (None: the GPU's rate is not known)."""
    comm_seconds: float = 0.0
    """Every transfer between GPUs: the three below added up."""
    overhead_seconds: float = 0.0
    expected: Expected | None = None
    """What the scenario's engine would measure (see step/engine_terms.py)."""
    allreduce_seconds: float = 0.0
    """Tensor parallelism's all-reduces (and gathers around TP-sharded experts)."""
    all_to_all_seconds: float = 0.0
    """Expert parallelism's dispatch and combine under data-parallel attention."""
    handoff_seconds: float = 0.0
    """Activations handed from each pipeline stage to the next."""

    @property
    def bound(self) -> str:
        """Which term sets the step: "memory" or "compute"."""
        compute = self.compute_seconds or 0.0
        return "compute" if compute > self.memory_seconds else "memory"


@record
class Stage:
    """One pipeline stage: its layers and what one of its GPUs holds and streams."""

    layers: int
    weight_bytes: int
    """Streamed per decode step at the scenario's batch."""
    stored_weight_bytes: int
    kv_units: KVCurve
    """Its layers' cache per sequence, in the scenario's KV units."""
    state_bytes: int
    """Recurrent state of the sequences the GPU holds."""


def streamed_weight_bytes(scenario: Scenario, tokens: int) -> int:
    """Weight bytes one GPU streams in a forward pass over ``tokens`` tokens (a decode
    step's B, a prefill's B x P): each tensor once, routed experts at the share touched,
    each group in its own format. With pipeline stages, the stages' bytes added up: what a
    token's pass streams on its way through them."""
    return sum(
        _group_bytes(scenario, groups, tokens)
        for groups in stage_groups(scenario.model, scenario.pp)
    )


def _group_bytes(scenario: Scenario, groups: Iterable[TensorGroup], tokens: int) -> int:
    """Bytes of the groups one GPU streams over ``tokens`` (what it holds:
    step/memory.py stored_weight_bytes)."""
    parts = ((g.name, gpu_params(scenario, g) * read_share(scenario, g, tokens)) for g in groups)
    return weight_bytes(parts, scenario.weights, scenario.weight_overrides)


def kv_units_for(
    scenario: Scenario, mixers: Sequence[Mixer] | None = None
) -> tuple[KVCurve, Fraction]:
    """The KV cache per token as whole units of one byte size: K elements x K's units + V
    elements x V's units, and the unit's bytes. With one format the unit is one element;
    with two it is the largest size that divides both per-element sizes, so every byte
    count stays an exact product of integers, rounded up once (the sweep relies on it).
    ``mixers``: a pipeline stage's layers (default: every layer); the unit is the whole
    model's either way, so stages' curves add up to the model's."""
    k = scenario.kv_dtype.bytes_for(1)
    v = k if scenario.v_dtype is None else scenario.v_dtype.bytes_for(1)
    denominator = math.lcm(k.denominator, v.denominator)
    k_scaled, v_scaled = int(k * denominator), int(v * denominator)
    # Caches of a fixed format (an indexer's FP8 keys) must be whole units too.
    fixed = {m.fixed_kv_bytes_per_token * denominator for m, _ in scenario.model.mixer_counts()}
    common = math.gcd(k_scaled, v_scaled, *fixed)
    k_units, v_units = k_scaled // common, v_scaled // common

    def weigh(mixer: Mixer, elements: int) -> int:
        values = v_elements(mixer, elements)
        return (elements - values) * k_units + values * v_units

    layers = scenario.model.mixer_counts() if mixers is None else counted(mixers)
    scale = Fraction(denominator, common)
    curve = KVCurve.for_layers(layers, scenario.attention_tp, weigh, scale)
    return curve, Fraction(common, denominator)


@record
class GroupRead:
    """One tensor group in a step, per GPU: its parameters, the share a step reads (the
    experts touched), its format and the bytes read, rounded up per group."""

    group: str
    params: int
    read_share: Fraction
    experts: int
    dtype: DType
    read_bytes: int


def may_bind(gpu: GpuSpec, weights: DType, rows: int, mma_efficiency: float) -> bool:
    """Whether a dense GEMM of ``rows`` rows in ``weights``' format could outlast its
    weights' streaming on ``gpu``: 2 x rows FLOPs per parameter at ``mma_efficiency`` of
    peak against its bytes at the full bandwidth (False where the peak is not known)."""
    peak = gpu.peak_flops(weights.matmul)
    if peak is None:
        return False
    compute = 2 * rows / (peak[1] * mma_efficiency)
    return compute > float(weights.bytes_for(1)) / gpu.bandwidth_bytes_per_s


@record
class StepModel:
    """The context-independent part of a scenario, computed once."""

    scenario: Scenario
    weight_bytes: int
    kv_curve: KVCurve
    """Cached elements per token, by window."""
    kv_units: KVCurve
    """The same cache in whole units of kv_unit_bytes (kv_units_for)."""
    kv_unit_bytes: Fraction
    state_bytes: int
    peak_flops_per_s: int | None = None
    comm: Communication | None = None
    """Transfers between GPUs (None: not counted)."""
    engine_terms: Packed = ()
    """The engine's step reduced to constants (step/engine_terms.py EngineTerms), once per
    scenario; empty for the roofline."""
    sequences: int = 1
    """Sequences whose cache one GPU holds (Scenario.sequences_per_gpu)."""
    stages: tuple[Stage, ...] = ()
    """Each pipeline stage's share; the step's bytes are theirs added up."""
    weight_ops: tuple[WeightOp, ...] = ()
    """Each tensor group's GEMM (weight_ops), for the engine's per-operation step."""

    @classmethod
    def at(cls, scenario: Scenario, batch: int) -> StepModel:
        """The scenario's step at another batch: a server's running requests, a plan's
        largest batch, the ridge search (the deployment is the same; only B differs)."""
        return cls.of(replace(scenario, batch=batch))

    @classmethod
    def of(cls, scenario: Scenario) -> StepModel:
        model = scenario.model
        units, unit_bytes = kv_units_for(scenario)
        stages = _stages(scenario, units)
        step = cls(
            scenario=scenario,
            weight_bytes=sum(st.weight_bytes for st in stages),
            kv_curve=KVCurve.for_layers(model.mixer_counts(), scenario.attention_tp),
            kv_units=units,
            kv_unit_bytes=unit_bytes,
            state_bytes=sum(st.state_bytes for st in stages),
            peak_flops_per_s=None if (peak := scenario.peak_flops()) is None else peak[1],
            comm=communication(scenario),
            sequences=scenario.sequences_per_gpu,
            stages=stages,
            weight_ops=weight_ops(scenario),
        )
        engine = scenario.engine
        if engine.is_roofline:
            return step
        return replace(step, engine_terms=packed_terms(step, engine.params))

    def work(
        self, context: int | None = None, tokens: int | None = None, streamed: int | None = None
    ) -> StepWork:
        """What the step does on one GPU, for step_operations to price: ``context``, the
        caches read at it (None: the constants alone); ``tokens``, a pass over that many
        tokens (a server's mixed step): its transfers, and the experts its tokens touch
        beyond the batch's, which it streams too (``streamed``: its weight bytes, where the
        caller has them: streamed_weight_bytes)."""
        base = self._work
        if context is None and tokens is None:
            return base
        ops, split, mixers = base.weight_ops, base.split, base.mixers
        if context is not None:
            ops = weight_ops(self.scenario, count_layers=True)
            mixers = self.mixer_work(context)
        if tokens is not None:
            if streamed is None:
                streamed = streamed_weight_bytes(self.scenario, tokens)
            if extra := streamed - self.weight_bytes:
                ops = (*ops, WeightOp(PASS_EXPERTS, extra, 0.0, 0.0, True))
            if self.comm is not None:
                split = self.comm.split(tokens)
        return replace(base, weight_ops=ops, mixers=mixers, split=split)

    @cached_property
    def _work(self) -> StepWork:
        """The step's work at its own batch without a context, listed once per step."""
        s = self.scenario
        return StepWork(
            weight_ops=self.weight_ops,
            mixers=self.mixer_work(),
            counts=StepCounts.of(s.model, s.batch, s.sequences_per_gpu, s.expert_ranks),
            bandwidth=s.bandwidth_bytes_per_s,
            peak=self.peak_flops_per_s,
            kv_read_factor=kv_read_factor(s),
            comm=self.comm,
            split=CommSplit() if self.comm is None else self.comm.split(s.batch),
        )

    def mixer_work(self, context: int | None = None) -> tuple[MixerWork, ...]:
        """Each kind of layer's state and, at ``context``, its cache, the GPU's sequences
        together; the kinds' bytes add up to the step's (the last kind holding some takes
        the rounding of the whole)."""
        s = self.scenario
        kinds: dict[str, list[tuple[Mixer, int]]] = {}
        for m, n in s.model.mixer_counts():
            kinds.setdefault(m.describe(), []).append((m, n))
        tp, sequences = s.attention_tp, self.sequences
        state: list[Fraction] = []
        for pairs in kinds.values():  # a state in its own format, never the KV dtype's
            state.append(sequences * sum((n * m.state_bytes(tp) for m, n in pairs), Fraction(0)))
        kv = [Fraction(0)] * len(kinds)
        if context is not None:
            kv = [
                sequences
                * self.kv_unit_bytes
                * kv_units_for(s, [m for m, n in pairs for _ in range(n)])[0].elements(context)
                for pairs in kinds.values()
            ]
            _settle(kv, self.kv_bytes(context))
        _settle(state, self.state_bytes)
        return tuple(
            MixerWork(
                stands_for=kind,
                layers=sum(n for _, n in pairs),
                state_bytes=float(state_bytes),
                kv_bytes=float(kv_bytes),
                reads_cache=bool(pairs[0][0].kv_elements_per_token(tp))
                or not pairs[0][0].state_elements(tp),
            )
            for (kind, pairs), state_bytes, kv_bytes in zip(kinds.items(), state, kv, strict=True)
        )

    def group_reads(self) -> tuple[GroupRead, ...]:
        """Each tensor group's share of the weights one step reads (explain works it
        through): per GPU, in its own format, rounded up per group."""
        s = self.scenario
        reads = []
        for g in s.model.tensor_groups():
            share = read_share(s, g, s.batch)
            per_gpu = gpu_params(s, g)
            dtype = group_dtype(g.name, s.weights, s.weight_overrides)
            read = ceil_bytes(dtype.bytes_for(per_gpu * share)) if share else 0
            reads.append(GroupRead(g.name, per_gpu, share, g.experts, dtype, read))
        return tuple(reads)

    def memory_seconds(self, context_tokens: int) -> float:
        total = self.weight_bytes + self.kv_bytes(context_tokens) + self.state_bytes
        return self.streaming_seconds(total)

    def streaming_seconds(self, total_bytes: int) -> float:
        """Bytes one GPU streams / (bandwidth x efficiency)."""
        return total_bytes / self.scenario.effective_bandwidth_bytes_per_s

    def computing_seconds(self, flops: float) -> float | None:
        """FLOPs of all GPUs / TP / peak FLOP/s (None: the GPU's rate is not known)."""
        if self.peak_flops_per_s is None:
            return None
        return flops / self.scenario.tp / self.peak_flops_per_s

    def compute_seconds(self, context_tokens: int) -> float | None:
        """FLOPs per GPU (TP splits every matmul and attention head) / peak FLOP/s."""
        s = self.scenario
        return self.computing_seconds(step_flops(s.model, s.batch, context_tokens))

    def kv_bytes(self, context_tokens: int, held: bool = False) -> int:
        """KV bytes one step reads for all B sequences at context T (``held``: that memory
        holds, which top-k and chunked layers make differ; kvcache.py)."""
        return self._cache_bytes(self.kv_units, context_tokens, held)

    def _cache_bytes(self, curve: KVCurve, context_tokens: int, held: bool) -> int:
        """The cache of the sequences one GPU holds on ``curve`` (a stage's or the model's)."""
        if held:
            curve = curve.held()
        return ceil_bytes(self.sequences * curve.elements(context_tokens) * self.kv_unit_bytes)

    def kv_bytes_per_token(self) -> int:
        return ceil_bytes(self.kv_units.elements_per_token * self.kv_unit_bytes)

    def crossover(self) -> Fraction | None:
        """Solve B * kv_bytes(T*) = weight_bytes exactly on the (piecewise) linear curve."""
        target = Fraction(self.weight_bytes) / (self.kv_unit_bytes * self.sequences)
        return self.kv_units.solve(target)

    def memory(self, context_tokens: int) -> MemoryFit | None:
        """The budget and its limits per GPU, in the one memory model every answer sizes
        deployments by: the room a server leaves (step/memory.py server_room) and the KV
        pool it allocates there (step/kv_pool.py), the pool serving runs its requests in.
        Each stage is solved alone, the tightest kept; under data-parallel attention the
        batch limit is every rank's together; the largest batch is no more than the pool
        holds at the context."""
        s = self.scenario
        if s.gpu is None:
            return None
        limits = self.server_limits()
        room = server_room(s.gpu.memory_bytes, s.model, s.tp, limits)
        fit = self._bytes_fit(context_tokens, room)
        pool = kv_pool(s, limits)
        held = pool.held_requests(context_tokens)
        if fit.max_batch is not None and held is not None:
            fit = replace(fit, max_batch=min(fit.max_batch, held))
        return replace(fit, pool=pool)

    def _bytes_fit(self, context_tokens: int, room: ServerRoom) -> MemoryFit:
        """The limits the bytes set in ``room``: each stage's weights, cache and state."""
        s = self.scenario
        assert s.gpu is not None
        budget = math.floor(s.gpu.memory_bytes * Fraction(str(s.memory_utilization)))
        fits = [
            memory_fit(
                budget_bytes=budget,
                room=room,
                stored_bytes=stage.stored_weight_bytes,
                curve=stage.kv_units,
                bytes_per_unit=self.kv_unit_bytes,
                state_bytes_per_sequence=Fraction(stage.state_bytes, self.sequences),
                batch=self.sequences,
                context_tokens=context_tokens,
            )
            for stage in self.stages
        ]
        if len(fits) == 1 and not s.dp_attention:
            return fits[0]
        batches = [f.max_batch for f in fits if f.max_batch is not None]
        contexts = [f.max_context for f in fits if f.max_context is not None]
        return MemoryFit(
            budget_bytes=budget,
            stored_weight_bytes=max(f.stored_weight_bytes for f in fits),
            max_batch=min(batches) * self.scenario.attention_ranks if batches else None,
            max_context=min(contexts) if contexts else None,
            room=room,
        )

    def server_limits(self) -> SchedulerLimits:
        """The scheduler a server of this scenario starts with: its engine's defaults
        (vLLM's where the engine has none, as serving takes them) at the scenario's
        memory utilization."""
        s = self.scenario
        return scheduler_limits(s.engine, s.gpu, memory_utilization=s.memory_utilization)

    def fits(self, context_tokens: int, memory: MemoryFit) -> bool:
        """Every stage's GPUs hold their weights, the cache they keep and their state in
        the room the server leaves them, and the server's pool holds the batch."""
        held = memory.room.held_tokens(context_tokens)
        if self.held_bytes(held) > memory.room.usable_bytes:
            return False
        pool = memory.pool
        if pool is None or pool.limits_as_bytes:  # the bytes above said it (as the sweep)
            return True
        return pool.holds(self.scenario.batch, context_tokens)

    def held_bytes(self, context_tokens: int) -> int:
        """What the fullest GPU holds: its stage's stored weights, the cache its layers
        keep for the batch and their state. One batch is held, not the sum over stages a
        step streams: a stage's GPUs keep only their own layers' cache."""
        return max(
            stage.stored_weight_bytes
            + self._cache_bytes(stage.kv_units, context_tokens, held=True)
            + stage.state_bytes
            for stage in self.stages
        )

    def row(
        self, context_tokens: int, is_crossover: bool = False, memory: MemoryFit | None = None
    ) -> Row:
        kv = self.kv_bytes(context_tokens)
        total = self.weight_bytes + kv + self.state_bytes
        memory_s = self.streaming_seconds(total)
        compute_s = self.compute_seconds(context_tokens)
        comm = CommSplit() if self.comm is None else self.comm.split(self.scenario.batch)
        comm_s = comm.total_s
        overhead_s = self.scenario.overhead_s
        seconds = roofline_seconds(memory_s, compute_s, comm_s, overhead_s)
        row = Row(
            context_tokens=context_tokens,
            weight_bytes=self.weight_bytes,
            kv_bytes=kv,
            state_bytes=self.state_bytes,
            total_bytes=total,
            kv_share=kv / total,
            seconds_per_token=seconds,
            tokens_per_s=1 / seconds,
            throughput_tokens_per_s=self.scenario.batch / seconds,
            is_crossover=is_crossover,
            fits=None if memory is None else self.fits(context_tokens, memory),
            memory_seconds=memory_s,
            compute_seconds=compute_s,
            comm_seconds=comm_s,
            overhead_seconds=overhead_s,
            allreduce_seconds=comm.allreduce_s,
            all_to_all_seconds=comm.all_to_all_s,
            handoff_seconds=comm.handoff_s,
        )
        return replace(row, expected=expected(self, row))


PASS_EXPERTS = "experts only the pass's other tokens touch"
"""A mixed step's extra weights: the experts its prompt chunk and speculative queries
touch beyond the decode batch's, streamed at e_w (StepModel.work)."""


def _settle(parts: list[Fraction], whole: int) -> None:
    """Gives the last non-zero part the difference to ``whole`` (the rounding up the whole
    was counted with), so the parts add up to it."""
    last = max((i for i, p in enumerate(parts) if p), default=None)
    if last is not None:
        parts[last] += whole - sum(parts)


def _stages(scenario: Scenario, units: KVCurve) -> tuple[Stage, ...]:
    """Each pipeline stage's bytes per GPU; without stages, one holding the whole model
    (``units``: the whole model's cache, reused for it)."""
    model, batch = scenario.model, scenario.batch
    counts = stage_layer_counts(len(model.layers), scenario.pp)
    stages = []
    start = 0
    for count, groups in zip(counts, stage_groups(model, scenario.pp), strict=True):
        mixers = model.mixers()[start : start + count]
        start += count
        pairs = model.mixer_counts() if scenario.pp == 1 else counted(mixers)
        state = scenario.sequences_per_gpu * sum(
            (n * m.state_bytes(scenario.attention_tp) for m, n in pairs), Fraction(0)
        )
        stages.append(
            Stage(
                layers=count,
                weight_bytes=_group_bytes(scenario, groups, batch),
                stored_weight_bytes=stored_weight_bytes(scenario, groups),
                kv_units=units if scenario.pp == 1 else kv_units_for(scenario, mixers)[0],
                state_bytes=ceil_bytes(state),
            )
        )
    return tuple(stages)


def engine_terms(step: StepModel, params: EngineParams, tokens: int | None = None) -> EngineTerms:
    """One engine's step at a scenario reduced to its constants (EngineTerms): its
    operations (step/operations.py) added up; ``tokens``: a pass over more tokens than
    the batch (a server's mixed step), its transfers and the experts they touch."""
    return terms_of(step_operations(step.work(tokens=tokens), params), params.band)


def packed_terms(
    step: StepModel,
    params: Sequence[EngineParams],
    tokens: int | None = None,
    streamed: int | None = None,
) -> Packed:
    """engine_terms for each of an engine's profiles, packed, the step's work listed once
    (``tokens`` and ``streamed``: StepModel.work's)."""
    work = step.work(tokens=tokens, streamed=streamed)
    return packed([terms_of(step_operations(work, p), p.band) for p in params])


def expected_step(step: StepModel, row: Row, params: EngineParams) -> float:
    """The step time one engine's parameters give at a row's context."""
    return engine_step(step, row, params).seconds


@record
class EngineStep:
    """One engine profile's step at a context, operation by operation (explain works it
    through)."""

    operations: tuple[Operation, ...]
    """The step's operations at the row's context (step_operations); they add up to the
    step before the compute floor."""
    kv_read_factor: float
    counts: StepCounts
    seconds: float
    """max(GEMMs + KV, compute) + fixed + communication: the profile's own step."""

    def _sum(self, *groups: str) -> float:
        return sum(o.total_s for o in self.operations if o.group in groups)

    @property
    def weights_s(self) -> float:
        """Weights at the engine's e_w."""
        return sum(o.memory_s for o in self.operations if o.group in OPERATION_CLASSES[:2])

    @property
    def gemm_compute_s(self) -> float:
        """What compute-bound GEMMs add beyond streaming their weights."""
        return self._sum(*OPERATION_CLASSES[:2]) - self.weights_s

    @property
    def kv_s(self) -> float:
        """The cache as its kernel reads it, and the state, at its e_kv."""
        return self._sum(OPERATION_CLASSES[2])

    @property
    def fixed_s(self) -> float:
        """Per layer, per step, per MoE layer and per sequence pass."""
        return self._sum(OPERATION_CLASSES[3])

    @property
    def comm_s(self) -> float:
        """The all-reduces at the engine's latency, and the link's bytes."""
        return self._sum(OPERATION_CLASSES[4])

    def by_class(self) -> tuple[tuple[str, float], ...]:
        """Seconds by class of operation (OPERATION_CLASSES): dense GEMMs, expert GEMMs,
        attention, fixed costs, communication."""
        return by_class(self.operations)


def engine_step(step: StepModel, row: Row, params: EngineParams) -> EngineStep:
    """The step one engine's parameters give at a row's context, with its operations."""
    work = step.work(context=row.context_tokens)
    operations = step_operations(work, params)
    terms = terms_of(operations, params.band)
    factor = work.kv_read_factor if params.kv_read == "per-query-head" else 1.0
    return EngineStep(
        operations=operations,
        kv_read_factor=factor,
        counts=work.counts,
        seconds=within_band(packed([terms]), row.kv_bytes, row.compute_seconds or 0.0, 0.0)[0],
    )


def expected(step: StepModel, row: Row) -> Expected:
    """Expected step and its band for the scenario's engine (see within_band); the row's
    own time for the roofline."""
    return _expected(step, row, step.engine_terms)


def expected_for(step: StepModel, row: Row, engine: Engine) -> Expected:
    """The same for an engine other than the scenario's own: a fit being judged
    (calibrate) or a profile refitted without the points it predicts (validate)."""
    return _expected(step, row, packed_terms(step, engine.params))


def _expected(step: StepModel, row: Row, terms: Packed) -> Expected:
    if not terms:
        return Expected(row.seconds_per_token, row.seconds_per_token, row.seconds_per_token)
    floor = max(row.total_bytes / step.scenario.bandwidth_bytes_per_s, row.compute_seconds or 0.0)
    compute = row.compute_seconds or 0.0
    return Expected(*within_band(terms, row.kv_bytes, compute, floor + row.comm_seconds))
