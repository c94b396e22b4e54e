"""MoE layer schedules and the transformers 5 spellings of them: GLM-5 (sparse MLA with an
indexer), GLM-4.7-Flash (``mlp_layer_types``), Nemotron 3 (Mamba-2 hybrid with MoE ``E``
blocks; ``layers_block_type`` as a list) and Qwen3-MoE's ``num_local_experts``.

Every expected figure is worked by hand in the comment beside it from the config's fields
and the reference implementation's layers; none is copied from decodecalc's output.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import yaml

from decodecalc.loading.catalog import Catalog
from decodecalc.model.model import Model
from decodecalc.scenarios.scenario import Scenario
from decodecalc.step.step import StepModel

CONFIGS = Path(__file__).parents[1] / "fixtures" / "configs"
PRESETS = Path(__file__).parents[2] / "presets" / "models"
H200 = 4_800_000_000_000


def from_dict(catalog: Catalog, tmp_path: Path, config: dict[str, Any]) -> Model:
    path = tmp_path / "config.json"
    path.write_text(json.dumps(config))
    return catalog.model(str(path))


def fixture(name: str) -> dict[str, Any]:
    config: dict[str, Any] = json.loads((CONFIGS / f"{name}.json").read_text())
    return config


def step(catalog: Catalog, m: Model, batch: int = 1) -> StepModel:
    bf16 = catalog.dtype("bf16")
    return StepModel.of(Scenario(m, bf16, bf16, H200, batch=batch))


class TestGLM5:
    """GLM-5 (transformers' GlmMoeDsaConfig defaults): 78 MLA layers of width 6,144, 64
    heads, q latent 2,048, kv latent 512 + rope 64, qk_nope 192, v 256; an indexer of 32
    heads x 128 picking the top 2,048 tokens; 3 dense layers, then 8 of 256 experts + 1."""

    def test_parameters_by_hand(self, catalog: Catalog) -> None:
        # MLA: q_a 6,144 x 2,048 + norm 2,048 = 12,584,960; q_b 2,048 x 64 x 256 =
        # 33,554,432; kv_a 6,144 x 576 + norm 512 = 3,539,456; kv_b 512 x 64 x 448 =
        # 14,680,064; o 64 x 256 x 6,144 = 100,663,296: 165,022,208. Indexer: wq_b 2,048 x
        # 32 x 128 = 8,388,608; wk 6,144 x 128 = 786,432; k_norm 256; weights_proj 6,144 x
        # 32 = 196,608: 9,371,904. Dense MLP 3 x 6,144 x 12,288 = 226,492,416. MoE: 257 x
        # 3 x 6,144 x 2,048 = 9,701,425,152 + router 6,144 x 256 + 256 = 9,702,998,272.
        # Norms 12,288 a layer. Attention 174,394,112 a layer: 3 dense layers x 400,898,816
        # = 1,202,696,448 and 75 MoE layers x 9,877,404,672 = 740,805,350,400; embeddings
        # 2 x 154,880 x 6,144 = 1,903,165,440; final norm 6,144.
        # Total 743,911,218,432 (-0.012% from the card's 744B).
        m = catalog.model(str(CONFIGS / "glm-5.json"))
        assert m.total_params() == 743_911_218_432
        assert abs(m.total_params() - 744e9) <= 0.001 * 744e9

    def test_kv_below_and_above_the_top_k(self, catalog: Catalog) -> None:
        # Per layer per token: latent 576 x 2 bytes = 1,152 and the indexer's key 128 FP8
        # bytes + a 4-byte scale = 132. T = 1,000: 78 x 1,000 x 1,284 = 100,152,000.
        # T = 10,000: latents of the top 2,048 only, every indexer key:
        # 78 x 2,048 x 1,152 + 78 x 10,000 x 132 = 184,025,088 + 102,960,000
        s = step(catalog, catalog.model(str(CONFIGS / "glm-5.json")))
        assert s.kv_bytes(1000) == 100_152_000
        assert s.kv_bytes(10_000) == 286_985_088

    def test_shared_indexer_layers_have_no_indexer(self, catalog: Catalog, tmp_path: Path) -> None:
        # indexer_types: layers 0-38 run their own indexer, 39-77 reuse the top k: 39
        # layers without indexer weights (9,371,904 each) or indexer keys (132 bytes).
        kinds = ["full"] * 39 + ["shared"] * 39
        full = catalog.model(str(CONFIGS / "glm-5.json"))
        shared = from_dict(catalog, tmp_path, {**fixture("glm-5"), "indexer_types": kinds})
        assert full.total_params() - shared.total_params() == 39 * 9_371_904
        # T = 1,000: 78 x 1,000 x 1,152 + 39 x 1,000 x 132 = 89,856,000 + 5,148,000
        assert step(catalog, shared).kv_bytes(1000) == 95_004_000


class TestGLM47Flash:
    def test_parameters_by_hand(self, catalog: Catalog) -> None:
        # MLA: q_a 2,048 x 768 + 768 = 1,573,632; q_b 768 x 20 x 256 = 3,932,160; kv_a
        # 2,048 x 576 + 512 = 1,180,160; kv_b 512 x 20 x 448 = 4,587,520; o 20 x 256 x
        # 2,048 = 10,485,760: 21,759,232. Layer 0: + dense 3 x 2,048 x 10,240 = 62,914,560
        # + norms 4,096 = 84,677,888. MoE layers: 65 x 9,437,184 + router 2,048 x 64 + 64
        # = 613,548,096: 635,311,424, x 46 = 29,224,325,504. Embeddings 2 x 154,880 x
        # 2,048 = 634,388,480; final norm 2,048. Total 29,943,393,920.
        assert catalog.model("glm-4.7-flash").total_params() == 29_943_393_920

    def test_mlp_layer_types_read_as_first_k_dense_replace(
        self, catalog: Catalog, tmp_path: Path
    ) -> None:
        """transformers 5 saves the schedule per layer; read all-MoE, the model would gain
        635,311,424 - 84,677,888 = 550,633,536 parameters (+1.84%)."""
        config = yaml.safe_load((PRESETS / "glm-4.7-flash.yaml").read_text())["config"]
        del config["first_k_dense_replace"]
        listed = {**config, "mlp_layer_types": ["dense"] + ["sparse"] * 46}
        shipped = catalog.model("glm-4.7-flash")
        assert from_dict(catalog, tmp_path, listed).layers == shipped.layers
        # Neither field: transformers' default, one dense layer first
        assert from_dict(catalog, tmp_path, config).layers == shipped.layers

    def test_kv_per_token(self, catalog: Catalog) -> None:
        # 47 layers x (512 + 64) x 2 bytes = 54,144
        assert step(catalog, catalog.model("glm-4.7-flash")).kv_bytes(1) == 54_144


class TestNemotron3:
    """Nemotron 3 Nano 30B-A3B: 52 blocks, 23 Mamba-2 (M), 23 MoE (E), 6 attention (*)."""

    def test_parameters_by_hand(self, catalog: Catalog) -> None:
        # Mamba-2: in_proj 2,688 x (4,096 + 6,144 + 64) = 27,697,152; out_proj 4,096 x
        # 2,688 = 11,010,048; conv 6,144 x 4 + 6,144 = 30,720; dt_bias, A, D 192; norm
        # 4,096: 38,742,208, x 23 = 891,070,784. Attention: q, o 2 x 2,688 x 4,096 =
        # 22,020,096; k, v 2 x 2,688 x 256 = 1,376,256: 23,396,352, x 6 = 140,378,112.
        # MoE: 128 experts of up and down 2 x 2,688 x 1,856 = 9,977,856 (1,277,165,568),
        # shared 2 x 2,688 x 3,712 = 19,955,712, router 2,688 x 128 + 128 = 344,192:
        # 1,297,465,472, x 23 = 29,841,705,856. Norms 53 x 2,688 = 142,464; embeddings
        # 2 x 131,072 x 2,688 = 704,643,072. Total 31,577,940,288 (-0.07% from 31.6B).
        m = catalog.model(str(CONFIGS / "nemotron-3-nano-30b-a3b.json"))
        assert m.total_params() == 31_577_940_288
        assert abs(m.total_params() - 31.6e9) <= 0.001 * 31.6e9

    def test_kv_and_state_by_hand(self, catalog: Catalog) -> None:
        # KV: 6 attention layers x 2 x 2 KV heads x 128 x 2 bytes = 6,144 per token.
        # State: 23 x ((4,096 + 2 x 8 x 128) x 3 = 18,432 conv inputs in BF16, 36,864
        # bytes; 64 x 64 x 128 = 524,288 SSM elements in FP32, the config's
        # mamba_ssm_cache_dtype: 2,097,152 bytes) = 23 x 2,134,016 = 49,082,368 bytes.
        s = step(catalog, catalog.model(str(CONFIGS / "nemotron-3-nano-30b-a3b.json")))
        assert s.kv_bytes(1000) == 6_144_000
        assert s.state_bytes == 49_082_368

    def test_the_list_form_reads_as_the_pattern(self, catalog: Catalog, tmp_path: Path) -> None:
        config = fixture("nemotron-3-nano-30b-a3b")
        names = {"M": "mamba", "E": "moe", "*": "attention", "-": "mlp"}
        blocks = [names[c] for c in config.pop("hybrid_override_pattern")]
        del config["num_hidden_layers"]  # transformers 5 derives it from the list
        listed = from_dict(catalog, tmp_path, {**config, "layers_block_type": blocks})
        shipped = catalog.model(str(CONFIGS / "nemotron-3-nano-30b-a3b.json"))
        assert listed.layers == shipped.layers
        # and the newer names for the same blocks
        renamed = {"mamba": "linear_attention", "attention": "full_attention"}
        newer = [renamed.get(b, b) for b in blocks]
        assert from_dict(catalog, tmp_path, {**config, "layers_block_type": newer}).layers == (
            shipped.layers
        )


def test_qwen3_moe_num_local_experts(catalog: Catalog, tmp_path: Path) -> None:
    """transformers 5 saves Qwen3-MoE's expert count as num_local_experts."""
    config = fixture("qwen3-30b-a3b")
    config["num_local_experts"] = config.pop("num_experts")
    shipped = catalog.model(str(CONFIGS / "qwen3-30b-a3b.json"))
    assert from_dict(catalog, tmp_path, config).layers == shipped.layers


class TestLongCatFlash:
    """LongCat-Flash (transformers' LongcatFlashConfig defaults): 28 layers of two MLA
    blocks (64 heads, q latent 1,536, kv latent 512 + rope 64), two dense MLPs of 12,288
    and a MoE of 512 experts x 2,048 plus 256 zero-compute ones, 12 choices per token."""

    def test_parameters_by_hand(self, catalog: Catalog) -> None:
        # MLA: q_a 6,144 x 1,536 + 1,536 = 9,438,720; q_b 1,536 x 64 x 192 = 18,874,368;
        # kv_a 6,144 x 576 + 512 = 3,539,456; kv_b 512 x 64 x 256 = 8,388,608; o 64 x 128
        # x 6,144 = 50,331,648: 90,572,800, two a layer 181,145,600. Dense MLPs 2 x 3 x
        # 6,144 x 12,288 = 452,984,832. Experts 512 x 3 x 6,144 x 2,048 = 19,327,352,832;
        # router over 768 choices 6,144 x 768 + 768 = 4,719,360. Norms 4 x 6,144 = 24,576.
        # 28 x 19,966,227,200 = 559,054,361,600; embeddings 2 x 131,072 x 6,144 =
        # 1,610,612,736; final norm 6,144. Total 560,664,980,480 (+0.12% from 560B).
        m = catalog.model(str(CONFIGS / "longcat-flash.json"))
        assert m.total_params() == 560_664_980_480

    def test_zero_compute_experts_read_nothing(self, catalog: Catalog) -> None:
        # A token picks 12 of 768 choices; 512/768 of them have weights: 8 real experts
        # on average, 8 x 37,748,736 = 301,989,888 expert parameters a layer at batch 1.
        m = catalog.model(str(CONFIGS / "longcat-flash.json"))
        moe = m.moe()
        assert moe is not None and moe.touched(1) == 8
        # Read at batch 1: everything but the input embedding (805,306,368) and the
        # unread experts 28 x (19,327,352,832 - 301,989,888) = 532,710,162,432:
        # 560,664,980,480 - 805,306,368 - 532,710,162,432 = 27,149,511,680
        assert step(catalog, m).weight_bytes == 2 * 27_149_511_680
        # KV: 56 MLA blocks x 576 x 2 bytes = 64,512 per token
        assert step(catalog, m).kv_bytes(1) == 64_512


class TestMiMoV2Flash:
    """MiMo-V2-Flash: 48 layers of width 4,096; 9 full-attention layers (64/4 heads) and 39
    sliding-window ones (64/8 heads, 128 tokens, sinks); keys 192 and values 128 wide; a
    dense first layer, then 8 of 256 experts x 2,048."""

    def test_parameters_by_hand(self, catalog: Catalog) -> None:
        # Full attention: q 4,096 x 64 x 192 = 50,331,648; k 4,096 x 4 x 192 = 3,145,728;
        # v 4,096 x 4 x 128 = 2,097,152; o 64 x 128 x 4,096 = 33,554,432: 89,128,960.
        # Sliding: k 6,291,456 and v 4,194,304 for 8 KV heads, sinks 64: 94,371,904.
        # Dense MLP 3 x 4,096 x 16,384 = 201,326,592. MoE 256 x 25,165,824 =
        # 6,442,450,944 + router 4,096 x 256 + 256 = 6,443,499,776. Norms 8,192 a layer.
        # Layer 0: 290,463,744; 8 full MoE layers x 6,532,636,928 = 52,261,095,424; 39
        # sliding x 6,537,879,872 = 254,977,315,008; embeddings 2 x 152,576 x 4,096 =
        # 1,249,902,592; final norm 4,096. Total 308,778,780,864 (-0.07% from 309B).
        m = catalog.model(str(CONFIGS / "mimo-v2-flash.json"))
        assert m.total_params() == 308_778_780_864
        assert abs(m.total_params() - 309e9) <= 0.001 * 309e9

    def test_kv_with_narrow_values_and_windows(self, catalog: Catalog) -> None:
        # Per token in BF16: full layers 4 KV heads x (192 + 128) x 2 bytes = 2,560, sliding
        # 8 x 320 x 2 = 5,120. T = 100: 100 x (9 x 2,560 + 39 x 5,120) = 22,272,000.
        # T = 1,000: 9 x 1,000 x 2,560 + 39 x 128 x 5,120 = 23,040,000 + 25,559,040.
        m = catalog.model(str(CONFIGS / "mimo-v2-flash.json"))
        s = step(catalog, m)
        assert s.kv_bytes(100) == 22_272_000
        assert s.kv_bytes(1000) == 48_599_040
        # An FP8 key cache with BF16 values: K 192 of every 320 elements at 1 byte, V 128
        # at 2: full layers 4 x (192 + 256) = 1,792 bytes, sliding 3,584; T = 100:
        # 100 x (9 x 1,792 + 39 x 3,584) = 15,590,400
        bf16, fp8 = catalog.dtype("bf16"), catalog.dtype("fp8")
        split = StepModel.of(Scenario(m, bf16, fp8, H200, v_dtype=bf16))
        assert split.kv_bytes(100) == 15_590_400
