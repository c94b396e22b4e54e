"""The report of `decodecalc serving`: one row per concurrency (or the one request rate),
the workload, scheduler and KV pool above, and the throughput-latency curve's knee."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from decodecalc.answers.notes import cost_notes, serving_scenario_notes
from decodecalc.answers.serving import Saturated, ServingResult
from decodecalc.notes import Note, unique
from decodecalc.record import replace
from decodecalc.views import humanize as h
from decodecalc.views.charts import Axes, Series
from decodecalc.views.estimate import (
    COST_COLUMNS,
    cost_fields,
    cost_inputs,
    describe_engine,
    kv_label,
    parallel_label,
    scenario_inputs,
    weights_label,
)
from decodecalc.views.report import Column, Report, document, with_notes

if TYPE_CHECKING:
    from decodecalc.answers.disaggregated import DisaggregatedResult
    from decodecalc.calibration.serving_points import ServingCheck, ServingValidation
    from decodecalc.scenarios.scenario import Scenario
    from decodecalc.scenarios.workload import Workload


def knee(results: Sequence[ServingResult]) -> int | None:
    """The index of the curve's knee: the point of greatest power, output throughput over
    TPOT (Kleinrock's operating point: past it each gain in throughput costs more latency
    than it brings). None with fewer than three points, where no curve bends."""
    if len(results) < 3:
        return None
    power = [r.output_throughput_tokens_per_s / r.tpot_s for r in results]
    return power.index(max(power))


def _row(r: ServingResult) -> dict[str, Any]:
    return {
        "concurrency": r.concurrency,
        "request_rate_per_s": r.workload.request_rate,
        "running": r.running,
        "decode_batch": r.decode_batch,
        "limit": r.limit,
        "tpot_ms": r.tpot_s * 1000,
        "tpot_low_ms": r.tpot_low_s * 1000,
        "tpot_high_ms": r.tpot_high_s * 1000,
        "itl_ms": r.itl_s * 1000,
        "ttft_ms": r.ttft_s * 1000,
        "ttft_low_ms": r.ttft_low_s * 1000,
        "ttft_high_ms": r.ttft_high_s * 1000,
        "queue_ms": r.queue_s * 1000,
        "per_request_ms": r.per_request_s * 1000,
        "e2e_latency_s": r.e2e_s,
        "output_throughput_tokens_per_s": r.output_throughput_tokens_per_s,
        "request_throughput_per_s": r.request_throughput_per_s,
        "prefill_tokens_per_step": r.prefill_tokens_per_step,
        "tokens_per_step": r.tokens_per_step,
        "chunk_tokens": r.chunk_tokens,
        "chunk_share": r.chunk_share,
        "decode_step_ms": r.decode_step_s * 1000,
        "mixed_step_ms": r.mixed_step_s * 1000,
        "utilization": r.utilization,
        "max_concurrency_kv": r.max_concurrency_kv,
        "kv_pool_tokens": r.pool.replica_tokens,
        **cost_fields(r.costs),
    }


def _workload(r: ServingResult) -> dict[str, Any]:
    w, spec = r.workload, r.workload.speculative
    return {
        "input_len": w.input_len,
        "output_len": w.output_len,
        "request_rate_per_s": w.request_rate,
        "prefix_len": w.prefix_len,
        "prefix_hit_rate": w.prefix_hit_rate if w.prefix_len else None,  # no prefix, no rate
        "shared_prefix_attention": r.shared_prefix_attention,
        "speculative": None
        if spec is None
        else {
            "method": spec.method,
            "num_speculative_tokens": spec.proposed,
            "acceptance": list(spec.acceptance),
            "draft_model": None if spec.draft_model is None else spec.draft_model.id,
            "tokens_per_step": spec.tokens_per_step,
        },
    }


def _ms(value: float) -> str:
    return f"{value:,.2f}"


def _count(value: float) -> str:
    """Requests: whole as whole, a mean to a tenth, and under one to three figures (an
    open loop at 0.01 requests/s runs 0.038 on average, not "0.0")."""
    if value == int(value):
        return f"{int(value):,}"
    return f"{value:.3g}" if value < 1 else f"{value:,.1f}"


COLUMNS = (
    Column("concurrency", "Concurrency", _count),
    Column("running", "Running", _count, drop=3),
    Column("tpot_ms", "TPOT ms", _ms),
    Column("itl_ms", "Median step ms", _ms, drop=2),
    Column("ttft_ms", "TTFT ms", _ms),
    Column("e2e_latency_s", "E2E s", "{:,.2f}".format),
    Column("output_throughput_tokens_per_s", "Output tok/s", h.rate),
    Column("request_throughput_per_s", "Requests/s", "{:,.3f}".format, drop=4),
    Column("prefill_tokens_per_step", "Prefill tok/step", "{:,.0f}".format, drop=5),
    Column("limit", "Limited by", numeric=False, drop=1),
)


def serving_report(results: Sequence[ServingResult], saturated: Sequence[Saturated] = ()) -> Report:
    """Rows in the order given; CSV repeats the inputs on every row, as estimate's does.
    ``saturated``: the request rates asked for past saturation, each a note and an entry
    of the document's ``saturated`` (present only when one is)."""
    first = results[0]
    s, limits = first.scenario, first.limits
    rows = [_row(r) for r in results]
    marked = knee(results)
    inputs = scenario_inputs(s)
    doc = document(
        inputs=inputs,
        workload=_workload(first),
        scheduler={
            "max_num_batched_tokens": limits.max_num_batched_tokens,
            "max_num_seqs": limits.max_num_seqs,
            "block_size": limits.block_size,
            "memory_utilization": limits.memory_utilization,
            "reserve_bytes": limits.reserve_bytes,
            "source": limits.source,
        },
        kv_pool_tokens=first.pool.replica_tokens,
        max_concurrency_kv=first.max_concurrency_kv,
        saturation_rate_per_s=first.saturation_rate_per_s,
        break_even_batch=first.break_even_batch,
        knee_concurrency=None if marked is None else results[marked].concurrency,
        **({} if (costs := cost_inputs(s)) is None else {"cost": costs}),
        rows=rows,
    )
    doc.update(saturated_document(saturated))
    columns, records = rows_with_inputs(inputs, first.workload, rows)
    report = Report(
        document=doc,
        columns=columns,
        records=records,
        title=_title(results, marked is not None and results[marked], saturated),
        highlight=frozenset() if marked is None else frozenset({marked}),
    )
    found = [
        *serving_scenario_notes(s),
        *load_notes(results),
        *(x.note() for x in saturated),
        *cost_notes(s),
    ]
    return with_notes(report, unique(found))


