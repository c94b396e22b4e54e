"""Chunked attention (Llama 4), sparse attention (DeepSeek-V3.2), Mamba hybrids and the MoE
families whose config fields differ (docs/physics.md, "Architectures that change decode
bytes").

Every expected figure is worked by hand in the comment beside it, from the model's
config.json fields (presets/models/*.yaml hold the same numbers) and the layer's definition
in the reference implementation; none is copied from decodecalc's output.
"""

from __future__ import annotations

from fractions import Fraction

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from decodecalc.answers.estimate import estimate
from decodecalc.loading.catalog import Catalog
from decodecalc.model.kvcache import KVCurve
from decodecalc.model.layers import chunk_tokens
from decodecalc.scenarios.scenario import Scenario
from decodecalc.step.fast import ROW_FIELDS, FastStep
from decodecalc.step.step import StepModel
from tests.conftest import Run

H200 = 4_800_000_000_000


def scenario(catalog: Catalog, model: str, **kw: object) -> Scenario:
    weights = str(kw.pop("weights", "bf16"))
    kv = str(kw.pop("kv", "bf16"))
    gpu = kw.pop("gpu", None)
    return Scenario(
        catalog.model(model),
        catalog.dtype(weights),
        catalog.dtype(kv),
        H200,
        gpu=None if gpu is None else catalog.gpu(str(gpu)),  # type: ignore[arg-type]
        **kw,  # type: ignore[arg-type]
    )


def kv_at(catalog: Catalog, model: str, context: int, **kw: object) -> int:
    return StepModel.of(scenario(catalog, model, **kw)).kv_bytes(context)


def held_at(catalog: Catalog, model: str, context: int, **kw: object) -> int:
    return StepModel.of(scenario(catalog, model, **kw)).kv_bytes(context, held=True)


