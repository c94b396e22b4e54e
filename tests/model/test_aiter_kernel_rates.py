"""The AMD Instinct kernel rates fitted from ROCm/aiter's tuned configs (presets/kernels/
mi300x.yaml, mi325x.yaml, mi355x.yaml, written by validation/fit_kernels_aiter.py): they
load with their sources, reproduce rows of aiter's CSVs within the error they state, reach
only the engines that call aiter, and at decode price no operation above its bytes."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from decodecalc.errors import InputError
from decodecalc.loading.catalog import Catalog
from decodecalc.loading.kernels import kernel_rates, kernels_dir
from decodecalc.model.kernels import KernelRates, OpRates
from decodecalc.resolving.resolve import kernel_rated, resolve
from decodecalc.scenarios.spec import ScenarioSpec
from decodecalc.step.step import gemm_excess_s, weight_ops

AMD = ("mi300x", "mi325x", "mi355x", "mi350x")
AITER_ENGINES = ("sglang", "vllm")
COMMIT = "e4048607a535ace3a2b51ded31b1c8c2d45c0879"  # the aiter commit the files cite
CONFIGS = f"https://github.com/ROCm/aiter/tree/{COMMIT}/aiter/configs: "
US = 1e-6

# decodecalc's presets (presets/gpus/*.yaml): bandwidth and dense peaks.
MI300X_BW, MI300X_FP8 = 5.3e12, 2614.9e12
MI355X_BW, MI355X_FP8, MI355X_FP4 = 8e12, 5033.2e12, 10066.3e12
FP8_BLOCK_BYTES = 8.001953125 / 8  # fp8-128x128: 8 + 32 / 16,384 bits per value
MXFP4_BYTES = 4.25 / 8  # mxfp4: 4 + 8 / 32 bits per value


def _rates(gpu: str, engine: str = "sglang") -> KernelRates:
    rates = kernel_rates(gpu, engine)
    assert rates is not None
    return rates


def _ops(rates: KernelRates) -> list[OpRates]:
    return [*rates.gemm, *rates.moe]


@pytest.mark.parametrize("gpu", AMD)
def test_every_amd_file_cites_aiter_at_its_commit_for_every_class(gpu: str) -> None:
    for engine in AITER_ENGINES:
        rates = _rates(gpu, engine)
        assert f"ROCm/aiter (MIT, https://github.com/ROCm/aiter) at commit {COMMIT}" in (
            rates.source
        )
        assert rates.version == f"aiter {COMMIT[:12]}"
        assert rates.measured_by == "ROCm/aiter tuned configs"
        # one kernel's fixed cost: MI300X's and MI355X's smallest GEMMs take 2.4-11 us
        assert 2 * US < rates.launch_s < 10 * US
        assert rates.gemm and rates.moe
        for op in _ops(rates):
            assert op.table.startswith(CONFIGS), op
            files = op.table[len(CONFIGS) :].split(", ")
            assert all(re.fullmatch(r"aiter/configs/[\w./-]+tuned[\w.-]*\.csv", f) for f in files)
            assert 0 < op.memory_efficiency <= 1 and op.mma_efficiency is not None
            assert 0 < op.mma_efficiency <= 1 and op.tile_rows is not None
            assert 0 <= op.fixed_s < 100 * US
            assert op.error is not None and op.error.rows >= 20 and op.error.p90 < 0.5


def test_mi325x_is_fitted_on_the_304_cu_rows_against_its_own_bandwidth() -> None:
    """The CSVs name 304 CUs, which MI300X and MI325X share: the same times over 6 TB/s
    instead of 5.3 give memory efficiencies 5.3 / 6 = 0.883 times MI300X's (to the fit
    grid's 0.004), and the same compute side (the same peak FLOP/s)."""
    mi300x, mi325x = _rates("mi300x"), _rates("mi325x")
    assert "mi300x has the same 304 CUs" in mi325x.source
    for a, b in zip(_ops(mi300x), _ops(mi325x), strict=True):
        assert a.key == b.key
        assert b.memory_efficiency == pytest.approx(a.memory_efficiency * 5.3 / 6, abs=0.005)
        assert (b.mma_efficiency, b.tile_rows) == pytest.approx(
            (a.mma_efficiency, a.tile_rows), abs=0.005
        )


def test_mi350x_is_fitted_on_the_256_cu_rows_against_its_own_peaks() -> None:
    """MI350X and MI355X share 256 CUs and 8 TB/s; MI350X's peaks are 2,306.9 / 2,516.6
    = 0.9167 of MI355X's (BF16; FP8 and FP4 the same ratio), so the same times give e_mma
    1 / 0.9167 = 1.091 times MI355X's: within 0.03, as the joint fit may land the pair of
    efficiencies on neighbouring grid points."""
    mi355x, mi350x = _rates("mi355x"), _rates("mi350x")
    assert "mi355x has the same 256 CUs" in mi350x.source
    assert "mi350x has the same 256 CUs" in mi355x.source
    for a, b in zip(_ops(mi355x), _ops(mi350x), strict=True):
        assert (a.key, a.tile_rows) == (b.key, b.tile_rows)
        assert a.mma_efficiency is not None and b.mma_efficiency is not None
        assert b.mma_efficiency == pytest.approx(a.mma_efficiency * 2516.6 / 2306.9, abs=0.03)
        assert b.memory_efficiency == pytest.approx(a.memory_efficiency, abs=0.03)


