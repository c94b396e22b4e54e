"""A release line carried to a GPU family it has no points on (engine/transfer.py):
efficiencies are shares of the target GPU's own bandwidth and FLOP/s, fixed costs are
times, and the vendor's factor makes the step that many times slower. Figures by hand."""

from __future__ import annotations

import pytest

from decodecalc.engine.profile import EngineParams
from decodecalc.engine.transfer import VendorFactor, for_kind, scaled, transferred

RATES = {"weight_efficiency": 0.8, "kv_efficiency": 0.6, "band": (0.8, 1.4), "points": 7}
COSTS = {"per_layer_s": 10e-6, "per_step_s": 100e-6, "per_moe_layer_s": 20e-6}
SOURCE = EngineParams(**RATES, **COSTS, allreduce_latency_s=5e-6)  # type: ignore[arg-type]
AMD = VendorFactor("amd-instinct", "nvidia-datacenter", 2.0, (0.7, 1.6), 12, "vllm@0.10", 1.5)


def test_a_factor_of_two_halves_every_rate_and_doubles_every_fixed_cost() -> None:
    slow = scaled(SOURCE, 2.0)
    assert slow.weight_efficiency == pytest.approx(0.4)  # 0.8 / 2
    assert slow.kv_efficiency == pytest.approx(0.3)  # 0.6 / 2
    assert slow.mma_efficiency == pytest.approx(0.3)  # the 0.6 prior / 2
    assert slow.per_layer_s == pytest.approx(20e-6)
    assert slow.per_step_s == pytest.approx(200e-6)
    assert slow.per_moe_layer_s == pytest.approx(40e-6)


def test_an_efficiency_never_passes_one() -> None:
    fast = scaled(SOURCE, 0.5)
    assert fast.weight_efficiency == 1.0  # 0.8 / 0.5 = 1.6, held at the datasheet's rate
    assert fast.per_layer_s == pytest.approx(5e-6)


def test_a_transfer_says_what_moved_and_keeps_no_points_or_range() -> None:
    moved = transferred(SOURCE, AMD, "sglang", "0.5")
    assert moved.points == 0 and moved.range is None and moved.allreduce_latency_s is None
    assert moved.band == (0.7, 1.6)  # the wider of (0.8, 1.4) and the factor's (0.7, 1.6)
    assert moved.weight_efficiency == pytest.approx(0.4)
    assert moved.transferred.startswith("sglang@0.5's nvidia-datacenter rates")
    assert "x2.00 for amd-instinct dense models and x3.00 for MoE models" in moved.transferred


def test_an_moe_model_takes_the_vendors_moe_factor_once() -> None:
    moved = transferred(SOURCE, AMD, "sglang", "0.5")
    assert for_kind(moved, "dense") is moved
    moe = for_kind(moved, "moe")
    assert moe.weight_efficiency == pytest.approx(0.8 / 3)  # 0.8 / (2 x 1.5)
    assert moe.per_moe_layer_s == pytest.approx(60e-6)  # 20 us x 2 x 1.5
    assert for_kind(moe, "moe") is moe  # (resolve and a server both fit it: applied once)


@pytest.mark.parametrize("gpu", ["mi300x", "mi355x", "h200", "rtx-4090", "m4-max"])
def test_every_transferred_prediction_says_so(gpu: str) -> None:
    """Issue 28: a transfer is never silent, whichever profile and GPU."""
    from decodecalc.loading.catalog import Catalog
    from decodecalc.resolving.resolve import resolve
    from decodecalc.scenarios.spec import ScenarioSpec

    catalog = Catalog()
    seen = 0
    for profile in catalog.engines():
        spec = ScenarioSpec(model="qwen3-30b-a3b", gpu=gpu, engine=profile.id)
        s = resolve(spec, catalog)
        codes = {n.code for n in s.notes}
        if any(p.transferred for p in s.engine.params):
            seen += 1
            assert "engine-transferred" in codes, profile.id
    if gpu.startswith("mi"):
        assert seen >= 3  # SGLang 0.5, llama.cpp 2023-12 and LMDeploy 0.1
