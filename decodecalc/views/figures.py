"""The report page's charts as Plotly figures (traces and a layout, plain data), each read
from a command's JSON document: the points are the document's rows, the marks (crossover,
memory limit, knee, KV pool, targets) its fields, so a chart shows what ``--json`` says.

Hover text prints each figure with the digits of the tables (3 decimals for ms), so a
reader can match a point against the table and the JSON.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from decodecalc.record import record

COLORS = ("#1f77b4", "#d62728", "#2ca02c", "#9467bd", "#ff7f0e", "#17becf", "#8c564b", "#e377c2")
"""One colour per line (a scenario of a comparison, a panel's series), in order."""
Spec = dict[str, Any]
"""A trace, shape or annotation, as Plotly's JSON spells it."""
MARK = "#444444"
"""Crossover, knee and target lines."""
PAST_MEMORY = "rgba(214, 39, 40, 0.08)"
"""The shaded range where the deployment no longer fits in memory."""


@record
class Figure:
    """One interactive chart: Plotly's traces and layout."""

    data: tuple[dict[str, Any], ...]
    layout: dict[str, Any]


def _band_color(color: str, alpha: float = 0.18) -> str:
    red, green, blue = (int(color[i : i + 2], 16) for i in (1, 3, 5))
    return f"rgba({red}, {green}, {blue}, {alpha})"


def _token_ticks(values: Sequence[float]) -> dict[str, Any]:
    """A log axis in tokens, ticked at the contexts asked for (1K, 32K, 1M) when they are
    few enough to label; the crossover's own row, between them, gets no tick."""
    import math

    shown = sorted({v for v in values if v > 0 and math.log2(v).is_integer()})
    axis: dict[str, Any] = {"type": "log", "title": {"text": "context (tokens)"}}
    if 0 < len(shown) <= 16:
        axis.update(tickvals=shown, ticktext=[_tokens(v) for v in shown])
    return axis


def _tokens(value: float) -> str:
    for factor, suffix in ((2**20, "M"), (2**10, "K")):
        if value >= factor:
            return f"{value / factor:g}{suffix}"
    return f"{value:g}"


def _vertical(x: float, dash: str = "dot", color: str = MARK, row: str = "") -> dict[str, Any]:
    """A line across the whole plot height at x (in data units, log axes too)."""
    return {
        "type": "line",
        "xref": f"x{row}",
        "yref": f"y{row} domain",
        "x0": x,
        "x1": x,
        "y0": 0,
        "y1": 1,
        "line": {"color": color, "width": 1.5, "dash": dash},
    }


def _label(x: float, text: str, log: bool, row: str = "", y: float = 1.0) -> dict[str, Any]:
    """A note beside a vertical line; annotations on a log axis take log10 positions."""
    import math

    return {
        "x": math.log10(x) if log else x,
        "xref": f"x{row}",
        "y": y,
        "yref": f"y{row} domain",
        "text": text,
        "showarrow": False,
        "xanchor": "left",
        "yanchor": "top",
        "font": {"size": 11, "color": MARK},
        "bgcolor": "rgba(255, 255, 255, 0.8)",
    }


def _layout(title: str, **fields: Any) -> dict[str, Any]:
    return {
        "title": {"text": title, "x": 0, "xanchor": "left", "font": {"size": 15}},
        "hovermode": "x unified",
        "legend": {"orientation": "h", "y": -0.22},
        "margin": {"l": 60, "r": 20, "t": 50, "b": 40},
        "template": {"layout": {"font": {"family": "system-ui, sans-serif"}}},
        **fields,
    }


def _expected_traces(rows: Sequence[dict[str, Any]], name: str, color: str) -> list[Spec]:
    """The expected figure as a line and its band as a shaded area (the band's edges run
    out along the high figures and back along the low ones)."""
    xs = [r["context"] for r in rows]
    band = {
        "type": "scatter",
        "mode": "lines",
        "x": [*xs, *reversed(xs)],
        "y": [r["expected_high_ms_per_token"] for r in rows]
        + [r["expected_low_ms_per_token"] for r in reversed(rows)],
        "fill": "toself",
        "fillcolor": _band_color(color),
        "line": {"width": 0},
        "hoverinfo": "skip",
        "name": f"{name}: band",
        "legendgroup": name,
        "showlegend": False,
    }
    line = {
        "type": "scatter",
        "mode": "lines+markers",
        "x": xs,
        "y": [r["expected_ms_per_token"] for r in rows],
        "customdata": [
            [r["expected_low_ms_per_token"], r["expected_high_ms_per_token"]] for r in rows
        ],
        "hovertemplate": "%{y:.3f} ms/token (band %{customdata[0]:.3f} to %{customdata[1]:.3f})",
        "line": {"color": color, "width": 2.5},
        "marker": {"size": 5, "symbol": _fit_symbols(rows)},
        "name": name,
        "legendgroup": name,
    }
    return [band, line]


def _fit_symbols(rows: Sequence[dict[str, Any]]) -> list[str]:
    """A circle where the step fits in memory, a cross where it does not."""
    return ["x-thin-open" if r.get("fits") is False else "circle" for r in rows]


def _memory_marks(limit: int | None, xs: Sequence[float]) -> tuple[list[Spec], list[Spec]]:
    """Shapes and notes for the context where memory runs out: a line at the last context
    that fits and the range past it shaded (all of it when the weights alone overflow)."""
    if limit is None or not xs or limit >= max(xs):
        return [], []
    start = max(limit, min(xs))
    shade = {
        "type": "rect",
        "xref": "x",
        "yref": "y domain",
        "x0": start,
        "x1": max(xs),
        "y0": 0,
        "y1": 1,
        "fillcolor": PAST_MEMORY,
        "line": {"width": 0},
        "layer": "below",
    }
    text = f"memory full past {limit:,} tokens" if limit else "the weights alone overflow memory"
    return [shade, _vertical(start, "dash", COLORS[1])], [_label(start, text, True, y=0.93)]


def latency_figure(doc: dict[str, Any]) -> Figure:
    """estimate: ms per token against context on a log axis, the roofline as the bound
    line, the engine's expected figure with its band, the crossover and the memory limit."""
    rows = doc["rows"]
    xs = [r["context"] for r in rows]
    engine = doc["inputs"]["engine"]
    traces: list[Spec] = []
    if engine != "roofline":
        who = "typical engine" if engine == "typical" else engine
        traces += _expected_traces(rows, f"expected ({who}), band shaded", COLORS[0])
    traces.append(
        {
            "type": "scatter",
            "mode": "lines+markers",
            "x": xs,
            "y": [r["roofline_ms_per_token"] for r in rows],
            "customdata": [[r["kv_share"], r["roofline_tokens_per_s"]] for r in rows],
            "hovertemplate": "%{y:.3f} ms/token, KV %{customdata[0]:.1%} of the bytes, "
            "%{customdata[1]:,.1f} tok/s",
            "line": {"color": "#222222", "width": 1.5, "dash": "dash"},
            "marker": {"size": 4, "symbol": _fit_symbols(rows)},
            "name": "roofline (the bound)",
        }
    )
    shapes, notes = _memory_marks(doc["max_context_that_fits"], xs)
    crossover = doc["crossover_context"]
    marked = [r for r in rows if r["crossover"]]
    if marked:
        traces.append(
            {
                "type": "scatter",
                "mode": "markers",
                "x": [crossover],
                "y": [marked[0]["ms_per_token"]],
                "marker": {"symbol": "x", "size": 13, "color": MARK},
                "hovertemplate": "crossover at %{x:,.1f} tokens: KV bytes = weight bytes",
                "name": "crossover (KV = weights)",
            }
        )
    if crossover is not None and xs and min(xs) <= crossover <= max(xs):
        shapes.append(_vertical(crossover))
        notes.append(_label(crossover, f"crossover {crossover:,.0f}", True, y=0.99))
    return _context_figure("ms per token against context", xs, traces, shapes, notes)


def _context_figure(
    title: str, xs: Sequence[float], traces: list[Spec], shapes: list[Spec], notes: list[Spec]
) -> Figure:
    """ms per token against a log axis of contexts."""
    layout = _layout(
        title,
        xaxis=_token_ticks(xs),
        yaxis={"title": {"text": "ms per token"}, "rangemode": "tozero"},
        shapes=shapes,
        annotations=notes,
    )
    return Figure(tuple(traces), layout)


def compare_figure(doc: dict[str, Any]) -> Figure:
    """compare: one line per scenario (its expected figure, banded when an engine's),
    each crossover inside the range marked with a line in the scenario's colour."""
    traces: list[Spec] = []
    shapes: list[Spec] = []
    notes: list[Spec] = []
    contexts = [r["context"] for r in doc["rows"]]
    for index, scenario in enumerate(doc["scenarios"]):
        color = COLORS[index % len(COLORS)]
        rows = [r for r in doc["rows"] if r["scenario"] == scenario["scenario"]]
        name = f"#{scenario['scenario']} {scenario['label']}"
        if scenario["engine"] == "roofline":
            traces += _expected_traces(rows, name, color)[1:]
        else:
            traces += _expected_traces(rows, name, color)
        crossover = rows[0]["crossover_context"] if rows else None
        if crossover is not None and min(contexts) <= crossover <= max(contexts):
            shapes.append(_vertical(crossover, color=color))
            label = f"#{scenario['scenario']} crossover"
            notes.append(_label(crossover, label, True, y=1 - 0.07 * len(notes)))
    title = "ms per token against context (expected, with the band where an engine's)"
    return _context_figure(title, contexts, traces, shapes, notes)


SERVING_PANELS = (
    ("tpot_ms", "TPOT (ms)", "%{y:.3f} ms TPOT"),
    ("ttft_ms", "TTFT (ms)", "%{y:,.1f} ms TTFT"),
    ("output_throughput_tokens_per_s", "output tok/s", "%{y:,.1f} output tok/s"),
)
"""serving's chart: one panel per figure, stacked over the same load axis."""


def serving_figure(doc: dict[str, Any]) -> Figure:
    """serving: TPOT, TTFT and output throughput against the load (concurrency, or the
    request rate of an open loop), the knee and the KV pool's limit marked on each."""
    rows = doc["rows"]
    closed = doc["workload"]["request_rate_per_s"] is None
    key = "concurrency" if closed else "request_rate_per_s"
    xs = [r[key] for r in rows]
    log = bool(xs) and min(xs) > 0 and max(xs) / min(xs) >= 16
    traces, shapes, notes = [], [], []
    layout = _layout(
        "TPOT, TTFT and throughput against "
        + ("concurrency" if closed else "request rate (requests/s)"),
        height=720,
        hovermode="x",
    )
    limit = doc["max_concurrency_kv"] if closed else doc["saturation_rate_per_s"]
    # The knee's row, found by its concurrency (an open loop's is the rate's running mean).
    knee = next((r[key] for r in rows if r["concurrency"] == doc["knee_concurrency"]), None)
    marks = [
        (x, text, dash)
        for x, text, dash in (
            (knee, "knee", "dot"),
            (limit, "KV pool full" if closed else "saturation", "dash"),
        )
        if x is not None and xs and min(xs) <= x <= max(xs) * 1.5
    ]
    for index, (field, title, hover) in enumerate(SERVING_PANELS):
        row = "" if index == 0 else str(index + 1)
        traces.append(
            {
                "type": "scatter",
                "mode": "lines+markers",
                "x": xs,
                "y": [r[field] for r in rows],
                "xaxis": f"x{row}",
                "yaxis": f"y{row}",
                "hovertemplate": f"{hover} at {key.replace('_', ' ')} %{{x:,}}<extra></extra>",
                "line": {"color": COLORS[index], "width": 2},
                "name": title,
            }
        )
        layout.update(_serving_axes(index, title, xs, log, key))
        shapes += [_vertical(x, dash, row=row) for x, _, dash in marks]
        if index == 0:
            notes += [_label(x, f"{text} {x:,.4g}", log, row) for x, text, _ in marks]
    layout.update(shapes=shapes, annotations=notes, showlegend=False)
    return Figure(tuple(traces), layout)


def _serving_axes(index: int, title: str, xs: list[Any], log: bool, key: str) -> dict[str, Any]:
    """The axes of one of serving's stacked panels: the load shared below, its own figure
    on the left; the load's axis is titled on the bottom panel only."""
    panels = len(SERVING_PANELS)
    row = "" if index == 0 else str(index + 1)
    top = 1 - index / panels
    return {
        f"yaxis{row}": {
            "title": {"text": title},
            "domain": [top - 1 / panels + 0.06, top],
            "rangemode": "tozero",
        },
        f"xaxis{row}": {
            "type": "log" if log else "linear",
            "anchor": f"y{row}",
            **({"matches": "x"} if row else {}),
            **({"tickvals": xs, "ticktext": [f"{x:g}" for x in xs]} if len(xs) <= 16 else {}),
            "title": {"text": key.replace("_", " ") if index == panels - 1 else ""},
        },
    }


def plan_figure(doc: dict[str, Any]) -> Figure:
    """plan: every option tried, cost per million tokens against ms per token, those that
    meet every target apart from those that miss one; the latency target a line."""
    traces = []
    for meets, name, color, symbol in (
        (True, "meets every target", COLORS[2], "circle"),
        (False, "misses a target", "#999999", "x-thin-open"),
    ):
        rows = [r for r in doc["rows"] if r["meets"] is meets]
        traces.append(
            {
                "type": "scatter",
                "mode": "markers",
                "x": [r["ms_per_token"] for r in rows],
                "y": [r.get("cost_per_million_tokens") for r in rows],
                "customdata": [[_option(r), r["throughput_tokens_per_s"]] for r in rows],
                "hovertemplate": "%{customdata[0]}<br>%{x:.3f} ms/token, $%{y:,.2f} per M "
                "tokens, %{customdata[1]:,.0f} tok/s<extra></extra>",
                "marker": {"color": color, "symbol": symbol, "size": 8 if meets else 6},
                "name": name,
            }
        )
    targets = doc["targets"]
    shapes, notes = [], []
    # A server that cannot run plan's workload has no TPOT: it is off the chart.
    ms = [r["ms_per_token"] for r in doc["rows"] if r["ms_per_token"] is not None]
    log = bool(ms) and max(ms) / min(ms) >= 16
    if targets["max_ms_per_token"] is not None:
        limit = targets["max_ms_per_token"]
        shapes.append(_vertical(limit, "dash", COLORS[1]))
        notes.append(_label(limit, f"latency target {limit:g} ms", log))
    throughput = targets["min_throughput_tokens_per_s"]
    at = f" and at least {throughput:,.0f} tok/s" if throughput else ""
    layout = _layout(
        f"cost against latency at {targets['context']:,} tokens (targets: the line{at})",
        hovermode="closest",
        xaxis={"type": "log" if log else "linear", "title": {"text": "ms per token"}},
        yaxis={"type": "log", "dtick": "D2", "title": {"text": "$ per million output tokens"}},
        shapes=shapes,
        annotations=notes,
    )
    return Figure(tuple(traces), layout)


def _option(row: dict[str, Any]) -> str:
    """One deployment in a line: 4 x h100-sxm (TP 4) fp8/fp8, batch 25."""
    layout = f"TP {row['tp']}" + (f" PP {row['pp']}" if row["pp"] > 1 else "")
    layout += " EP" if row["ep"] else ""
    rank = f"#{row['rank']} " if row["rank"] else ""
    return (
        f"{rank}{row['gpus']} x {row['gpu']} ({layout}, {row['replicas']} replicas) "
        f"{row['weights']}/{row['kv_dtype']}, batch {row['batch']}"
    )
