"""How today's big MoE checkpoints ship: NVIDIA's NVFP4 exports, AMD's MXFP4 ones and
Moonshot's INT4. Each recipe's stored bytes against a count by hand from the config's
shapes (the tensor groups below), and the checkpoint's own quantization file read to the
same bytes."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import yaml

from decodecalc.loading.catalog import presets_dir
from tests.conftest import Run
from tests.model.test_recipes import checkpoint_folder

CONFIGS = Path(__file__).parents[1] / "fixtures" / "configs"

# DeepSeek-V3 (config.json): hidden 7,168, 61 layers (3 dense), 128 heads, q_lora 1,536,
# kv_lora 512, qk 128 + 64, v 128, MLP 18,432, 256 experts of 2,048 (58 MoE layers) + 1
# shared, vocab 129,280.
DS_EMBEDDING = 129_280 * 7_168  # 926,679,040, and the LM head the same
DS_Q_B = 1_536 * 128 * 192  # 37,748,736 per layer
DS_O = 128 * 128 * 7_168  # 117,440,512 per layer
DS_KV_B = 512 * 128 * 256  # 16,777,216 per layer
DS_DOWN = 7_168 * 1_536 + 7_168 * 576 + 1_536 + 512  # q_a, kv_a_with_mqa and their norms
DS_NORMS = 61 * 2 * 7_168 + 7_168  # 881,664
DS_MLP = 3 * 3 * 7_168 * 18_432  # 1,189,085,184
DS_EXPERT = 3 * 7_168 * 2_048  # 44,040,192
DS_ROUTED = 58 * 256 * DS_EXPERT  # 653,908,770,816
DS_SHARED = 58 * DS_EXPERT  # 2,554,331,136
DS_ROUTER = 58 * (256 * 7_168 + 256)  # 106,445,312 (gate and its correction bias)
DS_ATTENTION = 61 * (DS_Q_B + DS_O + DS_KV_B + DS_DOWN)  # 11,413,546,880
DS_FFN = DS_MLP + DS_SHARED + DS_ROUTED  # 657,652,187,136
DS_BF16_REST = 2 * DS_EMBEDDING + DS_ATTENTION + DS_NORMS + DS_ROUTER  # 13,374,232,064

# NVFP4 is 4.5 bits = 9/16 byte, MXFP4 4.25 bits = 17/32 byte, BF16 2 bytes.
DS_NVFP4 = DS_FFN * 9 // 16 + DS_BF16_REST * 2  # 369,929,355,264 + 26,748,464,128
DS_NVFP4_V2 = DS_NVFP4 - 61 * DS_O * (32 - 9) // 16  # o_proj from 2 to 9/16 bytes
DS_MXFP4 = DS_FFN * 17 // 32 + DS_BF16_REST * 2  # 349,377,724,416 + 26,748,464,128

# Kimi-K2 (config.json): DeepSeek-V3's widths with 64 heads, 1 dense layer, 384 experts
# (60 MoE layers), vocab 163,840.
K2_ROUTED = 60 * 384 * DS_EXPERT  # 1,014,686,023,680
K2_REST = (
    2 * 163_840 * 7_168  # embedding and LM head: 2,348,810,240
    + 61 * (1_536 * 64 * 192 + 64 * 128 * 7_168 + 512 * 64 * 256 + DS_DOWN)  # 6,168,569,856
    + DS_NORMS  # 881,664
    + 3 * 7_168 * 18_432  # layer 0's dense MLP: 396,361,728
    + 60 * DS_EXPERT  # shared experts: 2,642,411,520
    + 60 * (384 * 7_168 + 384)  # router: 165,173,760
)  # 11,722,208,768; with the experts 1,026,408,232,448, the official count
# Routed experts INT4 with a BF16 scale per 32: 4 + 16/32 = 4.5 bits = 9/16 byte; a BF16
# zero point per 32 as well would make it 5 bits = 5/8 byte.
K2_SYMMETRIC = K2_ROUTED * 9 // 16 + K2_REST * 2  # 570,760,888,320 + 23,444,417,536
K2_ASYMMETRIC = K2_ROUTED * 5 // 8 + K2_REST * 2  # 634,178,764,800 + 23,444,417,536

# MiniMax-M2 (config.json): hidden 3,072, 62 layers of 48 heads x 128 (8 KV heads), 256
# experts of 1,536, vocab 200,064, q/k norms over all heads.
MM_ROUTED = 62 * 256 * 3 * 3_072 * 1_536  # 224,680,476,672
MM_REST = (
    2 * 200_064 * 3_072  # embedding and LM head: 1,229,193,216
    + 62 * 2 * 3_072 * 6_144  # q and o: 2,340,421,632
    + 62 * 2 * 3_072 * 1_024  # k and v: 390,070,272
    + 62 * (2 * 3_072 + 6_144 + 1_024)  # layer norms, q and k norms: 825,344
    + 3_072  # the final norm
    + 62 * (256 * 3_072 + 256)  # router and its bias: 48,774,656
)
MM_NVFP4_EXPERTS = MM_ROUTED * 9 // 16 + MM_REST * 2  # 126,382,768,128 + 8,018,576,384

# Llama-3.1-405B (config.json): hidden 16,384, 126 layers of 128 heads x 128 (8 KV heads),
# MLP 53,248, vocab 128,256, embedding and LM head apart. Meta's FP8 release keeps all but
# the MLP in BF16 (fp8-ffn-only; its first and last layers' MLP too, which a recipe cannot
# single out: 2 x 2,617,245,696 params counted at 1 byte, not 2).
L405_MLP = 126 * 3 * 16_384 * 53_248  # 329,772,957,696
L405_REST = (
    2 * 128_256 * 16_384  # embedding and LM head: 4,202,692,608
    + 126 * 2 * 16_384 * 16_384  # q and o: 67,645,734,912
    + 126 * 2 * 16_384 * 1_024  # k and v: 4,227,858,432
    + 126 * 2 * 16_384
    + 16_384  # norms: 4,145,152
)  # 76,080,431,104; with the MLP 405,853,388,800, the official count
L405_FP8_FFN = L405_MLP + L405_REST * 2  # 329,772,957,696 + 152,160,862,208


def _stored(cli: Run, *args: str) -> int:
    r = cli("estimate", *args, "-g", "b300", "-c", "1K", "--json")
    assert r.code == 0, r.err
    stored: int = json.loads(r.out)["stored_weight_bytes"]
    return stored


@pytest.mark.parametrize(
    ("model", "recipe", "stored"),
    [
        ("deepseek-v3", "nvfp4-deepseek", DS_NVFP4),
        ("deepseek-v3", "nvfp4-deepseek-v2", DS_NVFP4_V2),
        ("deepseek-v3", "mxfp4-amd", DS_MXFP4),
        ("kimi-k2", "int4-g32-experts", K2_SYMMETRIC),
        ("minimax-m2", "nvfp4-experts-only", MM_NVFP4_EXPERTS),
        ("llama-3.1-405b", "fp8-ffn-only", L405_FP8_FFN),
    ],
)
def test_recipe_stores_the_hand_counted_bytes(
    cli: Run, model: str, recipe: str, stored: int
) -> None:
    assert _stored(cli, "-m", model, "-w", recipe) == stored


def test_kimi_k2_thinking_is_594_gb_not_657() -> None:
    assert round(K2_SYMMETRIC / 1e9) == 594
    assert round(K2_ASYMMETRIC / 1e9) == 658  # 657.6 GB: the "657 GB"
    assert K2_ROUTED + K2_REST == 1_026_408_232_448


def _preset_config(model: str) -> dict[str, Any]:
    data = yaml.safe_load((presets_dir() / "models" / f"{model}.yaml").read_text())
    config: dict[str, Any] = data["config"]
    return config


def _kimi_quantization(symmetric: bool | None) -> dict[str, Any]:
    """Kimi-K2-Thinking's quantization_config (its config.json), symmetric as given."""
    weights: dict[str, Any] = {
        "num_bits": 4,
        "type": "int",
        "strategy": "group",
        "group_size": 32,
        "dynamic": False,
        "observer": "minmax",
    }
    if symmetric is not None:
        weights["symmetric"] = symmetric
    return {
        "quant_method": "compressed-tensors",
        "format": "pack-quantized",
        "quantization_status": "compressed",
        "config_groups": {"group_0": {"targets": ["Linear"], "weights": weights}},
        "ignore": [
            "lm_head",
            "re:.*self_attn.*",
            "re:.*shared_experts.*",
            r"re:.*mlp\.(gate|up|gate_up|down)_proj.*",
        ],
        "kv_cache_scheme": None,
    }


