"""A whole answer: time to first token (prefill) and the decode of N tokens after it.

Prefill is one forward pass over B prompts of P tokens. Like a decode step it streams every
weight once and pays its TP all-reduces; unlike one, it multiplies B x P tokens by them,
so a long prompt is compute-bound and a short one is not: its time is
max(compute, memory) + communication (+ the per-step overhead, once).

The prefill yields the first token, so N tokens take the prefill and N - 1 decode steps
(as serving counts a request's life: docs/serving.md); decode step i (i = 1..N-1) reads a
cache of P + i tokens. Its time is a piecewise-linear
function of the context (breaks at sliding windows, and where the step turns from memory- to
compute-bound), so the N steps are summed exactly, segment by segment, with the
arithmetic-series closed form: n x (t(first) + t(last)) / 2 on each straight piece.

The roofline total is the roofline prefill and steps; the expected total is the engine's
prefill as serving prices TTFT at concurrency 1 (answers/serving.py lone_ttft_s: the
prompt at the engine's prefill efficiency plus its per-request cost) and its expected steps.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from itertools import pairwise

from decodecalc.answers.estimate import estimate
from decodecalc.answers.headline import headline
from decodecalc.answers.notes import estimate_notes
from decodecalc.errors import InputError
from decodecalc.notes import Note, unique
from decodecalc.record import record
from decodecalc.scenarios.scenario import Scenario
from decodecalc.step.passes import Prefill, prefill
from decodecalc.step.step import Row, StepModel

MAX_GENERATED_TOKENS = 2**30


UNKNOWN_COMPUTE = Note(
    "prefill-compute-not-counted",
    "prefill counts memory traffic only: the GPU's FLOP/s are not known, so the compute "
    "that makes long prompts slower is left out",
)


@record
class Generation:
    scenario: Scenario
    prompt_tokens: int
    new_tokens: int
    decode_seconds: float
    first_step_seconds: float
    last_step_seconds: float
    prefill: Prefill
    notes: tuple[Note, ...] = ()
    """What a reader must know to read the figures right: the last step's (whether it
    fits, whether it is past the model's maximum context) and the prefill's own."""
    expected_decode_seconds: tuple[float, ...] = ()
    """The whole decode as the scenario's engine would take it: (expected, low, high)."""
    expected_first_step_seconds: float = 0.0
    expected_last_step_seconds: float = 0.0
    """The first and last decode steps at the headline step (answers/headline.py): the
    engine's expected step, the roofline's under --engine roofline. With one new token
    (no decode step) both are the step that would come next, at context P + 1."""
    expected_prefill_seconds: float = 0.0
    """Time to first token as the engine takes it: serving's TTFT at concurrency 1 (the
    prompt at the engine's prefill efficiency, plus its per-request cost); the roofline
    prefill under --engine roofline."""
    per_request_seconds: float = 0.0
    """The engine's per-request cost in expected_prefill_seconds (0 for the roofline)."""

    @property
    def decode_steps(self) -> int:
        """The first token comes from the prefill: N - 1 decode steps."""
        return self.new_tokens - 1

    @property
    def mean_step_seconds(self) -> float | None:
        """The roofline's mean decode step (None: one new token, no decode step)."""
        if not self.decode_steps:
            return None
        return self.decode_seconds / self.decode_steps

    @property
    def expected_mean_step_seconds(self) -> float | None:
        """The headline's mean decode step (None: one new token, no decode step)."""
        if not self.decode_steps:
            return None
        return self.expected_decode_seconds[0] / self.decode_steps

    @property
    def prefill_flops(self) -> int:
        return self.prefill.flops

    @property
    def prefill_seconds(self) -> float:
        """Time to first token."""
        return self.prefill.seconds

    @property
    def total_seconds(self) -> float:
        return self.prefill.seconds + self.decode_seconds

    @property
    def expected_tokens_per_s(self) -> float | None:
        """Tokens per second of the decode at the engine's expected steps (the roofline's
        where the engine is 'roofline'): the headline rate, one token a mean step (None:
        no decode step, the prefill gives the only token)."""
        mean = self.expected_mean_step_seconds
        return None if mean is None else 1 / mean

    @property
    def expected_total_seconds(self) -> float:
        """The engine's prefill and its expected decode: serving's e2e at concurrency 1."""
        return self.expected_prefill_seconds + self.expected_decode_seconds[0]


def _breakpoints(step: StepModel, low: int, high: int) -> list[int]:
    """Contexts where the step time may change slope: window sizes and chunk boundaries
    (kvcache.KVCurve.breakpoints), and where memory and compute time cross."""
    edges = [low, *step.kv_units.breakpoints(low, high), high]
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


def decode_seconds(
    step: StepModel, first_context: int, steps: int, pick: Callable[[Row], float] | None = None
) -> float:
    """Sum of step times over contexts first_context .. first_context + steps - 1, exact
    for the roofline step (the default ``pick``). For an engine's expected step (another
    ``pick``) the same pieces are used; that figure also bends where the engine's own
    memory time meets compute, where it meets the roofline floor and where the median or
    the band's ends change hands between profiles, so a piece whose middle step is off its
    straight line is halved until each part is straight (a bend costs a few dozen rows)."""
    time_of = pick or _roofline_step
    if steps == 0:
        return 0.0
    low, high = first_context, first_context + steps - 1
    points = _breakpoints(step, low, high)
    total = 0.0
    start = points[0]
    for end in points[1:]:
        if end > start:
            total += _straight_sum(step, start, end - 1, time_of)
        start = end
    return total + time_of(step.row(high))