class TestChunkedAttention:
    """Llama 4 Scout: 48 layers; every 4th (12) global NoPE, the other 36 chunked (8,192).
    Per layer per token in BF16: K and V x 8 KV heads x 128 x 2 bytes = 4,096 bytes."""

    def test_the_sawtooth_convention(self) -> None:
        # Context T counts the token being decoded: it reads its own chunk up to itself.
        assert [chunk_tokens(t, 8192) for t in (0, 1, 8191, 8192, 8193, 16384, 16385)] == [
            0,
            1,
            8191,
            8192,
            1,
            8192,
            1,
        ]

    def test_below_at_and_above_a_chunk_boundary(self, catalog: Catalog) -> None:
        # T = 8,192: all 48 layers read 8,192 tokens: 48 x 8,192 x 4,096 = 1,610,612,736
        assert kv_at(catalog, "llama-4-scout", 8192) == 1_610_612_736
        # T = 8,193: chunked layers read 1 token, global 8,193:
        # 36 x 1 x 4,096 + 12 x 8,193 x 4,096 = 147,456 + 402,702,336 = 402,849,792
        assert kv_at(catalog, "llama-4-scout", 8193) == 402_849_792
        # T = 10,000: chunked read 10,000 - 8,192 = 1,808:
        # 36 x 1,808 x 4,096 + 12 x 10,000 x 4,096 = 266,600,448 + 491,520,000 = 758,120,448
        assert kv_at(catalog, "llama-4-scout", 10_000) == 758_120_448
        # T = 16,384 (end of the second chunk): 36 x 8,192 x 4,096 + 12 x 16,384 x 4,096
        #   = 1,207,959,552 + 805,306,368 = 2,013,265,920
        assert kv_at(catalog, "llama-4-scout", 16_384) == 2_013_265_920

    def test_memory_holds_one_chunk(self, catalog: Catalog) -> None:
        # Held at T = 10,000: 36 x 8,192 x 4,096 + 12 x 10,000 x 4,096
        #   = 1,207,959,552 + 491,520,000 = 1,699,479,552 (a chunk per chunked layer)
        assert held_at(catalog, "llama-4-scout", 10_000) == 1_699_479_552
        # Below a chunk the two agree: 48 x 1,000 x 4,096 = 196,608,000
        assert held_at(catalog, "llama-4-scout", 1000) == 196_608_000

    def test_crossover_is_the_first_context_reaching_the_weights(self, catalog: Catalog) -> None:
        # Weights read per step at batch 1 in BF16: attention 48 x (2 x 5,120 x 5,120 +
        # 2 x 5,120 x 1,024) = 3,019,898,880; per layer one expert + the shared one + router
        # 2 x 3 x 5,120 x 8,192 + 5,120 x 16 = 251,740,160, x 48 = 12,083,527,680; norms
        # 48 x 2 x 5,120 + 5,120 = 496,640; LM head 202,048 x 5,120 = 1,034,485,760.
        # Sum 16,138,408,960 params x 2 bytes = 32,276,817,920 bytes.
        # KV grows 12 x 4,096 = 49,152 B/token globally, chunked 36 x 4,096 = 147,456 within
        # a chunk. Chunk k (T in (8,192k, 8,192(k+1)]) peaks at 8,192 x (49,152 (k+1) +
        # 147,456): first >= the weights at k + 1 = 78, i.e. k = 77, from T = 630,784.
        # There 49,152 T + 147,456 (T - 630,784) = 32,276,817,920
        #   -> T = (32,276,817,920 + 93,012,885,504) / 196,608 = 125,289,703,424 / 196,608
        step = StepModel.of(scenario(catalog, "llama-4-scout"))
        assert step.weight_bytes == 32_276_817_920
        assert step.crossover() == Fraction(125_289_703_424, 196_608)
        # The earlier peaks stay below: the end of chunk 77 (T = 630,784) reads
        # 630,784 x 49,152 + 8,192 x 147,456 = 31,004,295,168 + 1,207,959,552 < weights
        assert step.kv_bytes(630_784) == 32_212_254_720 < step.weight_bytes

    def test_solve_on_a_sawtooth_without_global_layers(self) -> None:
        # One chunked layer of 1 unit per token, chunk 4: it never holds more than 4.
        curve = KVCurve((), ((4, 1),), ((4, 1),))
        assert curve.solve(Fraction(3)) == 3
        assert curve.solve(Fraction(4)) == 4
        assert curve.solve(Fraction(5)) is None
        # With a global layer of 1 unit: peaks at T = 4k are 4k + 4; 13 is first reached in
        # the chunk (8, 12], where the value is T + (T - 8) -> 2T - 8 = 13 -> T = 10.5.
        mixed = KVCurve(((None, 1),), ((4, 1),), ((4, 1), (None, 1)))
        assert mixed.solve(Fraction(13)) == Fraction(21, 2)
        assert mixed.elements(Fraction(21, 2)) == 13

    def test_maverick_interleaves_dense_and_moe(self, catalog: Catalog) -> None:
        m = catalog.model("llama-4-maverick")
        ffns = [type(layer.ffn).__name__ for layer in m.layers]
        # interleave_moe_layer_step 2: moe_layers = range(1, 48, 2), the odd layers
        assert ffns[:4] == ["DenseMLP", "MoE", "DenseMLP", "MoE"]
        assert ffns.count("MoE") == 24

    def test_param_counts_by_hand(self, catalog: Catalog) -> None:
        # Text, per layer: attention 2 x 5,120 x 5,120 + 2 x 5,120 x 1,024 = 62,914,560;
        # one MLP of 8,192 is 3 x 5,120 x 8,192 = 125,829,120; 2 norms 10,240.
        # Scout MoE layer: 16 experts + shared + router 5,120 x 16:
        #   17 x 125,829,120 + 81,920 = 2,139,176,960; layer 2,202,101,760, x 48
        #   = 105,700,884,480. Embedding + LM head 2 x 1,034,485,760 = 2,068,971,520,
        #   final norm 5,120. Text 107,769,861,120.
        # Vision (1,408 wide, 34 layers, MLP 5,632): per layer 4 x (1,408^2 + 1,408)
        #   + 2 x 1,408 x 5,632 + 5,632 + 1,408 + 4 x 1,408 = 23,807,872, x 34 = 809,467,648;
        #   patch 3 x 14 x 14 x 1,408 = 827,904, class 1,408, positions 577 x 1,408 =
        #   812,416, two LayerNorms 5,632; adapter 5,632 x 4,096 + 4,096^2 = 39,845,888;
        #   projector 4,096 x 5,120 = 20,971,520. Vision 871,932,416.
        # Total 108,641,793,536: -0.33% from the model card's 109B.
        scout = catalog.model("llama-4-scout")
        assert scout.total_params() == 108_641_793_536
        assert abs(scout.total_params() - 109e9) <= 0.01 * 109e9
        # Maverick: 24 MoE layers of 128 experts + shared + router 5,120 x 128:
        #   129 x 125,829,120 + 655,360 = 16,232,611,840; with attention and norms
        #   16,295,536,640 each, x 24 = 391,092,879,360. 24 dense layers (MLP 16,384):
        #   62,914,560 + 3 x 5,120 x 16,384 + 10,240 = 314,583,040, x 24 = 7,549,992,960.
        #   + 2,068,971,520 + 5,120 + 871,932,416 = 401,583,781,376: +0.40% from 400B.
        maverick = catalog.model("llama-4-maverick")
        assert maverick.total_params() == 401_583_781_376
        assert abs(maverick.total_params() - 400e9) <= 0.01 * 400e9


