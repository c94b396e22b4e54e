"""Which deployment meets the targets, and at what cost (docs/plan.md).

Each candidate is a resolved Scenario (a GPU type, TP, weight and KV formats). Against a
latency target at a context, a throughput target and the memory it must fit in, a
candidate gets its batch: the given one, or the largest that meets the latency target and
fits, up to a cap, since a step's cost per token only falls as its batch grows. Replicas
of the TP group then carry the throughput. Both solves are exact: the expected step time
grows with the batch and with the context (more KV bytes, more FLOPs, more experts
touched), and so does the memory a batch holds, so integer bisection on the step finds
the largest batch and the largest context that meet the target.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Callable, Iterable, Sequence

from decodecalc.answers.cost import CostEnergy, cost_and_energy
from decodecalc.record import record
from decodecalc.scenarios.scenario import MAX_BATCH, Scenario
from decodecalc.step.memory import MemoryFit
from decodecalc.step.step import StepModel


@record
class Targets:
    """What a deployment must do. Fit in memory is always required."""

    context: int
    """The context (prompt plus output so far) the latency target holds at."""
    max_seconds_per_token: float | None = None
    """Per sequence: the expected step at the context (None: no latency target)."""
    min_throughput: float | None = None
    """Output tokens per second over every replica (None: no throughput target)."""
    batch: int | None = None
    """Sequences per step (None: the largest that meets the latency target, up to max_batch)."""
    max_batch: int = 256
    """The most sequences an engine runs at once when the batch is solved."""
    max_gpus: int = 64
    """The most GPUs the replicas may use in all."""


@record
class Miss:
    """One target an option fails, and by how much."""

    target: str
    """'latency', 'throughput' or 'fit'."""
    value: float
    limit: float
    message: str

    @property
    def by(self) -> float:
        """How far off, as a fraction of the limit (0.24: 24% over a maximum or under a minimum)."""
        return abs(self.value - self.limit) / self.limit


@record
class Option:
    """A candidate deployment at its batch, with its figures and the targets it misses."""

    scenario: Scenario
    """At the option's batch."""
    seconds_per_token: float
    """The expected step at the target context (the roofline where the engine is none)."""
    fits: bool
    replicas: int
    """Copies of the TP group that carry the throughput target (1 without one)."""
    costs: CostEnergy
    max_batch: int
    """The largest batch that fits and meets the latency target at the context (0: none)."""
    max_context: int
    """The largest context that fits and meets the latency target at the option's batch
    (up to the model's maximum context; 0: none)."""
    misses: tuple[Miss, ...] = ()

    @property
    def meets(self) -> bool:
        return not self.misses

    @property
    def gpus(self) -> int:
        return self.scenario.gpus * self.replicas

    @property
    def throughput(self) -> float:
        """Output tokens per second over every replica."""
        return self.replicas * self.scenario.batch / self.seconds_per_token


