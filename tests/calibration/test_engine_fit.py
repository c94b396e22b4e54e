"""The engine step model's fit: bounded least squares, what the points identify, and
`decodecalc calibrate` recovering known parameters from synthetic points (hand-worked)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml

from decodecalc.calibration.engine_fit import (
    StepTerms,
    fit_step_model,
    predicted_s,
    step_terms,
)
from decodecalc.calibration.least_squares import bounded_least_squares
from decodecalc.calibration.points import MeasuredPoint
from decodecalc.engine.profile import EngineParams
from decodecalc.loading.catalog import Catalog
from decodecalc.record import replace
from decodecalc.step.engine_terms import StepCounts, sequence_passes
from decodecalc.step.linear import LinearTerms
from decodecalc.step.running import RunningCounts
from decodecalc.step.step import StepModel, expected_step
from tests.conftest import Run, preset_scenario

H100 = 3.35e12  # bytes/s, the h100-sxm preset's datasheet bandwidth

# Streamed weight bytes at batch 1 (every tensor but the input embedding, whose one row per
# token is negligible) and KV bytes per token (2 x KV heads x head_dim x layers x 2 bytes):
# Llama-3.1-8B: 8,030,261,248 params - 128,256 x 4,096 embedding = 7,504,924,672 streamed;
#   KV 2 x 8 x 128 x 32 x 2 = 131,072 B/token; 32 layers.
# Llama-3.1-70B: 70,553,706,496 - 128,256 x 8,192 = 69,503,033,344 streamed;
#   KV 2 x 8 x 128 x 80 x 2 = 327,680 B/token; 80 layers.
SCENARIOS = [
    # model, weights, streamed weight bytes, KV bytes per token, layers
    ("llama-3.1-8b", "bf16", 2 * 7_504_924_672, 131_072, 32),
    ("llama-3.1-8b", "fp8", 7_504_924_672, 131_072, 32),
    ("llama-3.1-70b", "fp8", 69_503_033_344, 327_680, 80),
]
CONTEXTS = (1_000, 4_000, 16_000)
E_W, E_KV, PER_LAYER_S, PER_STEP_S = 0.75, 0.5, 50e-6, 300e-6


def synthetic_ms(weight_bytes: int, kv_per_token: int, layers: int, context: int) -> float:
    """The step model by hand: W/(BW e_w) + KV/(BW e_kv) + L c_layer + c_step."""
    seconds = (
        weight_bytes / (H100 * E_W)
        + context * kv_per_token / (H100 * E_KV)
        + layers * PER_LAYER_S
        + PER_STEP_S
    )
    return seconds * 1000


def write_points(
    path: Path, rows: list[tuple[str, str, int, int, int]], contexts: tuple[int, ...]
) -> None:
    points = [
        {
            "model": model,
            "gpu": "h100-sxm",
            "weights": weights,
            "kv_dtype": "bf16",
            "batch": 1,
            "tp": 1,
            "context": context,
            "ms_per_token": synthetic_ms(w, kv, layers, context),
        }
        for model, weights, w, kv, layers in rows
        for context in contexts
    ]
    path.write_text(yaml.safe_dump(points))


class TestBoundedLeastSquares:
    # y = a x + b on (1, 1), (2, 1.5), (3, 2): unconstrained a = 0.5, b = 0.5.
    ROWS = ((1.0, 1.0), (2.0, 1.0), (3.0, 1.0))
    TARGET = (1.0, 1.5, 2.0)

    def test_unconstrained_optimum_when_feasible(self) -> None:
        a, b = bounded_least_squares(self.ROWS, self.TARGET, [0.0, 0.0])
        assert a == pytest.approx(0.5) and b == pytest.approx(0.5)

    def test_bounds_hold(self) -> None:
        # a >= 1: with a = 1, b = mean(y - x) = -0.5 < 0; with b = 0, a = sum(xy)/sum(x^2)
        # = 10/14 < 1; so both sit at their bounds.
        assert bounded_least_squares(self.ROWS, self.TARGET, [1.0, 0.0]) == [1.0, 0.0]

    def test_one_bound_active(self) -> None:
        # a >= 0.6: b = mean(y - 0.6 x) = mean(0.4, 0.3, 0.2) = 0.3 >= 0.
        a, b = bounded_least_squares(self.ROWS, self.TARGET, [0.6, 0.0])
        assert a == pytest.approx(0.6) and b == pytest.approx(0.3)


class TestCalibrateRecovers:
    def test_efficiencies_and_fixed_costs(self, cli: Run, tmp_path: Path) -> None:
        """Three scenarios (two layer counts, two weight sizes at 32 layers) at three
        contexts each: every parameter is identified and comes back."""
        path = tmp_path / "points.yaml"
        write_points(path, SCENARIOS, CONTEXTS)
        doc = json.loads(cli("calibrate", str(path), "--json").out)
        assert doc["efficiency"] == pytest.approx(E_W, rel=0.01)
        assert doc["kv_efficiency"] == pytest.approx(E_KV, rel=0.01)
        assert doc["overhead_per_layer_ms"] == pytest.approx(PER_LAYER_S * 1000, rel=0.01)
        assert doc["overhead_ms"] == pytest.approx(PER_STEP_S * 1000, rel=0.01)
        assert doc["kv_read"] == "once"
        assert doc["fitted"] == ["weight_efficiency", "kv_efficiency", "per_step", "per_layer"]
        assert doc["held"] == [
            "mma_efficiency 0.6 (no compute-bound GEMMs in decode-only figures)",
            "per_moe_layer 0 us (no MoE models)",
            "allreduce_latency the link's (no TP > 1 points)",
            "per_ffn_pass 0 us, per_running 0 us, per_mixer_sequence 0 us, "
            "per_state_sequence 0 us (no scenario at several batch sizes)",
        ]
        assert all(abs(p["error_pct"]) < 0.01 for p in doc["points"])

    def test_one_scenario_identifies_only_the_efficiencies(self, cli: Run, tmp_path: Path) -> None:
        """One model at several contexts: e_kv from the slope, e_w from the rest; fixed costs
        cannot be told from the weights, so they stay at the default (none) and e_w holds
        them: at 1K, W/(BW e_w') = W/(BW 0.75) + 32 x 50 us + 300 us."""
        path = tmp_path / "points.yaml"
        write_points(path, SCENARIOS[:1], CONTEXTS)
        doc = json.loads(cli("calibrate", str(path), "--json").out)
        assert doc["fitted"] == ["weight_efficiency", "kv_efficiency"]
        assert doc["overhead_ms"] == 0 and doc["overhead_per_layer_ms"] == 0
        weights_s = 15_009_849_344 / H100
        folded = weights_s / (weights_s / E_W + 32 * PER_LAYER_S + PER_STEP_S)
        assert doc["efficiency"] == pytest.approx(folded, rel=1e-6)
        assert doc["kv_efficiency"] == pytest.approx(E_KV, rel=1e-6)

    def test_one_layer_count_puts_the_fixed_cost_per_step(self, cli: Run, tmp_path: Path) -> None:
        """Both 8B scenarios have 32 layers: the per-step cost takes 32 x 50 + 300 us."""
        path = tmp_path / "points.yaml"
        write_points(path, SCENARIOS[:2], CONTEXTS)
        doc = json.loads(cli("calibrate", str(path), "--json").out)
        assert doc["overhead_ms"] == pytest.approx(0.032 * 50 + 0.3, rel=1e-6)
        assert (
            "per_layer 0 us (every point has 32 layers: the costs fitted before it hold it)"
            in doc["held"]
        )

    def test_saved_engine_is_usable(self, cli: Run, tmp_path: Path) -> None:
        path = tmp_path / "points.yaml"
        write_points(path, SCENARIOS, CONTEXTS)
        presets = tmp_path / "presets"
        presets.mkdir()
        r = cli("calibrate", str(path), "--save-engine", "My-H100", "--presets", str(presets))
        assert r.code == 0, r.err
        saved = yaml.safe_load((presets / "engines" / "my-h100.yaml").read_text())
        assert saved["families"]["nvidia-datacenter"]["points"] == 9
        doc = json.loads(
            cli(
                "estimate", "-m", "llama-3.1-8b", "-g", "h100", "-c", "2000", "--engine",
                "my-h100", "--presets", str(presets), "--json",
            ).out
        )  # fmt: skip
        # 15,009,849,344 / (3.35e12 x 0.75) + 2,000 x 131,072 / (3.35e12 x 0.5) + 32 x 50 us
        # + 300 us = 5.97407 + 0.15650 + 1.6 + 0.3 ms (the profile rounds e_w to 4 digits).
        row = doc["rows"][0]
        assert row["expected_ms_per_token"] == pytest.approx(8.0306, rel=1e-3)
        assert doc["inputs"]["engine"] == "my-h100"

    def test_saved_engine_says_its_prefill_is_unmeasured(self, cli: Run, tmp_path: Path) -> None:
        """Review s40 #10: decode points cannot identify a prefill, and without --engine
        the profile keeps the roofline's (e_p 1, c_req 0): its fitted line says so, and a
        serving or generate run on it says its TTFT is a bound, not silently."""
        path = tmp_path / "points.yaml"
        write_points(path, SCENARIOS, CONTEXTS)
        presets = tmp_path / "presets"
        presets.mkdir()
        cli("calibrate", str(path), "--save-engine", "mine", "--presets", str(presets))
        saved = yaml.safe_load((presets / "engines" / "mine.yaml").read_text())
        family = saved["families"]["nvidia-datacenter"]
        assert "prefill_efficiency" not in family and "per_request" not in family
        assert "prefill_efficiency 1, per_request 0 us (no prefill measured" in family["fitted"]
        common = ["-m", "llama-3.1-8b", "-g", "h100", "--engine", "mine", "--presets", str(presets)]
        served = cli(
            "serving", *common, "--input-len", "1000", "--output-len", "100", "--concurrency",
            "1", "--json",
        )  # fmt: skip
        codes = [n["code"] for n in json.loads(served.out)["notes"]]
        assert "prefill-unmeasured" in codes
        generated = cli("generate", *common, "-p", "1000", "-n", "100", "--json")
        doc = json.loads(generated.out)
        assert doc["per_request_ms"] == 0
        assert "prefill-unmeasured" in [n["code"] for n in doc["notes"]]
        # A profile with prefill figures (vLLM's) says nothing of the kind.
        plain = cli("serving", *common[:4], "--engine", "vllm", "--input-len", "1000",
                    "--output-len", "100", "--concurrency", "1", "--json")  # fmt: skip
        assert "prefill-unmeasured" not in [n["code"] for n in json.loads(plain.out)["notes"]]

    def test_saved_engine_needs_a_presets_directory(self, cli: Run, tmp_path: Path) -> None:
        path = tmp_path / "points.yaml"
        write_points(path, SCENARIOS, CONTEXTS)
        r = cli("calibrate", str(path), "--save-engine", "mine")
        assert r.code == 2 and "give --presets DIR or set $DECODECALC_PRESETS" in r.err
        r = cli("calibrate", str(path), "--save-engine", "typical", "--presets", str(tmp_path))
        assert r.code == 2 and "not typical or roofline" in r.err

    def test_an_engine_supplies_what_the_points_cannot(self, cli: Run, tmp_path: Path) -> None:
        """One scenario: the per-layer cost is --engine's, so e_w no longer holds it."""
        presets = tmp_path / "presets"
        (presets / "engines").mkdir(parents=True)
        (presets / "engines" / "toy.yaml").write_text(
            yaml.safe_dump(
                {
                    "name": "Toy",
                    "source": "hand-written",
                    "families": {
                        "nvidia-datacenter": {
                            "weight_efficiency": 0.9,
                            "kv_efficiency": 0.6,
                            "per_layer": "50us",
                            "per_step": "300us",
                            "band_low": 0.9,
                            "band_high": 1.1,
                            "points": 1,
                        }
                    },
                }
            )
        )
        path = tmp_path / "points.yaml"
        write_points(path, SCENARIOS[:1], CONTEXTS)
        doc = json.loads(
            cli("calibrate", str(path), "--engine", "toy", "--presets", str(presets), "--json").out
        )
        assert doc["efficiency"] == pytest.approx(E_W, rel=1e-6)
        assert doc["overhead_per_layer_ms"] == pytest.approx(0.05)


def hand_terms(
    weight_s: float,
    measured_s: float,
    counts: StepCounts,
    key: tuple[object, ...],
    calls: int = 0,
    compute_s: float = 0.0,
    batch_series: tuple[object, ...] = (),
) -> StepTerms:
    """A hand-made point: no KV, a timed step (weight 1) at context 100."""
    return StepTerms(
        linear=LinearTerms(
            weight_s=weight_s,
            kv_s=(0.0, 0.0),
            counts=counts,
            calls=calls,
            link_latency_s=5e-6 if calls else 0.0,
            ring_s=0.0,
            compute_s=compute_s,
        ),
        measured_s=measured_s,
        weight=1.0,
        scenario_key=key,
        context_tokens=100,
        batch_series=batch_series,
    )


def tp_terms(tps: tuple[int, ...]) -> list[StepTerms]:
    """Hand-made terms: two models (32 and 80 layers) at the given TPs, made with e_w 0.8,
    30 us per all-reduce (2 per layer at TP > 1), 100 us per step, 20 us per layer."""
    terms = []
    for layers, weight_bytes in ((32, 16e9), (80, 140e9)):
        for tp in tps:
            calls = 0 if tp == 1 else 2 * layers
            weight_s = weight_bytes / tp / H100
            measured = weight_s / 0.8 + calls * 30e-6 + 100e-6 + layers * 20e-6
            counts = StepCounts(layers, 0, layers)
            terms.append(hand_terms(weight_s, measured, counts, (layers, tp), calls))
    return terms


def test_allreduce_latency_from_tp_points() -> None:
    fit = fit_step_model(tp_terms((1, 2, 4, 8)))
    p = fit.params
    assert fit.fitted == ("weight_efficiency", "allreduce_latency", "per_step", "per_layer")
    assert p.weight_efficiency == pytest.approx(0.8, rel=1e-6)
    assert p.allreduce_latency_s == pytest.approx(30e-6, rel=1e-6)
    assert p.per_step_s == pytest.approx(100e-6, rel=1e-6)
    assert p.per_layer_s == pytest.approx(20e-6, rel=1e-6)


def test_tp_only_points_charge_fixed_costs_to_the_all_reduces() -> None:
    """The points above at TP 2, 4 and 8 only: the per-step cost is not fitted but held at
    the prior's (0 here) with the reason, and the all-reduce latency is fitted."""
    fit = fit_step_model(tp_terms((2, 4, 8)))
    assert "per_step" not in fit.fitted and "allreduce_latency" in fit.fitted
    assert fit.params.per_step_s == 0.0
    assert any(h.startswith("per_step 0 us (every point is TP > 1") for h in fit.held)


def test_terms_agree_with_the_engine_formula(catalog: Catalog) -> None:
    """The fit's linear terms give the same step as step.step.expected_step, in both
    KV read modes, with TP communication at the engine's latency."""
    scenario = replace(
        preset_scenario(catalog, "llama-3.1-70b", "fp8", tp=4, batch=8),
        link=catalog.link("nvlink4"),
    )
    point = MeasuredPoint(scenario, 20_000, 0.02, "")
    step = StepModel.of(scenario)
    row = step.row(20_000)
    for kv_read in ("once", "per-query-head"):
        params = EngineParams(0.7, 0.4, 60e-6, 200e-6, 25e-6, kv_read)
        assert predicted_s(step_terms(point), params) == pytest.approx(
            expected_step(step, row, params), rel=1e-12
        )


def test_implausible_points_are_refused(cli: Run, tmp_path: Path) -> None:
    """An hour per token on an 8B model: 15 GB / 3.35 TB/s is 4.5 ms, an efficiency of
    about 1e-6, so the units must be wrong."""
    path = tmp_path / "points.yaml"
    points = [
        {"model": m, "gpu": "h100-sxm", "weights": w, "kv_dtype": "bf16", "context": 100,
         "ms_per_token": 3_600_000}
        for m, w, *_ in SCENARIOS[:2]
    ]  # fmt: skip
    path.write_text(yaml.safe_dump(points))
    r = cli("calibrate", str(path))
    assert r.code == 2 and "efficiency below 0.001 of peak bandwidth" in r.err


def test_compute_bound_points_keep_only_the_fixed_costs() -> None:
    """Six memory-bound points (1 to 6 ms of weights at e_w 0.8, 100 us per step) and two
    whose 10 ms of compute exceed their memory time: those measure compute + 100 us."""

    def terms(weight_ms: float, compute_ms: float, measured_ms: float, key: int) -> StepTerms:
        counts = StepCounts(32, 0, 32)
        return hand_terms(
            weight_ms / 1000, measured_ms / 1000, counts, (key,), compute_s=compute_ms / 1000
        )

    points = [terms(w, 0.0, w / 0.8 + 0.1, w) for w in range(1, 7)]
    points += [terms(1.0, 10.0, 10.1, 7), terms(2.0, 10.0, 10.1, 8)]
    fit = fit_step_model(points)
    assert fit.compute_bound == 2
    assert fit.params.weight_efficiency == pytest.approx(0.8, rel=1e-9)
    assert fit.params.per_step_s == pytest.approx(100e-6, rel=1e-9)
    assert fit.describe().endswith("2 points compute-bound (compute + fixed costs)")


def test_sequence_passes_count_routed_experts(catalog: Catalog) -> None:
    """DeepSeek-V3: 61 layers, the first 3 dense (first_k_dense_replace 3), then 58 MoE layers
    of 8 routed experts per token: 3 + 58 x 8 = 467 passes. gpt-oss-120b: 36 MoE layers of 4
    experts per token = 144. Llama-3.1-70B: 80 dense layers = 80."""
    passes = {
        name: sequence_passes(catalog.model(name))
        for name in ("deepseek-v3", "gpt-oss-120b", "llama-3.1-70b")
    }
    assert passes == {"deepseek-v3": 467, "gpt-oss-120b": 144, "llama-3.1-70b": 80}
    counts = StepCounts.of(catalog.model("deepseek-v3"), 16)
    assert (counts.layers, counts.moe_layers, counts.passes) == (61, 58, 16 * 467)


def test_moe_and_running_costs_add_to_the_engine_step(catalog: Catalog) -> None:
    """DeepSeek-V3 at TP 8, batch 16: 400 us per MoE layer and 1.5 us per token
    feed-forward pass (3 dense layers + 58 x 8 experts = 467 a token) add 58 x 0.4 ms +
    16 x 467 x 1.5 us = 23.2 + 11.208 = 34.408 ms to the step, and the fit's terms agree
    with the engine's formula."""
    scenario = preset_scenario(catalog, "deepseek-v3", "fp8", tp=8, batch=16)
    point = MeasuredPoint(scenario, 4_000, 0.05, "")
    step = StepModel.of(scenario)
    row = step.row(4_000)
    plain = EngineParams(0.7, 0.6, 60e-6, 200e-6, 25e-6)
    costly = replace(plain, per_moe_layer_s=400e-6, per_ffn_pass_s=1.5e-6)
    added = expected_step(step, row, costly) - expected_step(step, row, plain)
    assert added == pytest.approx(0.034408, rel=1e-9)
    assert predicted_s(step_terms(point), costly) == pytest.approx(
        expected_step(step, row, costly), rel=1e-12
    )


def batch_terms(batches: tuple[int, ...]) -> list[StepTerms]:
    """Hand-made TP 1 points of four models (layers, MoE layers, feed-forward passes per
    token, weight ms): dense 32 / 40 / 80 layers and a DeepSeek-like 61 layers with 58 MoE
    layers of 8 experts (3 + 58 x 8 = 467 passes), each at the given batches, made with
    e_w 0.8, 100 us per step, 20 us per layer, 400 us per MoE layer, and per sequence
    1.5 us per feed-forward pass, 30 us per running request and 0.5 us per mixer layer.
    DeepSeek-like at batch 64: 64 x (467 x 1.5 + 30 + 61 x 0.5) us = 64 x 761 us = 48.704
    ms of running costs."""
    models = (("a", 32, 0, 32, 5.0), ("b", 40, 0, 40, 15.0), ("c", 80, 0, 80, 10.0),
              ("d", 61, 58, 467, 10.0))  # fmt: skip
    terms = []
    for name, layers, moe, ffn, weight_ms in models:
        for batch in batches:
            running = RunningCounts(batch * ffn, batch, batch * layers, 0)
            counts = StepCounts(layers, moe, batch * ffn, running)
            measured = (
                weight_ms / 1000 / 0.8
                + 100e-6
                + layers * 20e-6
                + moe * 400e-6
                + batch * (ffn * 1.5e-6 + 30e-6 + layers * 0.5e-6)
            )
            terms.append(
                hand_terms(weight_ms / 1000, measured, counts, (name, batch), batch_series=(name,))
            )
    return terms


def test_running_costs_add_up_by_operation() -> None:
    """The DeepSeek-like model of batch_terms at batch 64: its running parts, named, are
    64 x 467 x 1.5 us = 44.832 ms, 64 x 30 us = 1.92 ms and 64 x 61 x 0.5 us = 1.952 ms
    (48.704 ms together, as batch_terms' docstring works out)."""
    running = RunningCounts(64 * 467, 64, 64 * 61, 0)
    params = EngineParams(
        0.8, 0.8, per_ffn_pass_s=1.5e-6, per_running_s=30e-6, per_mixer_sequence_s=0.5e-6
    )
    parts = dict(running.parts(params))
    assert parts == pytest.approx(
        {
            "per token feed-forward pass": 44.832e-3,
            "per running request": 1.92e-3,
            "per sequence per mixer layer": 1.952e-3,
        }
    )
    assert running.seconds(params) == pytest.approx(48.704e-3)


def test_running_costs_recovered_from_batch_series() -> None:
    fit = fit_step_model(batch_terms((1, 8, 64, 128)))
    p = fit.params
    assert fit.fitted == (
        "weight_efficiency",
        "per_moe_layer",
        "per_step",
        "per_layer",
        "per_ffn_pass",
        "per_running",
        "per_mixer_sequence",
    )
    assert p.weight_efficiency == pytest.approx(0.8, rel=1e-6)
    assert p.per_step_s == pytest.approx(100e-6, rel=1e-6)
    assert p.per_layer_s == pytest.approx(20e-6, rel=1e-6)
    assert p.per_moe_layer_s == pytest.approx(400e-6, rel=1e-6)
    assert p.per_ffn_pass_s == pytest.approx(1.5e-6, rel=1e-6)
    assert p.per_running_s == pytest.approx(30e-6, rel=1e-6)
    assert p.per_mixer_sequence_s == pytest.approx(0.5e-6, rel=1e-6)
    assert "per_state_sequence 0 us (no model measured has the operation)" in fit.held


def test_one_batch_leaves_the_running_costs_at_the_prior() -> None:
    """At batch 8 alone the running costs move with the per-layer one (and, for the MoE
    model, with its MoE layers): held at the prior's, with the reason, said once."""
    prior = EngineParams(1.0, 1.0, per_ffn_pass_s=2e-6)
    fit = fit_step_model(batch_terms((8,)), prior)
    assert "per_ffn_pass" not in fit.fitted
    assert fit.params.per_ffn_pass_s == 2e-6
    assert (
        "per_ffn_pass 2 us, per_running 0 us, per_mixer_sequence 0 us, per_state_sequence "
        "0 us (no scenario at several batch sizes)"
    ) in fit.held


def test_other_requests_prefills_are_not_charged_to_the_sequences(catalog: Catalog) -> None:
    """A serving sweep's mean TPOT grows with the batch through the decode step and
    through the prefill chunks of the other requests. Here the decode step has no fixed
    costs (e_w 0.8, e_kv 0.68: the prior's ratio 0.85) and the prefills add 0.2 ms x (B - 1).
    Llama-3.1-8B at context 1,000 on an H100: W = 15,009,849,344 B / 3.35e12 = 4.480552 ms,
    KV = B x 1,000 x 131,072 B / 3.35e12 = B x 39.126 us, 32 passes per sequence. One
    scenario cannot tell a per-step cost from e_w, so the fit takes 1/e_w (on W + KV / 0.85)
    and c_ffn (on 32 B feed-forward passes; one model's per-request and per-mixer-layer
    columns move with it): fitted as decode figures, the -0.2 ms goes to 1/e_w, which falls
    by 0.2 / 4.480552, and the +0.2 ms per sequence to c_ffn, which also makes up the KV that
    lower 1/e_w no longer covers: (0.2 ms / 32) x (1 + 39.126 / 0.85 / 4480.552) = 6.3142
    us. With the share taken off (step_terms' prefill_s): e_w 0.8 and no c_ffn."""
    params = EngineParams(0.8, 0.68)
    points, shares = [], []
    for batch in range(1, 9):
        scenario = preset_scenario(catalog, "llama-3.1-8b", batch=batch)
        step = StepModel.of(scenario)
        share = 0.2e-3 * (batch - 1)
        decode = expected_step(step, step.row(1000), params)
        points.append(MeasuredPoint(scenario, 1000, decode + share, "", measured="tpot_mean"))
        shares.append(share)
    prior = EngineParams(1.0, 0.85)
    weights_s, kv_s = 15_009_849_344 / 3.35e12, 1000 * 131_072 / 3.35e12
    charged = fit_step_model([step_terms(p) for p in points], prior)
    assert charged.fitted == ("weight_efficiency", "per_ffn_pass")
    assert charged.params.per_ffn_pass_s == pytest.approx(
        0.2e-3 / 32 * (1 + kv_s / 0.85 / weights_s), rel=1e-6
    )
    assert charged.params.weight_efficiency == pytest.approx(
        1 / (1 / 0.8 - 0.2e-3 / weights_s), rel=1e-6
    )
    terms = [step_terms(p, prefill_s=s) for p, s in zip(points, shares, strict=True)]
    assert [t.measured_s for t in terms] == pytest.approx(
        [p.measured_seconds - s for p, s in zip(points, shares, strict=True)]
    )
    fit = fit_step_model(terms, prior)
    assert fit.fitted == ("weight_efficiency", "per_ffn_pass")
    assert fit.params.per_ffn_pass_s == pytest.approx(0.0, abs=1e-12)
    assert fit.params.weight_efficiency == pytest.approx(0.8, rel=1e-6)
