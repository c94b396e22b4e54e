"""serving --prefill-workers --decode-workers --report FILE.html: the page draws both pools,
each with its workers, layout, saturation and its own figures at every load, the same
figures --json gives."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import Run

POOLS = (
    *("serving", "-m", "deepseek-v3", "-g", "h200", "-w", "fp8-block128"),
    *("--tp", "8", "--ep", "--dp-attention", "--prefill-workers", "1", "--decode-workers", "2"),
    *("--prefill-tp", "8", "--input-len", "8192", "--output-len", "1024"),
    *("--concurrency", "32,128"),
)
"""docs/serving.md's worked deployment: 1 prefill worker, 2 decode workers of 8 H200s."""


def _text(html: str) -> str:
    """The page's words without its markup, whitespace folded."""
    return re.sub(r"\s+", " ", re.sub(r"<[^>]+>", " ", html))


@pytest.fixture(scope="module")
def page_and_json(tmp_path_factory: pytest.TempPathFactory) -> tuple[str, dict[str, Any]]:
    import contextlib
    import io

    from decodecalc.cli import main

    path = tmp_path_factory.mktemp("page") / "pools.html"
    out = io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(io.StringIO()):
        assert main([*POOLS, "--report", str(path), "--json"]) == 0
    return path.read_text(encoding="utf-8"), json.loads(out.getvalue())


def test_the_page_has_a_section_for_each_pool(page_and_json: tuple[str, dict[str, Any]]) -> None:
    html, _ = page_and_json
    headings = re.findall(r"<h2[^>]*>([^<]*)</h2>", html)
    assert headings.index("Prefill pool") < headings.index("Decode pool")
    text = _text(html)
    # 1 x 8 GPUs prefill, 2 x 8 GPUs decode: 24 GPUs in all
    assert "1 worker x 8 GPUs = 8 GPUs" in text
    assert "2 workers x 8 GPUs = 16 GPUs" in text


def test_each_pool_shows_its_own_figures_from_the_json(
    page_and_json: tuple[str, dict[str, Any]],
) -> None:
    html, doc = page_and_json
    text = _text(html)
    prefill = text[text.index("Prefill pool") : text.index("Decode pool")]
    decode = text[text.index("Decode pool") : text.index("Scenario")]
    for row in doc["rows"]:
        assert f"{row['prefill_ms']:,.2f}" in prefill
        assert f"{row['input_tokens_per_s_per_prefill_gpu']:,.1f}" in prefill
        assert f"{row['tpot_ms']:,.2f}" in decode
        assert f"{row['decode_batch']:,.1f}" in decode
        assert f"{row['output_tokens_per_s_per_decode_gpu']:,.1f}" in decode
    first = doc["saturates_first"]
    assert f"saturates at {doc[f'{first}_saturation_rate_per_s']:,.3f} requests/s (first)" in text


def test_the_scenario_shows_both_workers(page_and_json: tuple[str, dict[str, Any]]) -> None:
    text = _text(page_and_json[0])
    scenario = text[text.index("Scenario") :]
    assert "prefill worker decode worker" in scenario


def test_chart_and_plot_still_refuse_two_pools(cli: Run, tmp_path: Path) -> None:
    result = cli(*POOLS, "--chart")
    assert result.code == 2
    assert "--report draws both pools" in result.err
    assert "Traceback" not in result.err


def test_an_open_loop_page_marks_the_pools_saturation(cli: Run, tmp_path: Path) -> None:
    """Review s41 #5: rates, not concurrencies, drew the one-pool server's saturation key,
    which the pools' document lacked (a traceback). The deployment's saturation is the
    lower of its pools', in the JSON as the one-pool server's key, which the chart reads."""
    path = tmp_path / "rates.html"
    flags = [*POOLS[: POOLS.index("--concurrency")], "--request-rate", "0.5,1"]
    doc = json.loads(cli(*flags, "--json").out)
    prefill, decode = doc["prefill_saturation_rate_per_s"], doc["decode_saturation_rate_per_s"]
    assert doc["saturation_rate_per_s"] == min(prefill, decode)
    result = cli(*flags, "--report", str(path))
    assert result.code == 0, result.err
    assert path.read_text(encoding="utf-8").startswith("<!DOCTYPE html>")
