"""Results as reports: one JSON document plus flat records and their columns.

Every renderer works from a Report, so the table, Markdown, CSV and JSON of a result
cannot drift apart: they differ only in how a value is written.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from decodecalc.record import field, record

SCHEMA_VERSION = 1

Formatter = Callable[[Any], str]


@record
class Column:
    """A field of a record: its key (CSV header, JSON key), table header and formats."""

    key: str
    header: str
    human: Formatter = str
    exact: Formatter | None = None
    numeric: bool = True

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