@pytest.mark.parametrize(
    ("symmetric", "stored"),
    [(True, K2_SYMMETRIC), (None, K2_SYMMETRIC), (False, K2_ASYMMETRIC)],
    ids=["symmetric", "default-symmetric", "zero-point"],
)
def test_kimi_k2_thinking_config_is_read_with_its_symmetry(
    cli: Run, tmp_path: Path, symmetric: bool | None, stored: int
) -> None:
    config = {**_preset_config("kimi-k2"), "quantization_config": _kimi_quantization(symmetric)}
    assert _stored(cli, "-m", checkpoint_folder(tmp_path / "checkpoint", config)) == stored


def test_deepseek_r1_fp4_hf_quant_config_reads_as_the_recipe(cli: Run, tmp_path: Path) -> None:
    """hf_quant_config.json as ModelOpt's examples/deepseek writes it: every layer's
    attention excluded, the LM head, and the MTP layer (layers.61, not in the model)."""
    config = json.loads((CONFIGS / "deepseek-v3.json").read_text())
    config.pop("quantization_config")
    side = {
        "producer": {"name": "modelopt", "version": "0.23.0"},
        "quantization": {
            "quant_algo": "NVFP4",
            "kv_cache_quant_algo": "FP8",
            "group_size": 16,
            "exclude_modules": [
                *(f"model.layers.{i}.self_attn*" for i in range(61)),
                "lm_head",
                "model.layers.61*",
            ],
        },
    }
    assert _stored(cli, "-m", checkpoint_folder(tmp_path / "checkpoint", config, side)) == DS_NVFP4


