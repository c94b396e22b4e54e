"""The console script: one query per process, run with the cyclic collector off."""

from __future__ import annotations

import gc
import os
import subprocess
import sys
from collections.abc import Iterator

import pytest

import decodecalc.cli
from decodecalc.__main__ import run
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

    monkeypatch.setattr(decodecalc.cli, "main", spy_main)
    with pytest.raises(SystemExit) as stopped:
        run()
    assert seen == [False]
    assert stopped.value.code == 2  # main()'s exit code becomes the process's
    assert "--bogus" in capsys.readouterr().err
    assert gc.get_freeze_count() > 0  # survivors are kept out of the final collections


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
