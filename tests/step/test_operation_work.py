"""No operation costs more than the work it stands for (issue 28): a grouped expert GEMM's
kernel takes the tile that fits the rows each expert gets (step/step.py kernel_tile), so
padding at most doubles an expert's rows or fills one 16-row tile, however large the tile
its kernel tables were fitted with. The case the issue found: DeepSeek-R1 in FP8 on
8 x H200 at batch 64 with vLLM priced 109 ms of expert GEMMs, each expert's ~2 rows padded
to the 256-row tile vLLM 0.24.0's per-tensor FP8 table fitted."""

from __future__ import annotations

import math

import pytest
from hypothesis import given
from hypothesis import strategies as st

from decodecalc.loading.catalog import Catalog
from decodecalc.resolving.resolve import resolve
from decodecalc.scenarios.spec import ScenarioSpec
from decodecalc.step.step import MIN_TILE_ROWS, StepModel, kernel_tile


@given(
    rows=st.floats(min_value=0.01, max_value=5_000, allow_nan=False),
    more=st.floats(min_value=0, max_value=5_000, allow_nan=False),
    tile=st.sampled_from([1, 8, 16, 32, 48, 64, 128, 256]),
)
def test_padding_is_bounded_and_grows_with_the_rows(rows: float, more: float, tile: int) -> None:
    def padded(r: float) -> int:
        t = kernel_tile(r, tile)
        return math.ceil(r / t) * t

    assert rows <= padded(rows) <= max(MIN_TILE_ROWS, tile if tile < MIN_TILE_ROWS else 0, 2 * rows)
    assert padded(rows + more) >= padded(rows)  # (non-decreasing in batch)


def test_two_rows_per_expert_take_a_16_row_tile() -> None:
    """vLLM's fused_moe takes BLOCK_SIZE_M 16 while the tokens number no more than the
    experts; a 256-row tile is for 129 rows per expert or more."""
    assert kernel_tile(2.0, 256) == 16
    assert kernel_tile(40.0, 256) == 64
    assert kernel_tile(129.0, 256) == 256
    assert kernel_tile(2.0, 8) == 8  # a table's smaller tile stands


@pytest.mark.parametrize(
    ("model", "gpu", "weights", "engine"),
    [
        ("deepseek-r1", "h200", "fp8", "vllm"),
        ("deepseek-r1", "h200", "fp8-block128", "vllm"),
        ("deepseek-r1", "b200", "fp8", "sglang"),
        ("qwen3-30b-a3b", "h100-sxm", "bf16", "vllm"),
        ("mixtral-8x7b", "h100-sxm", "bf16", "tensorrt-llm"),
    ],
)
@pytest.mark.parametrize("batch", [1, 8, 64, 256])
def test_no_gemm_costs_more_than_its_work(
    catalog: Catalog, model: str, gpu: str, weights: str, engine: str, batch: int
) -> None:
    """Each GEMM of the engine's step at most the slower of streaming its weights at e_w
    and multiplying every expert's rows, rounded up to 16 or doubled, at e_mma: FLOPs
    counted from the op's own parameters and rows, not from the tile."""
    tp = 8 if model == "deepseek-r1" else 1
    s = resolve(
        ScenarioSpec(model=model, gpu=gpu, weights=weights, tp=tp, batch=batch, engine=engine),
        catalog,
    )
    step = StepModel.of(s)
    assert step.peak_flops_per_s is not None
    for params in s.engine.params:
        stream = s.bandwidth_bytes_per_s * params.weight_efficiency
        for op in step.weight_ops:
            mma = (params.grouped_mma_efficiency if op.grouped else None) or params.mma_efficiency
            rows = max(MIN_TILE_ROWS, 2 * op.rows) if op.grouped else op.rows
            work = max(op.read_bytes / stream, 2 * op.params * rows / (step.peak_flops_per_s * mma))
            priced = max(
                op.read_bytes / stream, op.flops(params.tile_rows) / (step.peak_flops_per_s * mma)
            )
            assert priced <= work * (1 + 1e-9), (op.group, priced, work)


def test_per_tensor_fp8_costs_what_block_fp8_costs_on_h200(catalog: Catalog) -> None:
    """Issue 28's compare: equal rooflines (19.0 ms and 19.0 ms), so the expected steps
    within 1.2x of each other; they were 129.1 and 35.1 ms."""

    def expected(weights: str) -> float:
        spec = ScenarioSpec(
            model="deepseek-r1",
            gpu="h200",
            weights=weights,
            kv_dtype="fp8",
            tp=8,
            batch=64,
            engine="vllm",
        )
        row = StepModel.of(resolve(spec, catalog)).row(4096)
        assert row.expected is not None
        return row.expected.seconds

    ratio = expected("fp8") / expected("fp8-block128")
    assert 1 / 1.2 <= ratio <= 1.2


def test_deepseek_r1_expert_gemm_on_h200_by_hand(catalog: Catalog) -> None:
    """docs/physics.md section 7, by hand: 64 x 8 = 512 routed tokens over 256 experts
    touch 256 x (1 - (1 - 8/256)^64) = 222.4 of them, 2.30 rows each, computed as 16;
    58 MoE layers x 222.4 x 3 x 7,168 x 2,048 / 8 = 71.0 G parameters per GPU."""
    spec = ScenarioSpec(
        model="deepseek-r1", gpu="h200", weights="fp8", tp=8, batch=64, engine="vllm"
    )
    s = resolve(spec, catalog)
    (experts,) = [op for op in StepModel.of(s).weight_ops if op.grouped]
    touched = 256 * (1 - (1 - 8 / 256) ** 64)
    by_hand = 58 * touched * 3 * 7_168 * 2_048 / 8
    assert experts.params == pytest.approx(by_hand, rel=1e-6)
    assert experts.rows == pytest.approx(512 / touched, rel=1e-6)
    (params,) = s.engine.params
    assert params.tile_rows == 256  # vLLM 0.24.0's per-tensor FP8 table on H200
    assert experts.flops(params.tile_rows) == pytest.approx(2 * by_hand * 16, rel=1e-6)
    # 2.27 TFLOP at 0.168 of 1,978.9 TFLOP/s: 6.8 ms, not 109 ms at 256 rows
    seconds = experts.flops(params.tile_rows) / (1_978.9e12 * 0.168)
    assert seconds == pytest.approx(6.83e-3, rel=0.01)
