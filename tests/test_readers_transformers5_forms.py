"""transformers 5 saves configs of families decodecalc already read with new fields:
``layer_types`` even where every layer is alike, and lists where older configs gave a
rule. Each is read to the same layers as the older spelling, or refused in one line.
(MoE schedules, ``num_local_experts`` and Nemotron-H's list: test_readers_moe_schedules.py.)
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from decodecalc.loading.catalog import Catalog
from decodecalc.model.model import Model

from .conftest import Run

CONFIGS = Path(__file__).parent / "fixtures" / "configs"


def fixture(name: str) -> dict[str, Any]:
    config: dict[str, Any] = json.loads((CONFIGS / f"{name}.json").read_text())
    return config


def read(catalog: Catalog, tmp_path: Path, config: dict[str, Any]) -> Model:
    path = tmp_path / "config.json"
    path.write_text(json.dumps(config))
    return catalog.model(str(path))


@pytest.mark.parametrize(
    "name", ["llama-3.1-8b", "qwen3-8b", "qwen3-30b-a3b", "mixtral-8x7b", "qwen2.5-7b"]
)
def test_layer_types_of_alike_layers_read_the_same(
    catalog: Catalog, tmp_path: Path, name: str
) -> None:
    config = fixture(name)
    count = config["num_hidden_layers"]
    listed = {**config, "layer_types": ["full_attention"] * count}
    assert (
        read(catalog, tmp_path, listed).layers
        == catalog.model(str(CONFIGS / f"{name}.json")).layers
    )


def test_qwen2_windows_from_layer_types(catalog: Catalog, tmp_path: Path) -> None:
    """Qwen2 with use_sliding_window: transformers lists the first max_window_layers full,
    the rest sliding (a 32,768-token window here). KV at T = 100,000 in BF16, 2 x 4 KV
    heads x 128 x 2 bytes = 2,048 a layer and token: 4 full layers x 100,000 + 24 sliding
    x 32,768 tokens = (400,000 + 786,432) x 2,048 = 2,429,812,736 bytes."""
    from decodecalc.scenarios.scenario import Scenario
    from decodecalc.step.step import StepModel

    config = fixture("qwen2.5-7b")
    kinds = ["full_attention"] * 4 + ["sliding_attention"] * 24
    windowed = {
        **config,
        "use_sliding_window": True,
        "sliding_window": 32_768,
        "layer_types": kinds,
    }
    del windowed["max_window_layers"]
    m = read(catalog, tmp_path, windowed)
    bf16 = catalog.dtype("bf16")
    step = StepModel.of(Scenario(m, bf16, bf16, 4_800_000_000_000))
    assert step.kv_bytes(100_000) == 2_429_812_736


def test_a_sliding_layer_without_a_window_is_refused(cli: Run, tmp_path: Path) -> None:
    config = fixture("llama-3.1-8b")
    kinds = ["full_attention"] * 31 + ["sliding_attention"]
    path = tmp_path / "config.json"
    path.write_text(json.dumps({**config, "layer_types": kinds}))
    r = cli("show", str(path))
    assert r.code == 2 and r.err.count("\n") == 1
    assert "unknown layer type 'sliding_attention'" in r.err
