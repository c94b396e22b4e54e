"""The console script and ``python -m decodecalc``: one query, one short-lived process.

A query's process lives for a tenth of a second, and most of that is importing Typer and
then tearing the interpreter down again. Cyclic garbage collection buys nothing in such a
process: collections during start-up walk every module object just created (about 7% of
``import typer``), and the collections at exit walk them all again (about 15%). So the
collector is off while the command runs, except for sweeps, which stream without bound
and turn it back on. At exit the atexit handlers run and the standard streams are flushed,
as Python's own exit does, and then the process ends without the interpreter's teardown,
which frees every module and object one by one (about 4% of a query) where the operating
system takes the memory back at once (_leave). Every file a command writes is closed
before its command returns, so nothing is skipped that could lose output.

Exit status: 0 done, 1 a target missed (``check``), 2 bad input, 130 interrupted (143 by
SIGTERM), and
EXIT_CLOSED_PIPE (141) when the reader of the output went away first.
"""

from __future__ import annotations

import gc
import os
import sys

TYPE_CHECKING = False  # typing itself is imported once the collector is off (see run)
if TYPE_CHECKING:
    from typing import Any, NoReturn, TextIO

EXIT_CLOSED_PIPE = 141
"""The reader of stdout closed it before the output ended (``decodecalc sweep ... | head``):
128 + SIGPIPE, what a shell reports for a process a closed pipe kills. Not Click's 1, which
here means a target was missed, so ``check ... | head`` cannot pass for a failed check."""


class ClosedPipe(BaseException):
    """The reader of stdout or stderr is gone. A BaseException, so that it passes through
    everything between the write and run(): Click catches the OSError of a broken pipe and
    exits with 1 itself, and the CLI's own handlers catch Exception."""


class _PipeGuard:
    """A standard stream whose broken pipe is raised as ClosedPipe; the rest is the stream's."""

    def __init__(self, stream: TextIO) -> None:
        self._stream = stream

    def write(self, text: str) -> int:
        try:
            return self._stream.write(text)
        except BrokenPipeError:
            raise ClosedPipe from None

    def flush(self) -> None:
        try:
            self._stream.flush()
        except BrokenPipeError:
            raise ClosedPipe from None

    def __getattr__(self, name: str) -> Any:
        return getattr(self._stream, name)


def _guarded(stream: TextIO | None) -> TextIO:
    """The stream behind a _PipeGuard; one closed from the start (``>&-``, where Python
    leaves None) writes nowhere, so that the exit status still tells what happened."""
    if stream is None:
        stream = open(os.devnull, "w", encoding="utf-8")  # noqa: SIM115 (open until exit)
    return _PipeGuard(stream)  # type: ignore[return-value]  # (a TextIO by delegation)


EXIT_TERMINATED = 143
"""128 + SIGTERM, what a shell reports for a process SIGTERM ends."""


def _terminated(signum: int, frame: object) -> None:
    """SIGTERM (``timeout``, a CI job cancelled) ends the run as Ctrl-C does: unwinding, so
    that an output file being written is dropped and the previous one stays as it was."""
    sys.exit(EXIT_TERMINATED)


def run() -> None:
    """Console-script entry point."""
    gc.disable()
    import signal

    from decodecalc.cli import main

    signal.signal(signal.SIGTERM, _terminated)
    sys.stdout, sys.stderr = _guarded(sys.stdout), _guarded(sys.stderr)
    try:
        code = main()
        sys.stdout.flush()  # the end of the output may sit in the buffer until now
    except ClosedPipe:
        # Output still buffered would fail again at exit, and Python would report that
        # ("Exception ignored ... BrokenPipeError") and exit with 120: it goes nowhere.
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        os.dup2(devnull, sys.stderr.fileno())
        code = EXIT_CLOSED_PIPE
    _leave(code)


def _leave(code: int) -> NoReturn:
    """End the process with ``code`` as sys.exit would, less the interpreter's teardown."""
    import atexit

    atexit._run_exitfuncs()
    try:
        sys.stdout.flush()
        sys.stderr.flush()
    except ClosedPipe:
        code = EXIT_CLOSED_PIPE
    os._exit(code)


if __name__ == "__main__":
    run()
