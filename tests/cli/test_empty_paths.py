"""An empty path (an unset shell variable: ``--presets "$DIR"``) is one line and exit 2 in
every option and argument that names a file or folder: read as the current folder, or as
"write nowhere", it did something other than what was asked, in silence."""

from __future__ import annotations

import pytest

from decodecalc.cli import COMMANDS, full_command
from tests.conftest import Run

PATH_METAVARS = ("FILE", "FILE...", "FILE.html", "DIR", "POINTS", "POINTS...", "CONFIG")


def _path_options() -> list[tuple[str, str]]:
    """Every (command, option) whose value is a file or folder, read from the CLI itself so
    that a new command's path options are held to the rule too."""
    group = full_command()
    found = []
    for name in COMMANDS:
        for param in group.commands[name].params:
            if param.param_type_name == "option" and param.metavar in PATH_METAVARS:
                found.append((name, param.opts[0]))
    return found


PATH_OPTIONS = _path_options()


def test_the_path_options_are_found() -> None:
    """--presets in the 17 commands that declare it (report passes it on: below), and
    each command's output file."""
    by_option: dict[str, int] = {}
    for _, option in PATH_OPTIONS:
        by_option[option] = by_option.get(option, 0) + 1
    assert by_option["--presets"] == 17
    assert {"--output", "--report", "--plot", "--save-to"} <= set(by_option)


@pytest.mark.parametrize(("command", "option"), PATH_OPTIONS)
def test_an_empty_path_option_is_refused(cli: Run, command: str, option: str) -> None:
    result = cli(command, option, "")
    assert result.code == 2, result
    assert result.err.count("\n") == 1
    assert "is empty" in result.err and option in result.err, result.err


@pytest.mark.parametrize(
    "args",
    [
        ["check", ""],
        ["validate", ""],
        ["calibrate", ""],
        ["show", ""],
        ["import", "", "--name", "x"],
        ["report", "-m", "llama-3.1-8b", "-g", "h100-sxm", "--presets", "", "-o", "p.html"],
    ],
    ids=["check", "validate", "calibrate", "show", "import", "report-presets"],
)
def test_an_empty_path_argument_is_refused(cli: Run, args: list[str]) -> None:
    result = cli(*args)
    assert result.code == 2
    assert "is empty" in result.err and result.err.count("\n") == 1, result.err


def test_import_refuses_an_empty_name(cli: Run) -> None:
    config = "tests/fixtures/configs/qwen3-next-80b-a3b.json"
    result = cli("import", config, "--name", "")
    assert result.code == 2 and result.out == ""
    assert "'--name': is empty" in result.err


def test_report_refuses_report_option_it_would_ignore(cli: Run, tmp_path: object) -> None:
    """report writes its page to -o; a --report among the command's options was dropped."""
    result = cli(
        "report", "-m", "llama-3.1-8b", "-g", "h100-sxm", "--report", "a.html", "-o", "b.html"
    )
    assert result.code == 2
    assert "report writes its page to -o FILE.html" in result.err
