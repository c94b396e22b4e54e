"""A release line carried to a GPU family it has no points on (engine/transfer.py):
efficiencies are shares of the target GPU's own bandwidth and FLOP/s, fixed costs are
times, and the vendor's factor makes the step that many times slower. Figures by hand."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml

from decodecalc.engine.profile import FIXED_COSTS, EngineParams
from decodecalc.engine.transfer import (
    KERNEL_FIXED_S,
    KERNEL_MOE_FIXED_S,
    KERNEL_STREAM_SHARE,
    VendorFactor,
    across,
    for_kind,
    scaled,
    transferred,
)
from decodecalc.record import replace
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
    assert moved.weight_efficiency == pytest.approx(0.34)  # 0.8 x 0.68 / 0.80 / 2
    assert moved.transferred.startswith("sglang@0.5's nvidia-datacenter rates")
    assert "its streaming x0.85 (the kernels' share of bandwidth)" in moved.transferred
    assert "x2.00 for amd-instinct dense models and x3.00 for MoE models" in moved.transferred


def test_an_moe_model_takes_the_vendors_moe_factor_once() -> None:
    moved = transferred(SOURCE, AMD, "sglang", "0.5")
    assert for_kind(moved, "dense") is moved
    moe = for_kind(moved, "moe")
    assert moe.weight_efficiency == pytest.approx(0.68 / 3)  # 0.8 x 0.68 / 0.80 / (2 x 1.5)
    # not the source's 20 us: the MI300X's fused FP8 block-128 MoE kernel's fixed time,
    # 43.03 us, x 2 x 1.5 = 129.09 us
    assert moe.per_moe_layer_s == pytest.approx(129.09e-6)
    assert moe.per_layer_s == pytest.approx(10e-6 * 7.21 / 6.53 * 3)  # 33.12 us
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
    # a share of the target's bandwidth, at AMD's GEMMs' share over NVIDIA's: 0.8 x 0.68 / 0.80
    assert moved.weight_efficiency == pytest.approx(0.68)
    assert moved.kv_efficiency == pytest.approx(0.51)  # 0.6 x 0.85
    assert moved.per_layer_s == pytest.approx(10e-6 * 7.21 / 6.53)  # the fixed times' ratio
    assert across(SOURCE, "nvidia-datacenter", "nvidia-consumer") is SOURCE
    assert across(SOURCE, "amd-instinct", "apple").allreduce_latency_s is None
    assert transferred(SOURCE, AMD, "sglang", "0.5").allreduce_latency_s is None


def test_a_transferred_step_by_hand(cli: Run) -> None:
    """Llama-3.1-8B in BF16 on one MI355X at 1,024 tokens, batch 1, --engine sglang: the 0.5 line
    has no AMD points, so its H100 fit transfers. The shipped profile's amd-instinct block holds e_w
    0.8318, e_kv 0.707 and 85.01 us per layer (as fitted on 2026-12-02): the H100 line's 0.9785,
    0.8318 and 76.99 us, the efficiencies at AMD's GEMMs' share of bandwidth over NVIDIA's (0.68 /
    0.80 = x0.85: 0.9785 x 0.85 = 0.8317), the cost through the kernels' fixed times (7.21 us for an
    MI300X's FP8 GEMM / 6.53 for an H100's = x1.1041: 76.99 x 1.1041 = 85.01 us), then the vendor
    factor for dense models, x1.00 (vLLM 0.19's MI355X points are all MoE: their x1.25 is the MoE
    factor's). By hand: weights (8,030,261,248 params less the 525,336,576 of the embedding, which a
    step gathers) x 2 bytes = 15,009,849,344 B / (8 TB/s x 0.8318) = 2.25563 ms; KV 32 layers x 8
    heads x 128 x 2 (K, V) x 2 bytes = 131,072 B a token x 1,024 = 134,217,728 B / (8 TB/s x 0.707)
    = 0.02373 ms; 32 layers x 85.01 us = 2.72032 ms; step 4.99968 ms."""
    args = "estimate -m llama-3.1-8b -g mi355x -c 1024 --engine sglang --json"
    doc = json.loads(cli(*args.split()).out)
    assert doc["rows"][0]["expected_ms_per_token"] == pytest.approx(4.99968, rel=1e-4)
    assert any(n["code"] == "engine-transferred" for n in doc["notes"])
    from decodecalc.loading.catalog import Catalog

    lines = {x.release: dict(x.families) for x in Catalog().engine("sglang").release_lines()}
    source, moved = lines["0.5"]["nvidia-datacenter"], lines["0.5"]["amd-instinct"]
    factor = source.weight_efficiency * 0.68 / 0.80 / moved.weight_efficiency
    # (the preset rounds each to 4 figures)
    assert source.kv_efficiency * 0.68 / 0.80 / moved.kv_efficiency == pytest.approx(
        factor, rel=1e-3
    )
    ratio = 7.21 / 6.53
    assert moved.per_layer_s / source.per_layer_s == pytest.approx(ratio * factor, rel=1e-3)
    # an MoE layer: not the H100 fit's own cost but the MI300X's fused MoE kernel's 43.03
    # us, x1.00 for dense; an MoE model takes it x the MoE factor over that
    assert factor == pytest.approx(1.0, abs=1e-3)
    assert moved.per_moe_layer_s == pytest.approx(43.03e-6)
    assert for_kind(moved, "moe").per_moe_layer_s == pytest.approx(43.03e-6 * moved.moe_factor)


def test_fixed_costs_across_vendors_scale_by_the_kernels_fixed_times() -> None:
    """AMD's costs on NVIDIA GPUs: x 6.53 / 7.21 (an H100's FP8 GEMM fixed time over an
    MI300X's), lent or not; to Apple or a vendor nobody measured, where no kernel's fixed
    time is known, every cost stays the source's time, lent or not (never zero: a GPU's
    kernels are never free)."""
    own_and_lent = replace(SOURCE, lent=("per_step",))
    on_nvidia = across(own_and_lent, "amd-instinct", "nvidia-datacenter")
    assert on_nvidia.per_step_s == pytest.approx(100e-6 * 6.53 / 7.21)  # 90.6 us
    assert on_nvidia.per_layer_s == pytest.approx(10e-6 * 6.53 / 7.21)
    for target in ("apple", "other"):
        moved = across(own_and_lent, "nvidia-datacenter", target)
        assert moved.per_step_s == 100e-6  # lent by the NVIDIA family's pooled fit
        assert moved.per_layer_s == 10e-6 and moved.per_moe_layer_s == 20e-6
    assert across(own_and_lent, "apple", "amd-instinct").per_step_s == 100e-6


def test_a_step_crossed_to_a_vendor_without_kernel_tables_by_hand() -> None:
    """Llama-3.1-8B in BF16 on an M2 Ultra (800 GB/s) at 1,024 tokens, batch 1, priced by
    SGLang 0.5's H100 fit crossed to Apple, which has no kernel tables: the efficiencies as
    they are (no streaming share is known for Apple) and the 76.99 us per layer its
    family's pooled fit lent it kept as a time (it was dropped, and the step 2.46 ms short).
    The shipped profile's nvidia-datacenter block of the 0.5 line (as fitted on
    2026-12-02): e_w 0.9785, e_kv 0.8318, 76.99 us per layer, no per-step cost. By hand:
    weights 15,009,849,344 B (8,030,261,248 params less the 525,336,576 of the embedding,
    x 2 bytes) / (800 GB/s x 0.9785) = 19.17456 ms; KV 32 layers x 8 heads x 128 x 2 (K,
    V) x 2 bytes = 131,072 B a token x 1,024 = 134,217,728 B / (800 GB/s x 0.8318) =
    0.20170 ms; 32 layers x 76.99 us = 2.46368 ms; step 21.83994 ms."""
    from decodecalc.loading.catalog import Catalog
    from decodecalc.resolving.resolve import resolve
    from decodecalc.scenarios.spec import ScenarioSpec
    from decodecalc.step.step import StepModel, engine_step

    catalog = Catalog()
    lines = {x.release: dict(x.families) for x in catalog.engine("sglang").release_lines()}
    source = lines["0.5"]["nvidia-datacenter"]
    assert "per_layer" in source.lent
    moved = across(source, "nvidia-datacenter", "apple")
    spec = ScenarioSpec(model="llama-3.1-8b", gpu="m2-ultra-192gb", engine="roofline")
    step = StepModel.of(resolve(spec, catalog))
    found = engine_step(step, step.row(1024), moved)
    assert found.fixed_s == pytest.approx(2.46368e-3, rel=1e-4)
    assert found.seconds == pytest.approx(21.83994e-3, rel=1e-4)


def test_across_vendors_an_moe_layer_costs_the_targets_moe_kernel() -> None:
    """The per-MoE-layer cost a fit found is its own vendor's MoE dispatch: across vendors
    the target's fused MoE kernel's fixed time stands for it (40.79 us on an H100, 43.03
    on an MI300X), whatever the source's, lent or not; within a vendor it stays."""
    slow_amd = replace(SOURCE, per_moe_layer_s=444e-6)  # vLLM's 2025 MI300X fit, roughly
    assert across(slow_amd, "amd-instinct", "nvidia-datacenter").per_moe_layer_s == 40.79e-6
    assert across(slow_amd, "amd-instinct", "nvidia-consumer").per_moe_layer_s == 40.79e-6
    lent = replace(SOURCE, lent=("per_moe_layer",))
    assert across(lent, "nvidia-datacenter", "amd-instinct").per_moe_layer_s == 43.03e-6
    assert across(slow_amd, "amd-instinct", "amd-instinct") is slow_amd
    moved = transferred(SOURCE, AMD, "sglang", "0.5")
    assert "43.0 us per MoE layer (its MoE kernel's)" in moved.transferred


