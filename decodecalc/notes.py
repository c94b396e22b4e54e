"""Notes: what a reader must know to read a result right ("does not fit", "past the model's
maximum context", "these are roofline figures").

A note is computed with the result, not printed by the command that happens to notice it,
so every command that computes a case gives the same notes: tables print them under the
table, machine formats carry them in JSON (``notes``: a list of ``{"code", "message"}``)
and repeat them on stderr, where a pipeline's data stays clean. ``code`` is stable for
scripts to match; ``message`` is for people and may be reworded.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from decodecalc.record import record, replace


@record
class Note:
    code: str
    """Stable, kebab-case: what scripts match on."""
    message: str
    pool: str | None = None
    """Which pool of a disaggregated deployment the note is of (``prefill``, ``decode``;
    None: the whole deployment, or one server): JSON carries it as ``pool`` where set."""

    def as_dict(self) -> dict[str, str]:
        found = {"code": self.code, "message": self.message}
        return found if self.pool is None else {**found, "pool": self.pool}


def unique(notes: Sequence[Note]) -> tuple[Note, ...]:
    """Each note once, in first-seen order (many scenarios of a comparison share a note)."""
    return tuple(dict.fromkeys(notes))


def many_notes(labelled: Iterable[tuple[str, Sequence[Note]]]) -> tuple[Note, ...]:
    """The notes of many scenarios (a comparison, a sweep) in one list: a note every
    scenario shares is said once; one that only some have names the first of them and
    counts the rest (a sweep may have millions)."""
    first: dict[Note, list[str]] = {}
    count: dict[Note, int] = {}
    scenarios = 0
    for label, notes in labelled:
        scenarios += 1
        for n in notes:
            labels = first.setdefault(n, [])
            if len(labels) < 3:
                labels.append(label)
            count[n] = count.get(n, 0) + 1
    merged = []
    for n, labels in first.items():
        if count[n] == scenarios:
            merged.append(n)
            continue
        more = count[n] - len(labels)
        shown = ", ".join(labels) + (f" and {more:,} more" if more else "")
        merged.append(replace(n, message=f"{shown}: {n.message}"))
    return tuple(merged)
