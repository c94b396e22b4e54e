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


LIMIT_CASES = [
    ("estimate -m llama-3.1-8b -g h100 -c 2G", "context '2G' is above the limit"),
    ("estimate -m llama-3.1-8b -g h100 -c 1..1M:1", "expands to 1,048,576 points; at most 10,000"),
    ("estimate -m llama-3.1-8b -g h100 --batch 2000000", "from 1 to 1,000,000"),
    ("estimate -m llama-3.1-8b -g h100 --tp 3", "valid: 1, 2, 4, 8, 16, 32"),
    ("estimate -m llama-3.1-8b -g h100 -e 0.0001", "must be from 0.001 to 1 (1 is the roofline)"),
    ("generate -m llama-3.1-8b -g h100 -p 1K -n 2G", "--tokens '2G' is above the limit"),
    ("generate -m llama-3.1-8b -g h100 -p 1G -n 1", "reach a context of 1,073,741,825 tokens"),
    (
        "compare -m llama-3.1-8b -g h100,h200,b200,a100 -w bf16,fp8,int8 --batch 1,2,4,8,16,32",
        "72 scenarios; compare shows at most 64 (try sweep)",
    ),
    (
        "compare -m llama-3.1-8b,qwen3-8b -g h100,h200 -c 1..10000:1",
        "4 scenarios x 10,000 contexts = 40,000 rows; compare shows at most 10,000",
    ),
    (
        "sweep -m llama-3.1-8b,llama-3.1-70b -g h100,h200,b200 -w bf16,fp8 -k bf16,fp8"
        # 2 x 3 x 2 x 2 x 5 x 100 = 12,000 combinations x 10,000 contexts
        f" --tp 1,2,4,8,16 --batch {','.join(map(str, range(1, 101)))} -c 1..10000:1",
        "the grid has 120,000,000 rows; at most 100,000,000 are allowed (fewer values)",
    ),
    ("estimate -m llama-3.1-8b -b 2e6TB/s", "is implausibly large (at most 1e+18 bytes/s)"),
    ("estimate -m llama-3.1-8b -g h100 --overhead 5000s", "is implausibly long (at most an hour)"),
    ("estimate -m llama-3.1-8b -b 1e999999999TB/s", "'1e999999999TB/s' is out of range"),
]


@pytest.mark.parametrize(("command", "message"), LIMIT_CASES)
def test_limits_table_shows_the_real_messages(cli: Run, command: str, message: str) -> None:
    assert message in README.read_text()
    result = cli(*shlex.split(command))
    assert result.code == 2 and message in result.err, result.err


def test_estimate_options_table_matches_the_cli() -> None:
    """The README's option table is written by hand: it must name every option estimate
    has, and no other (--format, --json and --help are described once for all commands)."""
    from decodecalc.cli import full_command

    text = README.read_text()
    table = text.split("### `decodecalc estimate` options", 1)[1].split("\n\n", 2)[1]
    documented = set(re.findall(r"`(--?[a-z][a-z-]*)", table))
    command = full_command().commands["estimate"]
    options = {name for p in command.params for name in p.opts if name.startswith("-")}
    assert documented == options - {"--format", "-f", "--json", "--help"}