class TestSparseAttention:
    """DeepSeek-V3.2: 61 MLA layers; per layer per token the latent is 512 + 64 = 576
    elements (1,152 bytes in BF16) and the indexer's keys 128 FP8 bytes + one 4-byte scale
    = 132 bytes, whatever the KV dtype."""

    def test_below_and_above_the_top_k(self, catalog: Catalog) -> None:
        # T = 1,000: 61 x 1,000 x (1,152 + 132) = 78,324,000
        assert kv_at(catalog, "deepseek-v3.2", 1000) == 78_324_000
        # T = 2,048: 61 x 2,048 x 1,284 = 160,407,552
        assert kv_at(catalog, "deepseek-v3.2", 2048) == 160_407_552
        # T = 10,000: latent of the top 2,048 only, indexer all:
        # 61 x 2,048 x 1,152 + 61 x 10,000 x 132 = 143,917,056 + 80,520,000 = 224,437,056
        assert kv_at(catalog, "deepseek-v3.2", 10_000) == 224_437_056

    def test_indexer_bytes_do_not_follow_the_kv_dtype(self, catalog: Catalog) -> None:
        # FP8 KV, T = 10,000: 61 x 2,048 x 576 + 61 x 10,000 x 132 = 71,958,528 + 80,520,000
        assert kv_at(catalog, "deepseek-v3.2", 10_000, kv="fp8") == 152_478_528

    def test_memory_holds_every_token(self, catalog: Catalog) -> None:
        # Held at T = 10,000: 61 x 10,000 x 1,284 = 783,240,000
        assert held_at(catalog, "deepseek-v3.2", 10_000) == 783_240_000

    def test_memory_fit_uses_what_is_held(self, catalog: Catalog) -> None:
        s = scenario(catalog, "deepseek-v3.2", weights="fp8", gpu="h200", tp=8)
        est = estimate(s, [100_000])
        memory = est.memory
        assert memory is not None and memory.max_context is not None
        # Every token of the longest context that fits is held: 78,324 bytes each, in the
        # room the server leaves, and the context in whole 16-token blocks.
        free = memory.room.usable_bytes - memory.stored_weight_bytes
        assert memory.max_context == free // 78_324 // 16 * 16

    def test_param_count_by_hand(self, catalog: Catalog) -> None:
        # V3's 671,026,419,200 (tests/model/test_architectures.py) plus, per layer, the indexer:
        # wq_b 1,536 x 64 x 128 = 12,582,912; wk 7,168 x 128 = 917,504; k_norm 2 x 128;
        # weights_proj 7,168 x 64 = 458,752: 13,959,424, x 61 = 851,524,864.
        v32 = catalog.model("deepseek-v3.2")
        v3 = catalog.model("deepseek-v3")
        assert v32.total_params() - v3.total_params() == 851_524_864
        assert abs(v32.total_params() - 671e9) <= 0.01 * 671e9


