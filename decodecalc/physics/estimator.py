"""The two-term decode estimator (docs/physics.md sections 1 to 4).

Per GPU, one decode step streams the weights once and the KV cache of every sequence:

    step_bytes(T) = weight_bytes + B * kv_bytes_per_sequence(T)
    t_step(T)     = step_bytes(T) / (bandwidth * efficiency)

Everything that does not depend on the context is computed once per scenario, so a table
of many contexts costs a few multiplications per row.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from fractions import Fraction
from typing import TYPE_CHECKING

from decodecalc.errors import Conflict, InputError
from decodecalc.notes import Note
from decodecalc.physics.compute import step_flops
from decodecalc.physics.cost import Rates
from decodecalc.physics.dtypes import DType, ceil_bytes
from decodecalc.physics.engine import Engine, EngineTerms, Expected, Packed, expected, packed
from decodecalc.physics.hardware import GpuSpec, Link
from decodecalc.physics.kvcache import KVCurve
from decodecalc.physics.layers import Attention
from decodecalc.physics.memory import MemoryFit, memory_fit
from decodecalc.physics.model import Model
from decodecalc.physics.parallelism import (
    CommSplit,
    Communication,
    communication,
    held_params,
    stage_groups,
    stage_layer_counts,
)
from decodecalc.physics.precision import weight_bytes
from decodecalc.physics.tensors import TensorGroup, expected_experts
from decodecalc.record import record, replace

if TYPE_CHECKING:
    from decodecalc.physics.layers import Mixer

MAX_BATCH = 1_000_000
MIN_FRACTION = 0.001
"""Smallest efficiency or memory utilization accepted: below it, figures lose meaning."""
MAX_TP = 1024
MAX_PP = 1024
"""More stages than any model has layers: past it a value is no pipeline, whatever the model."""


def check_count(name: str, value: int, most: int) -> None:
    """A whole number from 1 to ``most``, checked before anything divides by it (a TP of
    400 digits overflows a float) and before it meets a model (a bad value is no
    Conflict)."""
    if not 1 <= value <= most:
        raise InputError(f"{name} {value} must be a whole number from 1 to {most:,}")


def check_efficiency(value: float) -> None:
    check_fraction("efficiency", value, " (1 is the roofline)")


def check_fraction(name: str, value: float, meaning: str = "") -> None:
    """A share from MIN_FRACTION to 1 (efficiency, memory utilization); NaN is none."""
    if not (MIN_FRACTION <= value <= 1) or math.isnan(value):
        raise InputError(f"{name} {value} must be from {MIN_FRACTION} to 1{meaning}")


@record
class Scenario:
    """One deployment to estimate: a model on a GPU with formats, batch and TP."""

    model: Model
    weights: DType
    """The default weight format: every tensor group that weight_overrides does not name."""
    kv_dtype: DType
    bandwidth_bytes_per_s: int
    efficiency: float = 1.0
    batch: int = 1
    tp: int = 1
    gpu: GpuSpec | None = None
    memory_utilization: float = 0.9
    """Share of GPU memory the runtime gives weights and cache (vLLM's default 0.9)."""
    link: Link | None = None
    """The interconnect TP all-reduces cross (None: communication not counted)."""
    overhead_s: float = 0.0
    """A fixed time per step: kernel launches, scheduling, sampling."""
    notes: tuple[Note, ...] = ()
    """What resolving the inputs found a reader must know (a calibration from another GPU)."""
    weight_overrides: tuple[tuple[str, DType], ...] = ()
    """Tensor groups (by name) stored in another format than ``weights``: a mixed-precision
    checkpoint (physics/precision.py). Compute keeps the default format's matmul class."""
    weights_recipe: str | None = None
    """The recipe the formats came from (None: one format everywhere), for reports."""
    engine: Engine | None = None
    """Whose measured step the expected figures predict (None: the roofline alone)."""
    v_dtype: DType | None = None
    """The V cache's format when it differs from K's (None: kv_dtype). Attention layers
    cache K and V, half their elements each; MLA's latent is one tensor with no separate
    V, so kv_dtype covers all of it, as it does linear attention's state."""
    rates: Rates = Rates()
    """Price per GPU-hour and board power, for cost and energy per token (physics/cost.py)."""
    pp: int = 1
    """Pipeline stages, each of ``tp`` GPUs (physics/parallelism.py)."""
    ep: bool = False
    """Routed experts placed whole on the group's GPUs instead of each split over them."""
    dp_attention: bool = False
    """Attention data-parallel over the group's ``tp`` GPUs: each rank holds its own
    sequences and a whole copy of everything outside the routed experts."""
    gpus_per_node: int | None = None
    """GPUs one node (one domain of ``link``) joins; None: every GPU is in one node."""
    node_link: Link | None = None
    """The network between nodes, for groups and hand-offs that leave a node."""

    def __post_init__(self) -> None:
        check_count("batch", self.batch, MAX_BATCH)
        check_count("tp", self.tp, MAX_TP)
        check_count("pp", self.pp, MAX_PP)
        if not self.model.supports_tp(self.tp):
            valid = ", ".join(str(n) for n in self.model.valid_tp())
            raise Conflict(
                f"tp {self.tp} does not split {self.model.id}'s attention heads evenly; "
                f"valid: {valid}"
            )
        check_efficiency(self.efficiency)
        check_fraction("memory utilization", self.memory_utilization)
        if not (0 <= self.overhead_s < 3600) or math.isnan(self.overhead_s):
            raise InputError(f"overhead {self.overhead_s} s must be zero or more, under an hour")
        if self.bandwidth_bytes_per_s <= 0:
            raise InputError("bandwidth must be greater than zero")
        for cache in (self.kv_dtype, self.v_dtype):
            if cache is not None and not cache.kv_cache:
                raise InputError(
                    f"{cache.id} is a weight-only format, not a KV-cache dtype "
                    "('decodecalc dtypes' shows which formats hold a KV cache)"
                )
        self._check_parallelism()

    def _check_parallelism(self) -> None:
        layers, moe = len(self.model.layers), self.model.moe()
        if not 1 <= self.pp <= layers:
            raise Conflict(
                f"pp {self.pp} must be a whole number from 1 to {layers}: each pipeline stage "
                f"needs at least one of {self.model.id}'s {layers} layers"
            )
        if (self.ep or self.dp_attention) and moe is None:
            what = "--ep spreads experts" if self.ep else "--dp-attention serves experts"
            raise Conflict(
                f"{what} over GPUs, and {self.model.id} has no experts (a dense model's data "
                "parallelism is independent replicas: estimate one)"
            )
        if self.ep and moe is not None and moe.num_experts % self.tp:
            raise Conflict(
                f"--ep places whole experts: {moe.num_experts} experts do not divide evenly "
                f"over {self.tp} GPUs"
            )
        if self.dp_attention and self.tp == 1:
            raise Conflict("--dp-attention splits sequences over the group's GPUs: give --tp > 1")
        if self.gpus_per_node is not None and not 1 <= self.gpus_per_node <= MAX_TP:
            raise InputError(
                f"gpus per node {self.gpus_per_node} must be a whole number from 1 to {MAX_TP}"
            )

    @property
    def effective_bandwidth_bytes_per_s(self) -> float:
        return self.bandwidth_bytes_per_s * self.efficiency

    @property
    def gpus(self) -> int:
        """GPUs the deployment uses: ``tp`` in each of ``pp`` stages."""
        return self.tp * self.pp

    @property
    def attention_tp(self) -> int:
        """How many ways a sequence's cache and attention are split: 1 under data-parallel
        attention, where a rank holds whole sequences."""
        return 1 if self.dp_attention else self.tp

    @property
    def sequences_per_gpu(self) -> int:
        """Sequences whose cache one GPU holds and reads: all of them, or under data-parallel
        attention its share, the busiest rank's when tp does not divide the batch."""
        return math.ceil(self.batch / self.tp) if self.dp_attention else self.batch

    def peak_flops(self) -> tuple[str, int] | None:
        """The GPU's dense rate for this weight format's matrix multiplies, if known."""
        return None if self.gpu is None else self.gpu.peak_flops(self.weights.matmul)


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
    """What the scenario's engine would measure (see physics/engine.py)."""
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
class Estimate:
    """A scenario's per-step figures at each requested context."""

    scenario: Scenario
    weight_bytes_per_step: int
    kv_bytes_per_token: int
    """Per sequence, per GPU, for each token of context below every sliding window."""
    crossover_context: float | None
    """T* where batch KV bytes equal weight bytes; None when KV never reaches the weights."""
    rows: tuple[Row, ...]
    state_bytes_per_step: int = 0
    experts_touched: float | None = None
    """Expected distinct routed experts per MoE layer at this batch (None: dense model)."""
    kv_bytes_per_token_past_windows: int = 0
    """Per sequence, per GPU, per token once the context is past every sliding window:
    only global layers still grow (equal to kv_bytes_per_token without windows)."""
    kv_split_ways: float = 1.0
    """How many ways TP divides a sequence's KV cache (1 when every GPU reads all of it)."""
    memory: MemoryFit | None = None
    """Memory budget and limits, when the GPU (and so its capacity) is known."""
    ridge_batch: int | None = None
    """Smallest batch at which the step becomes compute-bound at the longest context
    (None: the GPU's FLOP/s are not known, or no batch up to the limit gets there)."""
    flops_class: str | None = None
    """Which of the GPU's peak rates the matmuls run at (bf16, fp8, fp4)."""
    stages: tuple[Stage, ...] = ()
    """Each pipeline stage's layers and bytes per GPU (one stage without --pp)."""
    experts_touched_per_gpu: float | None = None
    """Expected routed experts one GPU runs per MoE layer with --ep (uniform routing, so
    the group's share; None without expert parallelism)."""


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


def _group_bytes(scenario: Scenario, groups: Iterable[TensorGroup], tokens: int | None) -> int:
    """Bytes of the groups one GPU holds (``tokens`` None) or streams over ``tokens``."""
    tp, dp = scenario.tp, scenario.dp_attention
    parts = (
        (g.name, held_params(g, tp, dp) * (1 if tokens is None else g.read_fraction(tokens)))
        for g in groups
    )
    return weight_bytes(parts, scenario.weights, scenario.weight_overrides)


def v_elements(mixer: Mixer, elements: int) -> int:
    """The V half of an attention layer's cache; MLA's latent and anything else is all K."""
    return elements // 2 if isinstance(mixer, Attention) else 0


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
    fixed = {m.fixed_kv_bytes_per_token * denominator for m in scenario.model.mixers()}
    common = math.gcd(k_scaled, v_scaled, *fixed)
    k_units, v_units = k_scaled // common, v_scaled // common

    def weigh(mixer: Mixer, elements: int) -> int:
        values = v_elements(mixer, elements)
        return (elements - values) * k_units + values * v_units

    layers = scenario.model.mixers() if mixers is None else mixers
    scale = Fraction(denominator, common)
    curve = KVCurve.for_layers(layers, scenario.attention_tp, weigh, scale)
    return curve, Fraction(common, denominator)


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
    """The engine's step reduced to constants (physics/engine.py EngineTerms), once per
    scenario; empty for the roofline."""
    sequences: int = 1
    """Sequences whose cache one GPU holds (Scenario.sequences_per_gpu)."""
    stages: tuple[Stage, ...] = ()
    """Each pipeline stage's share; the step's bytes are theirs added up."""

    @classmethod
    def of(cls, scenario: Scenario) -> StepModel:
        model, batch = scenario.model, scenario.batch
        units, unit_bytes = kv_units_for(scenario)
        stages = _stages(scenario, units)
        step = cls(
            scenario=scenario,
            weight_bytes=sum(st.weight_bytes for st in stages),
            kv_curve=KVCurve.for_layers(model.mixers(), scenario.attention_tp),
            kv_units=units,
            kv_unit_bytes=unit_bytes,
            state_bytes=sum(st.state_bytes for st in stages),
            peak_flops_per_s=None if (peak := scenario.peak_flops()) is None else peak[1],
            comm=communication(scenario),
            sequences=scenario.sequences_per_gpu,
            stages=stages,
        )
        engine = scenario.engine
        if engine is None or not engine.params:
            return step
        comm = 0.0 if step.comm is None else step.comm.seconds(batch)
        terms = packed([EngineTerms.of(step, p, comm) for p in engine.params])
        return replace(step, engine_terms=terms)

    def memory_seconds(self, context_tokens: int) -> float:
        total = self.weight_bytes + self.kv_bytes(context_tokens) + self.state_bytes
        return total / self.scenario.effective_bandwidth_bytes_per_s

    def compute_seconds(self, context_tokens: int) -> float | None:
        """FLOPs per GPU (TP splits every matmul and attention head) / peak FLOP/s."""
        if self.peak_flops_per_s is None:
            return None
        s = self.scenario
        return step_flops(s.model, s.batch, context_tokens) / s.tp / self.peak_flops_per_s

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
        """The budget and its limits per GPU: each stage's solved alone, the tightest
        kept, and under data-parallel attention the batch limit is every rank's together."""
        s = self.scenario
        if s.gpu is None:
            return None
        budget = math.floor(s.gpu.memory_bytes * Fraction(str(s.memory_utilization)))
        fits = [
            memory_fit(
                budget_bytes=budget,
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
        ranks = s.tp if s.dp_attention else 1
        return MemoryFit(
            budget_bytes=budget,
            stored_weight_bytes=max(f.stored_weight_bytes for f in fits),
            max_batch=min(batches) * ranks if batches else None,
            max_context=min(contexts) if contexts else None,
        )

    def fits(self, context_tokens: int, memory: MemoryFit) -> bool:
        """Every stage's GPUs hold their weights, the cache they keep and their state."""
        if len(self.stages) == 1:
            return memory.fits(self.kv_bytes(context_tokens, held=True), self.state_bytes)
        return all(
            stage.stored_weight_bytes
            + self._cache_bytes(stage.kv_units, context_tokens, held=True)
            + stage.state_bytes
            <= memory.budget_bytes
            for stage in self.stages
        )

    def row(
        self, context_tokens: int, is_crossover: bool = False, memory: MemoryFit | None = None
    ) -> Row:
        kv = self.kv_bytes(context_tokens)
        total = self.weight_bytes + kv + self.state_bytes
        memory_s = total / self.scenario.effective_bandwidth_bytes_per_s
        compute_s = self.compute_seconds(context_tokens)
        comm = CommSplit() if self.comm is None else self.comm.split(self.scenario.batch)
        comm_s = comm.total_s
        overhead_s = self.scenario.overhead_s
        seconds = max(memory_s, compute_s or 0.0) + comm_s + overhead_s
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
        state = scenario.sequences_per_gpu * sum(
            m.state_elements(scenario.attention_tp) for m in mixers
        )
        stages.append(
            Stage(
                layers=count,
                weight_bytes=_group_bytes(scenario, groups, batch),
                stored_weight_bytes=_group_bytes(scenario, groups, None),
                kv_units=units if scenario.pp == 1 else kv_units_for(scenario, mixers)[0],
                state_bytes=ceil_bytes(scenario.kv_dtype.bytes_for(state)),
            )
        )
    return tuple(stages)


def estimate(scenario: Scenario, contexts: Iterable[int], crossover_row: bool = True) -> Estimate:
    """Per-token latency at each context, with the crossover row added where it falls
    inside the requested range (rounded to the nearest token) unless ``crossover_row`` is
    False; crossover_context is given either way."""
    step = StepModel.of(scenario)
    points = sorted(set(contexts))
    if not points:
        raise InputError("no context to estimate at")
    crossover = step.crossover()
    marked = None
    if crossover_row and crossover is not None and points[0] <= crossover <= points[-1]:
        marked = math.floor(crossover + Fraction(1, 2))
        points = sorted({*points, marked})
    memory = step.memory(points[-1])
    rows = tuple(step.row(t, t == marked, memory) for t in points)
    moe = scenario.model.moe()
    unsplit = KVCurve.for_layers(scenario.model.mixers(), 1).elements_per_token
    return Estimate(
        scenario=scenario,
        weight_bytes_per_step=step.weight_bytes,
        kv_bytes_per_token=step.kv_bytes_per_token(),
        crossover_context=None if crossover is None else float(crossover),
        rows=rows,
        state_bytes_per_step=step.state_bytes,
        experts_touched=None
        if moe is None
        else float(expected_experts(moe.num_experts, moe.experts_per_token, scenario.batch)),
        kv_bytes_per_token_past_windows=ceil_bytes(
            step.kv_units.growing_elements_per_token * step.kv_unit_bytes
        ),
        kv_split_ways=unsplit / step.kv_curve.elements_per_token if unsplit else 1.0,
        memory=memory,
        ridge_batch=ridge_batch(scenario, points[-1]),
        flops_class=None if (peak := scenario.peak_flops()) is None else peak[0],
        stages=step.stages,
        experts_touched_per_gpu=None
        if moe is None or not scenario.ep
        else float(expected_experts(moe.num_experts, moe.experts_per_token, scenario.batch))
        / scenario.tp,
    )


def ridge_batch(scenario: Scenario, context_tokens: int) -> int | None:
    """The smallest batch whose step at this context takes longer to compute than to
    stream: where batching stops being free. Compute grows faster with the batch than
    bytes do, so a doubling search then bisection finds it."""
    peak = scenario.peak_flops()
    if peak is None:
        return None
    if scenario.model.moe() is None:
        return _dense_ridge(scenario, context_tokens, peak[1])
    return _searched_ridge(scenario, context_tokens)


def _searched_ridge(scenario: Scenario, context_tokens: int) -> int | None:
    """For MoE weights, which grow with the batch: doubling, then bisection."""

    def compute_bound(batch: int) -> bool:
        step = StepModel.of(replace(scenario, batch=batch))
        compute = step.compute_seconds(context_tokens) or 0.0
        return compute >= step.memory_seconds(context_tokens)

    high = 1
    while not compute_bound(high):
        if high >= MAX_BATCH:
            return None
        high = min(2 * high, MAX_BATCH)
    low = high // 2
    while high - low > 1:
        middle = (low + high) // 2
        low, high = (low, middle) if compute_bound(middle) else (middle, high)
    return high


def _dense_ridge(scenario: Scenario, context_tokens: int, peak_flops_per_s: int) -> int | None:
    """With weights that do not grow with the batch, memory time is W + B x (KV + state)
    and compute time B x FLOPs per sequence, so the crossing batch is one division."""
    one = StepModel.of(replace(scenario, batch=1))
    bandwidth = scenario.effective_bandwidth_bytes_per_s
    per_sequence_memory = (one.kv_bytes(context_tokens) + one.state_bytes) / bandwidth
    per_sequence_compute = (
        step_flops(scenario.model, 1, context_tokens) / scenario.tp / peak_flops_per_s
    )
    gain = per_sequence_compute - per_sequence_memory
    if gain <= 0:
        return None
    batch = max(1, math.ceil(one.weight_bytes / bandwidth / gain))
    return batch if batch <= MAX_BATCH else None
