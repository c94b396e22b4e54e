"""Readers of the families added for issue 20 (part B): each read from its config.json
fields, its parameters counted by hand and checked against the model card, its KV cache and
per-sequence state counted by hand.

The configs are data: MiniMax-M1's is the published file (tests/fixtures/configs/); the
others hold the decode-relevant fields of the published config.json named beside each,
or transformers' defaults where those are the flagship's (cited). Every expected figure is
worked out in the comment beside it from those fields and the reference implementation's
layer definitions; none is copied from decodecalc's output.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from decodecalc.errors import InputError
from decodecalc.loading.catalog import Catalog
from decodecalc.loading.datafile import read_json
from decodecalc.loading.families import FAMILIES
from decodecalc.loading.ignored_keys import READER_IGNORES
from decodecalc.loading.presets import model_from_config
from decodecalc.model.model import Model
from decodecalc.scenarios.scenario import Scenario
from decodecalc.step.step import StepModel
from tests.conftest import Run

H200 = 4_800_000_000_000
FIXTURES = Path(__file__).parents[1] / "fixtures" / "configs"

CONFIGS: dict[str, dict[str, Any]] = {
    # https://huggingface.co/MiniMaxAI/MiniMax-M1-80k/blob/main/config.json
    "minimax-m1": json.loads((FIXTURES / "minimax-m1.json").read_text()),
    # https://huggingface.co/allenai/Olmo-3-1025-7B/blob/main/config.json
    "olmo-3-7b": {
        "model_type": "olmo3",
        "hidden_size": 4096,
        "intermediate_size": 11008,
        "num_hidden_layers": 32,
        "num_attention_heads": 32,
        "num_key_value_heads": 32,
        "vocab_size": 100278,
        "max_position_embeddings": 65536,
        "sliding_window": 4096,
        "tie_word_embeddings": False,
        "attention_bias": False,
        "layer_types": ["sliding_attention"] * 3 + ["full_attention"],
    },
    # https://huggingface.co/CohereLabs/c4ai-command-a-03-2025/blob/main/config.json
    "command-a": {
        "model_type": "cohere2",
        "hidden_size": 12288,
        "intermediate_size": 36864,
        "num_hidden_layers": 64,
        "num_attention_heads": 96,
        "num_key_value_heads": 8,
        "head_dim": 128,
        "vocab_size": 256000,
        "max_position_embeddings": 131072,
        "sliding_window": 4096,
        "sliding_window_pattern": 4,
        "use_embedding_sharing": True,
        "attention_bias": False,
        "use_parallel_block": True,
        "use_qk_norm": False,
        "use_gated_activation": True,
        "logit_scale": 0.25,
        "rotary_pct": 1.0,
    },
    # https://huggingface.co/ibm-granite/granite-4.0-h-small/blob/main/config.json
    "granite-4.0-h-small": {
        "model_type": "granitemoehybrid",
        "hidden_size": 4096,
        "num_hidden_layers": 40,
        "num_attention_heads": 32,
        "num_key_value_heads": 8,
        "num_local_experts": 72,
        "num_experts_per_tok": 10,
        "shared_intermediate_size": 1536,
        "intermediate_size": 768,
        "mamba_d_state": 128,
        "mamba_d_conv": 4,
        "mamba_expand": 2,
        "mamba_n_heads": 128,
        "mamba_d_head": 64,
        "mamba_n_groups": 1,
        "mamba_conv_bias": True,
        "mamba_proj_bias": False,
        "tie_word_embeddings": True,
        "vocab_size": 100352,
        "max_position_embeddings": 131072,
        "layer_types": (["mamba"] * 5 + ["attention"] + ["mamba"] * 4) * 4,
        "position_embedding_type": "nope",
    },
    # transformers' Ernie4_5_MoeConfig defaults, "the ERNIE-4.5-21B-A3B style configuration"
    # (src/transformers/models/ernie4_5_moe/configuration_ernie4_5_moe.py); the same fields as
    # https://huggingface.co/baidu/ERNIE-4.5-21B-A3B-PT/blob/main/config.json
    "ernie-4.5-21b-a3b": {
        "model_type": "ernie4_5_moe",
        "hidden_size": 2560,
        "intermediate_size": 12288,
        "num_hidden_layers": 28,
        "num_attention_heads": 20,
        "num_key_value_heads": 4,
        "vocab_size": 103424,
        "max_position_embeddings": 131072,
        "tie_word_embeddings": True,
        "use_bias": False,
        "moe_intermediate_size": 1536,
        "moe_k": 6,
        "moe_num_experts": 64,
        "moe_num_shared_experts": 2,
        "moe_layer_start_index": 1,
        "moe_layer_end_index": -1,
        "moe_layer_interval": 1,
    },
    # https://huggingface.co/LiquidAI/LFM2-1.2B/blob/main/config.json (its original keys:
    # block_ff_dim, full_attn_idxs, tie_embedding)
    "lfm2-1.2b": {
        "model_type": "lfm2",
        "hidden_size": 2048,
        "num_hidden_layers": 16,
        "num_attention_heads": 32,
        "num_key_value_heads": 8,
        "vocab_size": 65536,
        "max_position_embeddings": 128000,
        "block_ff_dim": 12288,
        "block_auto_adjust_ff_dim": True,
        "block_ffn_dim_multiplier": 1.0,
        "block_multiple_of": 256,
        "conv_L_cache": 3,
        "conv_bias": False,
        "full_attn_idxs": [2, 5, 8, 10, 12, 14],
        "tie_embedding": True,
    },
    # transformers' SmolLM3Config defaults (checkpoint HuggingFaceTB/SmolLM3-3B), with the
    # context of https://huggingface.co/HuggingFaceTB/SmolLM3-3B/blob/main/config.json
    "smollm3-3b": {
        "model_type": "smollm3",
        "hidden_size": 2048,
        "intermediate_size": 11008,
        "num_hidden_layers": 36,
        "num_attention_heads": 16,
        "num_key_value_heads": 4,
        "vocab_size": 128256,
        "max_position_embeddings": 65536,
        "tie_word_embeddings": True,
        "no_rope_layer_interval": 4,
    },
    # https://huggingface.co/ByteDance-Seed/Seed-OSS-36B-Instruct/blob/main/config.json
    "seed-oss-36b": {
        "model_type": "seed_oss",
        "hidden_size": 5120,
        "intermediate_size": 27648,
        "num_hidden_layers": 64,
        "num_attention_heads": 80,
        "num_key_value_heads": 8,
        "head_dim": 128,
        "vocab_size": 155136,
        "max_position_embeddings": 524288,
        "attention_bias": True,
        "attention_out_bias": False,
        "tie_word_embeddings": False,
    },
    # https://huggingface.co/swiss-ai/Apertus-8B-Instruct-2509/blob/main/config.json
    "apertus-8b": {
        "model_type": "apertus",
        "hidden_size": 4096,
        "intermediate_size": 21504,
        "num_hidden_layers": 32,
        "num_attention_heads": 32,
        "num_key_value_heads": 8,
        "vocab_size": 131072,
        "max_position_embeddings": 65536,
        "tie_word_embeddings": False,
    },
    # transformers' Gemma3nTextConfig defaults ("gemma3n_text-E4B style"; checkpoint
    # google/gemma-3n-E4B), src/transformers/models/gemma3n/configuration_gemma3n.py, under
    # text_config as https://huggingface.co/google/gemma-3n-E4B-it/blob/main/config.json has it
    "gemma-3n-e4b": {
        "model_type": "gemma3n",
        "text_config": {
            "model_type": "gemma3n_text",
            "vocab_size": 262400,
            "hidden_size": 2048,
            "intermediate_size": [16384] * 35,
            "num_hidden_layers": 35,
            "num_attention_heads": 8,
            "num_key_value_heads": 2,
            "head_dim": 256,
            "max_position_embeddings": 32768,
            "sliding_window": 512,
            "layer_types": (["sliding_attention"] * 4 + ["full_attention"]) * 7,
            "vocab_size_per_layer_input": 262144,
            "hidden_size_per_layer_input": 256,
            "altup_num_inputs": 4,
            "num_kv_shared_layers": 15,
            "laurel_rank": 64,
        },
        "vision_config": {"architecture": "mobilenetv5_300m_enc", "hidden_size": 2048},
        "audio_config": {"hidden_size": 1536, "conf_num_hidden_layers": 12},
    },
    # https://huggingface.co/tencent/Hunyuan-A13B-Instruct/blob/main/config.json (per-layer
    # lists as published, one value for every layer)
    "hunyuan-a13b": {
        "model_type": "hunyuan_v1_moe",
        "hidden_size": 4096,
        "intermediate_size": 3072,
        "moe_intermediate_size": [3072] * 32,
        "num_experts": 64,
        "moe_topk": [8] * 32,
        "num_shared_expert": [1] * 32,
        "num_hidden_layers": 32,
        "num_attention_heads": 32,
        "num_key_value_heads": 8,
        "head_dim": 128,
        "attention_head_dim": 128,
        "vocab_size": 128167,
        "tie_word_embeddings": True,
        "max_position_embeddings": 32768,
        "use_qk_norm": True,
        "use_cla": False,
        "use_mixed_mlp_moe": True,
    },
    # https://huggingface.co/allenai/OLMo-2-1124-7B/blob/main/config.json
    "olmo-2-7b": {
        "model_type": "olmo2",
        "hidden_size": 4096,
        "intermediate_size": 11008,
        "num_hidden_layers": 32,
        "num_attention_heads": 32,
        "num_key_value_heads": 32,
        "vocab_size": 100352,
        "max_position_embeddings": 4096,
        "tie_word_embeddings": False,
        "attention_bias": False,
    },
    # https://huggingface.co/baidu/ERNIE-4.5-0.3B-PT/blob/main/config.json
    "ernie-4.5-0.3b": {
        "model_type": "ernie4_5",
        "hidden_size": 1024,
        "intermediate_size": 3072,
        "num_hidden_layers": 18,
        "num_attention_heads": 16,
        "num_key_value_heads": 2,
        "head_dim": 128,
        "vocab_size": 103424,
        "max_position_embeddings": 131072,
        "tie_word_embeddings": True,
        "use_bias": False,
    },
}
CONFIGS["olmo-3-7b"]["layer_types"] *= 8


def read(tmp_path: Path, cfg: dict[str, Any]) -> Model:
    path = tmp_path / "config.json"
    path.write_text(json.dumps(cfg))
    return model_from_config(read_json(path), "under-test")


def step(catalog: Catalog, model: Model, batch: int = 1) -> StepModel:
    bf16 = catalog.dtype("bf16")
    return StepModel.of(Scenario(model, bf16, bf16, H200, batch=batch))


@pytest.mark.parametrize(
    ("name", "params", "card", "card_unit"),
    [
        # Lightning layer: qkv 6,144 x 3 x 8,192 = 150,994,944, output gate and out_proj
        # 2 x 6,144 x 8,192 = 100,663,296, norm 8,192: 251,666,432, x 70 = 17,616,650,240.
        # Full layer: q, o 2 x 6,144 x 8,192 + k, v 2 x 6,144 x 1,024 = 113,246,208, x 10
        # = 1,132,462,080. MoE 32 x 3 x 6,144 x 9,216 + router 6,144 x 32 = 5,436,014,592,
        # + 2 norms 12,288 = 5,436,026,880, x 80 = 434,882,150,400.
        # Embedding + LM head 2 x 200,064 x 6,144 = 2,458,386,432; final norm 6,144.
        # 17,616,650,240 + 1,132,462,080 + 434,882,150,400 + 2,458,386,432 + 6,144
        # = 456,089,655,296 (card: 456B).
        ("minimax-m1", 456_089_655_296, 456e9, 1e9),
        # Layer: q, k, v, o 4 x 4,096^2 = 67,108,864; QK norms over the whole q and k
        # 4,096 + 4,096; MLP 3 x 4,096 x 11,008 = 135,266,304; 2 norms 8,192:
        # 202,391,552 x 32 = 6,476,529,664; + 2 x 100,278 x 4,096 = 821,477,376 + 4,096
        # = 7,298,011,136 (Hugging Face: 7.30B).
        ("olmo-3-7b", 7_298_011_136, 7.30e9, 0.01e9),
        # Layer: q, o 2 x 12,288^2 = 301,989,888, k, v 2 x 12,288 x 1,024 = 25,165,824;
        # MLP 3 x 12,288 x 36,864 = 1,358,954,496; one LayerNorm 12,288: 1,686,122,496 x 64
        # = 107,911,839,744; tied embedding 256,000 x 12,288 = 3,145,728,000; final 12,288
        # = 111,057,580,032 (card: 111B).
        ("command-a", 111_057_580_032, 111e9, 1e9),
        # Mamba-2: d_inner 8,192, conv channels 8,192 + 2 x 128 = 8,448; in_proj 4,096 x
        # (8,192 + 8,448 + 128) = 68,681,728, out_proj 33,554,432, conv 8,448 x 4 + 8,448,
        # dt/A/D 384, gated norm 8,192: 102,286,976. Attention 2 x 4,096^2 + 2 x 4,096 x
        # 1,024 = 41,943,040. MoE 72 x 3 x 4,096 x 768 = 679,477,248 + router 294,912,
        # shared 3 x 4,096 x 1,536 = 18,874,368; norms 8,192: 698,654,720 with norms.
        # 36 x 800,941,696 + 4 x 740,597,760 = 28,833,901,056 + 2,962,391,040; tied
        # embedding 100,352 x 4,096 = 411,041,792; final 4,096: 32,207,337,984 (32.2B).
        ("granite-4.0-h-small", 32_207_337_984, 32.2e9, 0.1e9),
        # Attention 2 x 2,560^2 + 2 x 2,560 x 512 = 15,728,640. Layer 0 dense: + 3 x 2,560
        # x 12,288 = 94,371,840 + norms 5,120 = 110,105,600. MoE layers: 64 x 3 x 2,560 x
        # 1,536 = 754,974,720, router 163,840 + correction bias 64, shared 3 x 2,560 x
        # 3,072 = 23,592,960, norms 5,120: 794,465,344 x 27 = 21,450,564,288. Tied
        # embedding 103,424 x 2,560 = 264,765,440 + 2,560: 21,825,437,888 (card: 21B, in
        # whole billions; Hugging Face 21.8B).
        ("ernie-4.5-21b-a3b", 21_825_437_888, 21.8e9, 0.1e9),
        # MLP 2/3 x 12,288 = 8,192 (a multiple of 256): 3 x 2,048 x 8,192 = 50,331,648 x 16
        # = 805,306,368. Conv layers: in_proj 3 x 2,048^2 + out_proj 2,048^2 + conv 2,048
        # x 3 = 16,783,360 x 10 = 167,833,600. Attention: 2 x 2,048^2 + 2 x 2,048 x 512
        # + QK norms 2 x 64 = 10,485,888 x 6 = 62,915,328. Norms 32 x 2,048 + 2,048 =
        # 67,584; tied embedding 65,536 x 2,048 = 134,217,728. Total 1,170,340,608 (the
        # card's 1,170,340,608).
        ("lfm2-1.2b", 1_170_340_608, 1_170_340_608, 1),
        # Layer: q, o 2 x 2,048^2 + k, v 2 x 2,048 x 512 = 10,485,760; MLP 3 x 2,048 x
        # 11,008 = 67,633,152; norms 4,096: 78,123,008 x 36 = 2,812,428,288; tied
        # embedding 128,256 x 2,048 = 262,668,288 + 2,048 = 3,075,098,624 (3.08B).
        ("smollm3-3b", 3_075_098_624, 3.08e9, 0.01e9),
        # Layer: q, o 2 x 5,120 x 10,240 = 104,857,600 + q bias 10,240; k, v 2 x 5,120 x
        # 1,024 + biases 2,048 = 10,487,808; MLP 3 x 5,120 x 27,648 = 424,673,280; norms
        # 10,240: 540,039,168 x 64 = 34,562,506,752; + 2 x 155,136 x 5,120
        # = 1,588,592,640 + 5,120 = 36,151,104,512 (card: 36B).
        ("seed-oss-36b", 36_151_104_512, 36e9, 1e9),
        # Layer: q, o 2 x 4,096^2 + k, v 2 x 4,096 x 1,024 = 41,943,040, QK norms 2 x 128;
        # up and down 2 x 4,096 x 21,504 = 176,160,768; norms 8,192: 218,112,256 x 32
        # = 6,979,592,192; + 2 x 131,072 x 4,096 = 1,073,741,824 + 4,096
        # = 8,053,338,112 (8.05B).
        ("apertus-8b", 8_053_338_112, 8.05e9, 0.01e9),
        # Text decoder only (the towers are not counted). Layer: q, o 2 x 2,048^2 + k, v
        # 2 x 2,048 x 512 = 10,485,760, QK norms 2 x 256; MLP 3 x 2,048 x 16,384
        # = 100,663,296; 8 hidden-size vectors 16,384; AltUp 4^2 + 4^3 + 2,048 x 4 = 8,272,
        # LAuReL 2 x 2,048 x 64 = 262,144, per-layer input 2 x 2,048 x 256 = 1,048,576:
        # 112,484,944 x 35 = 3,936,973,040. Tied embedding 262,400 x 2,048 = 537,395,200;
        # per-layer embeddings 262,144 x 35 x 256 = 2,348,810,240; per-layer projection
        # 2,048 x 8,960 = 18,350,080 + norm 256; AltUp projections 6 x 2,048^2
        # = 25,165,824; final norm 2,048. Total 6,866,696,688, exactly (no card figure
        # for the text decoder alone: the card's 8B holds the towers too).
        ("gemma-3n-e4b", 6_866_696_688, 6_866_696_688, 1),
        # Attention 2 x 4,096^2 + 2 x 4,096 x 1,024 = 41,943,040, QK norms 256; MoE 64 x 3 x
        # 4,096 x 3,072 = 2,415,919,104, router 262,144, shared 3 x 4,096 x 3,072
        # = 37,748,736; norms 8,192: 2,495,881,472 x 32 = 79,868,207,104; tied embedding
        # 128,167 x 4,096 = 524,972,032 + 4,096 = 80,393,183,232 (card: 80B).
        ("hunyuan-a13b", 80_393_183_232, 80e9, 1e9),
        # OLMo 3 7B's layer (202,391,552) x 32 = 6,476,529,664 + 2 x 100,352 x 4,096
        # = 822,083,584 + 4,096 = 7,298,617,344 (Hugging Face: 7.30B).
        ("olmo-2-7b", 7_298_617_344, 7.30e9, 0.01e9),
        # Heads wider than the hidden size: q 1,024 x 16 x 128 = 2,097,152, o the same, k, v
        # 2 x 1,024 x 256 = 524,288; MLP 3 x 1,024 x 3,072 = 9,437,184; norms 2,048:
        # 14,157,824 x 18 = 254,840,832; tied embedding 103,424 x 1,024 = 105,906,176
        # + 1,024 = 360,748,032 (card: 0.36B).
        ("ernie-4.5-0.3b", 360_748_032, 0.36e9, 0.01e9),
    ],
)
def test_parameters_by_hand_and_against_the_card(
    tmp_path: Path, name: str, params: int, card: float, card_unit: float
) -> None:
    """The exact count from the fields, and within 0.1% (or one rounding unit) of the card."""
    total = read(tmp_path, CONFIGS[name]).total_params()
    assert total == params
    assert abs(total - card) <= max(0.001 * card, card_unit / 2)


@pytest.mark.parametrize(
    ("name", "context", "kv_bytes", "state_bytes"),
    [
        # 10 full layers x 2 x 8 KV heads x 128 x 2 bytes = 40,960 bytes a token; at 1,000
        # tokens 40,960,000. State: 70 lightning layers x 64 heads x 128 x 128 = 73,400,320
        # elements x 2 bytes = 146,800,640 a sequence.
        ("minimax-m1", 1_000, 40_960_000, 146_800_640),
        # 32 layers x 2 x 32 x 128 x 2 bytes = 524,288 a token while T <= 4,096: 1,000 tokens
        # 524,288,000. Past the window at 32,768: 24 sliding layers x 4,096 x 16,384 +
        # 8 full x 32,768 x 16,384 = 1,610,612,736 + 4,294,967,296 = 5,905,580,032.
        ("olmo-3-7b", 1_000, 524_288_000, 0),
        ("olmo-3-7b", 32_768, 5_905_580_032, 0),
        # 64 layers x 2 x 8 x 128 x 2 = 262,144 a token below the window (1,000 tokens:
        # 262,144,000); at 131,072: 48 x 4,096 x 4,096 + 16 x 131,072 x 4,096
        # = 805,306,368 + 8,589,934,592 = 9,395,240,960.
        ("command-a", 1_000, 262_144_000, 0),
        ("command-a", 131_072, 9_395_240_960, 0),
        # KV: 4 attention layers x 2 x 8 x 128 x 2 = 16,384 a token: 16,384,000 at 1,000.
        # State: 36 x ((8,192 + 256) x 3 conv inputs + 128 x 64 x 128 SSM) = 36 x
        # (25,344 + 1,048,576) = 38,661,120 elements x 2 = 77,322,240 bytes.
        ("granite-4.0-h-small", 1_000, 16_384_000, 77_322_240),
        # 28 layers x 2 x 4 x 128 x 2 = 57,344 a token: 57,344,000 at 1,000.
        ("ernie-4.5-21b-a3b", 1_000, 57_344_000, 0),
        # KV: 6 attention layers x 2 x 8 x 64 x 2 = 12,288 a token: 12,288,000 at 1,000.
        # State: 10 conv layers x 2,048 channels x 2 inputs = 40,960 x 2 = 81,920 bytes.
        ("lfm2-1.2b", 1_000, 12_288_000, 81_920),
        # 36 x 2 x 4 x 128 x 2 = 73,728 a token (NoPE layers cache like the others).
        ("smollm3-3b", 1_000, 73_728_000, 0),
        # 64 x 2 x 8 x 128 x 2 = 262,144 a token.
        ("seed-oss-36b", 1_000, 262_144_000, 0),
        # 32 x 2 x 8 x 128 x 2 = 131,072 a token.
        ("apertus-8b", 1_000, 131_072_000, 0),
        # Gemma 3n E4B: 2 x 2 KV heads x 256 x 2 bytes = 2,048 a layer and token. Full
        # layers at 4, 9, ..., 34; layers 20-34 share the caches of 18 (sliding) and 19
        # (full). Read at 1,000: 28 sliding layers x 512 (the window) + 7 full x 1,000
        # = (14,336 + 7,000) x 2,048 = 43,696,128; held: 16 x 512 + 4 x 1,000 = 12,192
        # tokens x 2,048 = 24,969,216 (tested below).
        ("gemma-3n-e4b", 1_000, 43_696_128, 0),
        # 32 x 2 x 8 x 128 x 2 = 131,072 a token.
        ("hunyuan-a13b", 1_000, 131_072_000, 0),
        # No window in OLMo 2: 32 x 2 x 32 x 128 x 2 = 524,288 a token at any context.
        ("olmo-2-7b", 4_096, 2_147_483_648, 0),
        # 18 x 2 x 2 x 128 x 2 = 18,432 a token.
        ("ernie-4.5-0.3b", 1_000, 18_432_000, 0),
    ],
)
def test_cache_and_state_by_hand(
    catalog: Catalog, tmp_path: Path, name: str, context: int, kv_bytes: int, state_bytes: int
) -> None:
    s = step(catalog, read(tmp_path, CONFIGS[name]))
    assert s.kv_bytes(context) == kv_bytes
    assert s.state_bytes == state_bytes


def test_gemma_3n_shared_layers_hold_no_cache_but_read_one(
    catalog: Catalog, tmp_path: Path
) -> None:
    """The 15 KV-shared layers of Gemma 3n E4B add to what a step reads, not to what memory
    holds. Below the window (100 tokens): held 20 layers x 100 x 2,048 = 4,096,000 bytes;
    read 35 x 100 x 2,048 = 7,168,000. At 1,000: held 24,969,216 (the comment above)."""
    m = read(tmp_path, CONFIGS["gemma-3n-e4b"])
    s = step(catalog, m)
    assert (s.kv_bytes(100, held=True), s.kv_bytes(100)) == (4_096_000, 7_168_000)
    assert s.kv_bytes(1_000, held=True) == 24_969_216
    shared = [i for i, layer in enumerate(m.layers) if layer.mixer.kv_elements_per_token(1) == 0]
    assert shared == list(range(20, 35))


def test_explain_says_which_layers_read_a_shared_cache(cli: Run, tmp_path: Path) -> None:
    """12 sliding and 3 full KV-shared layers, each reading 2 x 2 x 256 = 1,024 elements a
    token of a cache an earlier layer holds."""
    path = tmp_path / "config.json"
    path.write_text(json.dumps(CONFIGS["gemma-3n-e4b"]))
    r = cli("explain", "-m", str(path), "-g", "h200", "-c", "8192")
    assert r.code == 0, r.err
    shared = ", read from an earlier layer's cache (held there)"
    assert "12 layers of attention: 2 (K,V) x 2 KV heads x 256, window 512 = 1,024 " in r.out
    assert (
        f"3 layers of attention: 2 (K,V) x 2 KV heads x 256 = 1,024 elements per token{shared}"
        in r.out
    )


def test_gemma_3n_per_layer_embeddings_are_held_not_streamed(
    catalog: Catalog, tmp_path: Path
) -> None:
    """A step reads every weight but the per-layer embedding table (262,144 x 35 x 256
    = 2,348,810,240) and the tied embedding's input side, which the LM head reads anyway:
    6,866,696,688 - 2,348,810,240 = 4,517,886,448 parameters, x 2 bytes = 9,035,772,896;
    that is also what a token uses (the "effective" count)."""
    m = read(tmp_path, CONFIGS["gemma-3n-e4b"])
    assert step(catalog, m).weight_bytes == 9_035_772_896
    assert m.active_params() == 4_517_886_448


def test_gemma_3n_refuses_a_cache_no_earlier_layer_holds(cli: Run, tmp_path: Path) -> None:
    text = {**CONFIGS["gemma-3n-e4b"]["text_config"], "num_kv_shared_layers": 35}
    path = tmp_path / "config.json"
    path.write_text(json.dumps({"model_type": "gemma3n", "text_config": text}))
    r = cli("show", str(path))
    assert r.code == 2 and r.err.count("\n") == 1
    assert "num_kv_shared_layers: shares a cache no earlier layer of its kind holds" in r.err


def test_hunyuan_dense_is_llama_with_qk_norms(tmp_path: Path) -> None:
    """The dense HunYuan V1 reader on A13B's attention with a 14,336-wide MLP: per layer
    41,943,040 + QK norms 256 + 3 x 4,096 x 14,336 = 176,160,768 + norms 8,192
    = 218,112,256, x 32 = 6,979,592,192; + 524,972,032 + 4,096 = 7,504,568,320."""
    cfg = {k: v for k, v in CONFIGS["hunyuan-a13b"].items() if "exper" not in k and "moe" not in k}
    m = read(tmp_path, cfg | {"model_type": "hunyuan_v1_dense", "intermediate_size": 14336})
    assert m.total_params() == 7_504_568_320


def test_ernie_moe_layers_follow_start_and_interval(tmp_path: Path) -> None:
    """Start 3, end 53, every layer between (ERNIE-4.5-300B-A47B's schedule): layers 0-2
    dense, 3-53 MoE; interval 2 from 1 makes only the odd ones MoE."""
    cfg = {**CONFIGS["ernie-4.5-21b-a3b"], "num_hidden_layers": 54}
    routed = [
        layer.ffn.routed
        for layer in read(
            tmp_path, cfg | {"moe_layer_start_index": 3, "moe_layer_end_index": 53}
        ).layers
    ]
    assert routed == [False] * 3 + [True] * 51
    routed = [layer.ffn.routed for layer in read(tmp_path, cfg | {"moe_layer_interval": 2}).layers]
    assert routed == [i % 2 == 1 for i in range(54)]


def test_granite_micro_has_only_the_shared_mlp(tmp_path: Path) -> None:
    """Granite 4.0-H-Micro-like: no routed experts, so each layer's MLP is the shared one."""
    cfg = {**CONFIGS["granite-4.0-h-small"], "num_local_experts": 0}
    del cfg["num_experts_per_tok"]
    m = read(tmp_path, cfg)
    assert m.moe() is None
    assert {layer.ffn.describe() for layer in m.layers} == {"dense MLP 1,536"}


@pytest.mark.parametrize(
    ("name", "key", "value", "words"),
    [
        ("ernie-4.5-21b-a3b", "use_bias", True, "use_bias: true is not modelled"),
        ("smollm3-3b", "mlp_bias", True, "mlp_bias: true is not modelled"),
        ("command-a", "use_parallel_block", False, "use_parallel_block: false is not modelled"),
        ("command-a", "use_qk_norm", True, "use_qk_norm: true is not modelled"),
        ("minimax-m1", "shared_intermediate_size", 512, "a shared expert is not modelled"),
        ("minimax-m1", "attn_type_list", [0, 1], "has 2 entries for 80 layers"),
        ("hunyuan-a13b", "use_cla", True, "use_cla: true is not modelled"),
        ("hunyuan-a13b", "moe_topk", [8] * 31 + [2], "differs from layer to layer"),
        ("olmo-3-7b", "layer_types", ["chunked_attention"] * 32, "unknown layer type"),
    ],
)
def test_what_a_reader_does_not_model_stops_it_in_one_line(
    cli: Run, tmp_path: Path, name: str, key: str, value: object, words: str
) -> None:
    path = tmp_path / "config.json"
    path.write_text(json.dumps({**CONFIGS[name], key: value}))
    r = cli("show", str(path))
    assert r.code == 2
    assert r.err.count("\n") == 1 and r.err.startswith("decodecalc: error: ")
    assert words in r.err


@pytest.mark.parametrize(
    ("fixture", "model_type"),
    [
        ("gemma-4-31b", "gemma4"),
        ("kimi-linear-48b-a3b", "kimi_linear"),
        ("deepseek-v4-flash-0731", "deepseek_v4"),
    ],
)
def test_families_once_refused_are_read_from_their_published_configs(
    cli: Run, fixture: str, model_type: str
) -> None:
    """Gemma 4, Kimi Linear (Kimi Delta Attention) and DeepSeek-V4 (compressed sparse
    attention) were refused by name; their published configs are read now (counted by hand
    in tests/model/test_gemma4.py, test_kimi_linear.py and test_compressed_attention.py)."""
    r = cli("show", str(Path(__file__).parents[1] / "fixtures" / "configs" / f"{fixture}.json"))
    assert r.code == 0, r.err
    assert f", {model_type})" in r.out.splitlines()[0]


@pytest.mark.parametrize("name", [n for n in CONFIGS if CONFIGS[n]["model_type"] in READER_IGNORES])
def test_keys_a_reader_ignores_change_nothing(tmp_path: Path, name: str) -> None:
    """Every key a reader lists as ignored, fed to it with a value it could not parse, leaves
    the model as it was: the reader really never reads it."""
    cfg = CONFIGS[name]
    ignored = READER_IGNORES[cfg["model_type"]]
    keys = {key: "not read" for key in ignored}
    with_keys = {**cfg, **keys}
    if "text_config" in cfg:  # a wrapper: the text model's keys sit under text_config
        with_keys["text_config"] = {**cfg["text_config"], **keys}
    assert read(tmp_path, with_keys) == read(tmp_path, cfg)


def test_every_ignore_list_names_a_family_that_is_read() -> None:
    assert set(READER_IGNORES) <= set(FAMILIES)


NOT_DECODE_KEYS = {
    "architectures", "auto_map", "bos_token_id", "eos_token_id", "pad_token_id",
    "hidden_act", "initializer_range", "rms_norm_eps", "rope_theta", "attention_dropout",
    "output_router_logits", "router_aux_loss_coef", "router_jitter_noise",
    "transformers_version", "use_cache", "torch_dtype",
}  # fmt: skip
"""Keys no reader needs: token ids, the activation, initialisation, epsilons, RoPE bases,
dropout, training losses, versions and cache switches."""


def test_the_published_minimax_m1_config_is_read_or_ignored_key_by_key(tmp_path: Path) -> None:
    """Each key of the real file is either read by the reader, ignored with a reason, or
    one no reader needs: nothing decode-relevant passes unseen."""
    from decodecalc.loading.families import read_architecture
    from decodecalc.loading.fields import Fields

    doc = read_json(FIXTURES / "minimax-m1.json")
    cfg = Fields(doc)
    read_architecture(cfg)
    unread = set(cfg.data) - cfg.read - set(READER_IGNORES["minimax_m1"]) - NOT_DECODE_KEYS
    assert unread == set()


QWEN3_NEXT = Path(__file__).parents[1] / "fixtures" / "configs" / "qwen3-next-80b-a3b.json"


@pytest.mark.parametrize(
    ("asked", "state"),
    [
        # Qwen3-Next, 36 Gated DeltaNet layers: 32 x 128 x 128 = 524,288 recurrent elements
        # and (2 x 16 x 128 + 32 x 128) x 3 = 24,576 conv inputs a layer. Unasked, vLLM's
        # auto keeps both in the model's BF16: 36 x 548,864 x 2 = 39,518,208 bytes.
        (None, 39_518_208),
        # Asked for FP32: 36 x (524,288 x 4 + 24,576 x 2) = 36 x 2,146,304 = 77,266,944.
        ({"mamba_ssm_dtype": "float32"}, 77_266_944),
        ({"mamba_ssm_cache_dtype": "float32"}, 77_266_944),
        ({"mamba_ssm_cache_dtype": "auto"}, 39_518_208),
    ],
)
def test_the_recurrent_state_is_stored_as_the_config_asks(
    catalog: Catalog, tmp_path: Path, asked: dict[str, str] | None, state: int
) -> None:
    """Review item 3: a state's format is its own, from the config where it states one,
    else vLLM's default for the family; never the KV dtype (FP8 KV leaves it whole)."""
    config = json.loads(QWEN3_NEXT.read_text())
    config.update(asked or {})
    path = tmp_path / "config.json"
    path.write_text(json.dumps(config))
    m = catalog.model(str(path))
    assert step(catalog, m).state_bytes == state
    fp8 = catalog.dtype("fp8")
    assert StepModel.of(Scenario(m, fp8, fp8, H200)).state_bytes == state


def test_a_state_format_no_engine_stores_is_refused(catalog: Catalog, tmp_path: Path) -> None:
    config = json.loads(QWEN3_NEXT.read_text())
    config["mamba_ssm_dtype"] = "fp8"
    path = tmp_path / "config.json"
    path.write_text(json.dumps(config))
    with pytest.raises(InputError, match=r"mamba_ssm_dtype.*'fp8'; decodecalc reads float32"):
        catalog.model(str(path))
