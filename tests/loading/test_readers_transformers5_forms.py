"""transformers 5 saves configs of families decodecalc already read with new fields:
``layer_types`` even where every layer is alike, and lists where older configs gave a
rule. Each is read to the same layers as the older spelling, or refused in one line.
(MoE schedules, ``num_local_experts`` and Nemotron-H's list: test_readers_moe_schedules.py.)
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

from decodecalc.loading.catalog import Catalog
from decodecalc.model.model import Model
from tests.conftest import Run

if TYPE_CHECKING:
    from decodecalc.step.step import StepModel

CONFIGS = Path(__file__).parents[1] / "fixtures" / "configs"


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


# The configs of issue 35 as transformers 5.24.0 writes them (tests/fixtures/configs/
# transformers5, written by validation/transformers5_forms.py: AutoConfig.for_model(TYPE)
# with every default, or a checkpoint's config.json loaded and saved again). Each is read
# to the parameter count transformers itself builds from the same file on PyTorch's meta
# device (validation/meta_params.py: parameters and the persistent buffers a checkpoint
# ships, shared tensors once), and to KV and state bytes counted by hand here (BF16, one
# sequence, a 1,000-token context).
T5 = CONFIGS / "transformers5"

META_COUNTS = {
    "glm_moe_dsa": 743_911_218_432,  # GLM-5's shape, first_k_dense_replace 3 and its lists
    "glm4_moe_lite": 29_943_393_920,  # qk_head_dim 256 = 192 + 64, said again
    "nemotron_h": 1_968_355_720,
    "nemotron_h-dense": 1_577_662_848,  # MoE defaults written beside MLP-only blocks
    "granitemoehybrid": 38_601_064_448,  # 32 "linear_attention" (Mamba-2) layers
    "mimo_v2_flash": 308_778_780_864,  # no swa_* fields: transformers' defaults
    "minimax": 47_373_946_880,  # layer_types where MiniMax-M1 has attn_type_list
    "qwen3_5_moe": 35_114_261_360,  # with the vision tower (image-text-to-text class)
    "qwen3_5": 9_407_453_936,  # with the vision tower (image-text-to-text class)
    "mistral3": 23_340_272_640,  # the head tied by the wrapper's tie_word_embeddings
    "deepseek-v3.resaved": 671_026_419_200,
    "glm-5.resaved": 743_911_218_432,
    "mimo-v2-flash.resaved": 308_778_780_864,
    "gpt-oss-20b.resaved": 20_914_757_184,
    "mixtral-8x7b.resaved": 46_702_792_704,
    "gemma-3-27b.resaved": 27_432_406_640,
    "mistral-small-3.2-24b.resaved": 23_340_272_640,
    "kimi-k2.5.resaved": 1_026_879_376_368,  # projection_hidden_size = mm_hidden_size
    # Readers added for issue 31, at transformers' defaults (validation/meta_params.py).
    "cohere": 34_980_831_232,  # Command R's shape (c4ai-command-r-v01), tied
    "qwen2_moe": 14_315_784_192,  # Qwen1.5-MoE-A2.7B's shape
    "olmoe": 13_361_612_800,  # 16 layers, 64 experts of 2,048
    "granitemoe": 37_039_116_288,
    "granitemoeshared": 37_039_116_288,  # shared_intermediate_size 0: no shared MLP
    "internlm3": 8_804_241_408,  # InternLM3-8B's shape
    "exaone4": 9_429_069_824,
    "starcoder2": 3_030_371_328,  # StarCoder2-3B's shape, biases and LayerNorm biases
    "gpt_neox": 20_554_567_680,  # GPT-NeoX-20B's shape
    "phimoe": 41_872_793_600,  # Phi-3.5-MoE's shape, LayerNorm biases
    # Qwen's vision-language models with their vision towers (image-text-to-text class)
    "qwen2_vl": 73_381_962_752,  # Qwen2-VL-72B's shape; tower 675,759,104
    "qwen2_5_vl": 75_789_228_800,  # tower 3,083,025,152
    "qwen3_vl": 12_616_410_352,  # tower with 3 deepstack mergers 566,949,104
    "qwen3_vl_moe": 14_052_070_640,  # the same tower
    "minicpm3": 4_073_875_968,  # MiniCPM3-4B's shape: MLA, dense MLPs, tied
    "dots1": 161_206_283_840,  # transformers' widths, dots.llm1's experts
    "dbrx": 2_459_207_680,  # DbrxConfig's defaults: 24 layers of 4 experts of 3,584
    # Every other family at transformers' defaults (validation/transformers5_forms.py).
    "gemma3": 2_723_312_896,  # SigLIP's pooling head on (vision_use_head true)
    "llama4": 108_225_039_360,  # the vision adapter from the MLP width
    "cohere2": 34_980_831_232,
    "deepseek_v3": 671_026_419_200,
    "deepseek_v32": 671_877_944_064,
    "ernie4_5": 360_748_032,
    "ernie4_5_moe": 21_825_437_888,
    "falcon_h1": 8_514_961_408,
    "gemma2": 2_614_341_888,
    "gemma3_text": 2_628_658_432,
    "glm4_moe": 103_481_206_400,
    "gpt_oss": 116_829_156_672,
    "jamba": 51_570_323_328,
    "lfm2": 2_705_497_600,
    "llama": 6_738_415_616,
    "llama4_text": 107_769_861_120,
    "minimax_m2": 228_689_764_864,
    "ministral3": 8_489_553_920,
    "mistral": 7_241_732_096,
    "mixtral": 46_702_792_704,
    "olmo2": 6_888_624_128,
    "olmo3": 6_888_624_128,
    "phi3": 3_821_079_552,
    "qwen2": 12_049_846_272,
    "qwen3": 12_049_461_248,
    "qwen3_5_moe_text": 34_660_610_688,
    "qwen3_5_text": 8_953_803_264,
    "qwen3_moe": 15_350_731_776,
    "qwen3_next": 79_674_391_296,
    "seed_oss": 28_921_040_896,
    "smollm3": 3_075_098_624,
}


THEIRS = {"gemma3n_text": 6_835_235_568}
"""Forms whose count differs from transformers' on purpose (TestDifferencesOnPurpose)."""


