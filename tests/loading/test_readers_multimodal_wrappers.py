"""Multimodal wrappers (a text model under ``text_config`` beside a vision tower): Qwen3.5,
Kimi-K2.5 and Mistral Small 3.x, read from their config.json (tests/fixtures/configs,
sources in SOURCES.md).

The vision tower and its projector are held in memory and never read by text decode.
Every figure is worked by hand in the comment beside it from the config's fields and the
reference implementation's layers; none is copied from decodecalc's output.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from decodecalc.loading.catalog import Catalog
from decodecalc.model.model import Model
from decodecalc.scenarios.scenario import Scenario
from decodecalc.step.step import StepModel
from tests.conftest import Run

CONFIGS = Path(__file__).parents[1] / "fixtures" / "configs"
H200 = 4_800_000_000_000


def model(catalog: Catalog, name: str) -> Model:
    return catalog.model(str(CONFIGS / f"{name}.json"))


def step(catalog: Catalog, name: str, batch: int = 1) -> StepModel:
    m = model(catalog, name)
    bf16 = catalog.dtype("bf16")
    return StepModel.of(Scenario(m, bf16, bf16, H200, batch=batch))


def vision(m: Model) -> int:
    return sum(g.params for g in m.extra_groups)


class TestQwen3_5:
    """Qwen3.5-35B-A3B: 40 layers of width 2,048, every 4th full attention (16/2 heads x
    256, output-gated), the rest Gated DeltaNet (16 key and 32 value heads x 128); MoE of
    256 experts x 512, 8 per token, and a gated shared expert of 512."""

    def test_parameters_by_hand(self, catalog: Catalog) -> None:
        # Gated DeltaNet: in_proj_qkv 2,048 x (2 x 2,048 + 4,096) = 16,777,216; in_proj_z
        # 2,048 x 4,096 = 8,388,608; in_proj_b and _a 2 x 2,048 x 32 = 131,072; out_proj
        # 4,096 x 2,048 = 8,388,608; conv 8,192 x 4 = 32,768; dt_bias, A_log 64; norm 128:
        # 33,718,464. Full attention: q with its gate 2,048 x 8,192 = 16,777,216; k, v
        # 2 x 2,048 x 512 = 2,097,152; o 4,096 x 2,048 = 8,388,608; QK norms 512:
        # 27,263,488. MoE: 256 x 3 x 2,048 x 512 = 805,306,368; shared 3,145,728; router
        # 524,288; shared gate 2,048: 808,978,432. Norms 4,096 a layer.
        # 30 x 842,700,992 + 10 x 836,246,016 = 33,643,489,920; embeddings
        # 2 x 248,320 x 2,048 = 1,017,118,720; final norm 2,048: text 34,660,610,688.
        # Vision: patches 3 x 2 x 16 x 16 x 1,152 + 1,152 = 1,770,624; positions
        # 2,304 x 1,152 = 2,654,208; 27 blocks of 2 LayerNorms 4,608, qkv 3,984,768,
        # proj 1,328,256, fc1 4,962,512, fc2 4,959,360 (15,239,504) = 411,466,608; merger
        # LayerNorm 2,304, 4,608^2 + 4,608 = 21,238,272, 4,608 x 2,048 + 2,048 = 9,439,232.
        # Vision 446,571,248. Total 35,107,181,936 (+0.31% from the card's rounded 35B).
        m = model(catalog, "qwen3.5-35b-a3b")
        assert vision(m) == 446_571_248
        assert m.total_params() == 35_107_181_936
        assert abs(m.total_params() - 35e9) <= 0.5e9

    def test_kv_and_state_by_hand(self, catalog: Catalog) -> None:
        # KV: 10 full-attention layers x 2 x 2 KV heads x 256 x 2 bytes = 20,480 per token.
        # State: 30 linear layers x (32 x 128 x 128 = 524,288 recurrent elements in FP32,
        # as its text_config's mamba_ssm_dtype asks: 2,097,152 bytes; (2 x 2,048 + 4,096)
        # x 3 = 24,576 conv inputs in BF16: 49,152 bytes) = 30 x 2,146,304 = 64,389,120
        # bytes per sequence.
        s = step(catalog, "qwen3.5-35b-a3b", batch=2)
        assert s.kv_bytes(1000) == 2 * 1000 * 20_480
        assert s.state_bytes == 2 * 64_389_120

    def test_the_vision_tower_is_held_not_read(self, catalog: Catalog) -> None:
        # Read at batch 1: all but the input embedding (508,559,360), the vision tower and
        # 248 of 256 experts in 40 layers (40 x 805,306,368 x 248/256 = 31,205,621,760):
        # 35,107,181,936 - 508,559,360 - 446,571,248 - 31,205,621,760 = 2,946,429,568
        assert step(catalog, "qwen3.5-35b-a3b").weight_bytes == 2 * 2_946_429_568

    def test_the_text_model_alone_reads_the_same(self, catalog: Catalog, tmp_path: Path) -> None:
        """A text-only config (no wrapper) is read by the same reader."""
        config = json.loads((CONFIGS / "qwen3.5-35b-a3b.json").read_text())
        path = tmp_path / "config.json"
        path.write_text(json.dumps(config["text_config"]))
        text = catalog.model(str(path))
        wrapped = model(catalog, "qwen3.5-35b-a3b")
        assert text.layers == wrapped.layers
        assert text.total_params() == wrapped.total_params() - vision(wrapped)


class TestKimiK2_5:
    def test_the_text_model_is_kimi_k2(self, catalog: Catalog) -> None:
        m = model(catalog, "kimi-k2.5")
        k2 = catalog.model("kimi-k2")
        assert m.layers == k2.layers
        assert m.total_params() - vision(m) == k2.total_params()

    def test_moonvit_by_hand(self, catalog: Catalog) -> None:
        # Patch embedding 3 x 14 x 14 x 1,152 + 1,152 = 678,528; positions 64 x 64 x 1,152
        # = 4,718,592; 27 blocks of 2 LayerNorms 4,608, wqkv 1,152 x 3,456 + 3,456 =
        # 3,984,768, wo 1,327,104 + 1,152 = 1,328,256, fc0 1,152 x 4,304 + 4,304 =
        # 4,962,512, fc1 4,304 x 1,152 + 1,152 = 4,959,360 (15,239,504) = 411,466,608;
        # final LayerNorm 2,304; projector LayerNorm 2,304, 4,608^2 + 4,608 = 21,238,272,
        # 4,608 x 7,168 + 7,168 = 33,037,312: 471,143,920 (the shapes of the checkpoint's
        # tensor list quoted in SOURCES.md).
        m = model(catalog, "kimi-k2.5")
        assert vision(m) == 471_143_920
        # Kimi-K2's 1,026,408,232,448 + 471,143,920
        assert m.total_params() == 1_026_879_376_368

    def test_kv_per_token(self, catalog: Catalog) -> None:
        # MLA: 61 layers x (512 + 64) x 2 bytes = 70,272 per token
        assert step(catalog, "kimi-k2.5").kv_bytes(1) == 70_272


class TestMistral3:
    def test_mistral_small_by_hand(self, catalog: Catalog) -> None:
        # Text: q and o 2 x 5,120 x 4,096 = 41,943,040; k, v 2 x 5,120 x 1,024 =
        # 10,485,760; MLP 3 x 5,120 x 32,768 = 503,316,480; norms 10,240: 555,755,520 x 40
        # = 22,230,220,800; embeddings 2 x 131,072 x 5,120 = 1,342,177,280; final norm
        # 5,120. Pixtral: patches 3 x 14 x 14 x 1,024 = 602,112; ln_pre 1,024; 24 layers of
        # 2 x 1,024 + 4 x 1,024^2 + 3 x 1,024 x 4,096 = 16,779,264 (402,702,336);
        # projector norm 1,024, merge 4,096 x 1,024 = 4,194,304, 1,024 x 5,120 =
        # 5,242,880, 5,120^2 = 26,214,400. Vision 438,958,080; total 24,011,361,280.
        m = model(catalog, "mistral-small-3.2-24b")
        assert vision(m) == 438_958_080
        assert m.total_params() == 24_011_361_280
        assert abs(m.total_params() - 24e9) <= 0.001 * 24e9

    def test_kv_per_token(self, catalog: Catalog) -> None:
        # 40 layers x 2 x 8 KV heads x 128 x 2 bytes = 163,840 per token
        assert step(catalog, "mistral-small-3.2-24b").kv_bytes(1) == 163_840


def test_a_wrapper_may_say_the_embeddings_are_tied(catalog: Catalog, tmp_path: Path) -> None:
    """The wrapper's tie_word_embeddings holds when the text model does not say."""
    config = json.loads((CONFIGS / "mistral-small-3.2-24b.json").read_text())
    path = tmp_path / "config.json"
    path.write_text(json.dumps({**config, "tie_word_embeddings": True}))
    tied = catalog.model(str(path))
    # One vocabulary matrix fewer: 131,072 x 5,120 = 671,088,640
    assert model(catalog, "mistral-small-3.2-24b").total_params() - tied.total_params() == (
        671_088_640
    )


