"""What an HTML report page shows (``--report FILE.html``, ``decodecalc report``): the
scenario with its presets' sources, interactive charts, the command's table, the worked
step and the notes, as plain data that views/html.py writes out.

Every figure comes from the same JSON documents and records the other formats render:
a chart is a reading of a document's rows, never a new estimate, so the page cannot
disagree with ``--json``. The charts are Plotly figures (traces and a layout, as data).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

from decodecalc.record import record, replace
from decodecalc.views import humanize as h
from decodecalc.views.figures import (
    Figure,
    compare_figure,
    latency_figure,
    plan_figure,
    serving_figure,
)
from decodecalc.views.report import Report


@record
class Table:
    headers: tuple[str, ...]
    rows: tuple[tuple[str, ...], ...]
    numeric: tuple[bool, ...] = ()
    """Which columns hold figures (right-aligned); empty: none."""
    highlight: frozenset[int] = frozenset()
    preformatted: bool = False
    """Cells keep their spacing (the worked step's aligned lines)."""


@record
class Section:
    heading: str
    lines: tuple[str, ...] = ()
    figure: Figure | None = None
    table: Table | None = None


@record
class Page:
    kind: str
    """The command whose answer it shows: estimate, compare, serving or plan."""
    title: str
    sections: tuple[Section, ...]
    command: str
    version: str


@record
class Source:
    """A preset the answer rests on and where its figures come from."""

    kind: str
    id: str
    name: str
    source: str


def sources_of(catalog: Any, scenarios: Iterable[Any]) -> tuple[Source, ...]:
    """Every preset the scenarios were resolved from, once each, with its ``source:``: the
    model, GPU (datasheet, FLOP/s, power), formats, links, engine profiles, price lists."""
    found: dict[tuple[str, str], Source] = {}

    def add(kind: str, id_: str, name: str, *texts: str) -> None:
        text = "; ".join(t for t in texts if t) or "given on the command line"
        found.setdefault((kind, id_), Source(kind, id_, name, text))

    for s in scenarios:
        m = s.model
        add("model", m.id, m.name, m.source, m.official_params_source)
        if s.gpu is not None:
            g = s.gpu
            add("gpu", g.id, g.name, g.source, g.flops_source, g.power_source)
        for dtype in (s.weights, *(d for _, d in s.weight_overrides), s.kv_dtype, s.v_dtype):
            if dtype is not None:
                add("dtype", dtype.id, dtype.name, dtype.source)
        for link in (s.link, s.node_link):
            if link is not None:
                add("link", link.id, link.name, link.source)
        if not s.engine.is_roofline:
            for name in s.engine.names or (s.engine.id,):
                # a profile's id, "id@line" for its release line (engine/select.py
                # as_named), or "id (family)" for one measured on another family
                profile = catalog.engine(name.split(" (")[0].split("@")[0])
                add("engine", profile.id, profile.name, profile.source)
        price = s.rates.price_source
        if price and price != "given":
            listing = catalog.price_list(price)
            add("prices", listing.id, listing.name, f"{listing.source} (read {listing.date})")
    return tuple(sorted(found.values(), key=lambda s: KINDS.index(s.kind)))


KINDS = ("model", "gpu", "dtype", "link", "engine", "prices")
"""The order the sources are listed in: what the answer rests on most, first."""


def estimate_page(report: Report, step: Report, sources: Sequence[Source], command: str) -> Page:
    """One scenario's latency across contexts (``report``: estimate's, the table's view)."""
    doc = report.document
    figure = latency_figure(doc)
    return _page("estimate", report, figure, "Per context", [doc["inputs"]], sources, command, step)


def compare_page(report: Report, step: Report, sources: Sequence[Source], command: str) -> Page:
    """Scenarios side by side: one line each (``step``: the first one's worked step)."""
    doc = report.document
    scenarios = doc["scenarios"]
    return _page(
        "compare",
        report,
        compare_figure(doc),
        "Side by side",
        scenarios,
        sources,
        command,
        step,
        f"{len(scenarios)} scenarios compared",
    )


def serving_page(report: Report, sources: Sequence[Source], command: str) -> Page:
    doc = report.document
    inputs = [{**doc["inputs"], **doc["workload"]}]
    return _page("serving", report, serving_figure(doc), "Per load", inputs, sources, command)


def disaggregated_page(
    report: Report, inputs: Sequence[dict[str, Any]], sources: Sequence[Source], command: str
) -> Page:
    """serving --prefill-workers --decode-workers: the loads on serving's chart, then each
    pool with its layout and its own figures at every load (``inputs``: the prefill and
    the decode worker's scenarios, a column each)."""
    doc = report.document
    # No knee or KV-pool mark: a decode worker's KV limit is not the deployment's load.
    plain = {**doc, "knee_concurrency": None, "max_concurrency_kv": None}
    page = _page("serving", report, serving_figure(plain), "Per load", inputs, sources, command)
    chart, results, *rest = page.sections
    return replace(page, sections=(chart, results, *pool_sections(doc), *rest))


POOL_FIGURES = {
    "prefill": (
        ("prefill_wait_ms", "wait ms", "{:,.2f}"),
        ("prefill_ms", "prefill ms", "{:,.2f}"),
        ("kv_transfer_ms", "KV hand-over ms", "{:,.2f}"),
        ("input_tokens_per_s_per_prefill_gpu", "input tok/s per GPU", "{:,.1f}"),
    ),
    "decode": (
        ("decode_batch", "requests per worker", "{:,.1f}"),
        ("tpot_ms", "TPOT ms", "{:,.2f}"),
        ("decode_wait_ms", "wait ms", "{:,.2f}"),
        ("output_tokens_per_s_per_decode_gpu", "output tok/s per GPU", "{:,.1f}"),
    ),
}
"""Each pool's figures in the document's rows: (key, header, format)."""


def pool_sections(doc: dict[str, Any]) -> tuple[Section, ...]:
    """A section per pool: its workers and layout in a line, its saturation, and its own
    figures at every load of the document's rows."""
    sections = []
    for name in ("prefill", "decode"):
        pool = doc[name]
        layout = ", ".join(
            f"{key} {_cell(pool[key])}"
            for key in ("tp", "pp", "ep", "dp_attention", "eplb_redundant")
        )
        rate = doc[f"{name}_saturation_rate_per_s"]
        workers = f"{pool['workers']:,} worker{'s' if pool['workers'] != 1 else ''}"
        lines = (
            f"{workers} x {pool['gpus_per_worker']:,} GPUs = {pool['gpus']:,} GPUs ({layout})",
            f"saturates at {rate:,.3f} requests/s"
            + (" (first)" if doc["saturates_first"] == name else ""),
        )
        figures = POOL_FIGURES[name]
        table = Table(
            ("concurrency", *(header for _, header, _ in figures)),
            tuple(
                (_cell(row["concurrency"]), *(form.format(row[k]) for k, _, form in figures))
                for row in doc["rows"]
            ),
            (True,) * (len(figures) + 1),
        )
        sections.append(Section(f"{name.capitalize()} pool", lines, table=table))
    return tuple(sections)


def plan_page(report: Report, sources: Sequence[Source], command: str) -> Page:
    """Every option plan tried on one chart; the table holds the ones the command shows."""
    doc = report.document
    figure = plan_figure(doc)
    return _page("plan", report, figure, "Deployments", [doc["targets"]], sources, command)


def _page(
    kind: str,
    report: Report,
    figure: Figure,
    results: str,
    inputs: Sequence[dict[str, Any]],
    sources: Sequence[Source],
    command: str,
    step: Report | None = None,
    title: str | None = None,
) -> Page:
    """The page of every kind: the chart under the report's title lines, the command's
    table (headed ``results``), the inputs (plan's targets) and sources, the worked step
    where there is one, the notes."""
    from decodecalc.version import __version__

    notes = tuple(n["message"] for n in report.document.get("notes", ()))
    sections = (
        Section("", () if title else report.title[1:], figure=figure),
        Section(results, table=result_table(report)),
        *_scenario_sections(inputs, sources, "Targets" if kind == "plan" else "Scenario"),
        *(() if step is None else step_sections(step)),
        Section("Notes", lines=notes or ("none",)),
    )
    return Page(kind, title or report.title[0], sections, command, __version__)


def _scenario_sections(
    inputs: Sequence[dict[str, Any]], sources: Sequence[Source], heading: str = "Scenario"
) -> tuple[Section, Section]:
    """The inputs as the command resolved them (one column per scenario) and the sources."""
    keys = list(dict.fromkeys(k for one in inputs for k in one if k not in ("scenario", "cost")))
    headers = ("", *(str(one.get("label", "")) for one in inputs))
    rows = tuple((k, *(_cell(one.get(k)) for one in inputs)) for k in keys)
    table = Table(headers, rows)
    cited = Table(
        ("preset", "id", "name", "source"),
        tuple((s.kind, s.id, s.name, s.source) for s in sources),
    )
    return Section(heading, table=table), Section("Sources", table=cited)


def _cell(value: Any) -> str:
    if value is None:
        return "-"
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, int):
        return f"{value:,}"
    if isinstance(value, float):
        return f"{value:,.0f}" if value.is_integer() and abs(value) >= 1e6 else f"{value:,.6g}"
    if isinstance(value, dict):
        return ", ".join(f"{k}: {_cell(v)}" for k, v in value.items()) or "-"
    return str(value)