def t5_step(catalog: Catalog, name: str) -> StepModel:
    from decodecalc.scenarios.scenario import Scenario
    from decodecalc.step.step import StepModel

    bf16 = catalog.dtype("bf16")
    m = catalog.model(str(T5 / f"{name}.json"))
    return StepModel.of(Scenario(m, bf16, bf16, 4_800_000_000_000))


@pytest.mark.parametrize("name", sorted(META_COUNTS))
def test_transformers5_forms_count_as_transformers_does(catalog: Catalog, name: str) -> None:
    assert catalog.model(str(T5 / f"{name}.json")).total_params() == META_COUNTS[name]


def test_every_transformers5_form_is_tested() -> None:
    assert {p.stem for p in T5.glob("*.json")} == {*META_COUNTS, *THEIRS}


@pytest.mark.parametrize(
    ("name", "kv", "state"),
    [
        # 78 MLA layers: latent 512 + rope 64 = 576 x 2 bytes = 1,152, the indexer's key
        # 128 FP8 bytes + a 4-byte scale = 132: 78 x 1,000 x 1,284.
        ("glm_moe_dsa", 100_152_000, 0),
        # 47 MLA layers x 1,000 x 1,152 (no indexer).
        ("glm4_moe_lite", 54_144_000, 0),
        # One attention layer: 2 x 8 KV heads x 128 x 2 bytes = 4,096 a token. One Mamba-2
        # layer: 128 heads x 64 x 128 state = 1,048,576 in FP32 (the config's
        # mamba_ssm_cache_dtype: 4,194,304 bytes), conv (8,192 + 2 x 8 x 128) x 3 =
        # 30,720 in BF16 (61,440 bytes): 4,255,744 bytes.
        ("nemotron_h", 4_096_000, 4_255_744),
        ("nemotron_h-dense", 4_096_000, 4_255_744),
        # No attention. 32 Mamba-2 layers: 128 heads x 64 x 256 state = 2,097,152, conv
        # (8,192 + 2 x 256) x 3 = 26,112: 32 x 2,123,264 elements x 2 bytes.
        ("granitemoehybrid", 0, 135_888_896),
        # 9 full layers (0 and every 6th): 4 KV heads x (192 + 128) x 2 bytes = 2,560 a
        # token; 39 sliding with twice the KV heads (5,120) over a 129-token window:
        # 9 x 1,000 x 2,560 + 39 x 129 x 5,120 = 23,040,000 + 25,758,720.
        ("mimo_v2_flash", 48_798_720, 0),
        # The checkpoint's 128-token window: 23,040,000 + 39 x 128 x 5,120 = 25,559,040.
        ("mimo-v2-flash.resaved", 48_599_040, 0),
        # 16 full layers: 2 x 8 x 128 x 2 = 4,096 a token; 16 lightning layers:
        # 32 heads x 128 x 128 = 524,288 elements each, x 2 bytes.
        ("minimax", 65_536_000, 16_777_216),
        # 10 full layers x 2 x 2 x 256 x 2 = 20,480 a token; 30 Gated DeltaNet layers x
        # (32 x 128 x 128 + (2 x 16 x 128 + 32 x 128) x 3) = 30 x 548,864 elements x 2.
        ("qwen3_5_moe", 20_480_000, 32_931_840),
        # 8 full layers x 2 x 4 x 256 x 2 = 32,768 a token; 24 x 548,864 x 2.
        ("qwen3_5", 32_768_000, 26_345_472),
        # 40 layers x 2 x 8 x 128 x 2 = 163,840 a token.
        ("mistral3", 163_840_000, 0),
        # 40 layers x 2 x 64 KV heads x 128 x 2 = 1,310,720 a token.
        ("cohere", 1_310_720_000, 0),
        # 24 layers x 2 x 16 x 128 x 2 = 196,608 a token.
        ("qwen2_moe", 196_608_000, 0),
        # 16 layers x 2 x 16 x 128 x 2 = 131,072 a token.
        ("olmoe", 131_072_000, 0),
        # 32 layers x 2 x 32 x 128 x 2 = 524,288 a token.
        ("granitemoe", 524_288_000, 0),
        ("granitemoeshared", 524_288_000, 0),
        # 48 layers x 2 x 2 x 128 x 2 = 49,152 a token.
        ("internlm3", 49_152_000, 0),
        # 32 layers x 2 x 32 x 128 x 2 = 524,288 a token (every window holds 1,000).
        ("exaone4", 524_288_000, 0),
        # 30 layers x 2 x 2 x 128 x 2 = 30,720 a token.
        ("starcoder2", 30_720_000, 0),
        # 44 layers x 2 x 64 heads x 96 x 2 = 1,081,344 a token.
        ("gpt_neox", 1_081_344_000, 0),
        # 32 layers x 2 x 8 x 128 x 2 = 131,072 a token.
        ("phimoe", 131_072_000, 0),
        # 80 layers x 2 x 8 x 128 x 2 = 327,680 a token.
        ("qwen2_vl", 327_680_000, 0),
        ("qwen2_5_vl", 327_680_000, 0),
        # 32 layers x 2 x 32 x 128 x 2 = 524,288 a token.
        ("qwen3_vl", 524_288_000, 0),
        # 24 layers x 2 x 16 x 128 x 2 = 196,608 a token.
        ("qwen3_vl_moe", 196_608_000, 0),
        # 62 MLA layers: latent 256 + rope 32 = 288 x 2 bytes = 576 a token.
        ("minicpm3", 35_712_000, 0),
        # 62 layers x 2 x 32 x 144 x 2 = 1,142,784 a token.
        ("dots1", 1_142_784_000, 0),
    ],
)
def test_transformers5_forms_kv_and_state_by_hand(
    catalog: Catalog, name: str, kv: int, state: int
) -> None:
    s = t5_step(catalog, name)
    assert s.kv_bytes(1000) == kv
    assert s.state_bytes == state


