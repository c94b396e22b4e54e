"""Scenarios side by side, and the rows of a sweep."""

from __future__ import annotations

import itertools
from collections.abc import Callable, Iterable, Iterator, Sequence
from typing import IO, Any

from decodecalc.answers.estimate import Estimate
from decodecalc.answers.headline import basis
from decodecalc.answers.notes import estimate_notes
from decodecalc.answers.sweep import RATE_FIELDS, rate_columns
from decodecalc.notes import Note, many_notes
from decodecalc.record import replace
from decodecalc.scenarios.scenario import Scenario
from decodecalc.step.fast import ROW_FIELDS, Columns
from decodecalc.views import humanize as h
from decodecalc.views.estimate import (
    COST_COLUMNS,
    cost_factors,
    cost_fields,
    cost_inputs,
    cost_notes,
    expected_fields,
    expected_rates,
    kv_label,
    parallel_label,
    priced,
    roofline_figures,
    scenario_ids,
    scenario_inputs,
    weights_label,
)
from decodecalc.views.report import CSV_FLOAT, Column, Report, document, with_notes

SCENARIO_KEYS = (
    "model",
    "gpu",
    "weights_dtype",
    "weights_recipe",
    "kv_dtype",
    "batch",
    "tp",
    "engine",
)


def label_parts(scenario: Scenario) -> tuple[str, ...]:
    """What names a scenario, axis by axis: model, GPU, dtypes, batch, parallelism, engine
    (with its release line)."""
    s = scenario
    gpu = s.gpu.id if s.gpu else h.bandwidth(s.bandwidth_bytes_per_s)
    if s.bandwidth_given:  # the GPU at another bandwidth (--bandwidth): h200@1TB/s
        gpu += "@" + h.bandwidth(s.bandwidth_bytes_per_s).replace(" ", "")
    engine = "" if s.engine.id == "typical" else s.engine.id
    if s.engine.line:
        engine += f"@{s.engine.line}"  # its release line: vllm@0.7 beside vllm@0.11
    return (
        s.model.id,
        gpu,
        f"{weights_label(s)}/{kv_label(s)}",
        f"B{s.batch}",
        f"TP{s.tp}{parallel_label(s)}",
        engine,
    )


def label(scenario: Scenario) -> str:
    return " ".join(part for part in label_parts(scenario) if part)


def varying(scenarios: Sequence[Scenario]) -> tuple[list[str], str]:
    """Each scenario's name by the axes that vary only, and what every one shares: a
    table that repeats the model on every row has less room for its figures."""
    parts = [label_parts(s) for s in scenarios]
    axes = [i for i in range(len(parts[0])) if len({p[i] for p in parts}) > 1]
    if not axes:
        return [label(s) for s in scenarios], ""
    names = [" ".join(p[i] for i in axes if p[i]) for p in parts]
    shared = " ".join(part for i, part in enumerate(parts[0]) if i not in axes and part)
    return names, shared


