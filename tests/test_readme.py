"""The README's examples show what the CLI prints now.

Every fenced block that starts with `$ decodecalc ...` is run and compared with the block.
Run with DECODECALC_UPDATE_README=1 to rewrite the blocks after a deliberate change.
"""

from __future__ import annotations

import os
import re
import shlex
from pathlib import Path

import pytest

from .conftest import Run

README = Path(__file__).resolve().parents[1] / "README.md"
BLOCK = re.compile(r"```\n(\$ decodecalc [^\n]*)\n(.*?)```", re.DOTALL)


def blocks() -> list[tuple[str, str]]:
    return [(m.group(1), m.group(2)) for m in BLOCK.finditer(README.read_text())]


def render(cli: Run, command: str) -> str:
    result = cli(*shlex.split(command)[2:])
    return "\n".join(line.rstrip() for line in (result.out + result.err).splitlines()) + "\n"


@pytest.fixture
def wide(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("COLUMNS", "150")
    monkeypatch.chdir(README.parent)


@pytest.mark.usefixtures("wide")
@pytest.mark.parametrize(("command", "shown"), blocks(), ids=[c for c, _ in blocks()])
def test_readme_example_is_current(cli: Run, command: str, shown: str) -> None:
    printed = render(cli, command)
    if os.environ.get("DECODECALC_UPDATE_README"):
        text = README.read_text()
        README.write_text(text.replace(f"{command}\n{shown}", f"{command}\n{printed}", 1))
        return
    assert printed == shown
