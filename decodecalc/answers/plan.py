"""Which deployment meets the targets, and at what cost (docs/plan.md).

Each candidate is a resolved Scenario (a GPU type, TP, weight and KV formats). Against a
latency target at a context, a throughput target and the memory it must fit in, a
candidate gets its batch: the given one, or the largest that meets the latency target and
fits, up to a cap, since a step's cost per token only falls as its batch grows. Replicas
of the TP group then carry the throughput. Both solves are exact: the expected step time
grows with the batch and with the context (more KV bytes, more FLOPs, more experts
touched), and so does the memory a batch holds, so integer bisection on the step finds
the largest batch and the largest context that meet the target.

Given a workload (the requests' input and output lengths and the load: requests in flight
or arriving per second), a candidate is instead the server ``decodecalc serving`` prices:
its TPOT against the latency target (prefill chunks included), its output throughput per
replica, and its cost from that throughput, so what plan ranks is what serving and check
then report for the same deployment and workload.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Callable, Iterable, Sequence
from typing import TYPE_CHECKING

from decodecalc.answers.cost import CostEnergy, cost_and_energy
from decodecalc.answers.serving import (
    Refused,
    ServingResult,
    refuse_past_max_context,
    serve,
    step_prices,
)
from decodecalc.engine.scheduler import SchedulerLimits, scheduler_limits
from decodecalc.errors import InputError
from decodecalc.record import record, replace
from decodecalc.resolving.resolve import kernel_rated
from decodecalc.scenarios.fields import MAX_BATCH
from decodecalc.scenarios.scenario import Scenario
from decodecalc.scenarios.workload import Workload
from decodecalc.step.memory import MemoryFit
from decodecalc.step.step import StepModel

if TYPE_CHECKING:
    from decodecalc.answers.disaggregated import DisaggregatedResult, Pools
    from decodecalc.answers.serving import _Steps
    from decodecalc.loading.catalog import Catalog
    from decodecalc.model.hardware import Link
    from decodecalc.model.model import Model
    from decodecalc.notes import Note
    from decodecalc.scenarios.spec import ScenarioSpec

NODE_GPUS = 8
"""The largest TP group plan tries by default: one node's NVLink or Infinity Fabric domain."""
DEFAULT_WEIGHTS = ("fp8", "int4-g128")
"""Weight formats tried besides the model's own, where they store fewer bits than it."""
DEFAULT_KV = ("fp8",)
"""KV formats tried besides the default (the weights' compute format, else BF16)."""


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
    workload: Workload | None = None
    """The requests a server runs (None: a decode step at ``context`` and the batch)."""
    max_ttft_seconds: float | None = None
    """Under a workload: the mean time to first token (None: no TTFT target)."""
    disaggregated: bool = False
    """Under a workload: also try prefill and decode pools (DISAGGREGATED_SPLITS) of the
    best aggregated layouts."""
    kv_link: Link | None = None
    """What carries the KV between the pools of a disaggregated option."""
    memory_utilization: float | None = None
    """The server's share of GPU memory where the user gave one (None: the engine's
    scheduler default, as serving takes it)."""


@record
class Miss:
    """One target an option fails, and by how much."""

    target: str
    """'latency', 'ttft', 'throughput', 'load' or 'fit'."""
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
    seconds_per_token: float | None
    """The expected step at the target context (the roofline where the engine is none);
    under a workload, the server's TPOT (None: the server cannot run the workload)."""
    fits: bool
    replicas: int
    """Copies of the TP group that carry the throughput target (1 without one)."""
    costs: CostEnergy
    max_batch: int | None
    """The largest batch that fits and meets the latency target at the context (0: none;
    None under a workload, whose load sets the batch)."""
    max_context: int | None
    """The largest context that fits and meets the latency target at the option's batch
    (up to the model's maximum context; 0: none; None under a workload)."""
    misses: tuple[Miss, ...] = ()
    served: ServingResult | DisaggregatedResult | None = None
    """Under a workload: the server's steady state, one replica."""
    pools: Pools | None = None
    """A disaggregated option's prefill and decode pools (the scenario is each worker's)."""

    @property
    def meets(self) -> bool:
        return not self.misses

    @property
    def gpus(self) -> int:
        per_replica = self.scenario.gpus if self.pools is None else self.pools.gpus
        return per_replica * self.replicas

    @property
    def throughput(self) -> float:
        """Output tokens per second over every replica."""
        return self.replicas * _per_replica(self)


