"""The report of `decodecalc generate`: prefill and the decode of a whole answer."""

from __future__ import annotations

from decodecalc.answers.generate import Generation
from decodecalc.engine.profile import EngineKind
from decodecalc.record import replace
from decodecalc.step.passes import Prefill
from decodecalc.views import humanize as h
from decodecalc.views.estimate import describe_scenario, scenario_inputs
from decodecalc.views.report import Column, Report, document, with_notes

_QUANTITY = (Column("quantity", "Quantity", numeric=False), Column("value", "Value", numeric=False))


def generation_report(g: Generation) -> Report:
    p = g.prefill
    doc = document(
        inputs=scenario_inputs(g.scenario),
        prompt_tokens=g.prompt_tokens,
        new_tokens=g.new_tokens,
        # Schema 2: the decode and total figures are the headline step's (the engine's
        # expected one; the roofline under --engine roofline), the roofline's roofline_*.
        decode_s=g.expected_decode_seconds[0],
        # With one new token there is no decode step: its step figures are null.
        mean_ms_per_token=_ms(g, g.expected_mean_step_seconds),
        first_ms_per_token=_ms(g, g.expected_first_step_seconds),
        last_ms_per_token=_ms(g, g.expected_last_step_seconds),
        prefill_flops=p.flops,
        prefill_bytes=p.bytes,
        prefill_s=p.seconds,
        prefill_bound=p.bound,
        prefill_memory_ms=p.memory_seconds * 1000,
        prefill_compute_ms=None if p.compute_seconds is None else p.compute_seconds * 1000,
        prefill_comm_ms=p.comm_seconds * 1000,
        total_s=g.expected_total_seconds,
        expected_decode_s=g.expected_decode_seconds[0],
        expected_low_decode_s=g.expected_decode_seconds[1],
        expected_high_decode_s=g.expected_decode_seconds[2],
        expected_tokens_per_s=g.expected_tokens_per_s,
        expected_total_s=g.expected_total_seconds,
        expected_prefill_s=g.expected_prefill_seconds,
        per_request_ms=g.per_request_seconds * 1000,
        roofline_decode_s=g.decode_seconds,
        roofline_mean_ms_per_token=_ms(g, g.mean_step_seconds),
        roofline_first_ms_per_token=_ms(g, g.first_step_seconds),
        roofline_last_ms_per_token=_ms(g, g.last_step_seconds),
        roofline_total_s=g.total_seconds,
    )
    rows: list[tuple[str, str]] = [
        ("prompt / new tokens", f"{g.prompt_tokens:,} / {g.new_tokens:,}"),
        (
            "prefill (time to first token)"
            if g.scenario.engine.is_roofline
            else "prefill, roofline (bound)",
            f"{p.seconds * 1000:,.1f} ms  ({_prefill_terms(p)})",
        ),
        *_decode_rows(g),
    ]
    records = tuple({"quantity": q, "value": v} for q, v in rows)
    report = Report(doc, _QUANTITY, records, title=(describe_scenario(g.scenario),))
    return with_notes(report, g.notes)


def generation_rows(report: Report) -> Report:
    """The same report as data, for CSV: one row of every figure, the inputs repeated as
    estimate's CSV repeats them (a mapping such as weight_overrides left to JSON)."""
    doc = report.document
    inputs = {k: v for k, v in doc["inputs"].items() if not isinstance(v, dict)}
    figures = {k: v for k, v in doc.items() if k not in ("schema_version", "inputs", "notes")}
    record = {**inputs, **figures}
    return replace(report, columns=tuple(Column(k, k) for k in record), records=(record,))


def _ms(g: Generation, seconds: float | None) -> float | None:
    """A decode step's milliseconds, None where there is no decode step (one new token)."""
    return None if seconds is None or not g.decode_steps else seconds * 1000


NO_DECODE = "none: one new token, which the prefill gives"


def _decode_rows(g: Generation) -> list[tuple[str, str]]:
    """The decode and the total: where the engine expects a step, its figures lead with
    their band and the roofline's stand beside them as the bound. With one new token there
    is no decode step, so no rate and no step to show."""
    steps = _steps(g.first_step_seconds, g.mean_step_seconds, g.last_step_seconds)
    rate = g.expected_tokens_per_s
    shown_rate = NO_DECODE if rate is None else f"{rate:,.1f} tok/s"
    engine = g.scenario.engine
    if engine.is_roofline:
        return [
            ("decode, all tokens", f"{g.decode_seconds:,.3f} s"),
            ("decode rate", shown_rate),
            ("first / mean / last step", steps),
            ("total", f"{g.total_seconds:,.3f} s"),
        ]
    middle, low, high = g.expected_decode_seconds
    who = "typical engine" if engine.kind is EngineKind.TYPICAL else engine.id
    return [
        (
            f"prefill, {who} (time to first token)",
            f"{g.expected_prefill_seconds * 1000:,.1f} ms  (serving's TTFT at concurrency 1: "
            f"the prompt at the engine's prefill efficiency, + "
            f"{g.per_request_seconds * 1000:,.1f} ms per request)",
        ),
        (f"decode, {who} (band)", f"{middle:,.3f} s ({low:,.3f}-{high:,.3f})"),
        ("decode, roofline (bound)", f"{g.decode_seconds:,.3f} s"),
        (f"decode rate, {who}", shown_rate),
        (
            f"first / mean / last step, {who}",
            _steps(
                g.expected_first_step_seconds,
                g.expected_mean_step_seconds,
                g.expected_last_step_seconds,
            ),
        ),
        ("first / mean / last step, roofline", steps),
        (f"total, {who}", f"{g.expected_total_seconds:,.3f} s"),
        ("total, roofline (bound)", f"{g.total_seconds:,.3f} s"),
    ]


def _steps(first: float, mean: float | None, last: float) -> str:
    if mean is None:
        return NO_DECODE
    return f"{first * 1000:.3f} / {mean * 1000:.3f} / {last * 1000:.3f} ms"


def _prefill_terms(p: Prefill) -> str:
    """Which term set the prefill and what the other came to, so a reader sees both."""
    memory = f"{h.size(p.bytes)} streamed in {p.memory_seconds * 1000:,.1f} ms"
    compute = (
        "compute not counted"
        if p.compute_seconds is None
        else f"{p.flops:.3e} FLOPs in {p.compute_seconds * 1000:,.1f} ms"
    )
    comm = f" + {p.comm_seconds * 1000:,.1f} ms communication" if p.comm_seconds else ""
    return f"{p.bound}-bound: {memory}; {compute}{comm}"