def test_only_the_engines_that_call_aiter_take_its_rates() -> None:
    """llama.cpp's HIP kernels are not aiter's: on an MI300X it gets none, where on an
    H200 the file's default engine (TensorRT-LLM) stands in for it."""
    assert kernel_rates("mi300x", "llama.cpp", stand_in=True) is None
    h200 = kernel_rates("h200", "llama.cpp", stand_in=True)
    assert h200 is not None and h200.engine == "tensorrt-llm"
    assert kernel_rates("mi250x-gcd") is None  # gfx90a: aiter tunes no config for it


def _time(op: OpRates, bandwidth: float, peak: float, memory_bytes: float, flops: float) -> float:
    """The fitted form: max(bytes / (bw x e_mem), FLOPs / (peak x e_mma)) + fixed."""
    assert op.mma_efficiency is not None
    memory_s = memory_bytes / (bandwidth * op.memory_efficiency)
    return max(memory_s, flops / (peak * op.mma_efficiency)) + op.fixed_s


def _within_its_error(op: OpRates, fitted: float, measured: float) -> bool:
    assert op.error is not None
    return abs(fitted / measured - 1) <= op.error.p90


def test_mi355x_rates_reproduce_rows_of_aiters_csvs() -> None:
    rates = _rates("mi355x")

    # aiter/configs/model_configs/dsv4_a8w8_blockscale_bpreshuffle_tuned_gemm.csv line 313:
    # gfx950, 256 CUs, M=1, N=7168, K=16384 (DeepSeek's o_proj): 22.6 us (the fastest of
    # the files timing it; model_configs/a8w8_blockscale_tuned_gemm_ds_v3.csv has 50.68).
    # Bytes: 7168 x 16384 = 117,440,512 weights x 8.001953125 / 8 = 117,469,184, plus
    # 1 x (7168 + 16384) x 2 of activations = 47,104: 117,516,288. At 8 TB/s x e_mem 0.88
    # 16.69 us; FLOPs 2 x 64 (the tile) x 117,440,512 = 1.503e10 at 5,033.2 TFLOP/s x 0.224
    # 13.33 us: memory binds. + fixed 6.59 us = 23.28 us, +3.0% of 22.6.
    dense = rates.gemm_rates("fp8-128x128", "fp8")
    assert dense is not None and dense.key == "fp8-128x128" and dense.tile_rows is not None
    weights = 7168 * 16384
    fitted = _time(
        dense,
        MI355X_BW,
        MI355X_FP8,
        weights * FP8_BLOCK_BYTES + (7168 + 16384) * 2,
        2 * dense.tile_rows * weights,
    )
    assert fitted == pytest.approx(23.28 * US, rel=0.01)  # the arithmetic above
    assert _within_its_error(dense, fitted, 22.6 * US)

    # aiter/configs/model_configs/dsv3_fp4_tuned_fmoe.csv line 49: 256 CUs, 1 token,
    # model_dim 7168, inter_dim 256 (DeepSeek-R1's experts over TP 8), 256 experts, top-8,
    # MXFP4 weights and activations, block_m 32: 18.8943 us. One token reaches 8 experts:
    # 8 x 3 x 7168 x 256 = 44,040,192 weights x 4.25 / 8 = 23,396,352 bytes, plus
    # 8 x (2 x 7168 + 3 x 256) x 2 = 241,664 of activations: 23,638,016, at 8 TB/s x 0.824
    # 3.59 us; FLOPs 2 x 8 experts x 32 rows x 3 x 7168 x 256 = 2.819e9 at 10,066.3
    # TFLOP/s x 0.232 1.21 us. + fixed 15.76 us = 19.35 us, +2.4% of 18.89.
    moe = rates.moe_rates("mxfp4", "fp4")
    assert moe is not None and moe.key == "mxfp4" and moe.tile_rows == 32
    expert = 3 * 7168 * 256
    fitted = _time(
        moe,
        MI355X_BW,
        MI355X_FP4,
        8 * expert * MXFP4_BYTES + 8 * (2 * 7168 + 3 * 256) * 2,
        2 * 8 * 32 * expert,
    )
    assert fitted == pytest.approx(19.35 * US, rel=0.01)
    assert _within_its_error(moe, fitted, 18.8943 * US)