def compare_report(
    estimates: Sequence[Estimate], contexts: Sequence[int], skipped: Sequence[Note] = ()
) -> Report:
    """One row per scenario and context; the ratios are the step over the first scenario's,
    the headline's (answers/headline.py; ratio_to_first, and expected_ratio_to_first as
    schema 1 named it) and the roofline's. Fits only when some scenario
    names a GPU: a bare bandwidth has no memory to fit in. ``skipped``: the note on the
    grid's combinations that were no valid deployment (answers/sweep.py valid_scenarios)."""
    first = {r.context_tokens: r.seconds_per_token for r in estimates[0].rows}
    first_head = {
        r.context_tokens: head.seconds
        for r, head in zip(estimates[0].rows, estimates[0].headlines, strict=True)
    }
    records = []
    for index, est in enumerate(estimates):
        inputs = scenario_inputs(est.scenario)
        for row, head, costs in zip(est.rows, est.headlines, est.costs, strict=True):
            if row.context_tokens not in contexts:
                continue
            ratio = head.seconds / first_head[row.context_tokens]
            records.append(
                {
                    "scenario": index + 1,
                    "label": label(est.scenario),
                    **{k: inputs[k] for k in SCENARIO_KEYS},
                    "context": row.context_tokens,
                    "ms_per_token": head.seconds * 1000,
                    **expected_fields(head),
                    "tokens_per_s": head.tokens_per_s,
                    "throughput_tokens_per_s": head.throughput_tokens_per_s,
                    "kv_share": row.kv_share,
                    "bound": row.bound,
                    "fits": row.fits,
                    "crossover_context": est.crossover_context,
                    "ratio_to_first": ratio,
                    **cost_fields(costs),
                    **expected_rates(head),
                    "expected_ratio_to_first": ratio,
                    **roofline_figures(row),
                    "roofline_ratio_to_first": row.seconds_per_token / first[row.context_tokens],
                }
            )
    records.sort(key=lambda r: (r["context"], r["scenario"]))
    doc = document(
        scenarios=[
            {
                "scenario": i + 1,
                "label": label(e.scenario),
                **scenario_inputs(e.scenario),
                **({} if (c := cost_inputs(e.scenario)) is None else {"cost": c}),
                "basis": basis(e.scenario),
            }
            for i, e in enumerate(estimates)
        ],
        rows=records,
    )
    fits = (
        (Column("fits", "Fits", lambda v: "yes" if v else "NO", numeric=False, drop=1),)
        if any(r["fits"] is not None for r in records)
        else ()
    )
    columns = (
        Column("context", "Context", h.tokens),
        Column("label", "Scenario", numeric=False),
        Column("ms_per_token", "ms / token", h.ms, h.ms_exact),
        Column("expected_ms_per_token", "Expected ms", _ms_band),
        Column("expected_low_ms_per_token", "low", _ms_band, drop=7),
        Column("expected_high_ms_per_token", "high", _ms_band, drop=7),
        Column("tokens_per_s", "tok/s / seq", h.rate, drop=4),
        Column("throughput_tokens_per_s", "tok/s all", h.rate, drop=6),
        Column("kv_share", "KV share", h.share, drop=3),
        Column(
            "crossover_context",
            "Crossover",
            lambda v: "none" if v is None else h.tokens(v),
            drop=5,
        ),
        Column("ratio_to_first", "vs #1", _ratio, drop=2),
        *fits,
        *(COST_COLUMNS if priced(records) else ()),
        # Added later, so after what earlier CSV readers expect by position.
        Column("expected_tokens_per_s", "expected_tokens_per_s", h.rate),
        Column("expected_throughput_tokens_per_s", "expected_throughput_tokens_per_s", h.rate),
        Column("expected_ratio_to_first", "expected_ratio_to_first", _ratio),
        *(Column(k, k) for k in ROOFLINE_KEYS),
    )
    notes = many_notes(
        [
            (f"#{i + 1} {label(e.scenario)}", (*estimate_notes(e), *cost_notes(e.scenario)))
            for i, e in enumerate(estimates)
        ]
    )
    return with_notes(Report(doc, columns, tuple(records)), [*skipped, *notes])


def _ms_band(value: float) -> str:
    return f"{value:,.1f}"


def _ratio(value: float) -> str:
    return f"{value:.2f}x"


ROOFLINE_FIELDS = (
    "roofline_ms_per_token",
    "roofline_tokens_per_s",
    "roofline_throughput_tokens_per_s",
)
"""A sweep row's roofline step and rates, last (schema 2): the step model's ms_per_token,
tokens_per_s and throughput_tokens_per_s, whose names its rows now give the headline."""

ROOFLINE_KEYS = (*ROOFLINE_FIELDS, "roofline_ratio_to_first")
"""A comparison's roofline figures, after every key schema 1 had (views/estimate.py
roofline_figures, and the ratio of the roofline steps)."""


def headline_view(report: Report) -> Report:
    """The columns a person reads, in the order to read them: with an expected step (some
    scenario's engine expects one), it and its band first, the roofline beside them as the
    bound, and the rates and ratio at the expected step (the records' own); on the roofline
    alone, the roofline's figures without the (equal) expected ones. CSV keeps every column."""
    shown = {c.key: c for c in report.columns if not c.key.startswith(("expected_", "roofline_"))}
    if not any(s["basis"] == "expected" for s in report.document["scenarios"]):
        return replace(report, columns=tuple(shown.values()))
    by_key = {c.key: c for c in report.columns}
    ordered: list[Column] = []
    for key, column in shown.items():
        if key == "ms_per_token":
            ordered.extend(by_key[f"expected_{k}ms_per_token"] for k in ("", "low_", "high_"))
            column = replace(column, key="roofline_ms_per_token", header="Roofline bound ms")
        ordered.append(column)
    return replace(report, columns=tuple(ordered))


