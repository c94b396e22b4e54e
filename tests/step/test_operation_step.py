"""The engine step per operation (issue 19 section 1): each tensor group's GEMM takes the
slower of streaming its weights at e_w and multiplying them at e_mma of peak, a grouped
expert GEMM computing each expert's rows in whole tiles. Figures by hand from the configs."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml

from decodecalc.engine.profile import Engine, EngineParams
from decodecalc.loading.catalog import Catalog
from decodecalc.loading.kernels import with_kernel_rates
from decodecalc.record import replace
from decodecalc.resolving.resolve import resolve
from decodecalc.scenarios.spec import ScenarioSpec
from decodecalc.step.step import StepModel, engine_terms, gemm_excess_s, weight_ops
from tests.conftest import Run, preset_scenario

H100_BW = 3.35e12  # bytes/s, presets/gpus/h100-sxm.yaml
H100_BF16 = 989.4e12  # FLOP/s, dense BF16, the same preset

# Llama-3.1-8B streams every tensor but the input embedding:
# 8,030,261,248 - 128,256 x 4,096 = 7,504,924,672 parameters, 2 bytes each in BF16.
LLAMA_8B_STREAMED = 7_504_924_672

# Mixtral-8x7B's routed experts: 32 layers x 8 experts x 3 x 4,096 x 14,336 parameters.
MIXTRAL_EXPERTS = 32 * 8 * 3 * 4_096 * 14_336


def test_a_dense_gemm_multiplies_the_batch_unpadded(catalog: Catalog) -> None:
    s = preset_scenario(catalog, "llama-3.1-8b", batch=3)
    ops = weight_ops(s)
    assert all(not op.grouped and op.rows == 3 for op in ops)
    assert sum(op.params for op in ops) == LLAMA_8B_STREAMED
    # A dense GEMM's tile does not matter: 2 x params x 3 rows whatever it is.
    assert {op.flops(16) for op in ops} == {op.flops(1) for op in ops}


def test_an_expert_sent_one_token_costs_a_whole_tile(catalog: Catalog) -> None:
    """Batch 1, top-2 of 8: a quarter of the experts is touched, each by 1 x 2 / (8 x 1/4)
    = 1 token, computed as 16 rows: 2 x (MIXTRAL_EXPERTS / 4) x 16 FLOPs."""
    s = preset_scenario(catalog, "mixtral-8x7b", batch=1)
    (experts,) = [op for op in weight_ops(s) if op.grouped]
    assert experts.params == MIXTRAL_EXPERTS / 4
    assert experts.rows == 1
    assert experts.flops(16) == 2 * MIXTRAL_EXPERTS / 4 * 16
    assert experts.flops(1) == 2 * MIXTRAL_EXPERTS / 4


def test_expert_rows_are_the_same_with_and_without_ep(catalog: Catalog) -> None:
    """Batch 64, TP 8: each touched expert gets 64 x 2 / (8 x f) tokens, f the share
    touched (1 - (6/8)^64, all but 1e-8), on a GPU holding 1/8 of each expert or one whole
    expert alike. The parameters are the busiest GPU's under EP: its one expert is
    touched on some GPU with probability 1 - (1 - f)^8, so it multiplies all of it where
    TP's slices are f of theirs (docs/physics.md, Expert parallelism)."""
    tp = preset_scenario(catalog, "mixtral-8x7b", batch=64, tp=8)
    ep = replace(tp, ep=True)
    (a,) = [op for op in weight_ops(tp) if op.grouped]
    (b,) = [op for op in weight_ops(ep) if op.grouped]
    touched = 1 - (6 / 8) ** 64
    assert a.rows == pytest.approx(64 * 2 / (8 * touched))
    assert b.rows == a.rows
    assert b.params == pytest.approx(a.params / touched * (1 - (1 - touched) ** 8), rel=1e-12)