def test_amd_quark_mxfp4_config_reads_as_the_recipe(cli: Run, tmp_path: Path) -> None:
    """The quantization_config of AMD's MXFP4 DeepSeek checkpoints (quant_method quark):
    FP4 weights per group of 32 with E8M0 scales, attention, gate, LM head and MTP layer
    excluded."""
    config = json.loads((CONFIGS / "deepseek-v3.json").read_text())
    mx = {"dtype": "fp4", "qscheme": "per_group", "group_size": 32, "scale_format": "e8m0"}
    config["quantization_config"] = {
        "quant_method": "quark",
        "global_quant_config": {"weight": mx, "input_tensors": {**mx, "is_dynamic": True}},
        "exclude": ["lm_head", "re:.*mlp.gate$", "re:model.layers.61.*", "re:.*self_attn.*"],
        "layer_quant_config": {},
        "layer_type_quant_config": {},
    }
    assert _stored(cli, "-m", checkpoint_folder(tmp_path / "checkpoint", config)) == DS_MXFP4


def test_quark_per_layer_formats_are_said_not_guessed(cli: Run, tmp_path: Path) -> None:
    config = json.loads((CONFIGS / "deepseek-v3.json").read_text())
    config["quantization_config"] = {
        "quant_method": "quark",
        "global_quant_config": {
            "weight": {"dtype": "fp4", "qscheme": "per_group", "group_size": 32}
        },
        "layer_quant_config": {"*down_proj": {"weight": {"dtype": "fp8_e4m3"}}},
    }
    r = cli("estimate", "-m", checkpoint_folder(tmp_path / "checkpoint", config), "-g", "b300")
    assert r.code == 2
    assert "layer_quant_config" in r.err and len(r.err.strip().splitlines()) == 1


def test_modelopt_mixed_precision_prices_each_module(cli: Run, tmp_path: Path) -> None:
    """quant_algo MIXED_PRECISION (what ModelOpt exports when layers differ) lists each
    quantized module with its format; an unlisted one stays BF16. Llama-3.1-8B with FP8
    attention in layers 0-15, NVFP4 attention in 16-31, NVFP4 MLPs, the LM head unlisted:
      attention q, o  1,073,741,824 x (1/2 x 1 + 1/2 x 9/16) = 838,860,800
      attention k, v    268,435,456 x 25/32                 = 209,715,200
      mlp             5,637,144,576 x 9/16                  = 3,170,893,824
      LM head, embedding and norms BF16: (2 x 525,336,576 + 266,240) x 2 = 2,101,878,784"""
    layers: dict[str, dict[str, Any]] = {}
    for i in range(32):
        attention = {"quant_algo": "FP8"} if i < 16 else {"quant_algo": "NVFP4", "group_size": 16}
        for m in ("q_proj", "k_proj", "v_proj", "o_proj"):
            layers[f"model.layers.{i}.self_attn.{m}"] = attention
        for m in ("gate_proj", "up_proj", "down_proj"):
            layers[f"model.layers.{i}.mlp.{m}"] = {"quant_algo": "NVFP4", "group_size": 16}
    side = {
        "producer": {"name": "modelopt", "version": "0.37.0"},
        "quantization": {"quant_algo": "MIXED_PRECISION", "quantized_layers": layers},
    }
    config = json.loads((CONFIGS / "llama-3.1-8b.json").read_text())
    path = checkpoint_folder(tmp_path / "checkpoint", config, side)
    assert _stored(cli, "-m", path) == 838_860_800 + 209_715_200 + 3_170_893_824 + 2_101_878_784