def human_compare(report: Report, scenarios: Sequence[Scenario]) -> Report:
    """The table and Markdown view: each scenario named by the axes that vary, what all
    share said once above (the JSON and CSV keep every row's whole label)."""
    names, shared = varying(scenarios)
    records = tuple({**r, "label": names[r["scenario"] - 1]} for r in report.records)
    title = (f"every scenario: {shared}",) if shared else ()
    return replace(headline_view(report), records=records, title=(*title, *report.title))


_CSV_ROW = ",".join(["%d"] * 5 + [CSV_FLOAT] * 4 + ["%s"] * 2 + [CSV_FLOAT] * 3)
"""ROW_FIELDS as CSV: exact integers, floats to 12 significant digits (formatting the
shortest round-trip form would halve a sweep's speed), the bound and the fits label. Their
ms_per_token, tokens_per_s and throughput_tokens_per_s are the headline's (_headline_first)."""
CSV_FITS: dict[bool | None, object] = {True: "true", False: "false", None: ""}
"""Labels for the rows' fits field: one %-format then makes the whole line."""
SCENARIO_COLUMNS = ("model", "gpu", "weights", "kv_dtype", "batch", "tp")
"""What identifies a sweep row's scenario (resolved ids: an alias and its preset give the
same rows), before ROW_FIELDS and after them crossover_context, the scenario's T*, and the
engine the expected figures are for and the V cache's dtype (added last, after what
earlier readers expect)."""

Progress = Callable[[int], None]
Scenarios = Iterable[tuple[Scenario, float | None, Iterator[Columns]]]
"""Each scenario of a sweep with its crossover context and the stream of its rows, in
chunks of columns (step/fast.py)."""


def _engine_id(s: Scenario) -> str:
    return s.engine.id


def _v_dtype(s: Scenario) -> str:
    """The V cache's dtype: kv_dtype's unless --v-dtype gave another."""
    return (s.v_dtype or s.kv_dtype).id


def write_sweep_csv(
    scenarios: Scenarios,
    out: IO[str],
    progress: Progress | None = None,
) -> int:
    """CSV with one %-format per line (in C, the scenario's prefix and suffix folded into
    the format) and writes in chunks: the csv module's per-cell work would halve a sweep's
    speed. The rows must come with CSV_FITS labels. Scenario values are preset ids and
    numbers, never in need of quoting."""
    added = (
        "crossover_context",
        "engine",
        "v_dtype",
        *PARALLEL_KEYS,
        *COST_KEYS,
        *RATE_FIELDS,
        *ROOFLINE_FIELDS,
        *LAST_KEYS,
    )
    out.write(",".join([*SCENARIO_COLUMNS, *ROW_FIELDS, *added]) + "\n")
    count = 0
    for scenario, crossover, chunks in scenarios:
        prefix = ",".join("" if v is None else str(v) for v in scenario_ids(scenario).values())
        suffix = ",".join(
            (
                "" if crossover is None else CSV_FLOAT % crossover,
                _engine_id(scenario),
                _v_dtype(scenario),
                *(str(v).lower() for v in _parallel(scenario).values()),
            )
        )
        per_ms = _cost_per_ms(scenario)
        costs = "".join("," + CSV_FLOAT if f is not None else "," for f in per_ms)
        rates = ("," + CSV_FLOAT) * (len(RATE_FIELDS) + len(ROOFLINE_FIELDS))
        last = "".join("," + ("" if v is None else str(v)) for v in _last(scenario).values())
        line = prefix.replace("%", "%%") + "," + _CSV_ROW + "," + suffix + costs + rates + last
        line += "\n"
        known = [f for f in per_ms if f is not None]
        for columns in chunks:
            scaled = _figures(columns, known)
            tokens = rate_columns(columns, scenario)
            head, roofline = _headline_first(columns, tokens)
            out.write(
                "".join(map(line.__mod__, zip(*head, *scaled, *tokens, *roofline, strict=True)))
            )
            count += len(columns[0])
        if progress is not None:
            progress(count)
    return count