def saturated_document(saturated: Sequence[Saturated]) -> dict[str, Any]:
    """The document's ``saturated`` entry, present only when a rate asked for is past
    saturation."""
    if not saturated:
        return {}
    return {
        "saturated": [
            {
                "request_rate_per_s": x.request_rate_per_s,
                "saturation_rate_per_s": x.saturation_rate_per_s,
                "replicas_needed": x.replicas_needed,
            }
            for x in saturated
        ]
    }


def saturated_clauses(saturated: Sequence[Saturated]) -> str:
    """The title's words for the rates past saturation, each with what it would need."""
    return "".join(
        f"; saturated at {x.request_rate_per_s:g} requests/s (no row: it would need "
        f"{x.replicas_needed} replicas)"
        for x in saturated
    )


def rows_with_inputs(
    inputs: dict[str, Any], workload: Workload, rows: Sequence[dict[str, Any]]
) -> tuple[tuple[Column, ...], tuple[dict[str, Any], ...]]:
    """CSV's columns and records: the scenario's flat inputs and the request sizes lead
    every row, as estimate's do, so that every serving mode's files stack."""
    flat_inputs = {k: v for k, v in inputs.items() if not isinstance(v, dict)}
    sizes = {"input_len": workload.input_len, "output_len": workload.output_len}
    columns = tuple(Column(k, k) for k in (*flat_inputs, *sizes, *rows[0]))
    return columns, tuple({**flat_inputs, **sizes, **row} for row in rows)


def human_view(report: Report) -> Report:
    """The same report with the table's columns only: cost and energy per output token
    where a price is known, energy alone where a board power is given (JSON and CSV
    carry energy whenever the GPU's power is known, as estimate's do)."""
    cost = report.document.get("cost") or {}
    shown = {
        "cost_per_million_tokens": cost.get("price_per_gpu_hour") is not None,
        "joules_per_token": cost.get("price_per_gpu_hour") is not None
        or cost.get("power_source") == "given",
    }
    columns = (*COLUMNS[:-1], *(c for c in COST_COLUMNS if shown[c.key]), COLUMNS[-1])
    return replace(report, columns=columns)


