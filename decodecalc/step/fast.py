"""A scenario's step reduced to the constants of its rows: the step formula of step.py
written out on plain numbers, for comparisons and million-row sweeps.

Everything that does not depend on the context is computed once per scenario (FastStep);
the rows are then computed a column at a time, each operation one comprehension over a
chunk of contexts, exact in bytes: KV bytes are ceil(B x units(T) x unit bytes) in
integers, as the estimator computes them (a unit is an element, or a finer common size when
K and V are stored in different formats). The engine's band over a typical engine's
profiles (band_columns) computes only the profiles that decide each block of rows. Every
figure is the one the same operations give row by row (tests/step/test_laws.py,
tests/step/test_band_columns.py).
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Sequence
from typing import Any

from decodecalc.context import MAX_CONTEXT_TOKENS
from decodecalc.record import record
from decodecalc.scenarios.scenario import Scenario
from decodecalc.step.engine_terms import Packed
from decodecalc.step.flops import matmul_params
from decodecalc.step.memory import MemoryFit, RequestLimit, whole_blocks
from decodecalc.step.step import StepModel

ROW_FIELDS = (
    "context",
    "weight_bytes",
    "kv_bytes",
    "state_bytes",
    "total_bytes",
    "kv_share",
    "ms_per_token",
    "tokens_per_s",
    "throughput_tokens_per_s",
    "bound",
    "fits",
    "expected_ms_per_token",
    "expected_low_ms_per_token",
    "expected_high_ms_per_token",
)


@record
class FastStep:
    """A scenario reduced to the constants of its rows."""

    weight_bytes: int
    state_bytes: int
    batch: int
    kv_segments: tuple[tuple[int | None, int], ...]
    """(window or None, KV units per token), per sequence per GPU."""
    kv_numerator: int
    kv_denominator: int
    """bytes per KV unit = numerator / denominator, exactly."""
    bandwidth: float
    compute_per_step: float | None
    """Seconds of compute per step at T = 0 (None: FLOP/s unknown)."""
    attention_segments: tuple[tuple[int | None, float], ...]
    """(window or None, seconds of attention compute per context token) per step."""
    attention_constant: float
    extra_seconds: float
    budget_bytes: int | None
    """What the server leaves to weights, KV and state (ServerRoom.usable_bytes)."""
    stored_bytes: int
    crossover: float | None = None
    """The scenario's T* (None: the KV cache never reaches the weights)."""
    engine_terms: Packed = ()
    """The engine's step (step/engine_terms.py), none for the roofline."""
    peak_bandwidth: float = 0.0
    comm_seconds: float = 0.0
    general: StepModel | None = None
    """The estimator's own step, for caches the loop below does not model (chunked or
    top-k layers, kvcache.KVCurve.regular): their rows come from it, one by one."""
    sequences: int = 1
    """Sequences whose cache one GPU holds (the batch, or a data-parallel rank's share)."""
    block_size: int = 1
    """Tokens per KV block: a sequence holds room for whole blocks (ServerRoom.held_tokens)."""
    pool: RequestLimit | None = None
    """The server's KV pool, which must hold the batch too (StepModel.fits)."""

    @classmethod
    def of(cls, scenario: Scenario) -> FastStep:
        step = StepModel.of(scenario)
        # Pipeline stages each check their own memory: their rows come one by one too.
        general = None if step.kv_units.regular and len(step.stages) == 1 else step
        per_unit = step.kv_unit_bytes
        compute: float | None = None
        attention: tuple[tuple[int | None, float], ...] = ()
        constant = 0.0
        if step.peak_flops_per_s is not None:
            rate = step.peak_flops_per_s * scenario.tp / scenario.batch
            compute = 2 * matmul_params(scenario.model) / rate
            by_window: dict[int | None, float] = {}
            for m in scenario.model.mixers():
                slope = m.attention_flops(1) - m.attention_flops(0)
                if slope:
                    by_window[m.sliding_window] = (
                        by_window.get(m.sliding_window, 0.0) + slope / rate
                    )
                constant += m.attention_flops(0) / rate
            attention = tuple(by_window.items())
        memory = step.memory(0)
        comm = 0.0 if step.comm is None else step.comm.seconds(scenario.batch)
        return cls(
            weight_bytes=step.weight_bytes,
            state_bytes=step.state_bytes,
            batch=scenario.batch,
            kv_segments=step.kv_units.segments,
            kv_numerator=per_unit.numerator,
            kv_denominator=per_unit.denominator,
            bandwidth=scenario.effective_bandwidth_bytes_per_s,
            compute_per_step=compute,
            attention_segments=attention,
            attention_constant=constant,
            extra_seconds=comm + scenario.overhead_s,
            budget_bytes=None if memory is None else memory.room.usable_bytes,
            block_size=1 if memory is None else memory.room.block_size,
            pool=None if memory is None or _bytes_suffice(memory) else memory.pool,
            stored_bytes=0 if memory is None else memory.stored_weight_bytes,
            crossover=None if (t_star := step.crossover()) is None else float(t_star),
            engine_terms=step.engine_terms,
            peak_bandwidth=scenario.bandwidth_bytes_per_s,
            comm_seconds=comm,
            general=general,
            sequences=step.sequences,
        )

    def row(self, context: int) -> tuple[object, ...]:
        """The values of ROW_FIELDS at one context."""
        return next(self.rows((context,)))

    def rows(
        self, contexts: Iterable[int], fits_labels: dict[bool | None, object] | None = None
    ) -> Iterator[tuple[object, ...]]:
        """ROW_FIELDS at each context; with ``fits_labels`` the last field is its label (a
        writer's text for true, false and unknown)."""
        for columns in self.chunks(contexts, fits_labels):
            yield from zip(*columns, strict=True)

    def chunks(
        self, contexts: Iterable[int], fits_labels: dict[bool | None, object] | None = None
    ) -> Iterator[Columns]:
        """The rows as columns, one per ROW_FIELDS, CHUNK_ROWS contexts at a time: a
        million-row sweep spends its time here, one comprehension per operation and
        chunk, and its memory stays flat."""
        labels = fits_labels or {True: True, False: False, None: None}
        points = tuple(contexts)
        for start in range(0, len(points), CHUNK_ROWS):
            chunk = points[start : start + CHUNK_ROWS]
            if self.general is not None:
                yield _general_columns(self.general, chunk, labels)
            else:
                yield self._columns(chunk, labels)

    def _columns(self, contexts: tuple[int, ...], labels: dict[bool | None, object]) -> Columns:
        """The step written out column by column on numbers bound to locals, each
        operation the one step.py makes for a row (a float's value depends on its order)."""
        n, weights, state = len(contexts), self.weight_bytes, self.state_bytes
        kv = self._kv_bytes(contexts)
        total = [weights + k + state for k in kv]
        bandwidth, extra = self.bandwidth, self.extra_seconds
        memory = [b / bandwidth for b in total]
        compute = self._compute(contexts)
        if compute is None:
            compute = [0.0] * n
            bound = ["memory"] * n
            seconds = [m + extra for m in memory]
        else:
            bound = ["compute" if c > m else "memory" for m, c in zip(memory, compute, strict=True)]
            seconds = [(c if c > m else m) + extra for m, c in zip(memory, compute, strict=True)]
        budget, stored = self.budget_bytes, self.stored_bytes
        if budget is None:
            fits = [labels[None]] * n
        else:
            held = self._kv_bytes(tuple(whole_blocks(c, self.block_size) for c in contexts))
            limit = self._pool_limit()
            fits = [
                labels[stored + k + state <= budget and (limit is None or c <= limit)]
                for k, c in zip(held, contexts, strict=True)
            ]
        ms = [s * 1000 for s in seconds]
        batch = self.batch
        return (
            contexts,
            [weights] * n,
            kv,
            [state] * n,
            total,
            [k / b for k, b in zip(kv, total, strict=True)],
            ms,
            [1 / s for s in seconds],
            [batch / s for s in seconds],
            bound,
            fits,
            *self._expected_ms(kv, total, compute, ms),
        )

    def _pool_limit(self) -> int | None:
        """The longest context at which the server's pool holds the batch (None: every
        context). A request's blocks never shrink as its context grows, so the requests
        the pool holds never grow: the limit is found by doubling, then halving, in about
        60 of the pool's Fraction sums instead of one per row."""
        pool, batch = self.pool, self.batch
        if pool is None:
            return None
        if not pool.holds(batch, 1):
            return 0
        held, beyond = 1, 2
        while pool.holds(batch, beyond):
            if beyond > MAX_CONTEXT_TOKENS:  # (past any context a sweep takes)
                return None
            held, beyond = beyond, beyond * 2
        while beyond - held > 1:
            middle = (held + beyond) // 2
            held, beyond = (middle, beyond) if pool.holds(batch, middle) else (held, middle)
        return held

    def _kv_bytes(self, contexts: tuple[int, ...]) -> list[int]:
        """KV bytes per GPU at each context: ceil(units x unit bytes), in integers."""
        growing = sum(e for w, e in self.kv_segments if w is None)
        units = [growing * t for t in contexts]
        for w, e in self.kv_segments:
            if w is not None:
                units = [u + e * (t if t < w else w) for u, t in zip(units, contexts, strict=True)]
        numerator, denominator = self.sequences * self.kv_numerator, self.kv_denominator
        return [-(-u * numerator // denominator) for u in units]

    def _expected_ms(
        self, kv: list[int], total: list[int], compute: list[float], ms: list[float]
    ) -> tuple[list[float], ...]:
        """The engine's expected step, low and high edge in ms (the roofline's without
        an engine), above the floor: every byte at peak bandwidth, or the compute."""
        if not self.engine_terms:
            return ms, ms, ms
        peak, comm = self.peak_bandwidth, self.comm_seconds
        floor = [
            (c if c > (x := b / peak) else x) + comm for b, c in zip(total, compute, strict=True)
        ]
        bands = band_columns(self.engine_terms, kv, compute, floor)
        return tuple([s * 1000 for s in column] for column in bands)

    def _compute(self, contexts: tuple[int, ...]) -> list[float] | None:
        """Seconds of compute per step at each context (None: FLOP/s unknown)."""
        if self.compute_per_step is None:
            return None
        base = self.compute_per_step + self.attention_constant
        growing = sum(a for w, a in self.attention_segments if w is None)
        compute = [base + growing * t for t in contexts]
        for w, a in self.attention_segments:
            if w is not None:
                compute = [
                    c + a * (t if t < w else w) for c, t in zip(compute, contexts, strict=True)
                ]
        return compute


CHUNK_ROWS = 4096
"""Contexts a chunk of columns holds: large enough that a column costs one comprehension's
set-up, small enough that a sweep's memory stays flat."""

Columns = tuple[Sequence[Any], ...]
"""Rows as columns, one per ROW_FIELDS."""
Column = Sequence[float]


def _general_columns(
    step: StepModel, contexts: tuple[int, ...], labels: dict[bool | None, object]
) -> Columns:
    return tuple(zip(*_general_rows(step, contexts, labels), strict=True))


def _general_rows(
    step: StepModel, contexts: Iterable[int], labels: dict[bool | None, object]
) -> Iterator[tuple[object, ...]]:
    """ROW_FIELDS from the estimator's rows, for a cache the fast loop does not model."""
    memory = step.memory(0)
    for context in contexts:
        r = step.row(context, memory=memory)
        e = r.expected
        expected = (
            (r.seconds_per_token,) * 3 if e is None else (e.seconds, e.low_seconds, e.high_seconds)
        )
        yield (
            context,
            r.weight_bytes,
            r.kv_bytes,
            r.state_bytes,
            r.total_bytes,
            r.kv_share,
            r.seconds_per_token * 1000,
            r.tokens_per_s,
            r.throughput_tokens_per_s,
            r.bound,
            labels[r.fits],
            *(x * 1000 for x in expected),
        )


def band_columns(
    terms: Packed, kv_bytes: Sequence[int], compute_s: Column, floor_s: Column
) -> tuple[list[float], list[float], list[float]]:
    """within_band at every row, as columns (expected, low, high), computing only the
    profiles that can decide them: a sweep's million rows would otherwise each evaluate
    and sort every profile of a typical engine.

    Over a block of rows each profile is compared with each other (_Block.under): where
    that shows which profile is the median at every row, and which few can be the band's
    lowest and highest edge, only those are computed, with the same operations as
    within_band, so the figures are identical, not close. A block where it does not is
    halved until it does, or computed profile by profile."""
    if len(kv_bytes) < PINNED_ROWS or any(t[1] < 0 or t[3] < 0 or t[4] < 0 for t in terms):
        return every_profile(terms, kv_bytes, compute_s, floor_s)
    inputs = (
        (min(kv_bytes), max(kv_bytes)),
        (min(compute_s), max(compute_s)),
        (min(floor_s), max(floor_s)),
    )
    picked = _pinned(terms, [_Block.of(t, inputs) for t in terms])
    if picked is not None:
        return _picked(terms, picked, kv_bytes, compute_s, floor_s)
    half = len(kv_bytes) // 2
    first = band_columns(terms, kv_bytes[:half], compute_s[:half], floor_s[:half])
    second = band_columns(terms, kv_bytes[half:], compute_s[half:], floor_s[half:])
    return first[0] + second[0], first[1] + second[1], first[2] + second[2]


PINNED_ROWS = 16
"""Blocks of fewer rows are computed profile by profile: pinning them costs more."""

MARGIN = 1e-12
"""Relative gap between two straight-line steps that rounding (a few parts in 1e16)
cannot close."""


class _Block:
    """One profile's step over a block of rows, as much as comparing it needs. The step
    is non-decreasing in KV bytes, compute and floor (profile_seconds), so it lies between
    ``low`` (at the block's smallest inputs) and ``high`` (at its largest); ``step`` says
    what decides it: () the floor alone, (added,) compute plus added where the memory side
    never reaches the compute (a large batch), else the profile's own terms; ``line`` is
    its memory side plus added at the block's smallest and largest KV bytes, with the
    margin that rounding cannot close, where compute never binds (a straight line in KV
    bytes, floored)."""

    __slots__ = ("high", "line", "low", "step")

    def __init__(
        self,
        low: float,
        high: float,
        step: tuple[float, ...],
        line: tuple[float, float, float] | None,
    ) -> None:
        self.low, self.high, self.step, self.line = low, high, step, line

    @classmethod
    def of(cls, term: tuple[float, ...], inputs: Sequence[tuple[float, float]]) -> _Block:
        constant, per_kv, added = term[0], term[1], term[2]
        (kv_lo, kv_hi), (compute_lo, compute_hi), (floor_lo, _) = inputs
        low, high = profile_seconds(term, *inputs)
        memory_lo, memory_hi = constant + kv_lo * per_kv, constant + kv_hi * per_kv
        step: tuple[float, ...] = (constant, per_kv, added)
        if (compute_hi if memory_hi < compute_hi else memory_hi) + added <= floor_lo:
            step = ()
        elif memory_hi <= compute_lo:
            step = (added,)
        line = None
        if memory_lo >= compute_hi:
            margin = MARGIN * (abs(constant) + abs(kv_hi * per_kv) + abs(added))
            line = (memory_lo + added, memory_hi + added, margin)
        return cls(low, high, step, line)

    def under(self, other: _Block) -> bool:
        """Whether this step is at most the other's at every row of the block."""
        if self.step == other.step or self.high <= other.low or self.step == ():
            return True  # the same step, intervals apart, or the floor no step is under
        if len(self.step) == 1 and len(other.step) == 1:
            return self.step[0] <= other.step[0]  # compute plus the smaller added
        if self.line is None or other.line is None:
            return False
        margin = self.line[2] + other.line[2]
        return other.line[0] - self.line[0] >= margin and other.line[1] - self.line[1] >= margin


Edges = tuple[tuple[int, float], ...]
"""(profile, band factor) pairs: the products that can make a band edge."""
Picked = tuple[tuple[int, ...], Edges, Edges]
"""The profiles (by index) whose steps make the median, and the products that can be the
band's low edge and its high one."""


def _pinned(terms: Packed, blocks: Sequence[_Block]) -> Picked | None:
    """The profiles a block's figures come from, or None where the comparisons do not pin
    the median. A profile is the k-th smallest at every row when at least k others are
    never above it and all the rest never below it."""
    n = len(terms)
    under = [[i != j and blocks[i].under(blocks[j]) for j in range(n)] for i in range(n)]
    median = []
    for rank in (n // 2,) if n % 2 else (n // 2 - 1, n // 2):
        found = [
            p
            for p in range(n)
            if sum(under[j][p] for j in range(n)) >= rank
            and sum(under[p][j] for j in range(n)) >= n - 1 - rank
        ]
        if not found:
            return None
        median.append(found[0])
    # Profiles with the same step share one column; each edge keeps the products no
    # other kept one is certainly past.
    first = {blocks[i].step: i for i in reversed(range(n))}
    one = [first[b.step] for b in blocks]
    low = _edge([(one[i], t[3]) for i, t in enumerate(terms)], blocks, under, lowest=True)
    high = _edge([(one[i], t[4]) for i, t in enumerate(terms)], blocks, under, lowest=False)
    return tuple(one[p] for p in median), low, high


def _edge(
    products: list[tuple[int, float]],
    blocks: Sequence[_Block],
    under: list[list[bool]],
    lowest: bool,
) -> Edges:
    """The (profile, band factor) products whose minimum (lowest) or maximum is the
    band's edge at every row: each product left out is past one that is kept."""

    def past(a: tuple[int, float], b: tuple[int, float]) -> bool:  # b's never beyond a's
        (i, f), (j, g) = (a, b) if lowest else (b, a)
        if f == g and (i == j or under[j][i]):
            return True
        return blocks[j].high * g <= blocks[i].low * f

    kept: list[tuple[int, float]] = []
    start = (lambda p: blocks[p[0]].low * p[1]) if lowest else (lambda p: -blocks[p[0]].high * p[1])
    for product in sorted(set(products), key=start):
        if not any(past(product, k) for k in kept):
            kept.append(product)
    return tuple(kept)


def _picked(
    terms: Packed, picked: Picked, kv_bytes: Column, compute_s: Column, floor_s: Column
) -> tuple[list[float], list[float], list[float]]:
    """The block's columns from the profiles _pinned picked: the others cannot change them."""
    median, low_edge, high_edge = picked
    seconds = {
        i: profile_seconds(terms[i], kv_bytes, compute_s, floor_s)
        for i in {*median, *(i for i, _ in low_edge), *(i for i, _ in high_edge)}
    }
    if len(median) == 1:
        middle = seconds[median[0]]
    else:
        middle = [(a + b) / 2 for a, b in zip(seconds[median[0]], seconds[median[1]], strict=True)]
    lows = [[t * f for t in seconds[i]] for i, f in low_edge]
    highs = [[t * f for t in seconds[i]] for i, f in high_edge]
    low = lows[0] if len(lows) == 1 else [min(r) for r in zip(*lows, strict=True)]
    high = highs[0] if len(highs) == 1 else [max(r) for r in zip(*highs, strict=True)]
    return clamped(middle, low, high, floor_s)


def profile_seconds(
    term: tuple[float, ...], kv_bytes: Column, compute_s: Column, floor_s: Column
) -> list[float]:
    """One profile's step at each row: max(constant + KV bytes x per byte, compute) +
    added, never below the floor. Written as one comprehension (a sweep's rows spend
    their time here): each operation is non-decreasing in KV bytes, compute and floor
    while per_kv_byte >= 0, which band_columns relies on."""
    constant, per_kv, added = term[0], term[1], term[2]
    return [
        f if (t := (c if (t := constant + k * per_kv) < c else t) + added) < f else t
        for k, c, f in zip(kv_bytes, compute_s, floor_s, strict=True)
    ]


def every_profile(
    terms: Packed, kv_bytes: Column, compute_s: Column, floor_s: Column
) -> tuple[list[float], list[float], list[float]]:
    """within_band at every row, every profile computed: the centre their median, the
    band all of theirs."""
    seconds = [profile_seconds(t, kv_bytes, compute_s, floor_s) for t in terms]
    n = len(terms)
    rows = [sorted(r) for r in zip(*seconds, strict=True)]
    middle = [r[n // 2] for r in rows] if n % 2 else [(r[n // 2 - 1] + r[n // 2]) / 2 for r in rows]
    lows = [[s * t[3] for s in column] for t, column in zip(terms, seconds, strict=True)]
    highs = [[s * t[4] for s in column] for t, column in zip(terms, seconds, strict=True)]
    low = [min(r) for r in zip(*lows, strict=True)]
    high = [max(r) for r in zip(*highs, strict=True)]
    return clamped(middle, low, high, floor_s)


def clamped(
    middle: list[float], low: list[float], high: list[float], floor_s: Column
) -> tuple[list[float], list[float], list[float]]:
    """The band around its centre and never below the floor: low between the floor and the
    centre (the floor wins where it is above the centre), high at least the centre."""
    low = [
        m if m < (x := (f if f > lo else lo)) else x
        for lo, f, m in zip(low, floor_s, middle, strict=True)
    ]
    return middle, low, [m if m > h else h for h, m in zip(high, middle, strict=True)]


def _bytes_suffice(memory: MemoryFit) -> bool:
    """The pool limits nothing the byte count does not (KvPool.limits_as_bytes)."""
    return memory.pool is None or memory.pool.limits_as_bytes
