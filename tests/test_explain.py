"""decodecalc explain: one step worked through with the numbers substituted."""

from __future__ import annotations

from pathlib import Path

from .conftest import Run

DATA = Path(__file__).parent / "data" / "measured-decode.yaml"


def test_explain_walks_through_the_numbers(cli: Run) -> None:
    out = cli(
        "explain", "-m", "llama-3.1-70b", "-g", "h100", "-w", "fp8", "-k", "fp8", "-c", "200000"
    ).out
    for fragment in (
        "69,503,033,344",
        "32,768,000,000",
        "30.529 ms",
        "424,212.8 tokens",
        "memory-bound",
    ):
        assert fragment in out