class TestDifferencesOnPurpose:
    """Where decodecalc's count and transformers' differ for one file, on purpose; both
    numbers held (validation/meta_params.py, transformers 5.24.0)."""

    def test_gemma3n_counts_the_shared_layers_k_and_v_the_checkpoint_ships(
        self, catalog: Catalog
    ) -> None:
        # transformers 5 builds no k_proj, v_proj or k_norm in the 15 KV-shared layers
        # (it drops them from the checkpoint as unexpected keys): 6,835,235,568. The
        # checkpoint ships them: 15 x (2 x 2,048 x 512 + 256) = 31,461,120 more.
        m = catalog.model(str(T5 / "gemma3n_text.json"))
        assert m.total_params() == THEIRS["gemma3n_text"] + 31_461_120
        # Read per step at 1,000 tokens: 28 sliding layers x 512 + 7 full x 1,000 tokens x
        # 2 x 2 x 256 x 2 bytes = 29,360,128 + 14,336,000 (the shared layers read the
        # cache of an earlier layer); held: 16 sliding x 512 + 4 full x 1,000 of the 20
        # layers with a cache of their own, 16,777,216 + 8,192,000.
        s = t5_step(catalog, "gemma3n_text")
        assert s.kv_bytes(1000) == 43_696_128
        assert s.kv_bytes(1000, held=True) == 24_969_216

    @pytest.mark.parametrize(
        ("name", "text_only"), [("qwen3_5_moe", 34_660_610_688), ("qwen3_5", 8_953_803_264)]
    )
    def test_qwen3_5_adds_the_vision_tower_the_causal_lm_class_leaves_out(
        self, cli: Run, name: str, text_only: int
    ) -> None:
        # transformers' AutoModelForCausalLM builds the text model alone; the wrapper's
        # default vision tower (27 blocks of 1,152, out_hidden_size 3,584) is 453,650,672
        # more, as its image-text-to-text class counts (META_COUNTS).
        assert META_COUNTS[name] - text_only == 453_650_672
        r = cli("show", str(T5 / f"{name}.json"))
        assert r.code == 0
        assert re.search(r"vision encoder +453,650,672 params", r.out)

    def test_longcat_flash_has_no_weights_for_its_zero_experts(self, catalog: Catalog) -> None:
        # transformers 5.24.0 sizes LongCat-Flash's fused gate and up projections for all
        # 512 + 256 experts, the 256 zero-compute (identity) ones included, though their
        # down projections and the checkpoint hold 512: 741,053,606,912. Those are
        # 28 layers x 256 x 2 x 2,048 x 6,144 = 180,388,626,432 more than the checkpoint's
        # 560,664,980,480 (the card's 560B), which decodecalc counts.
        m = catalog.model(str(CONFIGS / "longcat-flash.json"))
        assert m.total_params() == 741_053_606_912 - 28 * 256 * 2 * 2_048 * 6_144
        assert m.total_params() == 560_664_980_480

    def test_mistral_small_keeps_the_head_its_checkpoint_ships(
        self, catalog: Catalog, cli: Run
    ) -> None:
        # The published config.json says nothing of tying at its top level; transformers
        # 5.24.0's Mistral3Config defaults to tied (huggingface/transformers#43429) and
        # builds 23,340,272,640. The checkpoint ships its own language_model.lm_head
        # (131,072 x 5,120 = 671,088,640) and the text config leaves it untied, which
        # decodecalc follows; once re-saved by transformers 5 the file says tied, and
        # decodecalc reads it tied (META_COUNTS).
        m = catalog.model(str(CONFIGS / "mistral-small-3.2-24b.json"))
        assert m.total_params() == 23_340_272_640 + 671_088_640
        r = cli("show", str(CONFIGS / "mistral-small-3.2-24b.json"))
        assert re.search(r"LM head +671,088,640 params", r.out)


