"""At 80 columns plan keeps the deployment's shape (TP, PP, EP, replicas): it is plan's
answer, and "mi300x, 4 GPUs" cannot be told from "mi300x, 8 GPUs" without it. Other
columns go first, each named under the table."""

from __future__ import annotations

import pytest

from tests.conftest import Run

PLAN = ["plan", "-m", "llama-3.1-70b"]


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
    dropped = next((x for x in result.err.splitlines() if "not shown at" in x), "")
    for shape in ("TP", "PP", "Replicas", "GPUs"):
        assert f" {shape}," not in dropped and not dropped.endswith(f" {shape}")