def test_a_compute_bound_gemm_adds_its_compute_beyond_streaming(catalog: Catalog) -> None:
    """Llama-3.1-8B BF16 at batch 512 on an H100, e_w 1, e_mma 0.5: every weight's
    2 x 512 FLOPs at half of 989.4 TFLOP/s (2.07e-12 s) outlast its 2 bytes at 3.35 TB/s
    (5.97e-13 s), so each GEMM takes its compute and the excess is the difference:
    7,504,924,672 x (1,024 / 494.7e12 - 2 / 3.35e12) = 11.054 ms."""
    s = preset_scenario(catalog, "llama-3.1-8b", batch=512)
    step = StepModel.of(s)
    params = EngineParams(weight_efficiency=1.0, kv_efficiency=1.0, mma_efficiency=0.5)
    excess = LLAMA_8B_STREAMED * (1024 / (H100_BF16 * 0.5) - 2 / H100_BW)
    assert gemm_excess_s(step.weight_ops, H100_BW, step.peak_flops_per_s, params) == (
        pytest.approx(excess, rel=1e-9)
    )
    terms = engine_terms(step, params, 0.0)
    assert terms.constant_s == pytest.approx(LLAMA_8B_STREAMED * 1024 / (H100_BF16 * 0.5))
    # At batch 1 nothing is compute-bound: 2 FLOPs at 494.7 TFLOP/s < 2 bytes at 3.35 TB/s.
    one = StepModel.at(s, 1)
    assert gemm_excess_s(one.weight_ops, H100_BW, one.peak_flops_per_s, params) == 0


def test_explain_lists_the_time_of_each_operation_class(cli: Run) -> None:
    out = cli(
        "explain", "-m", "mixtral-8x7b", "-g", "h100-sxm", "--batch", "8", "--engine", "vllm"
    ).out
    (line,) = [line for line in out.splitlines() if "by operation:" in line]
    for label in ("dense GEMMs", "expert GEMMs", "attention", "fixed costs", "communication"):
        assert label in line


def write_batch_points(path: Path) -> None:
    """Llama-3.1-8B BF16 on an H100 at batches 1 and 8 (memory-bound) and 384 and 512
    (compute-bound at e_mma 0.5), each at 1K and 4K of context, timed by hand:
    max(W / (BW e_w), F / (peak e_mma)) + B x T x 131,072 / (BW e_kv)."""
    e_w, e_kv, e_mma = 0.75, 0.5, 0.5
    points = []
    for batch in (1, 8, 384, 512):
        for context in (1_000, 4_000):
            gemms = max(
                2 * LLAMA_8B_STREAMED / (H100_BW * e_w),
                2 * LLAMA_8B_STREAMED * batch / (H100_BF16 * e_mma),
            )
            kv = batch * context * 131_072 / (H100_BW * e_kv)
            points.append(
                {
                    "model": "llama-3.1-8b",
                    "gpu": "h100-sxm",
                    "weights": "bf16",
                    "kv_dtype": "bf16",
                    "batch": batch,
                    "tp": 1,
                    "context": context,
                    "ms_per_token": (gemms + kv) * 1000,
                }
            )
    path.write_text(yaml.safe_dump(points))


def test_calibrate_recovers_e_mma_from_compute_bound_points(cli: Run, tmp_path: Path) -> None:
    path = tmp_path / "points.yaml"
    write_batch_points(path)
    doc = json.loads(cli("calibrate", str(path), "--json").out)
    assert "mma_efficiency" in doc["fitted"]
    assert doc["mma_efficiency"] == pytest.approx(0.5, rel=0.01)
    assert doc["efficiency"] == pytest.approx(0.75, rel=0.01)
    assert doc["kv_efficiency"] == pytest.approx(0.5, rel=0.01)
    assert all(abs(p["error_pct"]) < 0.01 for p in doc["points"])


