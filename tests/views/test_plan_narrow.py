"""At 80 columns plan keeps the deployment's shape (TP, PP, EP, replicas): it is plan's
answer, and "mi300x, 4 GPUs" cannot be told from "mi300x, 8 GPUs" without it. Other
columns go first, each named under the table."""

from __future__ import annotations

import pytest

from tests.conftest import Run

PLAN = ["plan", "-m", "llama-3.1-70b", "--gpus", "h100-sxm,mi300x"]
"""Two GPUs are enough to need the shape (1, 2 and 4 GPUs of each), at a third of the
search over every priced GPU."""


@pytest.mark.parametrize(
    "load",
    [
        ["-c", "8K"],
        ["--input-len", "1000", "--output-len", "200", "--concurrency", "16"],
    ],
    ids=["context", "workload"],
)
@pytest.mark.parametrize("width", ["80", "60"])
def test_a_narrow_plan_keeps_the_shape(
    cli: Run, monkeypatch: pytest.MonkeyPatch, load: list[str], width: str
) -> None:
    monkeypatch.setenv("COLUMNS", width)
    result = cli(*PLAN, *load)
    assert result.code == 0, result.err
    header = next(line for line in result.out.splitlines() if line.lstrip().startswith("#"))
    cells = [c.strip() for c in header.split("┃")]
    assert {"GPUs", "TP", "PP", "Replicas"} <= set(cells), header
    # The columns left out are named under the table (stdout), in a paragraph that wraps.
    text = " ".join(result.out.split())
    said = text.split(f"not shown at {width} columns: ")[1].split(" (a wider terminal")[0]
    dropped = {name.strip() for name in said.split(",")}
    assert dropped and not dropped & {"TP", "PP", "Replicas", "GPUs"}, said
