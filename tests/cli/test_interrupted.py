"""Ctrl-C is exit 130 and one line on stderr in every command, report included: report
ran its command in-process and dropped that command's exit code, so an interrupted page
that was never written exited 0 in silence."""

from __future__ import annotations

from pathlib import Path

import pytest

import decodecalc.cli.report
import decodecalc.cli.scenario
from tests.conftest import Run

ESTIMATE = ["-m", "llama-3.1-8b", "-g", "h100-sxm", "-c", "1K"]


def _interrupt(*_: object, **__: object) -> None:
    raise KeyboardInterrupt


@pytest.mark.parametrize(
    "args",
    [["report", *ESTIMATE, "-o", "{page}"], ["estimate", *ESTIMATE, "--report", "{page}"]],
    ids=["report", "estimate-report"],
)
def test_an_interrupted_page_exits_130_and_says_so(
    cli: Run, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, args: list[str]
) -> None:
    monkeypatch.setattr(decodecalc.cli.report, "estimate_page", _interrupt)
    page = tmp_path / "p.html"
    result = cli(*(a.format(page=page) for a in args))
    assert result.code == 130
    assert result.err == "decodecalc: interrupted; a file being written is left as it was\n"
    assert not page.exists()


def test_report_passes_on_its_command_s_exit_code(
    cli: Run, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Whatever the command exits with, report exits with (here an interrupted estimate)."""
    monkeypatch.setattr(decodecalc.cli.scenario, "scenario_of", _interrupt)
    result = cli("report", *ESTIMATE, "-o", str(tmp_path / "p.html"))
    assert result.code == 130
    assert result.err == "decodecalc: interrupted; a file being written is left as it was\n"
    assert result.out == "" and not (tmp_path / "p.html").exists()