def deployment_title(s: Scenario, gpus: int, split: str = "") -> str:
    """The first line of a server's title: the model on how many of which GPU (``split``:
    how they are split), its formats and whose step the expected figures are. A GPU at
    another bandwidth (--bandwidth) carries it after its name, as estimate's title does."""
    bandwidth = h.bandwidth(s.bandwidth_bytes_per_s)
    gpu = bandwidth if s.gpu is None else s.gpu.name
    if s.bandwidth_given:
        gpu = f"{gpu} {bandwidth}"
    return (
        f"{s.model.name} on {gpus} x {gpu}{split} · weights {weights_label(s)} · KV "
        f"{kv_label(s)}{describe_engine(s)}"
    )


def _title(
    results: Sequence[ServingResult],
    at_knee: ServingResult | bool,
    saturated: Sequence[Saturated] = (),
) -> tuple[str, ...]:
    r = results[0]
    s, w, limits = r.scenario, r.workload, r.limits
    lines = [
        deployment_title(s, s.gpus, f" (TP {s.tp}{parallel_label(s)})"),
        f"workload: {w.input_len:,} input / {w.output_len:,} output tokens per request"
        + (
            f"; a {w.prefix_len:,}-token shared prefix, cached for {w.prefix_hit_rate:.0%}"
            + (" (read once per step)" if r.shared_prefix_attention else "")
            if w.prefix_len
            else ""
        ),
        f"scheduler: max-num-batched-tokens {limits.max_num_batched_tokens:,}, max-num-seqs "
        f"{limits.max_num_seqs:,} ({limits.source})",
        f"KV pool: {r.pool.replica_tokens:,} tokens per replica"
        + (f" ({r.pool.ranks} ranks of {r.pool.tokens:,})" if r.pool.ranks > 1 else "")
        + f" = {r.max_concurrency_kv:,.1f} requests "
        f"of {w.input_len + w.output_len:,} tokens at once",
        f"saturation: {r.saturation_rate_per_s:,.3f} requests/s"
        + (
            f"; the knee (most throughput per ms of TPOT) at {_load(at_knee)}"
            if isinstance(at_knee, ServingResult)
            else ""
        ),
    ]
    spec = w.speculative
    if spec is not None:
        even = r.break_even_batch
        lines.append(
            f"speculative: {spec.method}"
            + (f" ({spec.draft_model.id})" if spec.draft_model else "")
            + f", {spec.proposed} proposed, {spec.tokens_per_step:.3f} tokens per verify step; "
            + (
                "never pays: plain decoding is faster from one request running"
                if even == 1
                else f"stops paying from {even:,} requests running"
                if even is not None
                else "pays at every batch the server runs"
            )
        )
    loads = [(x.workload.request_rate, x.utilization) for x in results]
    if r.utilization is not None:
        lines.append(
            "open loop (Poisson arrivals): utilization "
            + ", ".join(f"{u or 0:.1%} at {rate:g} requests/s" for rate, u in loads)
            + saturated_clauses(saturated)
        )
    return tuple(lines)


def load_notes(results: Sequence[ServingResult | DisaggregatedResult]) -> tuple[Note, ...]:
    """The rows' notes: one every load has, once; one some loads have (an engine's fitted
    range left at the larger batches, a queue), named with those loads ("concurrency 32,
    128: ..."), so that two such notes of different loads are told apart."""
    loads: dict[Note, list[float]] = {}
    for r in results:
        load = r.concurrency if r.workload.request_rate is None else r.workload.request_rate
        for n in dict.fromkeys(r.notes):
            loads.setdefault(n, []).append(load)
    closed = results[0].workload.request_rate is None
    found = []
    for n, of in loads.items():
        if len(of) == len(results):
            found.append(n)
            continue
        shown = ", ".join(_amount(x) for x in of)
        where = f"concurrency {shown}" if closed else f"{shown} requests/s"
        found.append(replace(n, message=f"{where}: {n.message}"))
    return tuple(found)


def _load(r: ServingResult | DisaggregatedResult) -> str:
    """A row's load as given: the closed loop's concurrency or the open loop's rate."""
    rate = r.workload.request_rate
    return (
        f"concurrency {_amount(r.concurrency)}" if rate is None else f"{_amount(rate)} requests/s"
    )


def _amount(x: float) -> str:
    """A load as the table shows it: thousands separated, a whole one without decimals
    (1,000,000 rather than 1e+06), a fractional rate as given (3.5)."""
    return f"{x:,.0f}" if x == round(x) else f"{x:,}"


SERVING_AXES = Axes(
    x="output throughput (tokens/s)",
    y="TPOT (ms)",
    title="throughput against time per output token",
    file_title="Serving: output throughput against TPOT over concurrency",
    marker="knee",
    file_marker="knee (most throughput per ms of TPOT)",
    tokens=False,
)