def test_granite_linear_attention_is_the_mamba_layer(catalog: Catalog, tmp_path: Path) -> None:
    """transformers 5's GraniteMoeHybrid builds its Mamba-2 layer for "linear_attention"
    (the checkpoints' "mamba"): both names read to the same layers."""
    config = json.loads((T5 / "granitemoehybrid.json").read_text())
    kinds = ["mamba"] * 31 + ["attention"]
    renamed = ["linear_attention"] * 31 + ["full_attention"]
    old = read(catalog, tmp_path, {**config, "layer_types": kinds})
    assert read(catalog, tmp_path, {**config, "layer_types": renamed}).layers == old.layers


def test_minimax_m1_reads_layer_types_as_its_attn_type_list(
    catalog: Catalog, tmp_path: Path
) -> None:
    config = fixture("minimax-m1")
    kinds = ["linear_attention" if t == 0 else "full_attention" for t in config["attn_type_list"]]
    listed = {k: v for k, v in config.items() if k != "attn_type_list"}
    assert read(catalog, tmp_path, {**listed, "layer_types": kinds}).layers == (
        catalog.model(str(CONFIGS / "minimax-m1.json")).layers
    )


@pytest.mark.parametrize(
    ("name", "field", "value", "words"),
    [
        ("glm_moe_dsa", "first_k_dense_replace", 5, "disagrees with first_k_dense_replace"),
        ("glm4_moe_lite", "qk_head_dim", 128, "differs from qk_nope + qk_rope_head_dim 256"),
        ("mimo_v2_flash", "sliding_window_size", 64, "differs from sliding_window_size 64"),
        ("gemma-3-27b.resaved", "use_bidirectional_attention", True, "an embedding model"),
    ],
)
def test_a_restated_field_that_disagrees_is_refused(
    cli: Run, tmp_path: Path, name: str, field: str, value: object, words: str
) -> None:
    config = json.loads((T5 / f"{name}.json").read_text())
    target = config.get("text_config", config)
    target[field] = value
    path = tmp_path / "config.json"
    path.write_text(json.dumps(config))
    r = cli("show", str(path))
    assert r.code == 2 and r.err.count("\n") == 1
    assert words in r.err