def test_mi300x_rates_reproduce_a_row_of_aiters_csvs() -> None:
    """aiter/configs/model_configs/a8w8_blockscale_tuned_fmoe_ds_v3.csv line 385: 304 CUs,
    8 tokens, model_dim 7168, inter_dim 2048, 33 experts (DeepSeek's 256 over EP 8, plus
    the shared one), top-9, FP8 128x128 blocks, block_m 16: 327.908 us.

    The tuner routes by random scores, so an expert is touched with probability
    1 - (1 - 9/33)^8 = 1 - 0.078248 = 0.921752: 30.418 of 33 experts, each with at most
    8 rows, padded to the row's one 16-row tile (the file's tile_rows, 32, is the median
    block_m over the decode rows). Bytes 30.418 x 3 x 7168 x 2048 x 8.001953125 / 8 =
    1,339,906,000 plus 8 x 9 x (2 x 7168 + 3 x 2048) x 2 = 2,949,120: 1.34286e9, at
    5.3 TB/s x 0.932 271.9 us; FLOPs 2 x 30.418 x 16 x 3 x 7168 x 2048 = 4.287e10 at
    2,614.9 TFLOP/s x 0.3 54.6 us. + fixed 43.03 us = 314.9 us, -4.0% of 327.9."""
    moe = _rates("mi300x").moe_rates("fp8-128x128", "fp8")
    assert moe is not None and moe.tile_rows == 32
    touched = 33 * (1 - (1 - 9 / 33) ** 8)
    assert touched == pytest.approx(30.418, abs=0.001)
    expert = 3 * 7168 * 2048
    fitted = _time(
        moe,
        MI300X_BW,
        MI300X_FP8,
        touched * expert * FP8_BLOCK_BYTES + 8 * 9 * (2 * 7168 + 3 * 2048) * 2,
        2 * touched * 16 * expert,  # the row's own block_m, as the fit counts it
    )
    assert fitted == pytest.approx(314.9 * US, rel=0.01)
    assert _within_its_error(moe, fitted, 327.908 * US)


@pytest.mark.parametrize("gpu", AMD)
def test_one_tile_of_rows_costs_no_more_than_streaming_its_weights(gpu: str) -> None:
    """At decode an expert gets a few rows and the grouped kernel computes a whole tile
    (a dense GEMM's M is as small): at the fitted rates that tile's FLOPs,
    2 x tile per parameter at peak x e_mma, take no longer than the parameter's bytes at
    bandwidth x e_mem. No operation is priced above the work it stands for by padding."""
    catalog = Catalog()
    gpu_spec = catalog.gpu(gpu)
    for op in _ops(_rates(gpu)):
        found = gpu_spec.peak_flops(op.matmul)
        assert found is not None and op.mma_efficiency is not None and op.tile_rows
        compute = 2 * op.tile_rows / (found[1] * op.mma_efficiency)
        bytes_per_param = catalog.dtype(op.key).bits_per_value / 8
        stream = float(bytes_per_param) / (gpu_spec.bandwidth_bytes_per_s * op.memory_efficiency)
        assert compute <= stream, op


@pytest.mark.parametrize(
    ("gpu", "weights"), [("mi300x", "fp8-block128"), ("mi355x", "fp8"), ("mi355x", "mxfp4")]
)
@pytest.mark.parametrize("batch", [1, 8, 64, 256])
def test_deepseek_expert_gemms_at_decode_cost_their_bytes(
    catalog: Catalog, gpu: str, weights: str, batch: int
) -> None:
    """DeepSeek-V3 on 8 GPUs under SGLang takes the aiter tables' e_mma and tile, and at
    decode batches no expert GEMM outlasts its weights' streaming: padding an expert's 1-8
    rows to the kernel's 16-32 row tile adds nothing (issue 28's H200 vLLM case: 109 ms of
    expert GEMMs padded to 256-row tiles). (A dense GEMM of 64 rows may bind on compute:
    2 x 64 FLOPs per FP8 parameter at 2,614.9 TFLOP/s x 0.22 take 2.2e-13 s, its byte
    1.9e-13 s at the profile's 5.3 TB/s x e_w 1.0: its own FLOPs, unpadded.)"""
    spec = ScenarioSpec(
        model="deepseek-v3", gpu=gpu, weights=weights, tp=8, batch=batch, engine="sglang"
    )
    s = kernel_rated(resolve(spec, catalog), None)
    assert s.engine is not None
    (params,) = s.engine.params
    assert "aiter" in params.kernel_source and params.tile_rows in (16, 32)
    peak = s.peak_flops()
    assert peak is not None
    bandwidth = float(catalog.gpu(gpu).bandwidth_bytes_per_s)
    experts = [op for op in weight_ops(s) if op.grouped]
    assert experts and gemm_excess_s(experts, bandwidth, peak[1], params) == 0


def test_a_wrong_other_engines_names_file_and_field(tmp_path: Path) -> None:
    """other_engines is a boolean, and a misspelt field is refused, file:line:col."""
    text = (kernels_dir() / "mi300x.yaml").read_text()
    quoted = text.replace("other_engines: false", "other_engines: 'false'")
    (tmp_path / "mi300x.yaml").write_text(quoted)
    with pytest.raises(InputError, match=r"mi300x\.yaml:\d+:\d+: .*other_engines.*true or false"):
        kernel_rates("mi300x", directory=tmp_path)
    (tmp_path / "mi300x.yaml").write_text(text.replace("measured_by:", "measured_bye:"))
    with pytest.raises(InputError, match=r"mi300x\.yaml:\d+:\d+: .*measured_bye"):
        kernel_rates("mi300x", directory=tmp_path)
