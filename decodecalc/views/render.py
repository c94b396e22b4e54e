"""Renderers: one function per format, each taking a Report and a text stream.

Machine formats are written with json/csv directly, never through Rich's console, which
wraps long lines and treats [brackets] as markup.
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable
from typing import IO, Any

from decodecalc.views.report import Report

FORMATS = ("table", "json", "csv", "markdown")


def to_json(report: Report, out: IO[str], exact: bool = False) -> None:
    # allow_nan=False: a NaN or Infinity would be invalid JSON for every other parser.
    json.dump(report.document, out, indent=2, allow_nan=False)
    out.write("\n")


def to_csv(report: Report, out: IO[str], exact: bool = False) -> None:
    import csv

    writer = csv.writer(out, lineterminator="\n")
    writer.writerow(c.key for c in report.columns)
    for record in report.records:
        writer.writerow(_csv_value(record.get(c.key)) for c in report.columns)


def _csv_value(value: Any) -> Any:
    if value is None:
        return ""
    if isinstance(value, bool):
        return "true" if value else "false"
    return value


def to_markdown(report: Report, out: IO[str], exact: bool = False) -> None:
    for line in report.title:
        out.write(f"{line}\n\n")
    out.write("| " + " | ".join(c.header for c in report.columns) + " |\n")
    out.write("|" + "|".join("---:" if c.numeric else "---" for c in report.columns) + "|\n")
    for index, record in enumerate(report.records):
        cells = [c.show(record.get(c.key), exact).replace("|", "\\|") for c in report.columns]
        if index in report.highlight:
            cells = [f"**{cell}**" for cell in cells]
        out.write("| " + " | ".join(cells) + " |\n")
    for line in report.footer:
        out.write(f"\n{line}\n")


def to_table(report: Report, out: IO[str], exact: bool = False) -> None:
    from rich.console import Console
    from rich.table import Table
    from rich.text import Text

    # Piped output gets a wide canvas instead of Rich's 80 columns, so rows never wrap;
    # COLUMNS, when it is a width, still wins (Rich reads it; it ignores anything else).
    columns = os.environ.get("COLUMNS", "")
    wide = None if out.isatty() or (columns.isascii() and columns.isdigit()) else 160
    console = Console(file=out, highlight=False, markup=False, emoji=False, width=wide)
    for line in report.title:
        console.print(Text(line))
    table = Table(show_edge=False, header_style="bold")
    for column in report.columns:
        table.add_column(column.header, justify="right" if column.numeric else "left")
    for index, record in enumerate(report.records):
        style = "bold yellow" if index in report.highlight else None
        table.add_row(
            *(Text(c.show(record.get(c.key), exact)) for c in report.columns), style=style
        )
    console.print(table)
    for line in report.footer:
        console.print(Text(line))


RENDERERS: dict[str, Callable[[Report, IO[str], bool], None]] = {
    "table": to_table,
    "json": to_json,
    "csv": to_csv,
    "markdown": to_markdown,
}