@pytest.mark.parametrize("name", ["qwen3.5-35b-a3b", "kimi-k2.5", "mistral-small-3.2-24b", "glm-5"])
def test_show_reads_each_config(cli: Run, name: str) -> None:
    r = cli("show", str(CONFIGS / f"{name}.json"))
    assert r.code == 0, r.err


def test_qwen3_5_dense_kv_and_state(catalog: Catalog) -> None:
    """Qwen3.5-27B's text model (dense): 64 layers, 16 of them full attention (24/4 heads x
    256), 48 Gated DeltaNet (16 key and 48 value heads x 128)."""
    s = step(catalog, "qwen3.5-27b-text")
    # KV: 16 x 2 x 4 x 256 x 2 bytes = 65,536 per token
    assert s.kv_bytes(1) == 65_536
    # State: 48 x (48 x 128 x 128 = 786,432 recurrent elements in FP32, the config's
    # mamba_ssm_dtype: 3,145,728 bytes; (2 x 16 x 128 + 48 x 128) x 3 = 30,720 conv
    # inputs in BF16: 61,440 bytes) = 48 x 3,207,168 = 153,944,064 bytes
    assert s.state_bytes == 153_944_064
    # Every layer's MLP is the gated 17,408-wide one: 3 x 5,120 x 17,408 = 267,386,880
    m = model(catalog, "qwen3.5-27b-text")
    assert {layer.ffn.tensor_groups(5120)[0].params for layer in m.layers} == {267_386_880}
    # Gated DeltaNet: in_proj_qkv 5,120 x 10,240 = 52,428,800; z 5,120 x 6,144 =
    # 31,457,280; b, a 2 x 5,120 x 48 = 491,520; out 6,144 x 5,120 = 31,457,280; conv
    # 10,240 x 4 = 40,960; dt_bias, A_log 96; norm 128: 115,876,064, x 48 = 5,562,051,072.
    # Attention: q and gate 5,120 x 12,288 = 62,914,560; k, v 2 x 5,120 x 1,024 =
    # 10,485,760; o 31,457,280; QK norms 512: 104,858,112, x 16 = 1,677,729,792.
    # MLPs 64 x 267,386,880 = 17,112,760,320; norms 128 x 5,120 + 5,120 = 660,480;
    # embeddings 2 x 248,320 x 5,120 = 2,542,796,800. Total 26,895,998,464 (the card's
    # 27B counts the vision tower too).
    assert m.total_params() == 26_895_998_464


def test_mistral3_around_a_deepseek_v3_text_model(catalog: Catalog, tmp_path: Path) -> None:
    """Mistral Large 3 ships DeepSeek-V3's text architecture under the mistral3 wrapper:
    the text model is read by its own model_type's reader (no Mistral Large 3 config.json
    was at hand, so DeepSeek-V3's stands in)."""
    text = json.loads((CONFIGS / "deepseek-v3.json").read_text())
    path = tmp_path / "config.json"
    path.write_text(json.dumps({"model_type": "mistral3", "text_config": text}))
    wrapped = catalog.model(str(path))
    v3 = catalog.model(str(CONFIGS / "deepseek-v3.json"))
    assert wrapped.layers == v3.layers
    assert wrapped.total_params() == v3.total_params()