def test_the_moe_fixed_times_are_the_kernel_presets() -> None:
    """KERNEL_MOE_FIXED_S holds the kernel tables' grouped FP8 block-128 MoE ``fixed``
    figures (the H100 SXM's vLLM block, the MI300X's aiter fused-MoE block)."""
    root = Path(__file__).resolve().parents[2] / "presets" / "kernels"
    h100 = yaml.safe_load((root / "h100-sxm.yaml").read_text())["engines"]["vllm"]["moe"]
    mi300x = yaml.safe_load((root / "mi300x.yaml").read_text())["engines"]["vllm"]["moe"]
    found = (h100["fp8-128x128"]["fixed"], mi300x["fp8-128x128"]["fixed"])
    assert found == ("40.79us", "43.03us")
    assert KERNEL_MOE_FIXED_S == {"nvidia": 40.79e-6, "amd": 43.03e-6}


def test_the_fixed_times_are_the_kernel_presets() -> None:
    """KERNEL_FIXED_S holds the kernel tables' own FP8 GEMM ``fixed`` figures (the H100
    SXM's vLLM block, the MI300X's aiter block, block-scaled), so they cannot drift apart."""
    root = Path(__file__).resolve().parents[2] / "presets" / "kernels"
    h100 = yaml.safe_load((root / "h100-sxm.yaml").read_text())["engines"]["vllm"]["gemm"]
    mi300x = yaml.safe_load((root / "mi300x.yaml").read_text())["engines"]["vllm"]["gemm"]
    assert (h100["fp8"]["fixed"], mi300x["fp8-128x128"]["fixed"]) == ("6.53us", "7.21us")
    assert KERNEL_FIXED_S == {"nvidia": 6.53e-6, "amd": 7.21e-6}