def _per_replica(o: Option) -> float:
    """Output tokens per second of one replica: the server's under a workload, else the
    batch's tokens per step."""
    if o.served is not None:
        return o.served.output_throughput_tokens_per_s
    return 0.0 if o.seconds_per_token is None else o.scenario.batch / o.seconds_per_token


def evaluate(scenario: Scenario, targets: Targets) -> Option:
    """A candidate against the targets: its batch, replicas, cost and what it misses."""
    scenario = kernel_rated(scenario, None)
    if targets.workload is not None:
        return _evaluate_served(scenario, targets, targets.workload)
    context, limit = targets.context, targets.max_seconds_per_token
    # The batch search and the answer ask for the same batches' steps: build each once.
    step_at = functools.cache(lambda batch: StepModel.at(scenario, batch))
    max_batch = largest_batch(step_at, context, limit)
    batch = targets.batch or max(1, min(max_batch, targets.max_batch))
    step = step_at(batch)
    at_batch = step.scenario
    memory = step.memory(context)
    seconds = step_seconds(step, context)
    fits = memory is None or step.fits(context, memory)
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
    replicas = _replicas(batch / seconds, scenario.gpus, targets, misses)
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


def _replicas(per_replica: float, group: int, targets: Targets, misses: list[Miss]) -> int:
    """Replicas of a group of ``group`` GPUs that carry the throughput target at
    ``per_replica`` output tokens per second each (1 without a target); too many for
    --max-gpus is a miss, and the most it holds are taken."""
    if targets.min_throughput is None:
        return 1
    replicas = math.ceil(targets.min_throughput / per_replica)
    most = max(1, targets.max_gpus // group)
    if replicas <= most:
        return replicas
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
    return most


def _evaluate_served(scenario: Scenario, targets: Targets, workload: Workload) -> Option:
    """A candidate as the server serving prices under the workload: its TPOT against the
    latency target, its output throughput per replica for the replicas, its cost per
    output token from that throughput (GPU-seconds per token at the operating point). A
    server that cannot run the workload (no room for a request, arrivals past its
    saturation) misses that target and is priced at nothing."""
    return _served_option(
        scenario, targets, scenario.gpus, lambda limits: serve(scenario, workload, limits)
    )


def _served_option(
    scenario: Scenario,
    targets: Targets,
    gpus: int,
    run: Callable[[SchedulerLimits], ServingResult | DisaggregatedResult],
    pools: Pools | None = None,
) -> Option:
    """An option from a server ``run`` under the targets' workload on ``gpus`` GPUs a
    replica (one pool, or a disaggregated one's ``pools``)."""
    workload = targets.workload
    assert workload is not None
    limits = scheduler_limits(
        scenario.engine, scenario.gpu, memory_utilization=targets.memory_utilization
    )
    try:
        served = run(limits)
    except Refused as exc:
        nothing = CostEnergy(None, None, None)
        miss = Miss(exc.target, exc.value, exc.limit, str(exc))
        fits = exc.target != "fit"
        return Option(scenario, None, fits, 1, nothing, None, None, (miss,), pools=pools)
    misses = _served_misses(served, targets, workload)
    per_replica = served.output_throughput_tokens_per_s
    replicas = _replicas(per_replica, gpus, targets, misses)
    rates = scenario.rates
    return Option(
        scenario=replace(scenario, batch=max(1, math.ceil(served.decode_batch))),
        seconds_per_token=served.tpot_s,
        fits=True,
        replicas=replicas,
        costs=cost_and_energy(1.0, per_replica, gpus, rates.price_per_gpu_hour, rates.power_w),
        max_batch=None,
        max_context=None,
        misses=tuple(misses),
        served=served,
        pools=pools,
    )


def _served_misses(
    served: ServingResult | DisaggregatedResult, targets: Targets, workload: Workload
) -> list[Miss]:
    """The server's TPOT and TTFT against their targets under the workload."""
    misses = []
    for target, name, value, limit in (
        ("latency", "TPOT", served.tpot_s, targets.max_seconds_per_token),
        ("ttft", "TTFT", served.ttft_s, targets.max_ttft_seconds),
    ):
        if limit is not None and value > limit:
            misses.append(
                Miss(
                    target,
                    value * 1000,
                    limit * 1000,
                    f"{value * 1000:,.1f} ms {name} at {_load(workload)} > "
                    f"{limit * 1000:,g} ms (+{_percent(value / limit - 1)})",
                )
            )
    return misses


def _load(w: Workload) -> str:
    if w.concurrency is not None:
        return f"concurrency {w.concurrency:,}"
    return f"{w.request_rate:g} requests/s"


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
    then the nearest (the least missed by, in all). Options whose figures are identical
    appear once (the first in that order). A context past the model's maximum is refused,
    as serving refuses a request past it: no server of the model runs it, so no deployment
    can be planned for it."""
    candidates = list(candidates)
    if targets.workload is None:
        for model in {s.model.id: s.model for s in candidates}.values():
            what = f"context {targets.context:,} tokens"
            refuse_past_max_context(model, what, targets.context, " (plan a context up to it)")
    options = sorted((evaluate(s, targets) for s in candidates), key=_rank)
    if targets.disaggregated and targets.workload is not None:
        options = sorted([*options, *_disaggregated(options, targets)], key=_rank)
    seen: set[tuple[object, ...]] = set()
    distinct = []
    for option in options:  # twins (EP or not, where EP changes nothing) appear once
        key = _figures(option)
        if key not in seen:
            seen.add(key)
            distinct.append(option)
    return distinct


def _figures(o: Option) -> tuple[object, ...]:
    """What a reader of an answer sees of it, less the expert layout: two options alike in
    all of it are one answer."""
    s = o.scenario
    return (
        s.gpu.id if s.gpu else s.bandwidth_bytes_per_s,
        s.tp,
        s.pp,
        s.dp_attention,
        _formats(s),
        s.batch,
        o.seconds_per_token,
        o.replicas,
        o.costs.cost_per_million_tokens,
        o.fits,
        o.max_batch,
        o.max_context,
        tuple(m.message for m in o.misses),
        None
        if o.pools is None
        else (
            o.pools.prefill_workers,
            o.pools.decode_workers,
            o.pools.prefill.tp,
            o.pools.prefill.pp,
            o.pools.prefill.dp_attention,
        ),
    )


DISAGGREGATED_SPLITS = tuple((p, d) for p in (1, 2, 3) for d in (1, 2, 3))
"""Prefill and decode workers tried for a disaggregated option (each pool's workers laid
out as the aggregated layout they start from), within --max-gpus."""
DISAGGREGATED_BASES = 8
"""The best aggregated layouts (that fit) the splits are tried on: each split is a
server priced whole, so trying every layout would be slow."""


def _disaggregated(options: Sequence[Option], targets: Targets) -> list[Option]:
    """Each of the best aggregated layouts as the decode workers' (``bases``), with prefill
    workers of that layout and of the one, among every layout that fits (same GPU and
    formats), that prefills the most prompt tokens per GPU; each split within --max-gpus."""
    workload = targets.workload
    assert workload is not None
    fitting = [o.scenario for o in options if o.fits and o.pools is None]
    fastest = _fastest_prefill(fitting, targets)
    found = []
    for decode in fitting[:DISAGGREGATED_BASES]:
        best = fastest[_kind(decode)]
        layouts = (decode,) if _layout_of(best) == _layout_of(decode) else (decode, best)
        steps = step_prices(decode, workload)  # every split of this decode layout steps alike
        for prefill in layouts:
            found += [
                _evaluate_pools(prefill, decode, p, d, targets, steps)
                for p, d in DISAGGREGATED_SPLITS
                if p * prefill.gpus + d * decode.gpus <= targets.max_gpus
            ]
    return found


def _kind(s: Scenario) -> tuple[object, ...]:
    """What both pools of one deployment share: the GPU and the formats (the KV crosses)."""
    return (s.gpu.id if s.gpu else s.bandwidth_bytes_per_s, _formats(s))


def _fastest_prefill(
    fitting: Sequence[Scenario], targets: Targets
) -> dict[tuple[object, ...], Scenario]:
    """For each GPU and formats, the fitting layout whose worker prefills the most prompt
    tokens per second per GPU (prefill_rate); the first in the ranking wins a tie."""
    best: dict[tuple[object, ...], tuple[float, Scenario]] = {}
    for s in fitting:
        rate = prefill_rate(s, targets)
        kind = _kind(s)
        if kind not in best or rate > best[kind][0]:
            best[kind] = (rate, s)
    return {kind: s for kind, (_, s) in best.items()}


def _layout_of(s: Scenario) -> tuple[int, int, bool, bool]:
    return (s.tp, s.pp, s.ep, s.dp_attention)


def prefill_rate(scenario: Scenario, targets: Targets) -> float:
    """Prompt tokens per second per GPU a prefill worker of the scenario's layout computes
    under the workload, every server busy (0 where it cannot run it)."""
    from decodecalc.answers.disaggregated import prefill_ranks, prefill_seconds

    workload = targets.workload
    assert workload is not None
    limits = scheduler_limits(
        scenario.engine, scenario.gpu, memory_utilization=targets.memory_utilization
    )
    seconds = prefill_seconds(scenario, workload, limits.max_num_batched_tokens)
    if not seconds > 0:
        return 0.0
    return prefill_ranks(scenario) * workload.input_len / seconds / scenario.gpus


def _evaluate_pools(
    prefill_layout: Scenario,
    scenario: Scenario,
    prefill: int,
    decode: int,
    targets: Targets,
    steps: _Steps,
) -> Option:
    """``prefill`` workers of ``prefill_layout`` and ``decode`` workers of the scenario's
    layout as the disaggregated server prices them under the workload
    (answers/disaggregated.py)."""
    from decodecalc.answers.disaggregated import Pools, serve_disaggregated

    workload = targets.workload
    assert workload is not None
    pools = Pools(prefill_layout, scenario, prefill, decode, targets.kv_link)
    return _served_option(
        scenario,
        targets,
        pools.gpus,
        lambda limits: serve_disaggregated(pools, workload, limits, steps),
        pools,
    )


def why_first(o: Option) -> str:
    """One line on why the first answer wins: what holds its TTFT and its TPOT, at the
    batch its row shows (the decoding requests' mean rounded up: what a step must hold)."""
    served = o.served
    if served is None:
        return "the cheapest per million tokens that meets every target"
    if o.pools is None:
        return (
            f"one pool of {o.scenario.gpus} GPU{'s' if o.scenario.gpus > 1 else ''} holds "
            f"TTFT at {served.ttft_s * 1000:,.0f} ms and TPOT at {served.tpot_s * 1000:,.1f} "
            f"ms with prefill mixed into up to {o.scenario.batch:,} decoding requests, the "
            "cheapest per million tokens"
        )
    p = o.pools
    own = _layout_of(p.prefill) == _layout_of(p.decode)
    prefill = "" if own else f" of {layout_label(p.prefill)} (the most prompt tokens per GPU)"
    return (
        f"TTFT ({served.ttft_s * 1000:,.0f} ms) held by {p.prefill_workers} prefill "
        f"worker{'s' if p.prefill_workers > 1 else ''}{prefill}; TPOT "
        f"({served.tpot_s * 1000:,.1f} ms) by {p.decode_workers} decode "
        f"worker{'s' if p.decode_workers > 1 else ''}"
        f"{'' if own else ' of ' + layout_label(p.decode)} at up to {o.scenario.batch:,} "
        "requests each; the cheapest per million tokens"
    )


def layout_label(s: Scenario) -> str:
    """A worker's layout in words: 'TP 8', 'TP 4 PP 2', 'TP 8 EP DPA'."""
    parts = [f"TP {s.tp}"]
    if s.pp > 1:
        parts.append(f"PP {s.pp}")
    parts += [word for word, on in (("EP", s.ep), ("DPA", s.dp_attention)) if on]
    return " ".join(parts)


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
        math.inf if o.seconds_per_token is None else o.seconds_per_token,
    )


def step_seconds(step: StepModel, context: int) -> float:
    """The expected step at a context (the roofline where the engine is none)."""
    row = step.row(context)
    return row.seconds_per_token if row.expected is None else row.expected.seconds


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
    """The bytes the batch needs against the room, or where they fit, the requests the
    KV pool holds (a windowed or hybrid model's blocks). Where the activation peak and
    the reserve alone take the budget there is no room to measure against: the miss is
    the whole need against the budget, as serving's refusal counts it."""
    room = memory.room
    need = step.held_bytes(room.held_tokens(context))
    usable = room.usable_bytes
    batch = step.scenario.batch
    if room.overhead_overflows:
        return Miss(
            "fit",
            need + room.activation_bytes + room.reserve_bytes,
            room.budget_bytes,
            f"needs {need / 1e9:,.1f} GB per GPU at batch {batch:,} and {context:,} tokens, "
            f"none usable: the activation peak ({room.activation_bytes / 1e9:,.2f} GB) and "
            f"runtime reserve ({room.reserve_bytes / 1e9:,.2f} GB) alone take the "
            f"{room.budget_bytes / 1e9:,.2f} GB its memory utilization gives",
        )
    if need <= usable and memory.pool is not None:
        held = memory.pool.held_requests(context) or 0
        return Miss(
            "fit",
            batch,
            held,
            f"batch {batch:,} at {context:,} tokens, the server's KV pool holds {held:,} "
            f"(+{_percent(batch / max(held, 1) - 1)})",
        )
    return Miss(
        "fit",
        need,
        usable,
        f"needs {need / 1e9:,.1f} GB per GPU at batch {batch:,} and {context:,} tokens, "
        f"{usable / 1e9:,.1f} GB usable (+{_percent(need / usable - 1)})",
    )


def _percent(fraction: float) -> str:
    """How far off, in whole percent, or to two figures under 10% (a near miss reads
    0.12%, never 0%)."""
    return f"{fraction:,.0%}" if fraction >= 0.1 else f"{fraction * 100:.2g}%"


@record
class Choices:
    """What the deployments may be made of: each list as the user gave it, None where
    plan chooses (every GPU a price list prices; every TP the heads allow within a node and
    pipelines of full nodes; the model's own weights and the smaller FP8 and INT4; the
    default KV format and FP8)."""

    gpus: tuple[str, ...] | None = None
    tps: tuple[int, ...] | None = None
    pps: tuple[int, ...] | None = None
    ep_only: bool = False
    """Only expert-parallel layouts (else an MoE model tries both)."""
    weights: tuple[str, ...] | None = None
    kv_dtypes: tuple[str, ...] | None = None
    v_dtypes: tuple[str, ...] | None = None
    price: object = "lowest"
    """Dollars per GPU-hour, a price list, or 'lowest' (the cheapest list naming each GPU)."""
    max_gpus: int = 64


@record
class Candidates:
    """The deployments to evaluate, what was left out and why."""

    scenarios: tuple[Scenario, ...]
    skipped: tuple[str, ...]
    """Combinations that are no valid deployment (a TP that does not split the heads)."""
    notes: tuple[Note, ...]
    """GPUs left out for want of a price."""


def candidates(catalog: Catalog, base: ScenarioSpec, choices: Choices) -> Candidates:
    """Every GPU x layout x weight format x KV format the choices allow, resolved from
    ``base`` (the scenario options every candidate shares); a combination that is no
    valid deployment is counted in ``skipped``, not refused, and two that resolve to the
    same deployment (FP8 KV where the default already is FP8) are one."""
    import itertools

    from decodecalc.answers.notes import assumed_step
    from decodecalc.errors import Conflict
    from decodecalc.resolving.resolve import resolve

    model = catalog.model(str(base.model))
    notes: list[Note] = []
    gpus = _gpus(catalog, choices.gpus, choices.price, notes)
    layouts = _layouts(
        model,
        choices.tps,
        choices.pps,
        [True] if choices.ep_only else [False, True] if model.moe() else [False],
        choices.max_gpus,
    )
    weights = choices.weights or _default_weights(catalog, model)
    kvs = choices.kv_dtypes or (None, *DEFAULT_KV)
    v_dtypes = choices.v_dtypes or (None,)
    skipped: list[str] = []
    scenarios: dict[tuple[object, ...], Scenario] = {}
    for gpu, (tp, pp, ep), weight, kv, v in itertools.product(
        gpus, layouts, weights, kvs, v_dtypes
    ):
        spec = replace(
            base,
            model=model,
            gpu=gpu,
            weights=weight,
            kv_dtype=kv,
            v_dtype=v,
            batch=1,
            tp=tp,
            pp=pp,
            ep=ep,
            price=choices.price,
        )
        try:
            scenario = resolve(spec, catalog)
        except Conflict as exc:  # a bad value (a --link typo) is no layout to leave out
            skipped.append(f"{_describe(spec)}: {exc}")
            continue
        scenarios.setdefault((gpu, tp, pp, ep, *_formats(scenario)), scenario)
    if scenarios:  # every candidate shares the engine, efficiency and overhead
        notes.extend(assumed_step(next(iter(scenarios.values()))))
    return Candidates(tuple(scenarios.values()), tuple(skipped), tuple(notes))


def _gpus(
    catalog: Catalog, given: Sequence[str] | None, price: object, notes: list[Note]
) -> list[str]:
    """The GPUs to choose from: those given, each checked now (a typo gets its
    did-you-mean once, not as every candidate left out), or every GPU the price lists
    price (those ``price`` names; with dollars, every list's). GPUs left without a price
    are left out and named in a note, since their cost is unknown."""
    from decodecalc.resolving.resolve import price_lists

    lists = price_lists(catalog, price)[1] if isinstance(price, str) else []
    one = len(lists) == 1 and str(price).strip().lower() != "lowest"
    where = f"the {lists[0].id} price list" if one else "any price list"
    priced = {gpu for listing in lists or catalog.price_lists() for gpu, _ in listing.prices}
    if given is None:
        ids = sorted(gpu.id for gpu in catalog.gpus())
        _unpriced_note(
            notes,
            [gpu for gpu in ids if gpu not in priced],
            f"not tried, having no price in {where}: {{}} (name them in --gpus, with --price "
            "in dollars per GPU-hour, to plan them)",
        )
        return [gpu for gpu in ids if gpu in priced]
    return _given_gpus(catalog, list(given), priced if lists else None, where, notes)


def _given_gpus(
    catalog: Catalog,
    names: list[str],
    priced: set[str] | None,
    where: str,
    notes: list[Note],
) -> list[str]:
    """The GPUs named in --gpus, checked, less those ``priced`` (None: a price in dollars
    prices every one) leaves without a price; an error if that leaves none."""
    for name in names:
        try:
            catalog.gpu(name)
        except InputError as exc:
            raise InputError(f"--gpus: {exc}") from None
    if priced is None:
        return names
    unpriced = [name for name in names if catalog.gpu(name).id not in priced]
    if unpriced == names:
        raise InputError(
            f"{where} gives no price for {', '.join(unpriced)}: give --price in dollars per "
            "GPU-hour, e.g. --price 2.49"
        )
    _unpriced_note(
        notes,
        unpriced,
        f"left out {{}}, having no price in {where} (give --price in dollars per GPU-hour "
        "to plan them)",
    )
    return [name for name in names if name not in unpriced]


def _unpriced_note(notes: list[Note], gpus: list[str], text: str) -> None:
    """Name the GPUs left out for want of a price (``text`` with a {} for them), if any."""
    from decodecalc.notes import Note

    if gpus:
        notes.append(Note("plan-unpriced-gpus", text.format(", ".join(gpus))))


def _layouts(
    model: Model,
    tps: Sequence[int] | None,
    pps: Sequence[int] | None,
    eps: list[bool],
    max_gpus: int,
) -> list[tuple[int, int, bool]]:
    """(TP, PP, EP) to try. By default every TP the heads allow within a node, then
    pipeline stages of a full node (2 and 4 of them, across nodes), and for an MoE model
    each TP > 1 with and without expert parallelism; never more GPUs than --max-gpus."""
    node = [t for t in model.valid_tp() if t <= NODE_GPUS]
    chosen_tps = tps or node
    chosen_pps = pps or [1]
    pairs = [(t, p) for t in chosen_tps for p in chosen_pps]
    if tps is None and pps is None and NODE_GPUS in node:
        pairs += [(NODE_GPUS, p) for p in (2, 4)]
    return [(t, p, ep) for t, p in pairs for ep in eps if t * p <= max_gpus and not (ep and t == 1)]


def _default_weights(catalog: Catalog, model: Model) -> tuple[str | None, ...]:
    """The model's own weights, and FP8 and INT4 where they store fewer bits than those."""
    from decodecalc.resolving.resolve import resolve_weights

    own = resolve_weights(catalog, None, model)[0]
    fewer = [w for w in DEFAULT_WEIGHTS if catalog.dtype(w).bits_per_value < own.bits_per_value]
    return (None, *fewer)


def _formats(s: Scenario) -> tuple[str, str]:
    """The weights (recipe or dtype) and K and V formats: what tells two candidates apart."""
    v = s.kv_dtype if s.v_dtype is None else s.v_dtype
    return s.weights_recipe or s.weights.id, f"{s.kv_dtype.id}+{v.id}"


def _describe(spec: ScenarioSpec) -> str:
    parts = {
        "gpu": spec.gpu,
        "tp": spec.tp,
        "pp": spec.pp,
        "ep": spec.ep or None,
        "weights": spec.weights,
        "kv": spec.kv_dtype,
    }
    return ", ".join(f"{k}={v}" for k, v in parts.items() if v is not None)