STRAIGHT = 1e-7
"""How far (relative) a piece's middle step may sit off the line through its ends and the
piece still count as straight: the integer byte counts alone bend it by about 1e-9."""


def _straight_sum(step: StepModel, first: int, last: int, time_of: Callable[[Row], float]) -> float:
    """Steps first .. last summed by the trapezoid rule, halved where the middle step
    shows a bend."""
    t0, t1 = time_of(step.row(first)), time_of(step.row(last))
    count = last - first + 1
    if count <= 2:
        return t0 if count == 1 else t0 + t1
    middle = (first + last) // 2
    line = t0 + (t1 - t0) * (middle - first) / (last - first)
    if abs(time_of(step.row(middle)) - line) <= STRAIGHT * abs(line):
        return count * (t0 + t1) / 2
    return _straight_sum(step, first, middle, time_of) + _straight_sum(
        step, middle + 1, last, time_of
    )


def _roofline_step(row: Row) -> float:
    return row.seconds_per_token


def expected_decode(step: StepModel, first_context: int, steps: int) -> tuple[float, ...]:
    """The decode summed with the engine's expected step, and with its band's low and high
    ends: (expected, low, high) seconds for the whole answer (see decode_seconds for how
    close the sum is)."""

    def picker(index: int) -> Callable[[Row], float]:
        def pick(row: Row) -> float:
            e = row.expected
            return (
                row.seconds_per_token
                if e is None
                else (e.seconds, e.low_seconds, e.high_seconds)[index]
            )

        return pick

    return tuple(decode_seconds(step, first_context, steps, picker(i)) for i in range(3))


def generate(scenario: Scenario, prompt_tokens: int, new_tokens: int) -> Generation:
    """A whole answer: a prompt of at least one token (its prefill yields the first new
    token, so an empty prompt would have no pass to come from) and 1 to 2^30 new tokens."""
    if not 1 <= new_tokens <= MAX_GENERATED_TOKENS:
        raise InputError(f"tokens {new_tokens} must be from 1 to {MAX_GENERATED_TOKENS:,}")
    if prompt_tokens < 1:
        raise InputError(
            f"prompt {prompt_tokens}: a prompt needs at least one token (its prefill yields "
            "the first new token)"
        )
    step = StepModel.of(scenario)
    prompt = prefill(step, prompt_tokens)
    steps = new_tokens - 1
    start, end = prompt_tokens + 1, max(prompt_tokens + 1, prompt_tokens + steps)
    first, last = step.row(start), step.row(end)
    engine_prefill, per_request = _engine_prefill(scenario, prompt, prompt_tokens, new_tokens)
    return Generation(
        scenario=scenario,
        prompt_tokens=prompt_tokens,
        new_tokens=new_tokens,
        decode_seconds=decode_seconds(step, start, steps),
        first_step_seconds=first.seconds_per_token,
        last_step_seconds=last.seconds_per_token,
        prefill=prompt,
        notes=_notes(scenario, prompt, prompt_tokens + new_tokens - 1),
        expected_decode_seconds=expected_decode(step, start, steps),
        expected_first_step_seconds=headline(first, scenario).seconds,
        expected_last_step_seconds=headline(last, scenario).seconds,
        expected_prefill_seconds=engine_prefill,
        per_request_seconds=per_request,
    )


def _engine_prefill(
    scenario: Scenario, prompt: Prefill, prompt_tokens: int, new_tokens: int
) -> tuple[float, float]:
    """The engine's time to first token and its per-request cost in it: serving's TTFT at
    concurrency 1 for the batch's prompts sent together; the roofline prefill (and no
    per-request cost) under --engine roofline."""
    engine = scenario.engine
    if engine.is_roofline:
        return prompt.seconds, 0.0
    from decodecalc.answers.serving import lone_ttft_s, per_request_seconds
    from decodecalc.engine.scheduler import scheduler_limits
    from decodecalc.scenarios.workload import MAX_TOKENS, Workload

    if prompt_tokens > MAX_TOKENS:
        raise InputError(
            f"a prompt of {prompt_tokens:,} tokens: {engine.id}'s prefill is priced as serving "
            f"prices a request, of at most {MAX_TOKENS:,} prompt tokens (--engine roofline "
            "times a longer one)"
        )
    # A request's output is at most MAX_TOKENS: a longer answer's first token comes as
    # that request's would (before, a -n past it was refused as a serving workload)
    output = min(max(2, new_tokens), MAX_TOKENS)
    lone = Workload(input_len=prompt_tokens, output_len=output, concurrency=1)
    limits = scheduler_limits(engine, scenario.gpu)
    ttft = lone_ttft_s(scenario, lone, limits, prompts=scenario.batch)
    return ttft, per_request_seconds(engine)


def _notes(scenario: Scenario, prompt: Prefill, last_context: int) -> tuple[Note, ...]:
    """The notes of the last decode step's estimate (the longest context: whether it fits,
    whether it is past the model's maximum) and the prefill's own."""
    last = estimate(scenario, [last_context], crossover_row=False)
    from decodecalc.answers.serving import prefill_unmeasured

    # A profile without prefill figures says so, and on a GPU without FLOP/s its note
    # already says the prompt's compute is left out: UNKNOWN_COMPUTE would say it twice.
    unmeasured = prefill_unmeasured(scenario) if prompt.tokens else None
    if unmeasured is not None:
        own = [unmeasured]
    else:
        own = [UNKNOWN_COMPUTE] if prompt.tokens and prompt.compute_seconds is None else []
    return unique([*estimate_notes(last), *own])
