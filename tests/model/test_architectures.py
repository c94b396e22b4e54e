"""MoE, MLA, sliding windows and hybrid recurrent layers (docs/physics.md sections 2 and 3).

Every expected figure is worked by hand in the comment beside it, from the model's
config.json fields (presets/models/*.yaml hold the same numbers).
"""

from __future__ import annotations

import json

import pytest

from decodecalc.answers.estimate import Estimate, estimate
from decodecalc.loading.catalog import Catalog
from decodecalc.model.tensors import expected_experts
from decodecalc.scenarios.scenario import Scenario
from tests.conftest import Run

H100 = 3_350_000_000_000


def run(catalog: Catalog, model: str, contexts: list[int], **kw: object) -> Estimate:
    weights = str(kw.pop("weights", "bf16"))
    kv = str(kw.pop("kv", "bf16"))
    s = Scenario(catalog.model(model), catalog.dtype(weights), catalog.dtype(kv), H100, **kw)  # type: ignore[arg-type]
    return estimate(s, contexts)


def kv_at(catalog: Catalog, model: str, context: int, **kw: object) -> int:
    rows = run(catalog, model, [context], **kw).rows
    return next(r.kv_bytes for r in rows if r.context_tokens == context)


class TestMLA:
    def test_deepseek_v3_kv_per_token(self, catalog: Catalog) -> None:
        # 61 layers x (kv_lora_rank 512 + qk_rope_head_dim 64) x 2 bytes = 70,272
        assert run(catalog, "deepseek-v3", [1]).kv_bytes_per_token == 70_272

    def test_latent_is_replicated_under_tp(self, catalog: Catalog) -> None:
        # Every TP rank reads the whole latent: still 70,272 bytes per token at TP 8,
        # so 1,000 tokens read 70,272,000 bytes on each GPU.
        est = run(catalog, "deepseek-v3", [1000], tp=8)
        assert est.kv_bytes_per_token == 70_272
        assert est.rows[0].kv_bytes == 70_272_000
        assert est.kv_split_ways == 1

    def test_r1_is_the_v3_architecture(self, catalog: Catalog) -> None:
        assert catalog.model("deepseek-r1") == catalog.model("deepseek-v3")


class TestSlidingWindows:
    def test_gemma_3_below_and_above_its_window(self, catalog: Catalog) -> None:
        # Gemma-3-27B: 62 layers, 5 local (1,024-token window) to 1 global -> 52 local,
        # 10 global. Per layer per token: 2 x 16 KV heads x 128 x 2 bytes = 8,192 bytes.
        # T = 512 (inside the window): 62 x 512 x 8,192 = 260,046,848
        assert kv_at(catalog, "gemma-3-27b", 512) == 260_046_848
        # T = 32,768: 52 x 1,024 x 8,192 + 10 x 32,768 x 8,192
        #           = 436,207,616 + 2,684,354,560 = 3,120,562,176
        assert kv_at(catalog, "gemma-3-27b", 32_768) == 3_120_562_176

    def test_gpt_oss_below_and_above_its_window(self, catalog: Catalog) -> None:
        # gpt-oss-120b: 36 layers alternating 128-token banded and full attention.
        # Per layer per token: 2 x 8 KV heads x 64 x 2 bytes = 2,048 bytes.
        # T = 100: 36 x 100 x 2,048 = 7,372,800
        assert kv_at(catalog, "gpt-oss-120b", 100) == 7_372_800
        # T = 8,192: 18 x 128 x 2,048 + 18 x 8,192 x 2,048 = 4,718,592 + 301,989,888
        assert kv_at(catalog, "gpt-oss-120b", 8_192) == 306_708_480

    def test_mistral_v01_window_caps_every_layer(self, catalog: Catalog) -> None:
        # 32 layers x 2 x 8 x 128 x 2 bytes = 131,072 bytes per token, up to 4,096 tokens:
        # 536,870,912 bytes at 4,096 and at 32,768 alike.
        assert kv_at(catalog, "mistral-7b-v0.1", 4_096) == 536_870_912
        assert kv_at(catalog, "mistral-7b-v0.1", 32_768) == 536_870_912

    def test_gemma_3_crossover_on_the_piecewise_curve(self, catalog: Catalog) -> None:
        # Weights read: 27,009,346,304 params (27,432,406,640 less the 423,060,336-param
        # vision tower, which text decode never reads; the tied embedding is the LM head)
        # x 2 bytes = 54,018,692,608. Past the window KV = 436,207,616 + 81,920 x T
        # (10 global layers x 8,192 bytes), so T* = (54,018,692,608 - 436,207,616) / 81,920
        # = 654,083.07 -> 654,083.
        est = run(catalog, "gemma-3-27b", [1024])
        assert est.weight_bytes_per_step == 54_018_692_608
        assert est.crossover_context == pytest.approx(654_083.07, abs=0.01)

    @pytest.mark.parametrize("model", ["mistral-7b-v0.1", "phi-3-mini"])
    def test_all_window_models_have_no_crossover(self, catalog: Catalog, model: str) -> None:
        est = run(catalog, model, [1_000_000])
        assert est.crossover_context is None
        assert est.rows[0].kv_bytes < est.weight_bytes_per_step


