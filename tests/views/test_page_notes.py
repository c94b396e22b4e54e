"""A --report page says what the run says on stderr: the combinations compare skipped and
the request rates serving found past saturation (review s41 #4), which have no row."""

from __future__ import annotations

import re
from pathlib import Path

from tests.conftest import Run


def _text(path: Path) -> str:
    """The page's words without its markup, whitespace folded."""
    html = path.read_text(encoding="utf-8")
    return re.sub(r"\s+", " ", re.sub(r"<[^>]+>", " ", html))


def test_compare_page_names_the_skipped_combination(cli: Run, tmp_path: Path) -> None:
    """Qwen2.5-7B's 28 query heads do not split 8 ways: that combination is skipped."""
    page = tmp_path / "c.html"
    result = cli(
        "compare", "-m", "llama-3.1-8b,qwen2.5-7b", "-g", "h100", "--tp", "1,8", "-c", "8K",
        "--report", str(page),
    )  # fmt: skip
    assert result.code == 0, result.err
    assert "skipped 1 combination that is no valid deployment" in result.err
    assert "skipped 1 combination that is no valid deployment" in _text(page)


def test_serving_page_names_the_saturated_rate(cli: Run, tmp_path: Path) -> None:
    """100 requests of 4K prompt tokens a second on Llama-3.1-70B over two H100s: 100 x 4,096
    x 2 x 70.6e9 = 5.8e16 FLOP/s of prefill, 15x the two GPUs' 2 x 1,979 TFLOP/s at FP8."""
    page = tmp_path / "s.html"
    result = cli(
        "serving", "-m", "llama-3.1-70b", "-g", "h100", "-w", "fp8", "--tp", "2",
        "--input-len", "4K", "--output-len", "500", "--request-rate", "1,100",
        "--report", str(page),
    )  # fmt: skip
    assert result.code == 0, result.err
    text = _text(page)
    assert "saturated at 100 requests/s (no row: it would need" in text
    assert "request rate 100/s is saturated" in text


def test_the_pools_page_names_the_saturated_rate(cli: Run, tmp_path: Path) -> None:
    """One prefill worker of two H100s takes 4K-token prompts of Llama-3.1-70B at 2.9 a
    second (review s41 #15's run; at most 2 x 1,979 TFLOP/s at FP8 / (4,096 x 2 x 70.6e9
    FLOP) = 6.8 at full efficiency): 3.5/s is past it."""
    page = tmp_path / "d.html"
    result = cli(
        "serving", "-m", "llama-3.1-70b", "-g", "h100", "-w", "fp8", "--tp", "2",
        "--input-len", "4K", "--output-len", "500", "--request-rate", "1,3.5",
        "--prefill-workers", "1", "--decode-workers", "1", "--report", str(page),
    )  # fmt: skip
    assert result.code == 0, result.err
    assert "request rate 3.5/s is saturated" in _text(page)
