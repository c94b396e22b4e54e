"""The README is a landing page: short, with the install and test commands CI really runs,
and a way into every command's reference.

Its examples run with every other page's (tests/project/test_docs.py).
"""

from __future__ import annotations

import json
import re
import shlex
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parents[2]
README = ROOT / "README.md"


def test_readme_stays_a_landing_page() -> None:
    """The details live under docs/, split by purpose; the README greets with three
    examples. 12.3 KB holds them (box-drawing characters are 3 bytes) and a little growth:
    12 KB did until the first example's H100 answer noted the typical band's months
    (typical-window, about 230 bytes)."""
    assert len(README.read_bytes()) <= 12_300


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


def test_the_showcase_compare_compares_deployments_that_run(cli: Any) -> None:
    """The README's compare measures each row against #1: every row must fit, or the
    ratio compares against a deployment that cannot run. Llama-3.1-70B at TP 2 on an H100
    (80 GiB x 0.9 = 76.97 GB): 70.55 GB of FP8 weights / 2 = 35.3 GB, plus a BF16 KV of
    80 layers x 2 x 8 heads x 128 x 2 B = 327,680 B a token x 131,072 / 2 = 21.5 GB."""
    (command,) = re.findall(r"`decodecalc (compare [^`]+)`", README.read_text())
    result = cli(*shlex.split(command), "--json")
    assert result.code == 0, result.err
    rows = json.loads(result.out)["rows"]
    assert len(rows) == 4 and all(row["fits"] for row in rows)
