"""A release line carried to a GPU family it has no points on (engine/transfer.py):
efficiencies are shares of the target GPU's own bandwidth and FLOP/s, fixed costs are
times, and the vendor's factor makes the step that many times slower. Figures by hand."""

from __future__ import annotations

import json

import pytest

from decodecalc.engine.profile import EngineParams
from decodecalc.engine.transfer import VendorFactor, across, for_kind, scaled, transferred
from tests.conftest import Run

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


def test_across_vendors_the_link_is_the_targets_and_within_one_it_stays() -> None:
    """engine/transfer.py across: a fitted all-reduce latency is the source's link
    (NVLink), so it gives way to the target's link preset across vendors; NVIDIA's two
    families share kernels and links, so nothing moves between them."""
    moved = across(SOURCE, "nvidia-datacenter", "amd-instinct")
    assert moved.allreduce_latency_s is None  # the MI300X's Infinity Fabric preset prices it
    assert moved.weight_efficiency == 0.8 and moved.per_layer_s == 10e-6  # shares and times
    assert across(SOURCE, "nvidia-datacenter", "nvidia-consumer") is SOURCE
    assert across(SOURCE, "amd-instinct", "apple").allreduce_latency_s is None
    assert transferred(SOURCE, AMD, "sglang", "0.5").allreduce_latency_s is None


def test_a_transferred_step_by_hand(cli: Run) -> None:
    """Llama-3.1-8B in BF16 on one MI355X at 1,024 tokens, batch 1, --engine sglang: the
    0.5 line has no AMD points, so its H100 fit transfers. The shipped profile's
    amd-instinct block holds e_w 0.8675, e_kv 0.7373 and 86.97 us per layer: the H100
    line's 0.9791, 0.8322 and 77.05 us through one factor (0.9791 / 0.8675 = 1.1287,
    0.8322 / 0.7373 = 1.1287, 86.97 / 77.05 = 1.1287: the vendor's, x1.13 in the note).
    By hand: weights (8,030,261,248 params less the 525,336,576 of the embedding, which a
    step gathers) x 2 bytes = 15,009,849,344 B / (8 TB/s x 0.8675) = 2.16280 ms; KV 32
    layers x 8 heads x 128 x 2 (K, V) x 2 bytes = 131,072 B a token x 1,024 =
    134,217,728 B / (8 TB/s x 0.7373) = 0.02275 ms; 32 layers x 86.97 us = 2.78304 ms;
    step 4.9686 ms."""
    args = "estimate -m llama-3.1-8b -g mi355x -c 1024 --engine sglang --json"
    doc = json.loads(cli(*args.split()).out)
    assert doc["rows"][0]["expected_ms_per_token"] == pytest.approx(4.9686, rel=1e-4)
    assert any(n["code"] == "engine-transferred" for n in doc["notes"])
    from decodecalc.loading.catalog import Catalog

    lines = {x.release: dict(x.families) for x in Catalog().engine("sglang").release_lines()}
    source, moved = lines["0.5"]["nvidia-datacenter"], lines["0.5"]["amd-instinct"]
    factor = source.weight_efficiency / moved.weight_efficiency
    # (the preset rounds each to 4 figures)
    assert source.kv_efficiency / moved.kv_efficiency == pytest.approx(factor, rel=1e-3)
    assert moved.per_layer_s / source.per_layer_s == pytest.approx(factor, rel=1e-3)


PAIRS = [
    (gpu, model)
    for gpu in ("mi300x", "mi355x", "h200", "rtx-4090", "m4-max", "b200")
    for model in ("llama-3.1-8b", "qwen3-30b-a3b")
]


@pytest.mark.parametrize(("gpu", "model"), PAIRS)
def test_every_prediction_from_another_family_says_so(gpu: str, model: str) -> None:
    """Issue 28: whichever profile, GPU and model kind, parameters fitted on another GPU
    family (a line transferred with a vendor factor, or a profile's other family standing
    in) never price a step silently: a note names the transfer or the fallback, and a
    fallback from another vendor's family says it went through the GPU's own figures."""
    from decodecalc.loading.catalog import Catalog
    from decodecalc.resolving.resolve import resolve
    from decodecalc.scenarios.spec import ScenarioSpec

    catalog = Catalog()
    for profile in catalog.engines():
        s = resolve(ScenarioSpec(model=model, gpu=gpu, engine=profile.id), catalog)
        notes = {n.code: n.message for n in s.notes}
        own = s.engine.params[0]
        if own.transferred:
            assert "engine-transferred" in notes, profile.id
        elif s.engine.kind.value == "fallback":
            fallback = notes["engine-fallback"]
            fitted = fallback.split("its ", 1)[1].split(" ", 1)[0]
            if fitted.split("-")[0] != s.engine.family.split("-")[0]:
                assert "through the GPU's own bandwidth, FLOP/s and link" in fallback
        else:
            assert own.points or "engine-not-fitted" in notes, profile.id