def test_exaone4_windows(catalog: Catalog) -> None:
    # T = 10,000: 8 full layers (every 4th) x 10,000 + 24 sliding x 4,096 tokens, each
    # 2 x 32 x 128 x 2 = 16,384 bytes: 1,310,720,000 + 1,610,612,736.
    assert t5_step(catalog, "exaone4").kv_bytes(10_000) == 2_921_332_736


def test_layernorm_biases_and_mlp_biases_by_hand(catalog: Catalog) -> None:
    # StarCoder2-3B's shape, 30 layers of width 3,072 (24/2 heads x 128, MLP 12,288), tied.
    # Weights: embedding 49,152 x 3,072 and per layer q and o 2 x 3,072^2, k and v
    # 2 x 256 x 3,072, MLP up and down 2 x 3,072 x 12,288. Biases and norms per layer:
    # two LayerNorms of weight and bias 4 x 3,072, q, k, v, o biases 3,072 + 2 x 256 +
    # 3,072 = 6,656, MLP biases 12,288 + 3,072: 34,304; the final LayerNorm 2 x 3,072.
    m = catalog.model(str(T5 / "starcoder2.json"))
    weights = 49_152 * 3_072 + 30 * (2 * 3_072**2 + 2 * 256 * 3_072 + 2 * 3_072 * 12_288)
    assert m.total_params() - weights == 30 * 34_304 + 2 * 3_072
    assert {g.name: g.params for g in m.tensor_groups()}["mlp"] == 30 * 2 * 3_072 * 12_288


