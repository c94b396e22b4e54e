"""The report page as one self-contained HTML file: Plotly's own script inside it (from
the ``plotly`` package, the optional ``report`` extra; gzipped), the figures as JSON beside
it, the tables as HTML. Nothing on the page reaches a server: its Content-Security-Policy allows
no request at all, so a page read offline, mailed or archived shows the same.

It computes nothing: views/page.py said what the page holds.
"""

from __future__ import annotations

import functools
import json
import re
from html import escape
from pathlib import Path
from typing import Any

from decodecalc.errors import InputError
from decodecalc.views.page import Page, Section, Table

POLICY = (
    "default-src 'none'; script-src 'unsafe-inline'; style-src 'unsafe-inline'; "
    "img-src data:; font-src data:; connect-src 'none'"
)
"""Inline script and style only: no fetch, image, font or frame from anywhere."""

STYLE = """
:root { color-scheme: light; --ink: #1b1b1b; --muted: #5b5b5b; --rule: #d8d8d8; }
body { font: 15px/1.45 system-ui, -apple-system, "Segoe UI", sans-serif; color: var(--ink);
  margin: 0 auto; max-width: 1100px; padding: 16px; }
h1 { font-size: 1.35em; margin: 0.2em 0 0.4em; }
h2 { font-size: 1.1em; margin: 1.6em 0 0.4em; border-bottom: 1px solid var(--rule); }
p.line { margin: 0.15em 0; color: var(--muted); }
.chart { width: 100%; height: 460px; }
.chart.tall { height: 720px; }
.scroll { overflow-x: auto; -webkit-overflow-scrolling: touch; }
table { border-collapse: collapse; font-size: 0.86em; margin: 0.4em 0; }
th, td { padding: 3px 8px; border-bottom: 1px solid var(--rule); text-align: left;
  vertical-align: top; }
td.num { text-align: right; font-variant-numeric: tabular-nums; white-space: nowrap; }
table.figures td { white-space: nowrap; }
tr.mark td { font-weight: 600; background: #fff6d5; }
td pre { margin: 0; font-size: 0.95em; white-space: pre-wrap; }
footer { margin-top: 2em; color: var(--muted); font-size: 0.85em; }
code { overflow-wrap: anywhere; }
@media (max-width: 640px) {
  body { padding: 8px; font-size: 14px; }
  .chart { height: 360px; }
  .chart.tall { height: 640px; }
  td pre { white-space: pre; }
}
@media print {
  body { max-width: none; padding: 0; font-size: 10pt; }
  .modebar-container { display: none !important; }
  .chart { height: 9cm; break-inside: avoid; }
  .chart.tall { height: 16cm; }
  h2 { break-after: avoid; }
  tr { break-inside: avoid; }
  .scroll { overflow: visible; }
  td pre { white-space: pre-wrap; }
}
"""

DRAW = """
function draw() {
  const figures = JSON.parse(document.getElementById("figures").textContent);
  for (const [id, figure] of Object.entries(figures)) {
    Plotly.newPlot(id, figure.data, figure.layout,
      {responsive: true, displaylogo: false, modeBarButtonsToRemove: ["sendDataToCloud"]});
  }
}
function unpack(id) {
  const text = atob(document.getElementById(id).textContent);
  const bytes = Uint8Array.from(text, c => c.charCodeAt(0));
  const stream = new Blob([bytes]).stream().pipeThrough(new DecompressionStream("gzip"));
  return new Response(stream).text();
}
if (typeof DecompressionStream === "undefined") {
  for (const chart of document.querySelectorAll(".chart")) {
    chart.textContent = "This browser cannot unpack the charts (it has no DecompressionStream).";
  }
} else {
  unpack("plotly").then(code => {
    const script = document.createElement("script");
    script.textContent = code;
    document.head.appendChild(script);
    draw();
  });
}
// A printed page is narrower than the window: the charts redraw to its width and back.
for (const moment of ["beforeprint", "afterprint"]) {
  window.addEventListener(moment, () => {
    for (const chart of document.querySelectorAll(".js-plotly-plot")) Plotly.Plots.resize(chart);
  });
}
"""
"""Plotly's script travels gzipped (a third of its 4.8 MB, so a page stays far under 5 MB
whatever its tables hold): the page unpacks it with the browser's own DecompressionStream,
runs it, then draws every figure."""