SWEEP_MODELS = [
    "llama-4-scout",
    "llama-4-maverick",
    "deepseek-v3.2",
    "nemotron-nano-9b-v2",
    "jamba-mini-1.5",
    "mimo-v2-flash",
    "longcat-flash-chat",
    "qwen3.5-35b-a3b",
]


KV_DTYPES = ["bf16", "fp8", "nvfp4", "fp8-flashmla"]


@settings(max_examples=80, deadline=None)
@given(
    model=st.sampled_from(SWEEP_MODELS),
    kv=st.sampled_from(KV_DTYPES),
    batch=st.integers(1, 64),
    tp=st.sampled_from([1, 2, 4, 8]),
    contexts=st.lists(st.integers(0, 3_000_000), min_size=1, max_size=8),
)
def test_sweep_agrees_with_the_estimator(
    catalog: Catalog, model: str, kv: str, batch: int, tp: int, contexts: list[int]
) -> None:
    """The sweep's rows (its fast loop, or the estimator's step for chunked and top-k
    caches) are the estimator's, to the byte, on every kind of cache."""
    s = scenario(catalog, model, kv=kv, gpu="h200", tp=tp, batch=batch)
    points = sorted(set(contexts))
    at = {name: i for i, name in enumerate(ROW_FIELDS)}
    names = ("kv_bytes", "total_bytes", "bound", "fits")
    fast = [tuple(row[at[n]] for n in names) for row in FastStep.of(s).rows(points)]
    rows = estimate(s, points, crossover_row=False).rows
    assert fast == [(r.kv_bytes, r.total_bytes, r.bound, r.fits) for r in rows]
    times = [row[at["ms_per_token"]] for row in FastStep.of(s).rows(points)]
    assert times == pytest.approx([r.seconds_per_token * 1000 for r in rows], rel=1e-12)


@pytest.mark.parametrize(
    ("model", "words"),
    [
        ("llama-4-scout", "36 chunked layers read the current 8,192-token chunk"),
        ("deepseek-v3.2", "61 sparse layers read the cache of min(T, 2,048) tokens"),
        ("nemotron-nano-9b-v2", "constant state of 36,384,768 elements per sequence"),
        ("jamba-mini-1.5", "constant state of 4,358,144 elements per sequence"),
    ],
)
def test_show_and_explain_describe_the_reads(cli: Run, model: str, words: str) -> None:
    shown = cli("show", model)
    assert shown.code == 0, shown.err
    assert words in " ".join(shown.out.split())
    explained = cli("explain", "-m", model, "-g", "h200", "-c", "16K")
    assert explained.code == 0, explained.err


