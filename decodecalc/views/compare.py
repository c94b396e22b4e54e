"""Scenarios side by side, and the rows of a sweep."""

from __future__ import annotations

import itertools
from collections.abc import Callable, Iterable, Iterator, Sequence
from typing import IO, Any

from decodecalc.physics.estimator import Estimate
from decodecalc.physics.sweep import ROW_FIELDS
from decodecalc.views import humanize as h
from decodecalc.views.estimate import scenario_inputs
from decodecalc.views.report import Column, Report, document

SCENARIO_KEYS = ("model", "gpu", "weights_dtype", "kv_dtype", "batch", "tp")


def label(est: Estimate) -> str:
    s = est.scenario
    gpu = s.gpu.id if s.gpu else h.bandwidth(s.bandwidth_bytes_per_s)
    return f"{s.model.id} {gpu} {s.weights.id}/{s.kv_dtype.id} B{s.batch} TP{s.tp}"


def compare_report(estimates: Sequence[Estimate], contexts: Sequence[int]) -> Report:
    """One row per scenario and context; the ratio is ms per token over the first scenario's."""
    first = {r.context_tokens: r.seconds_per_token for r in estimates[0].rows}
    records = []
    for index, est in enumerate(estimates):
        inputs = scenario_inputs(est.scenario)
        for row in est.rows:
            if row.context_tokens not in contexts:
                continue
            records.append(
                {
                    "scenario": index + 1,
                    "label": label(est),
                    **{k: inputs[k] for k in SCENARIO_KEYS},
                    "context": row.context_tokens,
                    "ms_per_token": row.seconds_per_token * 1000,
                    "tokens_per_s": row.tokens_per_s,
                    "throughput_tokens_per_s": row.throughput_tokens_per_s,
                    "kv_share": row.kv_share,
                    "bound": row.bound,
                    "fits": row.fits,
                    "crossover_context": est.crossover_context,
                    "ratio_to_first": row.seconds_per_token / first[row.context_tokens],
                }
            )
    records.sort(key=lambda r: (r["context"], r["scenario"]))
    doc = document(
        scenarios=[
            {"scenario": i + 1, "label": label(e), **scenario_inputs(e.scenario)}
            for i, e in enumerate(estimates)
        ],
        rows=records,
    )
    columns = (
        Column("context", "Context", h.tokens),
        Column("label", "Scenario", numeric=False),
        Column("ms_per_token", "ms / token", lambda v: f"{v:.3f}"),
        Column("tokens_per_s", "tok/s / seq", h.rate),
        Column("throughput_tokens_per_s", "tok/s all", h.rate),
        Column("kv_share", "KV share", h.share),
        Column("crossover_context", "Crossover", lambda v: "none" if v is None else h.tokens(v)),
        Column("ratio_to_first", "vs #1", lambda v: f"{v:.2f}x"),
    )
    return Report(doc, columns, tuple(records))


_CSV_ROW = "%d,%d,%d,%d,%d,%.12g,%.12g,%.12g,%.12g,%s,%s"
"""ROW_FIELDS as CSV: exact integers, floats to 12 significant digits (formatting the
shortest round-trip form would halve a sweep's speed), the bound and the fits label."""
CSV_FITS: dict[bool | None, object] = {True: "true\n", False: "false\n", None: "\n"}
"""Labels for the rows' fits field, newline included: one %-format makes the whole line."""
CHUNK_ROWS = 4096

Scenarios = Iterable[tuple[dict[str, str], Iterator[tuple[Any, ...]]]]
Progress = Callable[[int], None]


def write_sweep_csv(
    axes: Sequence[str], scenarios: Scenarios, out: IO[str], progress: Progress | None = None
) -> int:
    """CSV with one %-format per line (in C, the scenario's prefix folded into the format)
    and writes in chunks: the csv module's per-cell work would halve a sweep's speed. The
    rows must come with CSV_FITS labels. Axis values are preset names and numbers, never in
    need of quoting."""
    out.write(",".join([*axes, *ROW_FIELDS]) + "\n")
    count = 0
    for combo, rows in scenarios:
        line = ",".join(combo.values()).replace("%", "%%") + "," + _CSV_ROW
        while chunk := list(itertools.islice(rows, CHUNK_ROWS)):
            out.write("".join([line % row for row in chunk]))
            count += len(chunk)
        if progress is not None:
            progress(count)
    return count


def write_sweep_jsonl(
    axes: Sequence[str], scenarios: Scenarios, out: IO[str], progress: Progress | None = None
) -> int:
    import json

    count = 0
    for combo, rows in scenarios:
        typed = {k: int(v) if k in ("batch", "tp") else v for k, v in combo.items()}
        for row in rows:
            record: dict[str, Any] = {**typed, **dict(zip(ROW_FIELDS, row, strict=True))}
            out.write(json.dumps(record, allow_nan=False))
            out.write("\n")
            count += 1
        if progress is not None:
            progress(count)
    return count