def test_an_engine_with_e_mma_one_is_never_faster_than_the_roofline(catalog: Catalog) -> None:
    """The per-operation step at e_w = e_kv = e_mma = 1 and no fixed costs is the roofline
    or slower: each GEMM's max(memory, compute) adds up to at least max(memory, compute)."""
    params = EngineParams(weight_efficiency=1.0, kv_efficiency=1.0, mma_efficiency=1.0)
    for batch in (1, 64, 512):
        s = preset_scenario(catalog, "mixtral-8x7b", batch=batch)
        s = replace(s, engine=Engine("test", (params,)))
        row = StepModel.of(s).row(8_192)
        assert row.expected is not None
        assert row.expected.seconds >= row.seconds_per_token * (1 - 1e-12)


def test_an_nvidia_gpu_takes_e_mma_and_the_tile_from_its_kernel_tables(catalog: Catalog) -> None:
    """presets/kernels/h200.yaml, SGLang 0.5.14: the fp8-128x128 dense GEMM's e_mma 0.508,
    the fp8-128x128 grouped MoE GEMM's e_mma 0.328 and tile 64 (DeepSeek-V3's FP8 blocks);
    e_w, e_kv and the costs stay the profile's own."""
    spec = ScenarioSpec(model="deepseek-v3", gpu="h200", engine="sglang")
    (params,) = resolve(spec, catalog).engine.params  # type: ignore[union-attr]
    fitted = catalog.engine("sglang").family("nvidia-datacenter")
    assert fitted is not None
    assert (params.mma_efficiency, params.grouped_mma_efficiency) == (0.508, 0.328)
    assert params.tile_rows == 64 and "sglang 0.5.14" in params.kernel_source
    same = ("weight_efficiency", "kv_efficiency", "per_layer_s", "per_moe_layer_s", "per_step_s")
    assert all(getattr(params, k) == getattr(fitted, k) for k in same)


def test_no_kernel_tables_leave_the_profile_as_fitted(catalog: Catalog) -> None:
    """No tables for an MI250X, and a profile whose points fitted e_mma keeps its own."""
    spec = ScenarioSpec(model="deepseek-v3", gpu="mi250x-gcd", engine="sglang")
    (params,) = resolve(spec, catalog).engine.params  # type: ignore[union-attr]
    assert (params.tile_rows, params.kernel_source) == (16, "")
    own = EngineParams(
        weight_efficiency=0.9, kv_efficiency=0.8, mma_efficiency=0.7, mma_fitted=True
    )
    engine = with_kernel_rates(
        Engine("sglang", (own,)), catalog.gpu("h200"), catalog.dtype("fp8"), None, None
    )
    assert engine.params == (own,)  # (at TP 1: no all-reduce for the tables to price)


def test_a_dense_query_reads_the_tables_only_where_a_gemm_may_be_compute_bound(
    catalog: Catalog,
) -> None:
    """Llama-3.1-8B BF16 on an H100: a parameter's 2 bytes take 5.97e-13 s at 3.35 TB/s,
    its 2 x B FLOPs 2B / (989.4e12 x 0.2) = B x 1.01e-14 s at the lowest table e_mma: no
    GEMM can be compute-bound below B = 59, so batch 8 leaves the profile as fitted and
    batch 512 takes the tables; a server, whose running batch varies, always does."""
    from decodecalc.resolving.resolve import kernel_rated

    def engine_at(batch: int) -> EngineParams:
        spec = ScenarioSpec(model="llama-3.1-8b", gpu="h100-sxm", engine="vllm", batch=batch)
        (params,) = resolve(spec, catalog).engine.params  # type: ignore[union-attr]
        return params

    assert engine_at(8).kernel_source == "" and engine_at(58).kernel_source == ""
    assert "kernel tables on h100-sxm" in engine_at(60).kernel_source
    spec = ScenarioSpec(model="llama-3.1-8b", gpu="h100-sxm", engine="vllm", batch=1)
    served = kernel_rated(resolve(spec, catalog), None)
    assert "kernel tables" in served.engine.params[0].kernel_source  # type: ignore[union-attr]
