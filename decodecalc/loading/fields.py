"""Typed, strict access to a YAML mapping: every wrong type or unknown key is an error
that names the file, line, column and key path.

YAML 1.1 turns ``no`` into False and ``3.35e12`` into a string; reading each field with
the type it must have catches both instead of passing them on.
"""

from __future__ import annotations

import re
from collections.abc import Collection
from fractions import Fraction
from typing import Any

from decodecalc.errors import InputError
from decodecalc.loading.datafile import Document, KeyPath, fragment, key_label
from decodecalc.units import exact_number


def _words(name: str) -> set[str]:
    return {w for w in re.split(r"[-_./ ]+", name.lower()) if w}


def suggest(name: str, candidates: dict[str, str] | list[str]) -> str:
    """``; did you mean 'a', 'b'?`` or an empty string.

    ``candidates`` maps each name a user may type (ids and aliases) to the id to suggest.
    Names sharing every word of the query come first (llama-70b -> llama-3.1-70b), then
    spelling neighbours.
    """
    import difflib

    names = candidates if isinstance(candidates, dict) else {c: c for c in candidates}
    query = _words(name)
    containing = [names[c] for c in names if query and query <= _words(c)]
    close = [
        names[c] for c in difflib.get_close_matches(name.lower(), list(names), n=6, cutoff=0.6)
    ]
    picks = list(dict.fromkeys([*containing, *close]))[:4]
    return "; did you mean " + ", ".join(repr(c) for c in picks) + "?" if picks else ""