def result_table(report: Report) -> Table:
    """The command's own table: its columns, written as the terminal writes them."""
    columns = report.columns
    return Table(
        tuple(c.header or c.key for c in columns),
        tuple(tuple(c.show(r.get(c.key), False) for c in columns) for r in report.records),
        tuple(c.numeric for c in columns),
        report.highlight,
    )


def step_sections(step: Report) -> tuple[Section, ...]:
    """explain's worked step as tables: the bytes each tensor group reads, the step's
    figures (bytes, memory, compute and communication times) as the JSON document gives
    them, then each numbered part of the worked text in a row."""
    doc, row = step.document, step.document["rows"][0]
    groups = Table(
        ("tensor group", "params per GPU", "share read", "format", "bytes read"),
        tuple(
            (
                g["group"],
                f"{g['params']:,}",
                f"{g['read_share']:.4g}",
                f"{g['dtype']} ({g['bits_per_value']:g} bits)",
                f"{g['read_bytes']:,}",
            )
            for g in doc["weight_groups"]
        ),
        (False, True, True, False, True),
    )
    figures = Table(
        (f"at {h.tokens(row['context'])} tokens", "value"),
        tuple((key, _cell(row[key])) for key in STEP_FIELDS if key in row),
        (False, True),
    )
    parts: list[list[str]] = [[]]
    for line in step.title[1:]:
        if line:
            parts[-1].append(line)
        elif parts[-1]:
            parts.append([])
    worked = tuple((p[0], "\n".join(p[1:])) for p in parts if p)
    return (
        Section("One step worked through (decodecalc explain)", (step.title[0],), table=groups),
        Section("", table=figures),
        Section("", table=Table(("part", "working"), worked, preformatted=True)),
    )


STEP_FIELDS = (
    "weight_bytes",
    "kv_bytes",
    "state_bytes",
    "total_bytes",
    "memory_ms",
    "compute_ms",
    "allreduce_ms",
    "all_to_all_ms",
    "handoff_ms",
    "overhead_ms",
    "roofline_ms_per_token",
    "expected_ms_per_token",
    "expected_low_ms_per_token",
    "expected_high_ms_per_token",
    "bound",
    "fits",
)
"""The figures of one step, each a field of estimate's JSON row."""
