"""A cache of preset files already read and validated, as JSON.

A query is a whole process, and importing and running PyYAML costs more than the rest of a
query together. A preset that loaded cleanly is stored as JSON (a much cheaper import), keyed
by its path, size, modification time and decodecalc's version, so an edited file or a new
version is read from YAML again. The cache is an optimisation only: any problem with it
(read-only home, corrupt entry) falls back to reading the YAML.

Location: $DECODECALC_CACHE, else $XDG_CACHE_HOME/decodecalc, else ~/.cache/decodecalc;
DECODECALC_CACHE=off disables it, and so does having no home directory to find.

A listing (every engine profile for the typical band, every model for ``models``) reads
every preset of a kind: those come from one entry for the whole set (load_set), keyed by
each file's path, size and modification time, so that a query opens one file, not one
per preset.
"""

from __future__ import annotations

import json
import os
import zlib
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from decodecalc import __version__
from decodecalc.paths import expand_user, xdg_dir

ENV_VAR = "DECODECALC_CACHE"


def cache_dir() -> Path | None:
    configured = os.environ.get(ENV_VAR)
    if configured:
        off = configured.lower() in ("off", "0", "no", "false")
        return None if off else expand_user(configured)
    base = xdg_dir("XDG_CACHE_HOME", ".cache")
    # No home to cache under: reading the YAML every time is only slower.
    return None if base is None else base / "decodecalc"


def _entry(source: Path) -> tuple[Path, list[Any]] | None:
    directory = cache_dir()
    if directory is None:
        return None
    try:
        stat = source.stat()
    except OSError:
        return None
    path = os.path.abspath(source)  # (size and mtime tell a file from another)
    name = f"{source.stem}-{zlib.crc32(path.encode()):08x}.json"
    return directory / name, [path, stat.st_size, stat.st_mtime_ns, __version__]


def _set_entry(kind: str, sources: Sequence[Path]) -> tuple[Path, list[Any]] | None:
    directory = cache_dir()
    if directory is None:
        return None
    try:
        stats = [source.stat() for source in sources]
    except OSError:
        return None
    paths = [os.path.abspath(source) for source in sources]
    files = [[p, st.st_size, st.st_mtime_ns] for p, st in zip(paths, stats, strict=True)]
    name = f"{kind}-set-{zlib.crc32(chr(0).join(paths).encode()):08x}.json"
    return directory / name, [files, __version__]


def load(source: Path) -> Any | None:
    """The cached data of ``source``, or None when there is no fresh entry."""
    return _stored(_entry(source))


def load_set(kind: str, sources: Sequence[Path]) -> list[Any] | None:
    """The cached data of every file of a set, in order, or None when the set's entry is
    not fresh for every one of them."""
    found = _stored(_set_entry(kind, sources))
    return found if isinstance(found, list) and len(found) == len(sources) else None


def _stored(entry: tuple[Path, list[Any]] | None) -> Any | None:
    if entry is None:
        return None
    cached, key = entry
    try:
        if not cached.is_file():  # absent, or something that is no cache entry (a FIFO)
            return None
        stored = json.loads(cached.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    if not isinstance(stored, dict) or stored.get("key") != key:
        return None
    return stored.get("data")


def store(source: Path, data: Any) -> None:
    """Remember validated data for ``source``; silently does nothing if it cannot."""
    _write(_entry(source), data)


def store_set(kind: str, sources: Sequence[Path], data: list[Any]) -> None:
    """Remember the validated data of every file of a set, in order."""
    _write(_set_entry(kind, sources), data)


def _write(entry: tuple[Path, list[Any]] | None, data: Any) -> None:
    if entry is None:
        return
    cached, key = entry
    try:
        cached.parent.mkdir(parents=True, exist_ok=True)
        temporary = cached.with_suffix(f".{os.getpid()}.tmp")
        temporary.write_text(json.dumps({"key": key, "data": data}), encoding="utf-8")
        temporary.replace(cached)
    except (OSError, TypeError, ValueError):
        return
