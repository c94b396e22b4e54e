"""A whole answer: time to first token (prefill) and the decode of N tokens after it.

Decode step i (i = 0..N-1) reads a cache of P + i tokens. Its time is a piecewise-linear
function of the context (breaks at sliding windows, and where the step turns from memory- to
compute-bound), so the N steps are summed exactly, segment by segment, with the
arithmetic-series closed form: N x (t(first) + t(last)) / 2 on each straight piece.
"""

from __future__ import annotations

import math
from itertools import pairwise

from decodecalc.errors import InputError
from decodecalc.physics.compute import matmul_params
from decodecalc.physics.estimator import Scenario, StepModel
from decodecalc.record import record

MAX_GENERATED_TOKENS = 2**30


@record
class Generation:
    scenario: Scenario
    prompt_tokens: int
    new_tokens: int
    decode_seconds: float
    first_step_seconds: float
    last_step_seconds: float
    prefill_flops: int
    prefill_seconds: float | None
    """Prefill FLOPs / peak FLOP/s: compute-bound by construction (None: rate unknown)."""

    @property
    def mean_step_seconds(self) -> float:
        return self.decode_seconds / self.new_tokens


def prefill_flops(scenario: Scenario, prompt_tokens: int) -> int:
    """All B prompts: 2 x matmul params x P plus causal attention over each prompt."""
    model = scenario.model
    attention = sum(m.prefill_attention_flops(prompt_tokens) for m in model.mixers())
    return scenario.batch * (2 * matmul_params(model) * prompt_tokens + attention)


def _breakpoints(step: StepModel, low: int, high: int) -> list[int]:
    """Contexts where the step time may change slope: window sizes, and where memory and
    compute time cross."""
    windows = {m.sliding_window for m in step.scenario.model.mixers() if m.sliding_window}
    edges = [low, *sorted(w for w in windows if low < w < high), high]
    cuts = set(edges)
    for a, b in pairwise(edges):
        gap_a, gap_b = _gap(step, a), _gap(step, b)
        if gap_a is not None and gap_b is not None and (gap_a > 0) != (gap_b > 0):
            crossing = a + (b - a) * gap_a / (gap_a - gap_b)
            cuts.update({math.floor(crossing), math.floor(crossing) + 1})
    return sorted(c for c in cuts if low <= c <= high)


def _gap(step: StepModel, context: int) -> float | None:
    compute = step.compute_seconds(context)
    return None if compute is None else step.memory_seconds(context) - compute


def decode_seconds(step: StepModel, first_context: int, steps: int) -> float:
    """Exact sum of step times over contexts first_context .. first_context + steps - 1."""
    low, high = first_context, first_context + steps - 1
    points = _breakpoints(step, low, high)
    total = 0.0
    start = points[0]
    for end in points[1:]:
        # [start, end] is straight: sum its end-1 - start + 1 terms, then move on.
        count = end - start
        if count > 0:
            t0 = step.row(start).seconds_per_token
            t1 = step.row(end - 1).seconds_per_token
            total += count * (t0 + t1) / 2
        start = end
    return total + step.row(high).seconds_per_token


def generate(scenario: Scenario, prompt_tokens: int, new_tokens: int) -> Generation:
    if not 1 <= new_tokens <= MAX_GENERATED_TOKENS:
        raise InputError(f"tokens {new_tokens} must be from 1 to {MAX_GENERATED_TOKENS:,}")
    step = StepModel.of(scenario)
    flops = prefill_flops(scenario, prompt_tokens)
    peak = scenario.peak_flops()
    return Generation(
        scenario=scenario,
        prompt_tokens=prompt_tokens,
        new_tokens=new_tokens,
        decode_seconds=decode_seconds(step, prompt_tokens, new_tokens),
        first_step_seconds=step.row(prompt_tokens).seconds_per_token,
        last_step_seconds=step.row(prompt_tokens + new_tokens - 1).seconds_per_token,
        prefill_flops=flops,
        prefill_seconds=None if peak is None else flops / scenario.tp / peak[1],
    )
