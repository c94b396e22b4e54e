"""The terminal chart's token axis: ticks at the contexts asked for, none at a crossover's
own row between them (review s40 #25: a tick read 100.247K)."""

from __future__ import annotations

from decodecalc.views.charts import Series, token_ticks
from tests.conftest import Run


def test_a_crossover_row_gets_no_tick() -> None:
    crossing = Series("a", (8192.0, 102_653.0, 204_800.0), (5.0, 8.0, 11.0), (102_653.0, 8.0))
    other = Series("b", (8192.0, 114_516.0, 204_800.0), (5.0, 9.0, 12.0), (114_516.0, 9.0))
    assert token_ticks([crossing, other]) == [8192.0, 204_800.0]


def test_the_compare_chart_labels_only_the_contexts_asked_for(cli: Run) -> None:
    result = cli(
        "compare", "-m", "llama-3.1-8b,qwen3-8b", "-g", "h100-sxm", "-c", "8K,200K", "--chart"
    )
    assert result.code == 0, result.err
    axis = next(line for line in result.out.splitlines() if line.strip().startswith("8K"))
    assert axis.split() == ["8K", "200K"]
