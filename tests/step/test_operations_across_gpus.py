"""Issue 28's compare, operation by operation: DeepSeek-R1 in FP8 on 8 x H200 and on 8 x B200 under
vLLM at batch 64 and 4,096 tokens. The operations that stream bytes scale with each GPU's bandwidth
as the kernels measured on both do; the engine's fixed costs are the engine's, the same on both; the
all-reduces run at each GPU's measured all-reduce. docs/accuracy.md ("The compare's B200 half")
weighs this against the acceptance's 1.2x."""

from __future__ import annotations

import pytest

from decodecalc.engine.profile import EngineParams
from decodecalc.loading.catalog import Catalog
from decodecalc.resolving.resolve import resolve
from decodecalc.scenarios.spec import ScenarioSpec
from decodecalc.step.operations import OPERATION_CLASSES, Operation
from decodecalc.step.step import StepModel, engine_step

CONTEXT = 4_096


def _spec(gpu: str) -> ScenarioSpec:
    return ScenarioSpec(
        model="deepseek-r1", gpu=gpu, weights="fp8", kv_dtype="fp8", tp=8, batch=64, engine="vllm"
    )


def _params(catalog: Catalog, gpu: str) -> EngineParams:
    """The vLLM profile's parameters the compare runs at on ``gpu``."""
    (params,) = resolve(_spec(gpu), catalog).engine.params
    return params


def _operations(catalog: Catalog, gpu: str) -> dict[str, Operation]:
    """The compare's step on ``gpu``, by what each operation stands for (the fixed costs
    by their name)."""
    s = resolve(_spec(gpu), catalog)
    step = StepModel.of(s)
    (params,) = s.engine.params
    ops = engine_step(step, step.row(CONTEXT), params).operations
    return {o.name if o.group == OPERATION_CLASSES[3] else o.stands_for: o for o in ops}


def test_routed_experts_scale_as_the_measured_fused_moe(catalog: Catalog) -> None:
    """aiconfigurator-core 0.12.0's vLLM 0.24.0 tables (moe_perf.parquet of h200_sxm and
    b200_sxm: FP8 block-scaled experts, hidden 7,168, intermediate 2,048, 256 experts, top 8,
    TP 8, 64 tokens, balanced routing) measured 270.965 us per layer on H200 (Triton fused
    MoE) and 160.709 us on B200 (FlashInfer's TensorRT-LLM kernel): 1.686x. The routed
    experts stream at the same e_w on both, so their ratio is the bandwidths', 8.0 / 4.8 =
    1.667x, within 2% of the kernels'."""
    h200 = _operations(catalog, "h200")["routed experts"]
    b200 = _operations(catalog, "b200")["routed experts"]
    assert h200.total_s / b200.total_s == pytest.approx(8.0 / 4.8, rel=1e-3)
    assert h200.total_s / b200.total_s == pytest.approx(270.965 / 160.709, rel=0.02)


def test_the_fixed_costs_are_the_engines_on_both_gpus(catalog: Catalog) -> None:
    """vLLM's NVIDIA profile charges c_layer a layer and c_moe a MoE layer on any GPU of
    the family (as fitted on 2026-12-02, 77.05 and 83.02 us: 61 x 77.05 + 58 x 83.02 =
    9,515.2 us on H200 and on B200); DeepSeek-R1 has 61 layers, 58 of them MoE."""
    h200, b200 = _operations(catalog, "h200"), _operations(catalog, "b200")
    params, on_b200 = _params(catalog, "h200"), _params(catalog, "b200")
    assert (params.per_layer_s, params.per_moe_layer_s) == (
        on_b200.per_layer_s,
        on_b200.per_moe_layer_s,
    )
    for name in ("per layer", "per MoE layer"):
        assert h200[name].total_s == b200[name].total_s
    fixed = h200["per layer"].total_s + h200["per MoE layer"].total_s
    assert fixed == pytest.approx(61 * params.per_layer_s + 58 * params.per_moe_layer_s)


@pytest.mark.parametrize(
    ("gpu", "latency_s", "bus_bytes_per_s"),
    [("h200", 5.27e-6, 309e9), ("b200", 8.32e-6, 440e9)],
    ids=["h200", "b200"],
)
def test_the_all_reduces_run_at_the_kernels_measured_rates(
    catalog: Catalog, gpu: str, latency_s: float, bus_bytes_per_s: float
) -> None:
    """Two all-reduces a layer, 122 in all, each at vLLM 0.24.0's custom all-reduce as
    aiconfigurator-core measured it on 8 GPUs (presets/kernels/h200.yaml and b200.yaml:
    5.27 us and 309 GB/s of bus bandwidth on H200, 8.32 us and 440 GB/s on B200), moving a
    ring's 2 x 7/8 of 64 x 7,168 x 2 bytes = 1,605,632 bytes: 122 x (5.27 + 5.196) us =
    1.277 ms on H200, 122 x (8.32 + 3.649) us = 1.460 ms on B200 (the B200's all-reduce is
    the slower one, as the tables measured; the links' datasheets no longer decide it)."""
    op = _operations(catalog, gpu)["tensor parallelism's all-reduces and gathers"]
    ring_bytes = 2 * 7 / 8 * 64 * 7_168 * 2
    assert op.times == 122
    assert op.total_s == pytest.approx(122 * (latency_s + ring_bytes / bus_bytes_per_s), rel=1e-3)