def test_the_streaming_shares_are_the_kernel_presets() -> None:
    """KERNEL_STREAM_SHARE holds the same FP8 GEMM rows' ``memory_efficiency`` (the share of
    the datasheet's bandwidth those GEMMs stream at in the tables): an H100's 0.800, an
    MI300X's 0.680, so an efficiency fitted on one vendor moves x0.85 to the other."""
    root = Path(__file__).resolve().parents[2] / "presets" / "kernels"
    h100 = yaml.safe_load((root / "h100-sxm.yaml").read_text())["engines"]["vllm"]["gemm"]
    mi300x = yaml.safe_load((root / "mi300x.yaml").read_text())["engines"]["vllm"]["gemm"]
    shares = (h100["fp8"]["memory_efficiency"], mi300x["fp8-128x128"]["memory_efficiency"])
    assert shares == (0.8, 0.68)
    assert KERNEL_STREAM_SHARE == {"nvidia": 0.800, "amd": 0.680}


def test_a_fit_records_the_costs_its_family_lent_it() -> None:
    """Each shipped parameter set's ``lent`` names fixed costs only, and vLLM's AMD fit, on
    TP 8 points alone, was lent its per-step cost by the family's pooled fit (every point
    TP > 1: no per-step cost of its own), where its per-MoE-layer cost is its own."""
    from decodecalc.loading.catalog import Catalog

    catalog = Catalog()
    for profile in catalog.engines():
        for _, params in profile.families:
            assert set(params.lent) <= set(FIXED_COSTS)
    assert catalog.engine("vllm").family("amd-instinct").lent == ("per_step",)  # type: ignore[union-attr]


PAIRS = [
    (gpu, model)
    for gpu in ("mi300x", "mi355x", "h200", "rtx-4090", "m4-max", "b200", "gaudi3", "tpu-v6e")
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


def test_a_lent_cost_that_is_none_is_refused_in_one_line(tmp_path: Path) -> None:
    """A user's engine preset naming a cost the step has not (``per_token``) in ``lent``:
    one line with the file, the field and the names there are, never a traceback."""
    from decodecalc.errors import InputError
    from decodecalc.loading.catalog import Catalog, presets_dir

    text = (presets_dir() / "engines" / "vllm.yaml").read_text()
    assert "    lent:\n    - per_step\n" in text  # vLLM's AMD fit (above)
    (tmp_path / "engines").mkdir()
    bad = text.replace("    lent:\n    - per_step\n", "    lent:\n    - per_token\n", 1)
    (tmp_path / "engines" / "vllm.yaml").write_text(bad)
    catalog = Catalog((tmp_path, presets_dir()))
    with pytest.raises(InputError) as caught:
        catalog.engine("vllm").family("amd-instinct")
    message = str(caught.value)
    assert "\n" not in message and "lent" in message and "per_token" in message
    assert "per_step, per_layer, per_moe_layer, per_sequence" in message