class TestMoE:
    def test_mixtral_weight_bytes_at_batch_1(self, catalog: Catalog) -> None:
        # Mixtral-8x7B, 2 of 8 experts. One expert: 3 x 4,096 x 14,336 = 176,160,768 params;
        # 8 per layer x 32 layers = 45,097,156,608 expert params, of which a token reads 2/8.
        # Read = 46,702,792,704 total - 131,072,000 input embedding - 6/8 of the experts
        #      = 46,571,720,704 - 33,822,867,456 = 12,748,853,248 params x 2 bytes (BF16)
        assert run(catalog, "mixtral-8x7b", [0]).weight_bytes_per_step == 25_497_706_496

    @pytest.mark.parametrize(
        ("batch", "experts"),
        [
            (1, 2.0),  # 8 x (1 - 0.75) = 2: exactly top-k
            (8, 7.1990966796875),  # 8 x (1 - 0.75^8) = 8 x (1 - 0.1001129150390625)
            (64, 7.999999919274481),  # 8 x (1 - 0.75^64): all but 8e-8 of an expert
        ],
    )
    def test_mixtral_expected_experts(self, catalog: Catalog, batch: int, experts: float) -> None:
        assert float(expected_experts(8, 2, batch)) == pytest.approx(experts, rel=1e-12)
        est = run(catalog, "mixtral-8x7b", [0], batch=batch)
        assert est.experts_touched == pytest.approx(experts, rel=1e-12)

    def test_mixtral_weights_at_batch_8(self, catalog: Catalog) -> None:
        # 12,748,853,248 read at B=1 includes 2 experts per layer (11,274,289,152 params);
        # at B=8 the experts read are 7.1990966796875 per layer:
        # 1,474,564,096 + 32 x 176,160,768 x 7.1990966796875 (= 58,975/8,192)
        # = 1,474,564,096 + 40,582,348,800 = 42,056,912,896 params, x 2 bytes:
        assert run(catalog, "mixtral-8x7b", [0], batch=8).weight_bytes_per_step == 84_113_825_792

    @pytest.mark.parametrize(
        ("model", "total", "active", "unit", "embeddings_excluded"),
        [
            # card figure, the unit it is rounded to, and which embeddings the vendor leaves out
            ("mixtral-8x7b", 46.7e9, 12.9e9, 0.1e9, 0),
            ("mixtral-8x22b", 141e9, 39e9, 1e9, 0),
            ("qwen3-30b-a3b", 30.5e9, 3.3e9, 0.1e9, 0),
            ("qwen3-235b-a22b", 235e9, 22e9, 1e9, 0),
            ("qwen3-next-80b-a3b", 80e9, 3e9, 1e9, 2),
            ("deepseek-v3", 671e9, 37e9, 1e9, 1),
            ("kimi-k2", 1.03e12, 32e9, 1e9, 1),  # Hugging Face shows 1.03T; the card says 1T
            ("gpt-oss-20b", 20.91e9, 3.61e9, 0.01e9, 1),
            ("gpt-oss-120b", 116.83e9, 5.13e9, 0.01e9, 1),
        ],
    )
    def test_total_and_active_params_match_the_cards(
        self,
        catalog: Catalog,
        model: str,
        total: float,
        active: float,
        unit: float,
        embeddings_excluded: int,
    ) -> None:
        """Within 1%, or within one unit of a card figure rounded to that unit."""
        m = catalog.model(model)
        derived_active = m.active_params() - embeddings_excluded * m.vocab_size * m.hidden_size
        assert abs(m.total_params() - total) <= max(0.01 * total, unit)
        assert abs(derived_active - active) <= max(0.01 * active, unit)


