"""Writing files whole or not at all, and never over one the user may still want.

Every file decodecalc writes (``-o``, ``--plot``, ``--save``, ``--save-to``,
``--save-engine``) goes through write_file.

Whole or not at all: the output goes to a temporary file beside the target, is flushed to
the disk, and only then renamed over the target (one atomic step on POSIX and Windows). A run
that fails, is interrupted (Ctrl-C) or is killed leaves the previous file byte for byte; a
killed one may leave its temporary ``.NAME.XXXXXXXX.tmp`` beside it.

Never over what the user may want: an input of the command is never replaced, --force or
not; and an existing file is replaced without --force only when decodecalc wrote it and it
has not changed since. decodecalc recognises its own files by a note it keeps for each one
written (the path, size and modification time, in its cache directory: loading/cache.py), not
by anything inside the file, so every format (CSV, PNG, a table) is covered and a file edited
by hand after decodecalc wrote it counts as the user's. Without the note (the cache turned
off or cleared, a file written on another machine) replacing the file needs --force.

A target that exists but is no regular file (``-o /dev/stdout``, a named pipe) is written
straight through: there is nothing to keep and nothing to rename over.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import secrets
import stat
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import IO, Any

from decodecalc.errors import InputError


@contextlib.contextmanager
def write_file(
    target: Path,
    *,
    force: bool = False,
    inputs: Iterable[Path] = (),
    binary: bool = False,
    shown: str | None = None,
) -> Iterator[IO[Any]]:
    """A stream whose text (or bytes) replaces ``target`` once the block ends without an
    exception. ``inputs``: files (and directories, for everything under them) the command
    read, never to be written over. ``shown``: the name as the user typed it, for messages."""
    name = shown or str(target)
    try:
        real = Path(os.path.realpath(target))  # through a symlink: its target is replaced
        found = _stat(real)
    except (OSError, ValueError) as exc:
        raise InputError(f"cannot write {name!r}: {_reason(exc)}") from None
    if found is not None and not stat.S_ISREG(found.st_mode):
        if stat.S_ISDIR(found.st_mode):
            raise InputError(f"cannot write {name!r}: it is a directory")
        with _opened(real, "wb" if binary else "w", name) as out:
            yield out
        return
    _refuse_inputs(real, found, inputs, name)
    if found is not None and not force and not written_here(real, found):
        raise InputError(
            f"{name!r} exists and decodecalc did not write it (or it changed since): give "
            "--force to replace it, or name another file"
        )
    temporary = _temporary(real, name)
    try:
        with _opened(temporary, "wb" if binary else "w", name) as out:
            yield out
            out.flush()
            os.fsync(out.fileno())
        if found is not None:  # the replacement keeps the permissions the file had
            os.chmod(temporary, stat.S_IMODE(found.st_mode))
        os.replace(temporary, real)
    except OSError as exc:
        raise InputError(f"cannot write {name!r}: {_reason(exc)}") from None
    finally:
        with contextlib.suppress(OSError):
            temporary.unlink()  # gone already when the rename succeeded
    _remember(real)


def _stat(path: Path) -> os.stat_result | None:
    try:
        return path.stat()
    except FileNotFoundError:
        return None


def _reason(exc: Exception) -> str:
    return (exc.strerror if isinstance(exc, OSError) else None) or str(exc)


@contextlib.contextmanager
def _opened(path: Path, mode: str, name: str) -> Iterator[IO[Any]]:
    """The file open for writing; text is UTF-8 with newlines as written (CSV's own)."""
    try:
        if "b" in mode:
            out: IO[Any] = open(path, mode)  # noqa: SIM115 (closed below)
        else:
            out = open(path, mode, encoding="utf-8", newline="")  # noqa: SIM115
    except OSError as exc:
        raise InputError(f"cannot write {name!r}: {_reason(exc)}") from None
    with out:
        yield out


def _refuse_inputs(
    real: Path, found: os.stat_result | None, inputs: Iterable[Path], name: str
) -> None:
    """An input replaced by the output is lost: refused even with --force."""
    for given in inputs:
        try:
            info = given.stat()
        except (OSError, ValueError):
            continue
        if stat.S_ISDIR(info.st_mode):
            inside = real.is_relative_to(os.path.realpath(given))
            if inside and found is not None:
                raise InputError(
                    f"{name!r} is in {str(given)!r}, a directory this command reads: "
                    "write the output elsewhere"
                )
        elif found is not None and (info.st_dev, info.st_ino) == (found.st_dev, found.st_ino):
            raise InputError(
                f"{name!r} is an input of this command: write the output to another file"
            )


def _temporary(real: Path, name: str) -> Path:
    """A new, empty file beside the target (the same file system, so the rename is atomic);
    created with the usual permissions (0666 less the umask), like any new file."""
    flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_BINARY", 0)
    for _ in range(8):
        path = real.with_name(f".{real.name[:200]}.{secrets.token_hex(4)}.tmp")
        try:
            os.close(os.open(path, flags, 0o666))
        except FileExistsError:
            continue
        except OSError as exc:
            raise InputError(f"cannot write {name!r}: {_reason(exc)}") from None
        return path
    raise InputError(f"cannot write {name!r}: no free temporary name beside it")


def _note_path(real: Path) -> Path | None:
    """Where the note on a written file is kept: one small file per target, so that
    runs writing different files at once never contend for one list."""
    from decodecalc.cache_folder import cache_dir

    directory = cache_dir()
    if directory is None:
        return None
    digest = hashlib.sha256(os.fsencode(real)).hexdigest()[:32]
    return directory / "written" / f"{digest}.json"


def _signature(real: Path, info: os.stat_result) -> list[Any]:
    return [str(real), info.st_size, info.st_mtime_ns]


def written_here(real: Path, info: os.stat_result) -> bool:
    """Whether decodecalc wrote this file and it is unchanged since (same size and
    modification time as when written)."""
    note = _note_path(real)
    if note is None:
        return False
    try:
        return bool(json.loads(note.read_text(encoding="utf-8")) == _signature(real, info))
    except (OSError, ValueError):
        return False


def _remember(real: Path) -> None:
    """Keep the note that decodecalc wrote this file; silently none where it cannot (the
    only cost is a --force to replace the file next time)."""
    note = _note_path(real)
    if note is None:
        return
    try:
        signature = _signature(real, real.stat())
        note.parent.mkdir(parents=True, exist_ok=True)
        partial = note.with_suffix(f".{os.getpid()}.tmp")
        partial.write_text(json.dumps(signature), encoding="utf-8")
        partial.replace(note)
    except OSError:
        return
