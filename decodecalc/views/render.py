"""Renderers: one function per format, each taking a Report and a text stream.

Machine formats are written with json/csv directly, never through Rich's console, which
wraps long lines and treats [brackets] as markup.
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable, Iterable, Sequence
from typing import IO, Any

from decodecalc.record import replace
from decodecalc.views.report import ASKED, CSV_FLOAT, KEPT, Column, Report

FORMATS = ("table", "json", "csv", "markdown")


def to_json(report: Report, out: IO[str], exact: bool = False) -> None:
    # allow_nan=False: a NaN or Infinity would be invalid JSON for every other parser.
    # One write of the whole text: json.dump writes each token (thousands) on its own.
    out.write(json.dumps(report.document, indent=2, allow_nan=False) + "\n")


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
    if isinstance(value, float):
        return CSV_FLOAT % value
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
    """A Rich table that fits the terminal without cutting a cell (see Column): it drops
    columns in their declared order when wrapping text at spaces is not enough, and says
    which under the table."""
    from rich.console import Console
    from rich.table import Table
    from rich.text import Text

    # Piped output gets a wide canvas instead of Rich's 80 columns, so rows never wrap;
    # COLUMNS, when it is a width, still wins (at least MIN_COLUMNS).
    asked = columns_asked()
    wide = asked if asked is not None else None if out.isatty() else 160
    console = Console(file=out, highlight=False, markup=False, emoji=False, width=wide)
    for line in report.title:
        console.print(Text(line))
    columns, cells = filled(
        report.columns,
        [[c.show(record.get(c.key), exact) for c in report.columns] for record in report.records],
    )
    width = console.width
    widths = fit_columns(columns, cells, width)
    table = Table(show_edge=False, header_style="bold")
    for index, column_width in widths.items():
        column = columns[index]
        # The widths leave room for every number and word, so "fold" never folds; it is
        # there so that Rich could never put an ellipsis in place of data.
        table.add_column(
            column.header,
            justify="right" if column.numeric else "left",
            width=column_width,
            overflow="fold",
        )
    for index, row in enumerate(cells):
        style = "bold yellow" if index in report.highlight else None
        table.add_row(*(Text(row[i]) for i in widths), style=style)
    # A table that cannot fit even with one column runs past the edge rather than cut.
    console.width = max(width, table_width(widths.values()))
    console.print(table)
    console.width = width
    dropped = [c.header or c.key for i, c in enumerate(columns) if i not in widths]
    if dropped:
        console.print(
            Text(
                f"not shown at {width} columns: {', '.join(dropped)} "
                "(a wider terminal or --format json shows them)"
            )
        )
    for line in report.footer:
        console.print(Text(line))


EMPTY = ""
"""A cell that holds nothing (no crossover on this row); "-" says "none" and stays."""


def filled(
    columns: Sequence[Column], cells: Sequence[Sequence[str]]
) -> tuple[list[Column], list[list[str]]]:
    """The columns with something in them, and their cells: a column empty on every row
    (the crossover marker when no row is the crossover) takes width and says nothing.
    The columns an option asked for are kept last (report.ASKED)."""
    keep = [i for i in range(len(columns)) if any(row[i] != EMPTY for row in cells)]
    if not cells or not keep:
        keep = list(range(len(columns)))
    shown = [
        replace(columns[i], drop=KEPT) if columns[i].key in ASKED else columns[i] for i in keep
    ]
    return shown, [[row[i] for i in keep] for row in cells]


MIN_COLUMNS = 40
"""The narrowest width tables and text are laid out at: a COLUMNS below it (0, a tiny
pane) is taken as this, so the header lines, the table's first columns and the line
naming the columns left out still print."""


def columns_asked() -> int | None:
    """COLUMNS when it is a width, raised to MIN_COLUMNS; None when it is unset or not a
    number."""
    columns = os.environ.get("COLUMNS", "")
    if columns.isascii() and columns.isdigit():
        return max(int(columns), MIN_COLUMNS)
    return None


def terminal_width(out: IO[str]) -> int | None:
    """The width text is wrapped at: COLUMNS when it is a width (columns_asked), the
    terminal's when ``out`` is one, and None (no wrapping) for a pipe or a file."""
    import shutil

    asked = columns_asked()
    if asked is not None:
        return asked
    return shutil.get_terminal_size().columns if out.isatty() else None


def write_lines(lines: Iterable[str], out: IO[str]) -> None:
    """Lines of prose or worked arithmetic, each wrapped at the terminal's width with its
    indentation kept (words and numbers are never broken); unwrapped into a pipe."""
    import textwrap

    width = terminal_width(out)
    for line in lines:
        if width is None or len(line) <= width:
            out.write(line + "\n")
            continue
        indent = " " * (len(line) - len(line.lstrip()))
        wrapped = textwrap.wrap(
            line,
            width,
            subsequent_indent=indent + "  ",
            break_long_words=False,
            break_on_hyphens=False,
        )
        out.write("\n".join(wrapped) + "\n")


def table_width(widths: Iterable[int]) -> int:
    """A table's width from its columns' text widths: Rich pads each column with a space
    either side and rules between columns (no outer edge)."""
    sizes = list(widths)
    return sum(sizes) + 3 * len(sizes) - 1


def fit_columns(
    columns: Sequence[Column], cells: Sequence[Sequence[str]], width: int
) -> dict[int, int]:
    """The columns a table shows at this width, by index, with each one's text width.

    A column needs at least room for its widest number (numbers never wrap) or its
    widest word (text and headers wrap at spaces). Columns are dropped, highest ``drop``
    first and rightmost first among equals, until those needs fit; one always stays.
    The width left over unwraps cells first (they wrap on every row, a header once),
    then headers, shared evenly among the columns that still wrap.
    """
    from rich.cells import cell_len

    least, body, full = [], [], []
    for index, column in enumerate(columns):
        texts = [row[index] for row in cells]
        parts = texts if column.numeric else [w for t in texts for w in t.split()]
        least.append(max(map(cell_len, [*column.header.split(), *parts]), default=1))
        body.append(max(map(cell_len, texts), default=0))
        full.append(max(body[-1], cell_len(column.header)))
    shown = list(range(len(columns)))
    for index in sorted(shown, key=lambda i: (-columns[i].drop, -i))[:-1]:
        if table_width(least[i] for i in shown) <= width:
            break
        shown.remove(index)
    widths = {i: least[i] for i in shown}
    spare = width - table_width(widths.values())
    for goal in (body, full):
        spare = _share(widths, goal, spare)
    return widths


def _share(widths: dict[int, int], goal: Sequence[int], spare: int) -> int:
    """Grow the columns short of their goal evenly (none past it) until the spare width
    runs out, and return what is left: no one column takes it all while others wrap."""
    while spare > 0 and (short := [i for i in widths if widths[i] < goal[i]]):
        step = max(1, spare // len(short))
        for index in short:
            grow = min(step, goal[index] - widths[index], spare)
            widths[index] += grow
            spare -= grow
    return spare


RENDERERS: dict[str, Callable[[Report, IO[str], bool], None]] = {
    "table": to_table,
    "json": to_json,
    "csv": to_csv,
    "markdown": to_markdown,
}
