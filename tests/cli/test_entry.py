"""The console script: one query per process, run with the cyclic collector off."""

from __future__ import annotations

import gc
import json
import os
import shutil
import subprocess
import sys
from collections.abc import Iterator

import pytest

import decodecalc.__main__
import decodecalc.cli
from decodecalc.__main__ import EXIT_CLOSED_PIPE, run
from tests.conftest import Run


@pytest.fixture
def collector_restored() -> Iterator[None]:
    """The entry point leaves the collector off and the heap frozen: undo both."""
    try:
        yield
    finally:
        gc.unfreeze()
        gc.enable()


@pytest.mark.usefixtures("collector_restored")
def test_console_script_runs_the_command_with_the_collector_off(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    seen: list[bool] = []
    real_main = decodecalc.cli.main

    def spy_main() -> int:
        seen.append(gc.isenabled())
        return real_main(["models", "--bogus"])

    def leave(code: int) -> None:  # the process's end, which would end pytest's too
        raise SystemExit(code)

    monkeypatch.setattr(decodecalc.cli, "main", spy_main)
    monkeypatch.setattr(decodecalc.__main__, "_leave", leave)
    with pytest.raises(SystemExit) as stopped:
        run()
    assert seen == [False]
    assert stopped.value.code == 2  # main()'s exit code becomes the process's
    assert "--bogus" in capsys.readouterr().err


def test_leaving_without_teardown_loses_nothing() -> None:
    """The process ends without the interpreter's teardown: atexit handlers still run,
    and output larger than a pipe holds arrives whole, the exit code with it."""
    code = (
        "import atexit, sys; atexit.register(print, 'atexit ran', file=sys.stderr); "
        "sys.argv = ['decodecalc', *sys.argv[1:]]; "
        "from decodecalc.__main__ import run; run()"
    )
    args = ["estimate", "-m", "llama-3.1-8b", "-g", "h100-sxm", "-c", "1..5000:1", "--json"]
    done = subprocess.run(
        [sys.executable, "-c", code, *args], capture_output=True, text=True, check=False
    )
    assert done.returncode == 0, done.stderr
    assert len(json.loads(done.stdout)["rows"]) == 5000
    assert done.stderr.endswith("atexit ran\n")
    bad = subprocess.run(
        [sys.executable, "-c", code, "estimate", "--bogus"],
        capture_output=True,
        text=True,
        check=False,
    )
    assert bad.returncode == 2 and bad.stdout == ""
    assert bad.stderr.startswith("decodecalc: error: No such option: --bogus")
    assert bad.stderr.endswith("atexit ran\n")  # after the one line of the error


@pytest.mark.usefixtures("collector_restored")
def test_sweep_turns_the_collector_back_on(cli: Run) -> None:
    gc.disable()
    result = cli("sweep", "-m", "llama-3.1-8b", "-g", "h100-sxm", "-c", "1K")
    assert result.code == 0, result.err
    assert gc.isenabled()


def test_python_dash_m_is_the_same_cli() -> None:
    result = subprocess.run(
        [sys.executable, "-m", "decodecalc", "--version"],
        capture_output=True,
        text=True,
        check=False,
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.startswith("decodecalc ")


@pytest.mark.slow
@pytest.mark.parametrize(
    ("words", "cword", "expected"),
    [
        ("decodecalc estimate -m llama-3.1", "3", {"llama-3.1-8b", "llama-3.1-70b"}),
        ("decodecalc explain -g h10", "3", {"h100-sxm", "h100-pcie", "h100-nvl"}),
        ("decodecalc estimate -w int4-g", "3", {"int4-g128", "int4-g32", "int4-g64"}),
        ("decodecalc est", "1", {"estimate"}),
    ],
)
def test_shell_completion(words: str, cword: str, expected: set[str]) -> None:
    """What bash asks after `decodecalc --install-completion`: the process completes the
    words in these variables instead of running a command."""
    env = {**os.environ, "_DECODECALC_COMPLETE": "complete_bash"}
    env.update(COMP_WORDS=words, COMP_CWORD=cword)
    result = subprocess.run(
        [sys.executable, "-m", "decodecalc"], env=env, capture_output=True, text=True, check=False
    )
    assert result.returncode == 0, result.stderr
    assert expected <= set(result.stdout.split())


CLOSED_PIPE_COMMANDS = {
    "estimate-csv": ("estimate", "-m", "llama-3.1-8b", "-g", "h100-sxm", "-f", "csv"),
    "sweep": ("sweep", "-m", "llama-3.1-8b", "-g", "h100-sxm,h200", "--batch", "1,2"),
    "compare": ("compare", "-m", "llama-3.1-8b", "-g", "h100-sxm", "-f", "csv"),
}
"""Commands whose output runs to thousands of lines with ``-c 1..2K:1``: far more than a
pipe holds, so the reader is gone while they still write."""


@pytest.mark.slow
@pytest.mark.skipif(shutil.which("head") is None, reason="needs head(1)")
@pytest.mark.parametrize("args", CLOSED_PIPE_COMMANDS.values(), ids=CLOSED_PIPE_COMMANDS.keys())
def test_output_into_head_exits_141(args: tuple[str, ...]) -> None:
    """`decodecalc ... | head -n 1`: the reader stops early. No traceback, no message, and
    128 + SIGPIPE as a shell reports it; not 1, which means a target was missed."""
    command = [sys.executable, "-m", "decodecalc", *args, "-c", "1..2K:1"]
    producer = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    assert producer.stdout is not None
    head = subprocess.Popen(["head", "-n", "1"], stdin=producer.stdout, stdout=subprocess.PIPE)
    producer.stdout.close()  # head holds the only read end: its exit closes the pipe
    first, _ = head.communicate(timeout=60)
    _, err = producer.communicate(timeout=60)
    assert first.count(b"\n") == 1  # the header line came through
    assert err == b""
    assert producer.returncode == EXIT_CLOSED_PIPE == 141


@pytest.mark.slow
@pytest.mark.skipif(shutil.which("sh") is None, reason="needs sh(1)")
def test_closed_stdout_still_gives_the_exit_status() -> None:
    """``decodecalc ... >&-``: Python leaves sys.stdout None; the output goes nowhere and
    the exit status still says what happened."""
    script = '"$0" -m decodecalc estimate -m llama-3.1-8b -g h100-sxm -c 1K >&-; echo "$?" >&2'
    done = subprocess.run(
        ["sh", "-c", script, sys.executable], capture_output=True, text=True, check=True
    )
    *notes, status = done.stderr.splitlines()  # the typical answer's notes, then the status
    assert status == "0" and all(n.startswith("decodecalc: note:") for n in notes)
    script = script.replace("-c 1K", "-c 1K --batch 0")
    done = subprocess.run(
        ["sh", "-c", script, sys.executable], capture_output=True, text=True, check=True
    )
    lines = done.stderr.splitlines()
    assert lines[-1] == "2" and len(lines) == 2 and lines[0].startswith("decodecalc: error:")
