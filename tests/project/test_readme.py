"""The README is a landing page: short, with the install and test commands CI really runs,
and a way into every command's reference.

Its examples run with every other page's (tests/project/test_docs.py).
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
README = ROOT / "README.md"


def test_readme_stays_a_landing_page() -> None:
    """The details live under docs/, split by purpose; the README greets with three
    examples. 12 KB holds them (box-drawing characters are 3 bytes) and a little growth."""
    assert len(README.read_bytes()) <= 12_000


@pytest.mark.parametrize(
    "command",
    [".venv/bin/pip install -e '.[test]'", '.venv/bin/python -m pytest -n auto -m "not slow"'],
)
def test_install_and_test_commands_are_the_ones_ci_runs(command: str) -> None:
    assert command in README.read_text()
    assert command in (ROOT / ".ci/run").read_text().replace(" --quiet", "")


def test_every_command_links_to_its_reference() -> None:
    from decodecalc.cli import COMMANDS

    text = README.read_text()
    linked = set(re.findall(r"\[`decodecalc ([a-z]+)`\]\(docs/cli\.md#decodecalc-\1\)", text))
    assert linked == set(COMMANDS)