def serving_series(label: str, results: Sequence[ServingResult]) -> Series:
    """The curve over the concurrency list, drawn on SERVING_AXES: output throughput (x)
    against TPOT (y), the knee marked."""
    marked = knee(results)
    points = [(r.output_throughput_tokens_per_s, r.tpot_s * 1000) for r in results]
    return Series(
        label,
        tuple(x for x, _ in points),
        tuple(y for _, y in points),
        None if marked is None else points[marked],
    )


def with_serving_validation(report: Report, v: ServingValidation) -> Report:
    """validate's report with the serving rows below it: each benchmark's predicted mean
    TPOT and TTFT against the measured ones (JSON: ``serving``)."""
    from decodecalc.calibration.serving_points import TPOT_TARGET
    from decodecalc.record import replace
    from decodecalc.views.estimate import scenario_ids

    points = []
    lines = []
    for c in v.checks:
        p, r, load = c.point, c.result, c.point.serving
        assert load is not None
        ttft_error = c.ttft_error
        points.append(
            {
                **scenario_ids(p.scenario),
                "engine": p.engine,
                "input_len": load.input_len,
                "output_len": load.output_len,
                "concurrency": load.concurrency,
                "measured_tpot_ms": p.measured_seconds * 1000,
                "tpot_ms": None if r is None else r.tpot_s * 1000,
                "tpot_error_pct": None if c.tpot_error is None else c.tpot_error * 100,
                "measured_ttft_ms": None if load.ttft_seconds is None else load.ttft_seconds * 1000,
                "ttft_ms": None if r is None else r.ttft_s * 1000,
                "ttft_error_pct": None if ttft_error is None else ttft_error * 100,
                "left_out_ttft_ms": None if c.left_out_ttft_s is None else c.left_out_ttft_s * 1000,
                "problem": c.problem,
                "source": p.source,
            }
        )
        lines.append(_validation_line(c))
    tpot, ttft, left_out = v.tpot_mdape, v.ttft_mdape, v.left_out_ttft_mdape
    steady, steady_left_out = v.steady_ttft_mdape, v.steady_left_out_ttft_mdape
    summary = {
        "n": len(v.checks),
        "tpot_mdape": None if tpot is None else tpot * 100,
        "tpot_target_pct": TPOT_TARGET * 100,
        "ttft_mdape": None if ttft is None else ttft * 100,
        "left_out_ttft_mdape": None if left_out is None else left_out * 100,
        "steady_ttft_mdape": None if steady is None else steady * 100,
        "steady_left_out_ttft_mdape": None if steady_left_out is None else steady_left_out * 100,
    }
    bursts = sum(1 for c in v.checks if c.point.serving and not c.point.serving.ttft_fitted)
    head = (
        f"serving: {len(v.checks)} benchmark points through the serving model: mean TPOT median "
        f"absolute error {_pct(tpot)} (target {TPOT_TARGET:.0%}); TTFT {_pct(ttft)} over all, "
        f"{_pct(steady)} over the {len(v.checks) - bursts} the steady state describes "
        f"({_pct(steady_left_out)} with each group left out; the other {bursts} say in "
        "ttft_exclude why not)"
    )
    return replace(
        report,
        document={**report.document, "serving": {"summary": summary, "points": points}},
        footer=(*report.footer, head, *lines),
    )


def _validation_line(c: ServingCheck) -> str:
    p, r, load = c.point, c.result, c.point.serving
    assert load is not None
    gpu = p.scenario.gpu.id if p.scenario.gpu else "-"
    what = (
        f"  {p.scenario.model.id} {p.engine or 'typical'} {gpu} C={load.concurrency} "
        f"{load.input_len}/{load.output_len}"
    )
    if r is None:
        return f"{what}: not predicted ({c.problem})"
    line = (
        f"{what}: TPOT {r.tpot_s * 1000:.2f} vs {p.measured_seconds * 1000:.2f} ms "
        f"({_pct(c.tpot_error, '+')})"
    )
    if load.ttft_seconds is None:
        return line
    return (
        f"{line}; TTFT {r.ttft_s * 1000:,.0f} vs {load.ttft_seconds * 1000:,.0f} ms "
        f"({_pct(c.ttft_error, '+')}; left out {_pct(c.left_out_ttft_error, '+')})"
    )


def _pct(value: float | None, sign: str = "") -> str:
    return "-" if value is None else f"{value:{sign}.1%}"