def evaluate(scenario: Scenario, targets: Targets) -> Option:
    """A candidate against the targets: its batch, replicas, cost and what it misses."""
    context, limit = targets.context, targets.max_seconds_per_token
    # The batch search and the answer ask for the same batches' steps: build each once.
    step_at = functools.cache(lambda batch: StepModel.at(scenario, batch))
    max_batch = largest_batch(step_at, context, limit)
    batch = targets.batch or max(1, min(max_batch, targets.max_batch))
    step = step_at(batch)
    at_batch = step.scenario
    memory = step.memory(context)
    seconds, fits = step_seconds(step, context), _fits(step, memory, context)
    misses = []
    if not fits and memory is not None:
        misses.append(_fit_miss(step, memory, context))
    if limit is not None and seconds > limit:
        misses.append(
            Miss(
                "latency",
                seconds * 1000,
                limit * 1000,
                f"{seconds * 1000:,.1f} ms per token at batch {batch:,} > "
                f"{limit * 1000:,g} ms (+{_percent(seconds / limit - 1)})",
            )
        )
    replicas = 1
    if targets.min_throughput is not None:
        per_replica = batch / seconds
        replicas = math.ceil(targets.min_throughput / per_replica)
        group = scenario.gpus
        most = max(1, targets.max_gpus // group)
        if replicas > most:
            best = most * per_replica
            misses.append(
                Miss(
                    "throughput",
                    best,
                    targets.min_throughput,
                    f"{best:,.0f} tok/s from {most} replica{'s' if most > 1 else ''} of "
                    f"{group} GPU{'s' if group > 1 else ''} (the most {targets.max_gpus} "
                    f"GPUs hold) < {targets.min_throughput:,g} tok/s "
                    f"(-{_percent(1 - best / targets.min_throughput)})",
                )
            )
            replicas = most
    rates = scenario.rates
    return Option(
        scenario=at_batch,
        seconds_per_token=seconds,
        fits=fits,
        replicas=replicas,
        costs=cost_and_energy(
            seconds, batch, scenario.gpus, rates.price_per_gpu_hour, rates.power_w
        ),
        max_batch=max_batch,
        max_context=largest_context(step, limit, context),
        misses=tuple(misses),
    )


def largest_batch(step_at: Callable[[int], StepModel], context: int, limit: float | None) -> int:
    """The largest batch that fits at the context and whose expected step meets ``limit``
    (0: not even one sequence); ``step_at``: a candidate's step at a batch. Memory gives
    the fitting batch in closed form, the latency limit a search."""
    memory = step_at(1).memory(context)
    fitting = MAX_BATCH if memory is None or memory.max_batch is None else memory.max_batch
    fitting = min(fitting, MAX_BATCH)
    if limit is None or fitting < 1:
        return fitting
    return max(0, largest(1, fitting, lambda batch: step_seconds(step_at(batch), context), limit))


def largest_context(step: StepModel, limit: float | None, context: int) -> int:
    """The largest context, up to the model's maximum, at which the step's batch fits and
    its expected step meets ``limit`` (0: none). Memory gives the fitting context in closed
    form, the latency limit a search."""
    memory = step.memory(context)
    cap = step.scenario.model.max_context_tokens
    if memory is not None and memory.max_context is not None:
        cap = min(cap, memory.max_context)
    if limit is None or cap < 0:
        return max(cap, 0)
    return max(0, largest(0, cap, lambda context: step_seconds(step, context), limit))


def plan(candidates: Iterable[Scenario], targets: Targets) -> list[Option]:
    """Every candidate evaluated: those meeting every target first, cheapest first (cost
    per million tokens, then GPUs, then latency); the others after, fewest misses first and
    then the nearest (the least missed by, in all)."""
    options = [evaluate(s, targets) for s in candidates]
    return sorted(options, key=_rank)


@record
class Shortfall:
    """The options that miss one target: how many, and the one that comes closest."""

    target: str
    """'latency', 'throughput' or 'fit' (Miss.target)."""
    count: int
    closest: Option
    miss: Miss
    """The closest option's miss of this target."""


def shortfalls(options: Sequence[Option]) -> tuple[Shortfall, ...]:
    """Each missed target with the options that miss it (one missing several counts under
    each), most missed first: a planner reads which target rules out most, and how near
    the nearest option comes; where every option misses it, that is the best any reaches."""
    found: dict[str, list[tuple[Miss, Option]]] = {}
    for option in options:
        for miss in option.misses:
            found.setdefault(miss.target, []).append((miss, option))
    result = []
    for target, misses in sorted(found.items(), key=lambda item: -len(item[1])):
        miss, closest = min(misses, key=lambda pair: pair[0].by)
        result.append(Shortfall(target, len(misses), closest, miss))
    return tuple(result)


def _rank(o: Option) -> tuple[bool, int, float, bool, float, int, float]:
    cost = o.costs.cost_per_million_tokens
    return (
        not o.meets,
        len(o.misses),
        sum(m.by for m in o.misses),  # the nearest misses first: an impossible target's best
        cost is None,
        cost or 0.0,
        o.gpus,
        o.seconds_per_token,
    )


def step_seconds(step: StepModel, context: int) -> float:
    """The expected step at a context (the roofline where the engine is none)."""
    row = step.row(context)
    return row.seconds_per_token if row.expected is None else row.expected.seconds


def _fits(step: StepModel, memory: MemoryFit | None, context: int) -> bool:
    return memory is None or memory.fits(step.kv_bytes(context), step.state_bytes)


def largest(low: int, high: int, value: Callable[[int], float], limit: float) -> int:
    """The largest n in [low, high] with value(n) <= limit, for value non-decreasing in n;
    low - 1 when there is none. Exact, in few calls: each probe is where the straight line
    through the bracket's ends crosses the limit (regula falsi, about right at once for a
    step time nearly linear in the batch or the context), and a probe that fails to halve
    the bracket is followed by a bisection, so no search takes more than about twice
    log2(high - low) calls."""
    at_good = value(low) if high >= low else limit + 1
    if at_good > limit:
        return low - 1
    at_bad = value(high)
    if at_bad <= limit:
        return high
    good, bad = low, high
    while bad - good > 1:
        width = bad - good
        for bisect in (False, True):
            if bisect and bad - good <= width // 2:
                break
            if bisect or at_bad <= at_good:
                probe = (good + bad) // 2
            else:
                probe = good + math.floor((limit - at_good) * (bad - good) / (at_bad - at_good))
            probe = min(max(probe, good + 1), bad - 1)
            at_probe = value(probe)
            if at_probe <= limit:
                good, at_good = probe, at_probe
            else:
                bad, at_bad = probe, at_probe
            if bad - good <= 1:
                break
    return good


def _fit_miss(step: StepModel, memory: MemoryFit, context: int) -> Miss:
    need = memory.stored_weight_bytes + step.kv_bytes(context) + step.state_bytes
    batch = step.scenario.batch
    return Miss(
        "fit",
        need,
        memory.budget_bytes,
        f"needs {need / 1e9:,.1f} GB per GPU at batch {batch:,} and {context:,} tokens, "
        f"{memory.budget_bytes / 1e9:,.1f} GB usable (+{_percent(need / memory.budget_bytes - 1)})",
    )


def _percent(fraction: float) -> str:
    """How far off, in whole percent, or to two figures under 10% (a near miss reads
    0.12%, never 0%)."""
    return f"{fraction:,.0%}" if fraction >= 0.1 else f"{fraction * 100:.2g}%"