class TestStateSpaceHybrids:
    def test_nemotron_h_layers_from_the_pattern(self, catalog: Catalog) -> None:
        m = catalog.model("nemotron-nano-9b-v2")
        # M-M-M-MM-M-M-M*-M-M-M*-M-M-M-M*-M-M-M-M*-M-MM-M-M-M-M-M-: 27 M, 4 *, 25 -;
        # a mixer and the MLP after it make one layer: 31 layers, 6 of them without an MLP.
        kinds = [layer.mixer.kind for layer in m.layers]
        assert (len(kinds), kinds.count("mamba2"), kinds.count("attention")) == (31, 27, 4)
        assert sum(1 for layer in m.layers if not layer.ffn.intermediate_size) == 6

    def test_nemotron_h_state_and_kv(self, catalog: Catalog) -> None:
        # Per Mamba-2 layer: conv (10,240 + 2 x 8 x 128) x (4 - 1) = 12,288 x 3 = 36,864
        # in BF16 (73,728 bytes); SSM 128 heads x 80 x 128 = 1,310,720 in FP32 (vLLM's
        # NemotronHForCausalLMConfig default: 5,242,880 bytes); 5,316,608 bytes, x 27 =
        # 143,548,416 bytes per sequence, at any context and any KV dtype.
        step = StepModel.of(scenario(catalog, "nemotron-nano-9b-v2", batch=2))
        assert step.state_bytes == 2 * 143_548_416
        # KV: 4 attention layers x 2 x 8 x 128 x 2 bytes = 16,384 bytes per token;
        # T = 100,000, B = 2: 2 x 100,000 x 16,384 = 3,276,800,000
        assert step.kv_bytes(100_000) == 3_276_800_000

    def test_nemotron_h_state_under_tp(self, catalog: Catalog) -> None:
        # TP 4 splits heads (128 -> 32) and groups (8 -> 2): conv (2,560 + 2 x 2 x 128) x 3
        # = 3,072 x 3 = 9,216 in BF16 (18,432 bytes); SSM 32 x 80 x 128 = 327,680 in FP32
        # (1,310,720 bytes); 1,329,152 x 27 = 35,887,104 bytes.
        step = StepModel.of(scenario(catalog, "nemotron-nano-9b-v2", tp=4))
        assert step.state_bytes == 35_887_104

    def test_jamba_state(self, catalog: Catalog) -> None:
        # Mamba-1: d_inner = 2 x 4,096 = 8,192 channels x (3 conv inputs + 16 SSM states)
        # = 155,648 elements; 28 Mamba layers (attention at 4, 12, 20, 28) = 4,358,144,
        # x 2 bytes = 8,716,288 bytes per sequence.
        assert StepModel.of(scenario(catalog, "jamba-mini-1.5")).state_bytes == 8_716_288
        # vLLM sizes it by mamba_cache_dtype (auto: the model's BF16), not the KV dtype:
        # an FP8 KV cache leaves it whole (review item 3: it was halved to 4,358,144)
        fp8 = scenario(catalog, "jamba-mini-1.5", kv="fp8")
        assert StepModel.of(fp8).state_bytes == 8_716_288

    def test_param_counts_by_hand(self, catalog: Catalog) -> None:
        # Nemotron-Nano-9B-v2. Mamba-2 layer: in_proj 4,480 x (10,240 + 12,288 + 128)
        # = 101,498,880; out_proj 10,240 x 4,480 = 45,875,200; conv 12,288 x 4 + 12,288
        # = 61,440; dt_bias, A, D 3 x 128; gated norm 10,240: 147,446,144, x 27
        # = 3,981,045,888. Attention 2 x 4,480 x 5,120 + 2 x 4,480 x 1,024 = 55,050,240,
        # x 4 = 220,200,960. MLP (up, down) 2 x 4,480 x 15,680 = 140,492,800, x 25
        # = 3,512,320,000. Norms 56 x 4,480 + 4,480 = 255,360; embedding + LM head
        # 2 x 131,072 x 4,480 = 1,174,405,120. Total 8,888,227,328 (-0.02% from 8.89B).
        assert catalog.model("nemotron-nano-9b-v2").total_params() == 8_888_227_328
        # Jamba-Mini-1.5. Mamba-1 layer: in_proj 4,096 x 16,384 = 67,108,864; out_proj
        # 8,192 x 4,096 = 33,554,432; conv 8,192 x 4 + 8,192 = 40,960; x_proj 8,192 x
        # (256 + 32) = 2,359,296; dt_proj 256 x 8,192 + 8,192 = 2,105,344; A 8,192 x 16
        # = 131,072; D 8,192; dt/B/C norms 256 + 16 + 16: 105,308,448, x 28
        # = 2,948,636,544. Attention 2 x 4,096^2 + 2 x 4,096 x 1,024 = 41,943,040, x 4
        # = 167,772,160. MLP 3 x 4,096 x 14,336 = 176,160,768: 16 dense = 2,818,572,288,
        # 16 MoE x (16 x 176,160,768 + 4,096 x 16) = 45,098,205,184. Norms 32 x 8,192
        # + 4,096 = 266,240; embeddings 2 x 65,536 x 4,096 = 536,870,912.
        # Total 51,570,323,328 (-0.83% from 52B).
        assert catalog.model("jamba-mini-1.5").total_params() == 51_570_323_328


