"""A scenario's step reduced to the constants of its rows: the step formula of step.py
written out on plain numbers, for comparisons and million-row sweeps.

Everything that does not depend on the context is computed once per scenario (FastStep);
each row is then a handful of integer and float operations, exact in bytes: KV bytes are
ceil(B x units(T) x unit bytes) in integers, as the estimator computes them (a unit is an
element, or a finer common size when K and V are stored in different formats).
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Sequence
from typing import Any

from decodecalc.record import record
from decodecalc.scenarios.scenario import Scenario
from decodecalc.step.engine_terms import Packed, band_columns
from decodecalc.step.flops import matmul_params
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
            budget_bytes=None if memory is None else memory.budget_bytes,
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
        million-row sweep computes each column with one comprehension (step/fast.py's loop
        is what it spends its time in) and still keeps memory flat."""
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
            fits = [labels[stored + k + state <= budget] for k in kv]
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
