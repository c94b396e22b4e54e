"""The kernel rates fitted from aiconfigurator-core's measured tables (presets/kernels/):
every file loads and is plausible, and the fitted form reproduces rows of the tables.
(The AMD files, fitted from ROCm/aiter's tuned configs: tests/model/test_aiter_kernel_rates.py.)"""

from __future__ import annotations

from pathlib import Path

import pytest

from decodecalc.errors import InputError
from decodecalc.loading.catalog import Catalog
from decodecalc.loading.kernels import kernel_rates, kernels_dir
from decodecalc.model.kernels import KernelRates, OpRates

AITER_FILES = ("mi300x", "mi325x", "mi350x", "mi355x")
KERNEL_FILES = sorted(p for p in kernels_dir().glob("*.yaml") if p.stem not in AITER_FILES)
ENGINES = ("tensorrt-llm", "vllm", "sglang")
US = 1e-6


def _all_rates(path: Path) -> list[KernelRates]:
    found = [kernel_rates(path.stem, engine) for engine in ENGINES]
    return [r for r in found if r is not None]


def _ops(rates: KernelRates) -> list[OpRates]:
    return [*rates.gemm, *rates.moe, *rates.attention, *rates.mla]


def test_the_measured_nvidia_gpus_have_kernel_rates() -> None:
    assert {p.stem for p in KERNEL_FILES} >= {
        "a100-80gb",
        "h100-sxm",
        "h200",
        "b200",
        "b300",
        "gb200",
        "gb300",
        "l40s",
        "rtx-pro-6000",
    }


@pytest.mark.parametrize("path", KERNEL_FILES, ids=lambda p: p.stem)
def test_every_kernels_file_loads_plausible_rates_with_a_source(
    catalog: Catalog, path: Path
) -> None:
    catalog.gpu(path.stem)  # named for a GPU preset
    every = _all_rates(path)
    assert every, "no engine block"
    assert kernel_rates(path.stem) in every  # the default engine is one of them
    for rates in every:
        assert "aiconfigurator-core 0.12.0" in rates.source
        assert rates.version
        assert 0 < rates.launch_s < 50 * US
        assert rates.gemm, "every measured GPU has dense GEMMs"
        for op in _ops(rates):
            assert op.table.startswith("aiconfigurator_core/systems/data/"), op
            assert 0 < op.memory_efficiency <= 1.2, op
            assert op.mma_efficiency is None or 0 < op.mma_efficiency <= 1.2, op
            assert 0 <= op.fixed_s < 1000 * US, op
            assert op.error is not None and op.error.rows > 0
        for allreduce in rates.allreduce:
            # SGLang's all-reduce across a GB300 NVL72 rack's 8 and 16 GPUs: 28 and 50 us
            assert 0 < allreduce.latency_s < 100 * US
            # from L40S's 8 GPUs over PCIe (1 GB/s: 20 ms for 16 MB) to NVLink 5 (661 GB/s)
            assert 10**8 < allreduce.bus_bandwidth_bytes_per_s < 2 * 10**12


def test_a_gpu_without_tables_has_no_kernel_rates() -> None:
    assert kernel_rates("m4-max") is None
    assert kernel_rates("mi250x-gcd") is None
    assert kernel_rates("h200", "llama.cpp") is None


def test_a_dtype_without_its_own_gemm_rates_takes_the_next_wider_class() -> None:
    # A100 has no FP8 tensor cores and aiconfigurator measured bf16 GEMMs alone there.
    rates = kernel_rates("a100-80gb", "tensorrt-llm")
    assert rates is not None
    picked = rates.gemm_rates("fp8", "fp8")
    assert picked is not None and picked.key == "bf16"
    h200 = kernel_rates("h200", "sglang")
    assert h200 is not None
    own = h200.gemm_rates("fp8-128x128", "fp8")
    assert own is not None and own.key == "fp8-128x128"


def test_a_misspelt_field_names_file_and_field(tmp_path: Path) -> None:
    text = (kernels_dir() / "h200.yaml").read_text()
    (tmp_path / "h200.yaml").write_text(text.replace("memory_efficiency", "memory_eficiency", 1))
    with pytest.raises(InputError, match=r"h200\.yaml:\d+:\d+: .*memory_eficiency"):
        kernel_rates("h200", directory=tmp_path)


def _time(op: OpRates, memory_bytes: float, flops: float, peak: float) -> float:
    """The fitted form, written out: max(bytes / (bw x e_mem), FLOPs / (peak x e_mma)) + fixed,
    H200: 4.8 TB/s (presets/gpus/h200.yaml)."""
    memory_s = memory_bytes / (4.8e12 * op.memory_efficiency)
    compute_s = 0.0 if op.mma_efficiency is None else flops / (peak * op.mma_efficiency)
    return max(memory_s, compute_s) + op.fixed_s