class TestHybrid:
    def test_qwen3_next_kv_grows_only_in_full_attention_layers(self, catalog: Catalog) -> None:
        # 48 layers, every 4th full attention: 12 layers x 2 x 2 KV heads x 256 x 2 bytes
        # = 24,576 bytes per token; the 36 Gated DeltaNet layers add none.
        est = run(catalog, "qwen3-next-80b-a3b", [0, 100_000])
        assert est.kv_bytes_per_token == 24_576
        assert [r.kv_bytes for r in est.rows] == [0, 2_457_600_000]

    def test_qwen3_next_state_is_constant(self, catalog: Catalog) -> None:
        # Per linear layer: 32 value heads x 128 x 128 = 524,288 state elements, plus the
        # convolution's last 3 inputs over 2 x 16 x 128 + 32 x 128 = 8,192 channels (24,576):
        # 548,864 x 36 layers = 19,759,104 elements x 2 bytes = 39,518,208 per sequence.
        est = run(catalog, "qwen3-next-80b-a3b", [0, 100_000], batch=4)
        assert {r.state_bytes for r in est.rows} == {4 * 39_518_208}

    def test_qwen3_next_crossover(self, catalog: Catalog) -> None:
        # Read at B=1: 79,674,391,296 - 311,164,928 (input embedding)
        #   - 77,309,411,328 x 502/512 (experts not routed to) = 3,563,764,480 params,
        # x 2 bytes = 7,127,528,960; / 24,576 bytes per token = 290,019.9 tokens.
        est = run(catalog, "qwen3-next-80b-a3b", [1])
        assert est.weight_bytes_per_step == 7_127_528_960
        assert est.crossover_context == pytest.approx(290_019.8958, abs=1e-3)


class TestTensorParallelPastKVHeads:
    def test_qwen3_next_two_kv_heads(self, catalog: Catalog) -> None:
        # 2 KV heads: TP 2 gives each GPU one head (12 x 2 x 1 x 256 x 2 = 12,288 bytes per
        # token); TP 4 and 8 cannot split further, so each GPU still reads 12,288.
        per_token = {
            tp: run(catalog, "qwen3-next-80b-a3b", [1], tp=tp).kv_bytes_per_token
            for tp in (1, 2, 4, 8)
        }
        assert per_token == {1: 24_576, 2: 12_288, 4: 12_288, 8: 12_288}

    def test_valid_tp_sizes_follow_every_layer_kind(self, catalog: Catalog) -> None:
        # 16 query heads, 2 KV heads (multiples allowed), 16 key and 32 value linear heads.
        assert catalog.model("qwen3-next-80b-a3b").valid_tp() == (1, 2, 4, 8, 16)


def test_show_gives_total_active_and_experts_touched(cli: Run) -> None:
    doc = json.loads(cli("show", "mixtral-8x7b", "--json").out)
    assert doc["params"] == 46_702_792_704 and doc["active_params"] == 12_879_925_248
    # 8 x (1 - 0.75^8) = 7.1990966796875 at B=8
    assert doc["experts_touched"]["1"] == 2.0
    assert doc["experts_touched"]["8"] == pytest.approx(7.1990966796875)
    assert "experts read per MoE layer" in cli("show", "mixtral-8x7b").out