class TestMoEFamilies:
    def test_glm_4_5_by_hand(self, catalog: Catalog) -> None:
        # Attention: q 5,120 x 12,288 + 12,288 bias; k, v 2 x 5,120 x 1,024 + 2,048 bias;
        # o 12,288 x 5,120; QK norms 2 x 128: 136,329,472. Dense MLP 3 x 5,120 x 12,288
        # = 188,743,680. MoE: 161 experts x 3 x 5,120 x 1,536 (23,592,960 each)
        # = 3,798,466,560 + router 5,120 x 160 + 160 bias = 3,799,285,920. Norms 10,240.
        # 3 dense layers x 325,083,392 + 89 MoE x 3,935,625,632 = 351,245,931,424;
        # + 2 x 151,552 x 5,120 = 1,551,892,480 + 5,120 = 352,797,829,024 (-0.62% of 355B).
        assert catalog.model("glm-4.5").total_params() == 352_797_829_024
        # KV per token: 92 layers x 2 x 8 x 128 x 2 bytes = 376,832 bytes
        assert kv_at(catalog, "glm-4.5", 1) == 376_832

    def test_glm_4_5_air_by_hand(self, catalog: Catalog) -> None:
        # Attention 4,096 x 12,288 x 2 + 12,288 + 2 x 4,096 x 1,024 + 2,048 = 109,066,240.
        # Dense 3 x 4,096 x 10,944 = 134,479,872; MoE 129 x 3 x 4,096 x 1,408
        # = 2,231,894,016 + router 4,096 x 128 + 128 = 2,232,418,432. Norms 8,192.
        # 243,554,304 + 45 x 2,341,492,864 + 2 x 151,552 x 4,096 + 4,096
        # = 243,554,304 + 105,367,178,880 + 1,241,513,984 + 4,096 = 106,852,251,264
        assert catalog.model("glm-4.5-air").total_params() == 106_852_251_264

    def test_minimax_m2_by_hand(self, catalog: Catalog) -> None:
        # Attention: q and o 2 x 3,072 x 6,144 = 37,748,736; k, v 2 x 3,072 x 1,024
        # = 6,291,456; per-layer QK norms 6,144 + 1,024: 44,047,360. MoE 256 x 3 x 3,072 x
        # 1,536 = 3,623,878,656 + router 3,072 x 256 + 256 = 3,624,665,344; norms 6,144.
        # 62 x 3,668,718,848 = 227,460,568,576 + 2 x 200,064 x 3,072 = 1,229,193,216
        # + 3,072 = 228,689,764,864 (-0.57% from 230B).
        assert catalog.model("minimax-m2").total_params() == 228_689_764_864


@pytest.mark.parametrize(
    ("text", "problem"),
    [
        ("hybrid_override_pattern: M--M", "block 2"),
        ("hybrid_override_pattern: MX-M", "block 1"),
        ("hybrid_override_pattern: M-M", "3 blocks for 4 layers"),
    ],
)
def test_nemotron_h_bad_patterns_are_one_line(
    cli: Run, tmp_path: object, text: str, problem: str
) -> None:
    import pathlib

    config = pathlib.Path(str(tmp_path)) / "config.json"
    config.write_text(
        '{"model_type": "nemotron_h", "hidden_size": 64, "num_hidden_layers": 4, '
        '"num_attention_heads": 4, "num_key_value_heads": 2, "mamba_num_heads": 4, '
        '"mamba_head_dim": 16, "ssm_state_size": 8, "n_groups": 1, "conv_kernel": 4, '
        '"intermediate_size": 128, "vocab_size": 100, "max_position_embeddings": 1024, '
        f'"hybrid_override_pattern": "{text.split(": ")[1]}"}}'
    )
    r = cli("show", str(config))
    assert r.code == 2
    assert r.err.count("\n") == 1 and r.err.startswith("decodecalc: error: ")
    assert problem in r.err


@pytest.mark.parametrize(("model", "first"), [("llama-4-scout", 8000), ("deepseek-v3.2", 1900)])
def test_decode_sum_crosses_a_chunk_or_the_top_k_exactly(
    catalog: Catalog, model: str, first: int
) -> None:
    """Generation sums step times line by line; a chunk boundary (8,192 -> 8,193) or the
    top-k (2,048) bends the line, so the sum must cut there to equal the brute-force sum."""
    from decodecalc.answers.generate import decode_seconds

    step = StepModel.of(scenario(catalog, model, gpu="h200", batch=8))
    brute = sum(step.row(t).seconds_per_token for t in range(first, first + 400))
    assert decode_seconds(step, first, 400) == pytest.approx(brute, rel=1e-12)


