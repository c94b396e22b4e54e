"""The readers added for issue 31, read from the config.json of a published checkpoint
(tests/fixtures/configs, each file's source in SOURCES.md), not from transformers'
defaults: the parameter count equals the one transformers 5.24.0 builds from the same file
on PyTorch's meta device (validation/meta_params.py: parameters and persistent buffers,
shared tensors once), and the KV cache is counted by hand from the file's fields.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from decodecalc.loading.catalog import Catalog
from decodecalc.scenarios.scenario import Scenario
from decodecalc.step.step import StepModel

CONFIGS = Path(__file__).parent / "fixtures" / "configs"

META_COUNTS = {
    # Qwen3-VL-4B-Instruct, vision tower and its three DeepStack mergers included; the head
    # is tied to the embedding (tie_word_embeddings true), counted once.
    "qwen3-vl-4b": 4_437_815_808,
    # Qwen3-VL-30B-A3B-Instruct: 48 layers of 128 experts of 768, the same 27-layer tower
    # as Qwen3-Omni's, an untied head.
    "qwen3-vl-30b-a3b": 31_070_754_032,
}


@pytest.mark.parametrize("name", sorted(META_COUNTS))
def test_published_configs_count_as_transformers_does(catalog: Catalog, name: str) -> None:
    assert catalog.model(str(CONFIGS / f"{name}.json")).total_params() == META_COUNTS[name]


@pytest.mark.parametrize(
    ("name", "per_token"),
    [
        # 36 layers x (K + V) x 8 KV heads x head_dim 128 x 2 bytes = 36 x 4,096 = 147,456.
        ("qwen3-vl-4b", 147_456),
        # 48 layers x (K + V) x 4 KV heads x head_dim 128 x 2 bytes = 48 x 2,048 = 98,304.
        ("qwen3-vl-30b-a3b", 98_304),
    ],
)
def test_published_configs_cache_by_hand(catalog: Catalog, name: str, per_token: int) -> None:
    """BF16 KV, one sequence, a 1,000-token context; no recurrent state in these families."""
    bf16 = catalog.dtype("bf16")
    m = catalog.model(str(CONFIGS / f"{name}.json"))
    step = StepModel.of(Scenario(m, bf16, bf16, 4_800_000_000_000))
    assert step.kv_bytes(1_000) == 1_000 * per_token
    assert step.state_bytes == 0
