"""docs/physics.md's worked numbers, reproduced to the byte and to 0.01 ms."""

from __future__ import annotations

import pytest

from decodecalc.answers.estimate import estimate
from decodecalc.loading.catalog import Catalog
from decodecalc.scenarios.scenario import Scenario

H100_SXM = 3_350_000_000_000  # 3.35 TB/s, NVIDIA H100 datasheet


def scenario(catalog: Catalog, model: str, weights: str, kv: str, **kw: int) -> Scenario:
    return Scenario(catalog.model(model), catalog.dtype(weights), catalog.dtype(kv), H100_SXM, **kw)


# physics.md section 6. Weight bytes = params read per step x bytes per param:
#   Llama-3.1-70B: 70,553,706,496 total - 1,050,673,152 input embedding (128,256 x 8,192)
#     = 69,503,033,344 params, x 1 byte (FP8).
#   Llama-3.1-8B: 8,030,261,248 - 525,336,576 (128,256 x 4,096) = 7,504,924,672 params,
#     x 2 bytes (BF16) = 15,009,849,344.
# KV bytes = T x 2 x layers x kv_heads x head_dim x bytes:
#   70B FP8: 200,000 x 2 x 80 x 8 x 128 x 1 = 32,768,000,000
#   8B BF16: 131,072 x 2 x 32 x 8 x 128 x 2 = 17,179,869,184
SECTION_6 = [
    ("llama-3.1-70b", "fp8", "fp8", 0, 69_503_033_344, 0, 20.747),
    ("llama-3.1-70b", "fp8", "fp8", 200_000, 69_503_033_344, 32_768_000_000, 30.529),
    ("llama-3.1-8b", "bf16", "bf16", 131_072, 15_009_849_344, 17_179_869_184, 9.609),
]


@pytest.mark.parametrize(
    ("model", "weights", "kv", "context", "weight_bytes", "kv_bytes", "ms"),
    SECTION_6,
    ids=["70b-fp8-T0", "70b-fp8-T200k", "8b-bf16-T128K"],
)
def test_section_6(
    catalog: Catalog,
    model: str,
    weights: str,
    kv: str,
    context: int,
    weight_bytes: int,
    kv_bytes: int,
    ms: float,
) -> None:
    row = estimate(scenario(catalog, model, weights, kv), [context]).rows[0]
    assert (row.weight_bytes, row.kv_bytes) == (weight_bytes, kv_bytes)
    assert row.total_bytes == weight_bytes + kv_bytes
    assert row.seconds_per_token * 1000 == pytest.approx(ms, abs=0.0005)


def test_70b_read_and_total_params(catalog: Catalog) -> None:
    """docs/physics.md section 2: total 70,553,706,496; read per step 69,503,033,344."""
    m = catalog.model("llama-3.1-70b")
    assert m.total_params() == 70_553_706_496
    assert m.streamed_params_per_gpu() == 69_503_033_344


@pytest.mark.parametrize(
    ("model", "weights", "kv", "batch", "crossover"),
    [
        # 69,503,033,344 / 163,840 = 424,212.85 -> 424,213 tokens
        ("llama-3.1-70b", "fp8", "fp8", 1, 424_213),
        # 69,503,033,344 / (32 x 163,840) = 13,256.65 -> 13,257 tokens
        ("llama-3.1-70b", "fp8", "fp8", 32, 13_257),
        # The seed's FP8-KV question: BF16 KV is 2 x 80 x 8 x 128 x 2 B = 327,680 B a token,
        #   so 69,503,033,344 / 327,680 = 212,106.42 -> 212,106; FP8 KV halves the bytes and
        #   doubles the crossover (424,213 above)
        ("llama-3.1-70b", "fp8", "bf16", 1, 212_106),
        # Llama-2-7B: 6,607,343,616 params read x 2 B / (2 x 32 x 32 x 128 x 2 B = 524,288)
        #   = 25,205.02 -> 25,205 tokens
        ("llama-2-7b", "bf16", "bf16", 1, 25_205),
    ],
    ids=["70b-fp8-b1", "70b-fp8-b32", "70b-fp8-bf16kv-b1", "llama2-7b-bf16"],
)
def test_crossover(
    catalog: Catalog, model: str, weights: str, kv: str, batch: int, crossover: int
) -> None:
    est = estimate(scenario(catalog, model, weights, kv, batch=batch), [1])
    assert est.crossover_context is not None
    assert round(est.crossover_context) == crossover


