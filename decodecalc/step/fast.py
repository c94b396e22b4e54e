"""A scenario's step reduced to the constants of its rows: the step formula of step.py
written out on plain numbers, for comparisons and million-row sweeps.

Everything that does not depend on the context is computed once per scenario (FastStep);
each row is then a handful of integer and float operations, exact in bytes: KV bytes are
ceil(B x units(T) x unit bytes) in integers, as the estimator computes them (a unit is an
element, or a finer common size when K and V are stored in different formats).
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator

from decodecalc.record import record
from decodecalc.scenarios.scenario import Scenario
from decodecalc.step.engine_terms import Packed, within_band
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
        labels = fits_labels or {True: True, False: False, None: None}
        if self.general is not None:
            return _general_rows(self.general, contexts, labels)
        return self._fast_rows(contexts, labels)

    def _fast_rows(
        self, contexts: Iterable[int], labels: dict[bool | None, object]
    ) -> Iterator[tuple[object, ...]]:
        """The step written out on numbers bound to locals once: this loop is what a
        million-row sweep spends its time in."""
        weights, state, batch = self.weight_bytes, self.state_bytes, self.batch
        windowed = [(w, e) for w, e in self.kv_segments if w is not None]
        growing = sum(e for w, e in self.kv_segments if w is None)
        numerator, denominator = self.sequences * self.kv_numerator, self.kv_denominator
        bandwidth, extra = self.bandwidth, self.extra_seconds
        compute0 = (
            None
            if self.compute_per_step is None
            else (self.compute_per_step + self.attention_constant)
        )
        attention_windowed = [(w, a) for w, a in self.attention_segments if w is not None]
        attention_growing = sum(a for w, a in self.attention_segments if w is None)
        budget, stored = self.budget_bytes, self.stored_bytes
        terms, peak, comm = self.engine_terms, self.peak_bandwidth, self.comm_seconds
        for context in contexts:
            units = growing * context
            for w, e in windowed:
                units += e * (context if context < w else w)
            kv = -(-units * numerator // denominator)
            total = weights + kv + state
            seconds = total / bandwidth
            bound = "memory"
            compute = 0.0
            if compute0 is not None:
                compute = compute0 + attention_growing * context
                for w, a in attention_windowed:
                    compute += a * (context if context < w else w)
                if compute > seconds:
                    seconds, bound = compute, "compute"
            seconds += extra
            fits = labels[None if budget is None else stored + kv + state <= budget]
            if terms:
                floor = max(total / peak, compute) + comm
                middle, low, high = within_band(terms, kv, compute, floor)
                expected = (middle * 1000, low * 1000, high * 1000)
            else:
                expected = (seconds * 1000,) * 3
            yield (
                context,
                weights,
                kv,
                state,
                total,
                kv / total,
                seconds * 1000,
                1 / seconds,
                batch / seconds,
                bound,
                fits,
                *expected,
            )


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
