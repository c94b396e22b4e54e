"""The readers added for issue 31, read from the config.json of a published checkpoint
(tests/fixtures/configs, each file's source in SOURCES.md), not from transformers'
defaults: the parameter count equals the one transformers 5.24.0 builds from the same file
on PyTorch's meta device (validation/meta_params.py: parameters and persistent buffers,
shared tensors once), or, where transformers cannot build the file (remote code, or a
wrapper's text model alone), the count by hand from the modeling file's shapes; the KV
cache is counted by hand.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from decodecalc.loading.catalog import Catalog
from decodecalc.scenarios.scenario import Scenario
from decodecalc.step.step import StepModel

CONFIGS = Path(__file__).parents[1] / "fixtures" / "configs"

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
    # EXAONE-4.0-32B: 64 layers, untied; less its two 102,400 x 5,120 embeddings
    # (1,048,576,000) it is 30,954,640,384, the card's "30.95B without embeddings".
    "exaone-4.0-32b": 32_003_216_384,
    # Pythia-1B: GPT-NeoX's parallel block, biases everywhere, untied; the Pythia suite's
    # table gives the same 1,011,781,632.
    "pythia-1b": 1_011_781_632,
    # Qwen2.5-VL-7B-Instruct as transformers 4.53.1 re-saved it (text fields at the top and
    # under text_config): text model and the 32-block window-attention vision tower.
    "qwen2.5-vl-7b-instruct": 8_292_166_656,
    # Command R (c4ai-command-r-v01): 40 layers of 8,192, 64 heads without GQA, tied; its
    # card says 35 billion.
    "c4ai-command-r-v01": 34_980_831_232,
    # StarCoder2-3B: biases everywhere, LayerNorms with biases, the head tied (transformers'
    # default where the file is silent); its card says 3B.
    "starcoder2-3b": 3_030_371_328,
    # dots.llm1.inst: one dense layer first, then 61 of 128 experts of 1,408 and two shared;
    # its card says 142B in all (14B active).
    "dots.llm1.inst": 142_774_381_696,
    # InternLM3-8B-Instruct: 48 layers of 4,096 with 2 KV heads, untied.
    "internlm3-8b-instruct": 8_804_241_408,
}


BY_HAND = {
    # InternVL2-8B's language model, InternLM2.5-7B-Chat with 9 tokens added (92,553): no
    # modeling code in transformers (remote code), so counted from modeling_internlm2.py's
    # shapes. A layer: wqkv 4,096 x (32 + 2 x 8) x 128 = 25,165,824; wo 4,096 x 4,096 =
    # 16,777,216; w1, w3 2 x 14,336 x 4,096 = 117,440,512; w2 58,720,256; two norms 8,192:
    # 218,112,000, x 32 = 6,979,584,000. tok_embeddings and output 2 x 92,553 x 4,096 =
    # 758,194,176, the final norm 4,096: 7,737,782,272.
    "internlm2.5-7b-chat-internvl2": 7_737_782_272,
    # MiMo-7B (remote code: Qwen2 and MTP layers). A layer: q 4,096 x 4,096 and k, v 2 x
    # 4,096 x 1,024 with their 4,096 + 2 x 1,024 biases, o 4,096 x 4,096: 41,949,184; MLP
    # 3 x 4,096 x 11,008 = 135,266,304; norms 8,192: 177,223,680, x 36 = 6,380,052,480.
    # Embedding and head 2 x 151,680 x 4,096 = 1,242,562,560, final norm 4,096:
    # 7,622,619,136, what transformers' Qwen2 builds from the same file on the meta device.
    # The checkpoint adds its MTP layer (input_proj 2 x 4,096 x 4,096 = 33,554,432, a layer
    # of 177,223,680, three norms 12,288: 210,790,400), which the decode step does not read.
    "mimo-7b": 7_622_619_136,
    # Qwen3-VL-8B-Instruct's text model alone (transformers builds it only inside the
    # wrapper; its Qwen3 build of the same fields, on the meta device, gives the same). A
    # layer: q, o 2 x 4,096 x 4,096, k, v 2 x 4,096 x 1,024: 41,943,040; q and k norms 256;
    # MLP 3 x 4,096 x 12,288 = 150,994,944; norms 8,192: 192,946,432, x 36 = 6,946,071,552.
    # Embedding and head 2 x 151,936 x 4,096 = 1,244,659,712, final norm 4,096.
    "qwen3-vl-8b-text": 8_190_735_360,
}


@pytest.mark.parametrize("name", sorted(BY_HAND))
def test_configs_transformers_cannot_build_count_by_hand(catalog: Catalog, name: str) -> None:
    assert catalog.model(str(CONFIGS / f"{name}.json")).total_params() == BY_HAND[name]


def test_internlm2_bias_adds_wqkv_and_wo_biases(catalog: Catalog, tmp_path: Path) -> None:
    """``bias: true`` (InternLM2Config's default): wqkv's 6,144 and wo's 4,096 a layer,
    x 32 = 327,680 more; the MLP stays unbiased."""
    config = json.loads((CONFIGS / "internlm2.5-7b-chat-internvl2.json").read_text())
    path = tmp_path / "config.json"
    path.write_text(json.dumps({**config, "bias": True}))
    assert catalog.model(str(path)).total_params() == 7_737_782_272 + 327_680


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
        # 32 layers x 2 x 8 KV heads x (4,096 / 32 = 128) x 2 bytes = 32 x 4,096 = 131,072.
        ("internlm2.5-7b-chat-internvl2", 131_072),
        # 36 layers x 2 x 8 KV heads x 128 x 2 bytes = 36 x 4,096 = 147,456 (MTP: none).
        ("mimo-7b", 147_456),
        # 64 layers x 2 x 8 KV heads x 128 x 2 bytes = 64 x 4,096 = 262,144 (1,000 tokens:
        # inside the 48 sliding layers' 4,096-token window).
        ("exaone-4.0-32b", 262_144),
        # 16 layers x 2 x 8 heads x (2,048 / 8 = 256) x 2 bytes = 16 x 8,192 = 131,072.
        ("pythia-1b", 131_072),
        # 28 layers x 2 x 4 KV heads x (3,584 / 28 = 128) x 2 bytes = 28 x 2,048 = 57,344.
        ("qwen2.5-vl-7b-instruct", 57_344),
        # 40 layers x 2 x 64 KV heads x (8,192 / 64 = 128) x 2 bytes = 40 x 32,768 = 1,310,720.
        ("c4ai-command-r-v01", 1_310_720),
        # 30 layers x 2 x 2 KV heads x (3,072 / 24 = 128) x 2 bytes = 30 x 1,024 = 30,720
        # (1,000 tokens: inside the 4,096-token window every layer keeps).
        ("starcoder2-3b", 30_720),
        # 62 layers x 2 x 32 KV heads x (4,096 / 32 = 128) x 2 bytes = 62 x 16,384 = 1,015,808.
        ("dots.llm1.inst", 1_015_808),
        # 36 layers x 2 x 8 KV heads x 128 x 2 bytes = 36 x 4,096 = 147,456.
        ("qwen3-vl-8b-text", 147_456),
        # 48 layers x 2 x 2 KV heads x 128 x 2 bytes = 48 x 1,024 = 49,152.
        ("internlm3-8b-instruct", 49_152),
    ],
)
def test_published_configs_cache_by_hand(catalog: Catalog, name: str, per_token: int) -> None:
    """BF16 KV, one sequence, a 1,000-token context; no recurrent state in these families."""
    bf16 = catalog.dtype("bf16")
    m = catalog.model(str(CONFIGS / f"{name}.json"))
    step = StepModel.of(Scenario(m, bf16, bf16, 4_800_000_000_000))
    assert step.kv_bytes(1_000) == 1_000 * per_token
    assert step.state_bytes == 0


def test_exaone4_sliding_layers_hold_their_window(catalog: Catalog) -> None:
    """EXAONE-4.0-32B at 100,000 tokens: 16 full layers hold all of them, the 48 sliding
    layers (three of every four) 4,096 each, 4,096 bytes a layer and token:
    (16 x 100,000 + 48 x 4,096) x 4,096 = 1,796,608 x 4,096 = 7,358,906,368."""
    bf16 = catalog.dtype("bf16")
    m = catalog.model(str(CONFIGS / "exaone-4.0-32b.json"))
    step = StepModel.of(Scenario(m, bf16, bf16, 4_800_000_000_000))
    assert step.kv_bytes(100_000) == 7_358_906_368


def test_a_flat_wrappers_top_level_copies_are_not_read(catalog: Catalog, tmp_path: Path) -> None:
    """Where Qwen2.5-VL's config holds its text fields at the top and under text_config,
    transformers builds the text model from text_config; so does decodecalc: a top-level
    copy that says otherwise changes nothing."""
    config = json.loads((CONFIGS / "qwen2.5-vl-7b-instruct.json").read_text())
    path = tmp_path / "config.json"
    path.write_text(json.dumps({**config, "num_hidden_layers": 80, "intermediate_size": 1}))
    assert catalog.model(str(path)).total_params() == META_COUNTS["qwen2.5-vl-7b-instruct"]
