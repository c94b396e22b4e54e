"""Results as reports: one JSON document plus flat records and their columns.

Every renderer works from a Report, so the table, Markdown, CSV and JSON of a result
cannot drift apart: they differ only in how a value is written.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from decodecalc.notes import Note
from decodecalc.record import field, record, replace

SCHEMA_VERSION = 3
"""Bumped when a field changes meaning or disappears (docs/json.md). 2: ms_per_token,
tokens_per_s, throughput_tokens_per_s, ratio_to_first and generate's decode figures hold
the headline step (the engine's expected one; the roofline under --engine roofline), and
the roofline moved to roofline_* keys."""

KEPT = -1
"""The drop rank of a column a narrow table gives up last (Column.drop)."""

ASKED = frozenset({"cost_per_million_tokens", "joules_per_token"})
"""Columns only an option brings (--price, --power): whatever view declares them, a
narrow table keeps them as KEPT, for the user asked for them by name."""

Formatter = Callable[[Any], str]

CSV_FLOAT = "%.12g"
"""How every CSV writes a float: 12 significant digits, so binary noise never shows
(89.27, not 89.27000000000001); sweep's streamed rows build their line from it too."""


@record
class Column:
    """A field of a record: its key (CSV header, JSON key), table header and formats.

    A terminal table never cuts a cell: a numeric cell (a figure) never wraps, a text
    cell and a header wrap only at spaces, so no number or identifier is ever broken.
    When even that is too wide, the table drops whole columns, the highest ``drop``
    first and the rightmost first among equals, and names them under the table
    (render.to_table). Markdown, CSV and JSON always hold every column.
    """

    key: str
    header: str
    human: Formatter = str
    exact: Formatter | None = None
    numeric: bool = True
    drop: int = 0
    """Drop rank on a narrow terminal: the column with the highest goes first; the
    default 0 keeps a column until every ranked one has gone, and KEPT (a column the user
    asked for by option, or a verdict) until every default one has."""

    def show(self, value: Any, exact: bool) -> str:
        if value is None:
            return "-"
        formatter = self.exact if exact and self.exact is not None else self.human
        return formatter(value)


@record
class Report:
    """What a command prints, before it is decided how."""

    document: dict[str, Any]
    """The JSON document (with schema_version)."""
    columns: tuple[Column, ...]
    records: tuple[dict[str, Any], ...]
    title: tuple[str, ...] = ()
    """Lines above a human table."""
    footer: tuple[str, ...] = ()
    """Lines below a human table."""
    highlight: frozenset[int] = field(default_factory=frozenset)
    """Indexes of records a human table emphasises (the crossover row)."""


def document(**fields: Any) -> dict[str, Any]:
    return {"schema_version": SCHEMA_VERSION, **fields}


def with_notes(report: Report, notes: Sequence[Note]) -> Report:
    """The report with its notes in the JSON document (``notes``); the CLI writes them on
    stderr in every format, so that stdout carries data only."""
    return replace(report, document={**report.document, "notes": [n.as_dict() for n in notes]})
