"""A cache of preset files already read and validated, as JSON.

A query is a whole process, and importing and running PyYAML costs more than the rest of a
query together. A preset that loaded cleanly is stored as JSON (a much cheaper import), keyed
by its path, size, modification time, identity (inode) and decodecalc's version, so an
edited file or a new version is read from YAML again. The cache is an optimisation only:
any problem with it (read-only home, corrupt entry) falls back to reading the YAML.

Location: the cache folder (decodecalc/cache_folder.py: $DECODECALC_CACHE, else
$XDG_CACHE_HOME/decodecalc, else ~/.cache/decodecalc; DECODECALC_CACHE=off disables it).

A listing (every engine profile for the typical band, every model for ``models``) reads
every preset of a kind: those come from one entry for the whole listing (set_entry), keyed
file by file the same way, so that a query opens one file, not one per preset.
"""

from __future__ import annotations

import json
import os
import zlib
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from decodecalc.cache_folder import cache_dir
from decodecalc.version import __version__

Entry = tuple[Path, list[Any]]
"""Where an entry is kept, and the key it must hold to be fresh."""

FORMAT = 3
"""What a stored preset was checked against. Bump it when a loader's rules tighten (a
bound, a field refused, a key taken out of loading/ignored_keys.py) or a loader leaves more
to be checked on first use: entries checked under the old rules are then read from their
files again (a developer's tree keeps one version number across such changes, and what a
cached preset skips or parses later is never checked against the file again)."""


def _stamp(stat: os.stat_result) -> list[int]:
    """What tells one state of a file from another: its size and modification time, and
    which file it is (a link in the path may now point to another with the same times)."""
    return [stat.st_size, stat.st_mtime_ns, stat.st_ino, stat.st_dev]


def entry(source: Path) -> Entry | None:
    """The entry of one file as it is now. Take it before reading the file, so that an
    edit made meanwhile leaves a stale entry, never the old data under the new key."""
    directory = cache_dir()
    if directory is None:
        return None
    try:
        stat = source.stat()
    except OSError:
        return None
    path = os.path.abspath(source)
    name = f"{source.stem}-{zlib.crc32(path.encode()):08x}.json"
    return directory / name, [path, *_stamp(stat), FORMAT, __version__]


def set_entry(kind: str, sources: Sequence[Path]) -> Entry | None:
    """The one entry of a whole listing of files (see entry)."""
    directory = cache_dir()
    if directory is None:
        return None
    try:
        stats = [source.stat() for source in sources]
    except OSError:
        return None
    paths = [os.path.abspath(source) for source in sources]
    files = [[p, *_stamp(st)] for p, st in zip(paths, stats, strict=True)]
    name = f"{kind}-set-{zlib.crc32(chr(0).join(paths).encode()):08x}.json"
    return directory / name, [files, FORMAT, __version__]


def load(found: Entry | None) -> Any | None:
    """The data an entry holds, or None when it is absent or not fresh."""
    if found is None:
        return None
    cached, key = found
    try:
        if not cached.is_file():  # absent, or something that is no cache entry (a FIFO)
            return None
        stored = json.loads(cached.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    if not isinstance(stored, dict) or stored.get("key") != key:
        return None
    return stored.get("data")


def store(found: Entry | None, data: Any) -> None:
    """Remember validated data under an entry; silently does nothing if it cannot."""
    if found is None:
        return
    cached, key = found
    try:
        cached.parent.mkdir(parents=True, exist_ok=True)
        temporary = cached.with_suffix(f".{os.getpid()}.tmp")
        temporary.write_text(json.dumps({"key": key, "data": data}), encoding="utf-8")
        temporary.replace(cached)
    except (OSError, TypeError, ValueError):
        return