def test_qwen2_vl_vision_tower_by_hand(catalog: Catalog, tmp_path: Path) -> None:
    # embed_dim 1,280, 32 blocks, MLP 4 x 1,280, patches 14 x 14 over 2 frames, merger of
    # 2 x 2 patches into 3,584: patch embedding 3 x 2 x 14 x 14 x 1,280 = 1,505,280; a
    # block: LayerNorms 4 x 1,280 = 5,120, qkv 1,280 x 3,840 + 3,840 = 4,919,040, proj
    # 1,639,680, fc1 1,280 x 5,120 + 5,120 = 6,558,720, fc2 6,554,880: 19,677,440, x 32 =
    # 629,678,080; merger LayerNorm 2,560 + 5,120^2 + 5,120 + 5,120 x 3,584 + 3,584 =
    # 44,575,744. Tower 675,759,104, the same whether the text model's fields sit under
    # text_config (transformers 5) or at the top level (the published Qwen2-VL form).
    nested = json.loads((T5 / "qwen2_vl.json").read_text())
    text = nested.pop("text_config")
    flat = {**{k: v for k, v in text.items() if k != "model_type"}, **nested}
    for config in (json.loads((T5 / "qwen2_vl.json").read_text()), flat):
        m = read(catalog, tmp_path, config)
        assert sum(g.params for g in m.extra_groups) == 675_759_104
        assert m.total_params() == META_COUNTS["qwen2_vl"]


def test_phimoes_head_bias_is_counted(catalog: Catalog, tmp_path: Path) -> None:
    """Phi-3.5-MoE-instruct's config says ``lm_head_bias: true``: one bias a vocabulary
    entry, 32,064 more than the form without it; transformers 5.24.0 on the meta device
    builds the same 41,872,825,664 from the file with the flag set."""
    config = json.loads((T5 / "phimoe.json").read_text())
    path = tmp_path / "config.json"
    path.write_text(json.dumps({**config, "lm_head_bias": True}))
    assert catalog.model(str(path)).total_params() == 41_872_793_600 + 32_064


def test_dbrx_at_dbrx_instructs_shape_counts_as_transformers_does(
    catalog: Catalog, tmp_path: Path
) -> None:
    """The DBRX form with dbrx-instruct's shape (databricks/dbrx-instruct: d_model 6,144, 40
    layers, 48 heads and 8 KV heads of 128, 16 experts of 10,752, 4 a token, vocabulary
    100,352, untied). A layer: Wqkv 6,144 x (6,144 + 2 x 1,024) = 50,331,648, out_proj
    6,144^2 = 37,748,736, router 16 x 6,144 = 98,304, experts 16 x 3 x 10,752 x 6,144 =
    3,170,893,824, two norms 12,288: 3,259,084,800, x 40 = 130,363,392,000. wte and
    lm_head 2 x 100,352 x 6,144 = 1,233,125,376, norm_f 6,144: 131,596,523,520, what
    transformers 5.24.0 builds from the file on the meta device; the card says 132B in all,
    36B active (here 36,469,708,800: 12 of the 16 experts unread). KV: 40 layers x 2 x 8 x
    128 x 2 bytes = 163,840 a token."""
    from decodecalc.scenarios.scenario import Scenario
    from decodecalc.step.step import StepModel

    config = json.loads((T5 / "dbrx.json").read_text())
    config.update(d_model=6144, n_heads=48, n_layers=40, vocab_size=100352, max_seq_len=32768)
    config.update(num_key_value_heads=8)
    config["attn_config"].update(kv_n_heads=8, clip_qkv=8)
    config["ffn_config"].update(ffn_hidden_size=10752, moe_num_experts=16, moe_top_k=4)
    path = tmp_path / "config.json"
    path.write_text(json.dumps(config))
    model = catalog.model(str(path))
    assert model.total_params() == 131_596_523_520
    assert model.active_params() == 36_469_708_800
    bf16 = catalog.dtype("bf16")
    step = StepModel.of(Scenario(model, bf16, bf16, 4_800_000_000_000))
    assert step.kv_bytes(1_000) == 1_000 * 163_840