BF16_PEAK = 989.4e12  # presets/gpus/h200.yaml


def _within_its_error(op: OpRates, fitted: float, measured: float) -> bool:
    """The row lies within the error the file states for its class (the p90 of
    |fit / table - 1|): the shipped figures and their stated error hold for it."""
    assert op.error is not None
    return abs(fitted / measured - 1) <= op.error.p90


def test_h200_tensorrt_llm_rates_reproduce_rows_of_the_tables() -> None:
    """One row per class of aiconfigurator-core 0.12.0's H200 tables (TensorRT-LLM
    1.3.0rc20), read from the parquet files named in presets/kernels/h200.yaml."""
    rates = kernel_rates("h200", "tensorrt-llm")
    assert rates is not None and rates.version == "1.3.0rc20"
    # launch: the bf16 GEMMs at M <= 16, N x K <= 256 x 256 in gemm_perf take 2.4-5.3 us,
    # median 2.78 us.
    assert rates.launch_s == pytest.approx(2.78 * US, abs=0.01 * US)

    # gemm_perf: bfloat16, m=1, n=k=8192: 35.62 us. Bytes: 8192 x 8192 x 2 (weights)
    # + 1 x (8192 + 8192) x 2 (activations) = 134,250,496; FLOPs with M rounded up to a
    # 64-row tile 2 x 64 x 8192 x 8192 = 8.59e9 (8.7 us at peak: memory binds).
    gemm = rates.gemm_rates("bf16", "bf16")
    assert gemm is not None
    fitted = _time(gemm, 134_250_496, 2 * 64 * 8192 * 8192, BF16_PEAK)
    assert _within_its_error(gemm, fitted, 35.62 * US)

    # moe_perf: bfloat16, 1 token, hidden 4096, inter 1536, 128 experts, top-8, TP 1,
    # EP 1, balanced: 95.40 us. The token's 8 experts (0, 16, ..., 112) are read:
    # 8 x 3 x 4096 x 1536 x 2 = 301,989,888 bytes + 8 x (2 x 4096 + 3 x 1536) x 2 =
    # 204,800 of activations = 302,194,688.
    moe = rates.moe_rates("bf16", "bf16")
    assert moe is not None and moe.tile_rows is not None
    moe_flops = 8 * moe.tile_rows * 2 * 3 * 4096 * 1536
    assert _within_its_error(moe, _time(moe, 302_194_688, moe_flops, BF16_PEAK), 95.40 * US)

    # generation_attention_perf: batch 64, 64 query heads, 8 KV heads, head 128, bf16 KV,
    # isl 1 + step 4095 = 4096 tokens: 265.35 us. K and V: 64 x 4096 x 2 x 8 x 128 x 2 =
    # 1,073,741,824 bytes, + query and output 64 x 64 x 128 x 2 x 2 = 2,097,152.
    attention = rates.attention_rates("bf16", "bf16")
    assert attention is not None and attention.tile_rows is not None
    group = -(-8 // attention.tile_rows) * attention.tile_rows  # 8 query heads per KV head
    attention_flops = 4 * 64 * 8 * group * 4096 * 128
    fitted = _time(attention, 1_075_838_976, attention_flops, BF16_PEAK)
    assert _within_its_error(attention, fitted, 265.35 * US)

    # generation_mla_perf: batch 64, 128 heads, bf16 latent, 4096 tokens: 134.41 us.
    # Latent 64 x 4096 x 576 x 2 = 301,989,888 bytes + 64 x 128 x 576 x 2 x 2 = 18,874,368;
    # FLOPs 2 x 64 x 128 x 4096 x (576 + 512) = 73,014,444,032 (73.8 us at peak).
    mla = rates.mla_rates("bf16", "bf16")
    assert mla is not None
    fitted = _time(mla, 320_864_256, 73_014_444_032, BF16_PEAK)
    assert _within_its_error(mla, fitted, 134.41 * US)

    # custom_allreduce_perf: 8 GPUs, 1,048,576 bf16 values (2,097,152 bytes): 30.50 us;
    # ring bytes 2 x 7/8 x 2,097,152 = 3,670,016.
    allreduce = rates.allreduce_rates(8)
    assert allreduce is not None and allreduce.gpus == 8
    fitted = allreduce.latency_s + 3_670_016 / allreduce.bus_bandwidth_bytes_per_s
    assert allreduce.error is not None
    assert fitted == pytest.approx(30.50 * US, rel=allreduce.error.p90)