def test_falcon_h1_from_its_config_json(cli: Run, tmp_path: object) -> None:
    """Falcon-H1-7B's shape (as its config.json gives it): attention and Mamba-2 side by
    side in all 44 layers."""
    import json
    import pathlib

    config = pathlib.Path(str(tmp_path)) / "config.json"
    fields = {
        "model_type": "falcon_h1",
        "hidden_size": 3072,
        "num_hidden_layers": 44,
        "num_attention_heads": 12,
        "num_key_value_heads": 2,
        "head_dim": 128,
        "intermediate_size": 12288,
        "vocab_size": 130048,
        "tie_word_embeddings": False,
        "mamba_d_state": 256,
        "mamba_n_groups": 1,
        "mamba_n_heads": 24,
        "mamba_d_head": 128,
        "mamba_d_ssm": 3072,
        "mamba_d_conv": 4,
        "mamba_conv_bias": True,
        "mamba_proj_bias": False,
        "mamba_rms_norm": True,
        "max_position_embeddings": 262144,
    }
    config.write_text(json.dumps(fields))
    r = cli("show", str(config), "--json")
    assert r.code == 0, r.err
    doc = json.loads(r.out)
    # Per layer: attention 2 x 3,072 x 1,536 + 2 x 3,072 x 256 = 11,010,048; Mamba-2 conv
    # channels 3,072 + 2 x 256 = 3,584, in_proj 3,072 x (3,072 + 3,584 + 24) = 20,520,960,
    # out_proj 3,072^2 = 9,437,184, conv 3,584 x 5 = 17,920, dt/A/D 72, norm 3,072:
    # 29,979,208; gated MLP 3 x 3,072 x 12,288 = 113,246,208; 2 norms 6,144.
    # 154,241,608 x 44 = 6,786,630,752 + 2 x 130,048 x 3,072 = 799,014,912 + 3,072
    # = 7,585,648,736
    assert doc["params"] == 7_585_648_736
    # KV: every layer attends: 44 x 2 x 2 x 128 = 22,528 elements per token.
    # State: 44 x (3,584 x 3 + 24 x 128 x 256) = 44 x 797,184 = 35,076,096 elements.
    assert doc["kv_elements_per_token"] == 22_528
    assert doc["state_elements_per_sequence"] == 35_076_096


@pytest.mark.parametrize(
    ("model", "period"),
    [
        # Nemotron Nano 2's hybrid_override_pattern, read as 31 layers, ends with its first
        # three (Mamba-2 + MLP) again but never repeats the 28 before: no period.
        ("nemotron-nano-9b-v2", 31),
        # Jamba: attention at 4 of every 8 layers, MoE at the odd ones: 8.
        ("jamba-mini-1.5", 8),
        # Maverick: NoPE global every 4th layer, MoE every 2nd: 4.
        ("llama-4-maverick", 4),
        # Gemma 3: 5 local to 1 global, 62 = 10 x 6 + 2: 6.
        ("gemma-3-27b", 6),
    ],
)
def test_a_layer_period_repeats_whole_at_least_once(
    catalog: Catalog, cli: Run, model: str, period: int
) -> None:
    assert catalog.model(model).layer_period() == period
    shown = cli("show", model)
    assert shown.code == 0, shown.err
    assert ("interleaved every" in shown.out) == (period < len(catalog.model(model).layers))


def test_the_models_list_counts_the_indexer_cache(cli: Run) -> None:
    """DeepSeek-V3.2 holds, per token, 61 layers x 576 latent elements x 2 bytes (BF16)
    plus its indexer's 61 x 132 bytes: 70,272 + 8,052 = 78,324 bytes, in 'decodecalc
    models' as in 'decodecalc show'."""
    import json

    r = cli("models", "--json")
    assert r.code == 0, r.err
    by_id = {m["id"]: m for m in json.loads(r.out)["models"]}
    assert by_id["deepseek-v3.2"]["kv_bytes_per_token_bf16"] == 61 * 576 * 2 + 61 * 132 == 78_324
    assert by_id["deepseek-v3"]["kv_bytes_per_token_bf16"] == 61 * 576 * 2
