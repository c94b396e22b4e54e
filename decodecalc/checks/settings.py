"""Settings as `decodecalc check` reads them from deployment files and vLLM serve configs.

Each value keeps where it came from (file:line:column and key), every converter says what
was wrong in words a user can act on, and Problems collects every mistake of a file so a
user fixes them all at once. Deployment files and vLLM configs both read through here, so
a ``batch: 0`` and a ``max-num-seqs: 0`` are refused alike.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from decodecalc.context import parse_context, parse_tokens
from decodecalc.errors import InputError, InputErrors
from decodecalc.loading.datafile import Document, KeyPath
from decodecalc.record import field, record
from decodecalc.scenarios.fields import EFFICIENCY_WORDS


@record
class Setting:
    value: Any
    where: str
    """file:line:col and key path, for messages."""


Settings = dict[str, Setting]


@record
class Problems:
    """Every problem found in one file, each a line of the error message."""

    items: list[str] = field(default_factory=list)

    def attempt(self, where: str, action: Callable[[], Any]) -> Any:
        """The action's result, or None with its error kept, prefixed with ``where``."""
        try:
            return action()
        except InputErrors as exc:
            self.items.extend(exc.problems)
        except InputError as exc:
            self.items.append(f"{where}: {exc}")
        return None


def locate(doc: Document, key_path: KeyPath) -> str:
    """``file:line:col: key.path`` of a key, or the file alone for the whole document."""
    label = ".".join(str(p) for p in key_path)
    return f"{doc.where(key_path)}" + (f": {label}" if label else "")


def locate_key(doc: Document, key_path: KeyPath) -> str:
    """``file:line:col: key.path`` of the key itself, for a problem with the key (unknown)
    rather than its value: a section's value starts on the line below it."""
    return f"{doc.where_key(key_path)}: " + ".".join(str(p) for p in key_path)


def show(value: Any) -> str:
    """A value for an error message, cut short: a YAML alias bomb must not be printed.
    A file's words as the file wrote them (true, not Python's True; nothing for null)."""
    import reprlib

    if isinstance(value, bool):
        return f"{str(value).lower()} (a boolean)"
    if value is None:
        return "nothing"

    shown = reprlib.Repr()
    shown.maxstring, shown.maxother, shown.maxlist, shown.maxlevel = 40, 40, 4, 2
    return shown.repr(value)


def number(value: Any) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise InputError(f"expected a number, got {show(value)}")
    if not value > 0 or value == float("inf"):
        raise InputError(f"must be a positive number, got {show(value)}")
    return float(value)


def efficiency_setting(value: Any) -> float | str:
    """A fraction, or a word the command line's --efficiency also takes, passed on for
    the scenario's resolver to read (so a file and a flag mean the same)."""
    if isinstance(value, str) and value.strip().lower() in EFFICIENCY_WORDS:
        return value.strip().lower()
    try:
        return number(value)
    except InputError:
        raise InputError(
            f"expected a fraction in (0, 1], 'sustained' or 'calibrated', got {show(value)}"
        ) from None


def whole(value: Any, least: int = 1) -> int:
    """A count of sequences or GPUs: below ``least`` (0 too, where 1 is the least) it is
    refused here, never read as "not given"."""
    if isinstance(value, bool) or not isinstance(value, int):
        raise InputError(f"expected a whole number, got {show(value)}")
    if value < least:
        raise InputError(f"must be at least {least}, got {value}")
    return value


def flag(value: Any) -> bool:
    """A yes-or-no setting (ep: true): YAML's booleans only, so 'no' is never read as true."""
    if not isinstance(value, bool):
        raise InputError(f"expected true or false, got {show(value)}")
    return value


def tokens(value: Any) -> int:
    """A token count: a whole number of at least 0, or its text (32K)."""
    if isinstance(value, str):
        return parse_tokens(value, "token count")
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise InputError(f"expected a token count such as 32768 or 32K, got {show(value)}")
    return value


def context_list(value: Any) -> tuple[int, ...]:
    items = value if isinstance(value, list) else [value]
    found: set[int] = set()
    for item in items:
        if isinstance(item, bool) or not isinstance(item, (int, str)):
            raise InputError(f"expected a context (32K, 1K..128K, a list), got {show(item)}")
        found.update(parse_context(str(item)))
    return tuple(sorted(found))


def text(value: Any) -> str:
    if not isinstance(value, str) or not value.strip():
        raise InputError(f"expected text, got {show(value)}")
    return value