def test_seed_kv_at_200k_is_about_32_gb(catalog: Catalog) -> None:
    """The seed: 'about 32 GB of KV at 200k context' for Llama 3.1 70B FP8."""
    row = estimate(scenario(catalog, "llama-3.1-70b", "fp8", "fp8"), [200_000]).rows[0]
    assert 32e9 < row.kv_bytes < 33e9


def test_crossover_row_marked_inside_range(catalog: Catalog) -> None:
    est = estimate(scenario(catalog, "llama-3.1-70b", "fp8", "fp8", batch=32), [1024, 65536])
    marked = [r for r in est.rows if r.is_crossover]
    assert [r.context_tokens for r in marked] == [13_257]
    assert marked[0].kv_share == pytest.approx(0.5, abs=1e-4)


def test_crossover_not_marked_outside_range(catalog: Catalog) -> None:
    est = estimate(scenario(catalog, "llama-3.1-70b", "fp8", "fp8"), [1024, 2048])
    assert not any(r.is_crossover for r in est.rows)
    assert [r.context_tokens for r in est.rows] == [1024, 2048]


class TestTensorParallel:
    def test_weights_split_norms_replicated(self, catalog: Catalog) -> None:
        """Llama-3.1-70B at TP 8: every matrix /8 and norms whole on each GPU.
        norms: 80 layers x 2 x 8,192 + 8,192 = 1,318,912 params.
        matrices read: 69,503,033,344 - 1,318,912 = 69,501,714,432; / 8 = 8,687,714,304.
        """
        m = catalog.model("llama-3.1-70b")
        assert m.streamed_params_per_gpu(8) == 8_687_714_304 + 1_318_912

    def test_kv_split_up_to_kv_heads(self, catalog: Catalog) -> None:
        """8 KV heads: TP 8 leaves one head per GPU (1/8 of the KV); TP 16 cannot go below it."""
        base = scenario(catalog, "llama-3.1-70b", "fp8", "fp8")
        kv1 = estimate(base, [1000]).rows[0].kv_bytes
        tp8 = estimate(scenario(catalog, "llama-3.1-70b", "fp8", "fp8", tp=8), [1000]).rows[0]
        tp16 = estimate(scenario(catalog, "llama-3.1-70b", "fp8", "fp8", tp=16), [1000]).rows[0]
        assert kv1 == 1000 * 163_840
        assert tp8.kv_bytes == kv1 // 8 == tp16.kv_bytes

    def test_kv_weights_replicate_past_kv_heads(self, catalog: Catalog) -> None:
        """At TP 16 each GPU holds one whole KV head of K/V projection (8,192 x 128 x 2 per
        layer), not half of one: 80 x 2 x 8,192 x 128 = 167,772,160 params per GPU."""
        m = catalog.model("llama-3.1-70b")
        kv_group = next(g for g in m.tensor_groups() if g.name == "attention k, v")
        assert kv_group.params_per_gpu(16) == 167_772_160 == kv_group.params_per_gpu(8)


def test_sliding_window_caps_kv_and_removes_crossover(catalog: Catalog) -> None:
    """Phi-3-mini-4k: every layer keeps at most 2,047 tokens (config.json sliding_window).
    KV per token BF16: 2 x 32 x 32 x 96 x 2 = 393,216 B; capped at 2,047 tokens: 804,913,152 B,
    far below the 7.4 GB of weights, so there is no crossover."""
    est = estimate(scenario(catalog, "phi-3-mini", "bf16", "bf16"), [1000, 2047, 4096])
    assert [r.kv_bytes for r in est.rows] == [393_216_000, 804_913_152, 804_913_152]
    assert est.crossover_context is None