class Fields:
    """One mapping in a document, read field by field; ``finish()`` refuses leftovers."""

    def __init__(
        self,
        doc: Document,
        key_path: KeyPath = (),
        value: Any = None,
        limit: int | None = None,
        known: Collection[str] = (),
    ) -> None:
        self.doc = doc
        self.limit = limit
        """The largest whole number a field may hold unless its reader gives another
        (config.json sizes: loading/families.py MAX_SIZE); None: no bound."""
        self.known = frozenset(known)
        """Every field the reader may read (a preset kind's), where it names them: a key
        outside them is refused first, before a missing field, with the nearest name."""
        self.key_path = key_path
        data = doc.data if not key_path else value
        if not isinstance(data, dict):
            raise self.error(None, f"expected a mapping of fields, got {self._kind(data)}")
        self.data: dict[Any, Any] = data
        self.read: set[str] = set()
        self.children: dict[str, Fields] = {}
        for key in data if self.known else ():
            if str(key) not in self.known:
                raise self.unknown(str(key), self.known)

    def _kind(self, value: Any) -> str:
        """What a value is, for an error; a boolean in a YAML file may be a word YAML reads
        as one (``no``, ``on``), which a JSON file cannot hold."""
        kind = _kind(value)
        if not isinstance(value, bool):
            return kind
        if self.doc.path.endswith((".yaml", ".yml")):
            return f"{kind} (a YAML boolean; quote it if you meant text)"
        return f"{kind} (a boolean)"

    def error(self, name: str | None, problem: str, at_key: bool = False) -> InputError:
        """An error at this mapping (``name`` None) or at one of its fields: at its value,
        or with ``at_key`` at the key itself (an unknown field)."""
        path = self.key_path if name is None else (*self.key_path, name)
        label = ".".join(key_label(p) for p in path)
        field = f" {label}:" if label else ""
        where = self.doc.where_key(path) if at_key else self.doc.where(path)
        return InputError(f"{where}:{field} {problem}")

    def _get(self, name: str, required: bool) -> Any:
        self.read.add(name)
        if name not in self.data or self.data[name] is None:
            if required:
                import difflib

                # A key some reader reads is not a misspelling of another one.
                unread = [str(k) for k in self.data if str(k) not in self.read | self.known]
                near = difflib.get_close_matches(name, unread, n=1)
                hint = f" (is {fragment(near[0])} a misspelling of it?)" if near else ""
                raise self.error(None, f"missing required field {name!r}{hint}")
            return None
        return self.data[name]

    def has(self, name: str) -> bool:
        return self.data.get(name) is not None

    def integer(
        self, name: str, default: int | None = None, minimum: int = 1, maximum: int | None = None
    ) -> int:
        value = self._get(name, default is None)
        if value is None:
            assert default is not None
            return default
        if isinstance(value, bool) or not isinstance(value, int):
            raise self.error(name, f"expected a whole number, got {self._kind(value)}")
        maximum = self.limit if maximum is None else maximum
        if value < minimum:
            raise self.error(name, f"must be at least {minimum}, got {value}")
        if maximum is not None and value > maximum:
            raise self.error(name, f"must be at most {maximum:,}, got {value:,}")
        return value

    def optional_integer(
        self, name: str, minimum: int = 1, maximum: int | None = None
    ) -> int | None:
        if self.has(name):
            return self.integer(name, minimum=minimum, maximum=maximum)
        self.read.add(name)
        return None

    def boolean(self, name: str, default: bool) -> bool:
        value = self._get(name, False)
        if value is None:
            return default
        if not isinstance(value, bool):
            raise self.error(name, f"expected true or false, got {self._kind(value)}")
        return value

    def text(self, name: str, default: str | None = None) -> str:
        value = self._get(name, default is None)
        if value is None:
            assert default is not None
            return default
        if not isinstance(value, str) or not value.strip():
            raise self.error(name, f"expected text, got {self._kind(value)}")
        return value

    def texts(self, name: str) -> tuple[str, ...]:
        value = self._get(name, False)
        if value is None:
            return ()
        if not isinstance(value, list):
            raise self.error(name, f"expected a list of text, got {self._kind(value)}")
        for index, item in enumerate(value):
            if not isinstance(item, str):
                where = self.doc.where((*self.key_path, name, index))
                got = self._kind(item)
                raise InputError(f"{where}: {name}[{index}]: expected text, got {got}")
        return tuple(value)

    def raw_list(self, name: str) -> tuple[int, ...]:
        """A list of whole numbers (layer indexes), empty when absent."""
        value = self._get(name, False)
        if value is None:
            return ()
        if not isinstance(value, list) or not all(
            isinstance(v, int) and not isinstance(v, bool) for v in value
        ):
            raise self.error(name, f"expected a list of whole numbers, got {self._kind(value)}")
        if self.limit is not None and any(v > self.limit for v in value):
            raise self.error(name, f"holds {max(value):,}; each must be at most {self.limit:,}")
        return tuple(value)

    def used(self) -> dict[str, Any]:
        """The fields read so far, as found; nested mappings keep only what was read."""
        return {
            k: self.children[k].used() if k in self.children else self.data[k]
            for k in self.data
            if k in self.read
        }

    def fraction(self, name: str, maximum: int, minimum: Fraction | None = None) -> Fraction:
        """A positive number up to ``maximum`` (and from ``minimum``, where one is given),
        read exactly (4.84 stays 4.84, not a binary float). The bounds keep later float
        arithmetic finite."""
        value = self._get(name, True)
        if isinstance(value, bool) or not isinstance(value, (int, float, str)):
            raise self.error(name, f"expected a number, got {self._kind(value)}")
        try:
            number = exact_number(str(value))
        except OverflowError:
            raise self.error(name, f"out of range, got {fragment(value)}") from None
        except ValueError:
            raise self.error(name, f"expected a number, got {fragment(value)}") from None
        if number <= 0:
            raise self.error(name, f"must be greater than zero, got {value}")
        if number > maximum:
            raise self.error(name, f"must be at most {maximum:,}, got {value}")
        if minimum is not None and number < minimum:
            raise self.error(name, f"must be at least {float(minimum):g}, got {value}")
        return number

    def real(self, name: str, maximum: int) -> float:
        """fraction() as a float, where the exact value is needed no further (an efficiency,
        a band). A float within the bounds is that float already: its shortest repr, read
        exactly and rounded back, is itself, and each bound holds of the two alike (the
        bounds are whole numbers, and rounding keeps order); anything else is read exactly,
        with fraction()'s checks and messages."""
        value = self.data.get(name)
        if type(value) is float and 0 < value <= maximum:
            self.read.add(name)
            return value
        return float(self.fraction(name, maximum))

    def mapping(self, name: str) -> Fields:
        self._get(name, True)
        child = Fields(self.doc, (*self.key_path, name), self.data[name], self.limit)
        self.children[name] = child
        return child

    def refuse_unread(self, ignored: Collection[str], skip: Collection[str], who: str) -> None:
        """Refuse the first field that nobody read and ``ignored`` does not name, here and in
        the nested mappings read (but those named in ``skip``, which are checked where they
        are read, or hold no decode bytes). A config.json reader reads
        what changes decode bytes and ignores what does not (loading/ignored_keys.py); a
        field it does neither may change the bytes, so the read stops rather than guess."""
        for name, child in self.children.items():
            if name not in skip:
                child.refuse_unread(ignored, skip, who)
        for key in self.data:
            known = key in self.read or key in ignored or key in skip
            if not known and self.data[key] is not None:
                raise self.error(
                    str(key),
                    f"not a field {who} understands, and it may change what decode reads; "
                    "decodecalc stops rather than guess (remove the field if it changes "
                    "nothing)",
                )

    def finish(self) -> None:
        """Refuse keys nobody read, here and in nested mappings: a misspelt field must not
        be silently ignored. A document from the preset cache passed this when it was
        stored (loading/cache.py), so it is not searched again."""
        if self.doc.cached:
            return
        for child in self.children.values():
            child.finish()
        assert self.read <= self.known or not self.known, self.read - self.known
        for key in self.data:
            if key not in self.read:
                raise self.unknown(str(key), self.read)

    def unknown(self, key: str, known: Collection[str]) -> InputError:
        """A key no reader reads, with the nearest field names (else every one)."""
        names = sorted(known)
        hint = suggest(key, names) or "; valid: " + ", ".join(names)
        return self.error(key, f"unknown field{hint}", at_key=True)


def _kind(value: Any) -> str:
    if value is None:
        return "nothing"
    if isinstance(value, bool):
        return str(value).lower()
    if isinstance(value, dict):
        return "a mapping"
    if isinstance(value, list):
        return "a list"
    return f"{type(value).__name__} {fragment(value)}"