@functools.cache
def plotly_script() -> str:
    """plotly.min.js from the installed plotly package, gzipped and in base64, read without
    importing plotly (its Python side is never needed: the page draws in the browser).
    Packed once per process (a quarter of a second): every page written carries the same."""
    import base64
    import gzip
    from importlib.util import find_spec

    spec = find_spec("plotly")
    places = spec.submodule_search_locations if spec else None
    script = Path(next(iter(places))) / "package_data" / "plotly.min.js" if places else None
    if script is None or not script.is_file():
        raise InputError(
            "--report needs plotly's script: pip install 'decodecalc[report]' "
            "(or pip install plotly)"
        )
    # mtime=0: the same page for the same answer, byte for byte.
    return base64.b64encode(gzip.compress(script.read_bytes(), 6, mtime=0)).decode("ascii")


def page_html(page: Page) -> str:
    figures: dict[str, Any] = {}
    body = [f"<h1>{escape(page.title)}</h1>"]
    for index, section in enumerate(page.sections):
        body.append(_section(section, f"chart-{index}", figures))
    body.append(
        "<footer>Made by decodecalc "
        f"{escape(page.version)} with <code>{escape(page.command)}</code></footer>"
    )
    data = json.dumps(
        {key: {"data": f.data, "layout": f.layout} for key, f in figures.items()},
        separators=(",", ":"),
        allow_nan=False,
    )
    return "\n".join(
        [
            "<!DOCTYPE html>",
            f'<html lang="en" data-kind="{escape(page.kind)}"><head><meta charset="utf-8">',
            '<meta name="viewport" content="width=device-width, initial-scale=1">',
            f'<meta http-equiv="Content-Security-Policy" content="{POLICY}">',
            f'<meta name="generator" content="decodecalc {escape(page.version)}">',
            f"<title>{escape(page.title)}</title>",
            f"<style>{STYLE}</style>",
            "</head><body>",
            *body,
            f'<script type="application/gzip;base64" id="plotly">{plotly_script()}</script>',
            # "</" or "<!--" would end or confuse the script element: "<" goes as \u003c.
            '<script type="application/json" id="figures">'
            + data.replace("<", "\\u003c")
            + "</script>",
            f"<script>{DRAW}</script>",
            "</body></html>",
        ]
    )


def _section(section: Section, key: str, figures: dict[str, Any]) -> str:
    parts = [f"<h2>{escape(section.heading)}</h2>"] if section.heading else []
    parts += [f'<p class="line">{escape(line)}</p>' for line in section.lines]
    if section.figure is not None:
        figures[key] = section.figure
        tall = " tall" if section.figure.layout.get("height", 0) > 600 else ""
        parts.append(f'<div class="chart{tall}" id="{key}"></div>')
    if section.table is not None:
        parts.append(_table(section.table))
    return "\n".join(parts)


URL = re.compile(r"https?://[^\s<>\"'()\[\]{};,]*[^\s<>\"'()\[\]{};,.:]")
"""An http(s) address in a cell (a preset's source), up to a space, bracket or separator,
its final full stop or colon left out."""


def linked(text: str) -> str:
    """A cell's text, escaped, with each http(s) address a link (the sources a page cites
    are there to be followed); nothing but the address goes into the attribute, escaped.

    >>> linked("at https://a.example/x?y=1&z=2. <b>")[:41]
    'at <a href="https://a.example/x?y=1&amp;z'
    """
    parts, start = [], 0
    for found in URL.finditer(text):
        url = escape(found.group(), quote=True)
        parts += [
            escape(text[start : found.start()]),
            f'<a href="{url}" rel="noopener noreferrer">{url}</a>',
        ]
        start = found.end()
    return "".join([*parts, escape(text[start:])])


def _table(table: Table) -> str:
    numeric = table.numeric or (False,) * len(table.headers)
    head = "".join(f"<th>{escape(h)}</th>" for h in table.headers)
    rows = []
    for index, row in enumerate(table.rows):
        cells = []
        for cell, figure in zip(row, numeric, strict=True):
            text = f"<pre>{escape(cell)}</pre>" if table.preformatted else linked(cell)
            cells.append(f'<td class="num">{text}</td>' if figure else f"<td>{text}</td>")
        mark = ' class="mark"' if index in table.highlight else ""
        rows.append(f"<tr{mark}>{''.join(cells)}</tr>")
    # A table of figures keeps each row on one line (ids such as a100-80gb unbroken); its
    # box scrolls sideways on a narrow screen.
    kind = ' class="figures"' if table.numeric else ""
    return (
        f'<div class="scroll"><table{kind}><thead><tr>{head}</tr></thead>'
        f"<tbody>{''.join(rows)}</tbody></table></div>"
    )
