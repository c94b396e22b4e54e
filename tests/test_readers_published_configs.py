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
    # OLMoE-1B-7B-0125-Instruct: 16 layers of 64 experts of 1,024, q and k norms over all
    # 2,048 channels. Its paper (arXiv 2409.02060) says 7B in all, 1B active.
    "olmoe-1b-7b-0125-instruct": 6_919_161_856,
    # Granite-3.1-3B-A800M-Instruct: 32 layers of 40 experts of 512, a tied head.
    "granite-3.1-3b-a800m-instruct": 3_298_793_472,
    # Qwen1.5-MoE-A2.7B-Chat: 60 experts of 1,408 and a gated shared expert of 5,632 a
    # layer; the card says "14.3B parameters in total".
    "qwen1.5-moe-a2.7b-chat": 14_315_784_192,
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
        # 16 layers x 2 x 16 KV heads x (2,048 / 16 = 128) x 2 bytes = 16 x 8,192 = 131,072.
        ("olmoe-1b-7b-0125-instruct", 131_072),
        # 32 layers x 2 x 8 KV heads x (1,536 / 24 = 64) x 2 bytes = 32 x 2,048 = 65,536.
        ("granite-3.1-3b-a800m-instruct", 65_536),
        # 24 layers x 2 x 16 KV heads x (2,048 / 16 = 128) x 2 bytes = 24 x 8,192 = 196,608.
        ("qwen1.5-moe-a2.7b-chat", 196_608),
    ],
)
def test_published_configs_cache_by_hand(catalog: Catalog, name: str, per_token: int) -> None:
    """BF16 KV, one sequence, a 1,000-token context; no recurrent state in these families."""
    bf16 = catalog.dtype("bf16")
    m = catalog.model(str(CONFIGS / f"{name}.json"))
    step = StepModel.of(Scenario(m, bf16, bf16, 4_800_000_000_000))
    assert step.kv_bytes(1_000) == 1_000 * per_token
    assert step.state_bytes == 0
