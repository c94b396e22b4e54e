"""The ridge batch: the smallest batch whose step at a context takes longer to compute than
to stream, where batching stops being free (docs/physics.md section 5)."""

from __future__ import annotations

import math

from decodecalc.scenarios.fields import MAX_BATCH
from decodecalc.scenarios.scenario import Scenario
from decodecalc.step.flops import step_flops
from decodecalc.step.step import StepModel


def ridge_batch(
    scenario: Scenario, context_tokens: int, step: StepModel | None = None
) -> int | None:
    """The smallest batch whose step at this context takes longer to compute than to
    stream: where batching stops being free. Compute grows faster with the batch than
    bytes do, so a doubling search then bisection finds it. ``step``: the scenario's own,
    where the caller has built it, taken where the search asks for the scenario's batch."""
    peak = scenario.peak_flops()
    if peak is None:
        return None
    if scenario.model.moe() is None:
        return _dense_ridge(scenario, context_tokens, peak[1], step)
    return _searched_ridge(scenario, context_tokens, step)


def _at(scenario: Scenario, batch: int, step: StepModel | None) -> StepModel:
    if step is not None and step.scenario.batch == batch:
        return step
    return StepModel.at(scenario, batch)


def _searched_ridge(
    scenario: Scenario, context_tokens: int, own: StepModel | None = None
) -> int | None:
    """For MoE weights, which grow with the batch: doubling, then bisection."""

    def compute_bound(batch: int) -> bool:
        step = _at(scenario, batch, own)
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


def _dense_ridge(
    scenario: Scenario, context_tokens: int, peak_flops_per_s: int, own: StepModel | None = None
) -> int | None:
    """With weights that do not grow with the batch, memory time is W + B x (KV + state)
    and compute time B x FLOPs per sequence, so the crossing batch is one division."""
    one = _at(scenario, 1, own)
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