LAST_KEYS = ("engine_line", "bandwidth_bytes_per_s")
"""Added after the roofline's columns, so after what earlier CSV readers expect by
position: the engine's release line (``engine`` is the profile's id alone: vllm@0.7 and
vllm@0.19 rows both say vllm; empty for a profile without lines, typical and roofline),
and the bandwidth the row was priced at (the GPU's own, or --bandwidth's)."""


def _last(s: Scenario) -> dict[str, object]:
    return {"engine_line": s.engine.line, "bandwidth_bytes_per_s": s.bandwidth_bytes_per_s}


PARALLEL_KEYS = ("pp", "ep", "dp_attention")
"""A sweep's parallelism beyond TP, after v_dtype (step/parallelism.py)."""


def _parallel(s: Scenario) -> dict[str, object]:
    return {"pp": s.pp, "ep": s.ep, "dp_attention": s.dp_attention}


COST_KEYS = ("cost_per_million_tokens", "joules_per_token", "kwh_per_million_tokens")
"""A sweep's cost and energy columns (empty where the rate is unknown), then the rates at
the expected step (answers/sweep.py RATE_FIELDS) and the roofline's (ROOFLINE_FIELDS)."""


def _cost_per_ms(s: Scenario) -> tuple[float | None, ...]:
    """COST_KEYS per millisecond of expected step (None where the rate is unknown)."""
    factors = cost_factors(s)
    if factors is None:
        return (None,) * len(COST_KEYS)
    return tuple(getattr(factors, k) for k in COST_KEYS)


def write_sweep_jsonl(
    scenarios: Scenarios,
    out: IO[str],
    progress: Progress | None = None,
) -> int:
    import json

    count = 0
    for scenario, crossover, chunks in scenarios:
        columns = scenario_ids(scenario)
        per_ms = _cost_per_ms(scenario)
        added = [k for k, f in zip(COST_KEYS, per_ms, strict=True) if f is not None]
        added.extend((*RATE_FIELDS, *ROOFLINE_FIELDS))
        width = len(ROW_FIELDS)
        known = [f for f in per_ms if f is not None]
        rows = itertools.chain.from_iterable(
            _jsonl_rows(c, _figures(c, known), rate_columns(c, scenario)) for c in chunks
        )
        for row in rows:
            record: dict[str, Any] = {
                **columns,
                **dict(zip(ROW_FIELDS, row[:width], strict=True)),
                "crossover_context": crossover,
                "engine": _engine_id(scenario),
                "v_dtype": _v_dtype(scenario),
                **_parallel(scenario),
                **dict(zip(added, row[width:], strict=True)),
                **_last(scenario),
            }
            out.write(json.dumps(record, allow_nan=False))
            out.write("\n")
            count += 1
        if progress is not None:
            progress(count)
    return count


_EXPECTED = ROW_FIELDS.index("expected_ms_per_token")
_ROOFLINE = tuple(
    ROW_FIELDS.index(k) for k in ("ms_per_token", "tokens_per_s", "throughput_tokens_per_s")
)


def _headline_first(
    columns: Columns, rates: tuple[Sequence[float], Sequence[float]]
) -> tuple[list[Sequence[Any]], list[Sequence[Any]]]:
    """A chunk's columns in ROW_FIELDS order with the headline step (expected ms and
    RATE_FIELDS) where the step model puts the roofline, and the roofline's columns apart
    (ROOFLINE_FIELDS): the same lists, reordered, nothing computed."""
    head = list(columns)
    roofline = [columns[i] for i in _ROOFLINE]
    ms, tokens, throughput = _ROOFLINE
    head[ms], head[tokens], head[throughput] = columns[_EXPECTED], *rates
    return head, roofline


def _jsonl_rows(
    columns: Columns, scaled: list[list[float]], rates: tuple[Sequence[float], Sequence[float]]
) -> Iterator[tuple[Any, ...]]:
    """A chunk's rows as JSON Lines take them: ROW_FIELDS with the headline first, then
    the cost figures, RATE_FIELDS and ROOFLINE_FIELDS."""
    head, roofline = _headline_first(columns, rates)
    return zip(*head, *scaled, *rates, *roofline, strict=True)


def _figures(columns: Columns, per_ms: Sequence[float]) -> list[list[float]]:
    """The cost and energy columns of a chunk: each known factor per ms of expected step
    times the rows' expected ms."""
    return [[ms * f for ms in columns[_EXPECTED]] for f in per_ms]
