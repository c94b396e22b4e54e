"""The estimate: a scenario's per-step figures at each requested context, with the crossover
row and the batch at which the step turns compute-bound (docs/physics.md sections 1 to 5)."""

from __future__ import annotations

import math
from collections.abc import Iterable
from fractions import Fraction

from decodecalc.answers.cost import CostEnergy, cost_factors, scaled
from decodecalc.answers.headline import Headline, headline
from decodecalc.answers.notes import cost_notes, estimate_notes
from decodecalc.errors import InputError
from decodecalc.model.dtypes import ceil_bytes
from decodecalc.model.kvcache import KVCurve
from decodecalc.notes import Note
from decodecalc.record import record, replace
from decodecalc.scenarios.scenario import Scenario
from decodecalc.step.memory import MemoryFit
from decodecalc.step.parallelism import Communication
from decodecalc.step.ridge import ridge_batch
from decodecalc.step.step import Row, Stage, StepModel


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
    experts_read_busiest_gpu: float | None = None
    """Expected expert replicas the busiest GPU reads per MoE layer with --ep (the expected
    maximum over GPUs, step/expert_balance.py): what the step's weight bytes count."""
    headlines: tuple[Headline, ...] = ()
    """Per row, the step users act on: the engine's expected one, else the roofline."""
    costs: tuple[CostEnergy | None, ...] = ()
    """Per row, money and energy per output token at its headline step (None: neither a
    price nor a power is known)."""
    notes: tuple[Note, ...] = ()
    """What a reader must know to read the rows right, the cost notes with them."""
    communication: Communication | None = None
    """The transfers each step makes and over which link (None: no link, none counted)."""


def busiest_gpu_experts(s: Scenario) -> float:
    """The busiest --ep GPU's expected expert replicas per MoE layer at the batch."""
    from decodecalc.step.expert_balance import busiest_slots

    moe = s.model.moe()
    assert moe is not None
    return busiest_slots(
        moe.num_experts, moe.experts_per_token, s.batch, s.tp, s.eplb_redundant, moe.zero_experts
    )


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
    unsplit = KVCurve.for_layers(scenario.model.mixer_counts(), 1).elements_per_token
    est = Estimate(
        scenario=scenario,
        weight_bytes_per_step=step.weight_bytes,
        kv_bytes_per_token=step.kv_bytes_per_token(),
        crossover_context=None if crossover is None else float(crossover),
        rows=rows,
        state_bytes_per_step=step.state_bytes,
        experts_touched=None if moe is None else float(moe.touched(scenario.batch)),
        kv_bytes_per_token_past_windows=ceil_bytes(
            step.kv_units.growing_elements_per_token * step.kv_unit_bytes
        ),
        kv_split_ways=unsplit / step.kv_curve.elements_per_token if unsplit else 1.0,
        memory=memory,
        ridge_batch=ridge_batch(scenario, points[-1], step),
        flops_class=None if (peak := scenario.peak_flops()) is None else peak[0],
        stages=step.stages,
        communication=step.comm,
        experts_touched_per_gpu=None
        if moe is None or not scenario.ep
        else float(moe.touched(scenario.batch)) / scenario.tp,
        experts_read_busiest_gpu=None
        if moe is None or not scenario.ep
        else busiest_gpu_experts(scenario),
    )
    heads = tuple(headline(row, scenario) for row in rows)
    factors = cost_factors(scenario)
    # Each figure is linear in the step: the factors per ms times the row's headline ms.
    costs = tuple(
        None if factors is None else scaled(factors, head.seconds * 1000) for head in heads
    )
    return replace(
        est,
        headlines=heads,
        costs=costs,
        notes=(*estimate_notes(est), *cost_notes(scenario)),
    )
