"""Beyond two terms: compute roofline, TP all-reduce, overhead, generation, calibration."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml

from decodecalc.answers.estimate import estimate
from decodecalc.answers.generate import decode_seconds, generate
from decodecalc.loading.catalog import Catalog
from decodecalc.record import replace
from decodecalc.scenarios.scenario import Scenario
from decodecalc.step.ridge import ridge_batch
from decodecalc.step.step import StepModel

from .conftest import Run
from .conftest import preset_scenario as h100

DATA = Path(__file__).parent / "data" / "measured-decode.yaml"


class TestComputeRoofline:
    def test_ridge_batch_llama_8b_bf16_h100_at_zero_context(self, catalog: Catalog) -> None:
        # Memory time: 15,009,849,344 weight bytes / 3.35e12 = 4.480552 ms, whatever B.
        # Compute per sequence: 2 x 7,504,924,672 multiplied params = 15,009,849,344 FLOPs
        # / 989.4e12 = 15.17067 us. Compute-bound once B x 15.17067 us >= 4.480552 ms:
        # B >= 295.34 -> 296 (H100's ridge point, ~295 FLOPs per byte, at 2 FLOPs per byte).
        assert ridge_batch(h100(catalog, "llama-3.1-8b"), 0) == 296

    def test_ridge_batch_llama_8b_at_128_tokens(self, catalog: Catalog) -> None:
        # Each sequence adds 128 x 131,072 = 16,777,216 KV bytes (5.00812 us) to the memory time
        # and 15,009,849,344 + 32 x 4 x 128 x 32 x 128 = 15,076,958,208 FLOPs (15.23848 us):
        # B x (15.23848 - 5.00812) us >= 4.480552 ms -> B >= 437.97 -> 438.
        assert ridge_batch(h100(catalog, "llama-3.1-8b"), 128) == 438

    def test_long_context_never_turns_compute_bound(self, catalog: Catalog) -> None:
        # At 1,024 tokens a sequence's KV read (40.07 us) outlasts its compute (15.7 us).
        assert ridge_batch(h100(catalog, "llama-3.1-8b"), 1024) is None

    def test_rows_say_which_bound(self, catalog: Catalog) -> None:
        rows = [
            r
            for r in estimate(h100(catalog, "llama-3.1-8b", batch=512), [0, 1024]).rows
            if not r.is_crossover
        ]
        assert [r.bound for r in rows] == ["compute", "memory"]
        # At T=0, B=512: 512 x 15,009,849,344 / 989.4e12 = 7.7672 ms > 4.4806 ms of memory
        assert rows[0].seconds_per_token == pytest.approx(512 * 15_009_849_344 / 989.4e12)

    def test_unknown_rate_means_memory_only(self, catalog: Catalog) -> None:
        m1 = catalog.gpu("m1-max")
        s = Scenario(
            catalog.model("llama-3.2-1b"),
            catalog.dtype("bf16"),
            catalog.dtype("bf16"),
            m1.bandwidth_bytes_per_s,
            gpu=m1,
        )
        row = estimate(s, [1024]).rows[0]
        assert row.compute_seconds is None and row.bound == "memory"


class TestCommunicationAndOverhead:
    def test_tp8_all_reduce(self, catalog: Catalog) -> None:
        # Llama-3.1-70B, TP 8 over NVLink 4 (450 GB/s one way, 10 us per all-reduce), B = 16:
        # message 16 x 8,192 x 2 bytes = 262,144; ring 2 x 7/8 x 262,144 / 450e9 = 1.019449 us;
        # 2 all-reduces x 80 layers x (10 + 1.019449) us = 1.763112 ms.
        s = h100(
            catalog, "llama-3.1-70b", "fp8", "fp8", tp=8, batch=16, link=catalog.link("nvlink4")
        )
        row = estimate(s, [8192]).rows[0]
        assert row.comm_seconds == pytest.approx(1.763112e-3, rel=1e-6)
        assert row.seconds_per_token == pytest.approx(row.memory_seconds + row.comm_seconds)

    def test_overhead_adds_to_every_step(self, catalog: Catalog) -> None:
        base = estimate(h100(catalog, "llama-3.1-8b"), [1024]).rows[0].seconds_per_token
        slow = estimate(h100(catalog, "llama-3.1-8b", overhead_s=0.0003), [1024]).rows[0]
        assert slow.seconds_per_token == pytest.approx(base + 0.0003)

    def test_cli_needs_a_link_for_tp(self, cli: Run) -> None:
        r = cli("estimate", "-m", "llama-3.1-8b", "-b", "3TB/s", "--tp", "2")
        assert r.code == 2 and "needs an interconnect" in r.err
        ok = cli(
            "estimate", "-m", "llama-3.1-8b", "-b", "3TB/s", "--tp", "2", "--link", "none", "--json"
        )
        assert ok.code == 0 and json.loads(ok.out)["rows"][0]["comm_ms"] == 0

    def test_tiny_model_note(self, cli: Run) -> None:
        # Llama-3.2-1B BF16 streams about 2.5 GB per step: 2.5e9 / 8e12 B/s = 0.31 ms on a B200.
        # With an engine's expected step (the default, typical) its fixed costs are in the
        # figures already, so the note is for the roofline alone.
        args = ("estimate", "-m", "llama-3.2-1b", "-g", "b200", "-c", "1K", "--engine", "roofline")
        assert "kernel launches and scheduling likely dominate" in cli(*args).err
        assert "launch" not in cli(*args[:-2]).err
        r = cli(*args, "--json")
        assert "launch-bound" in [n["code"] for n in json.loads(r.out)["notes"]]
        assert "kernel launches and scheduling likely dominate" in r.err

    def test_json_terms(self, cli: Run) -> None:
        doc = json.loads(
            cli(
                "estimate",
                "-m",
                "llama-3.1-8b",
                "-g",
                "h100",
                "-c",
                "0",
                "--batch",
                "512",
                "--json",
            ).out
        )
        row = doc["rows"][0]
        assert row["bound"] == "compute" and row["comm_ms"] == 0 and row["overhead_ms"] == 0
        assert row["compute_ms"] > row["memory_ms"]
        assert doc["ridge_batch"] == 296


class TestGeneration:
    def test_linear_curve_closed_form(self, catalog: Catalog) -> None:
        # Llama-3.1-8B BF16, B=1, memory-bound: t(T) = (15,009,849,344 + 131,072 T) / 3.35e12.
        # Sum over T = P .. P+N-1: N x 15,009,849,344 + 131,072 x (N P + N(N-1)/2), / 3.35e12.
        prompt, tokens = 8192, 1024
        closed = (
            tokens * 15_009_849_344 + 131_072 * (tokens * prompt + tokens * (tokens - 1) // 2)
        ) / 3.35e12
        g = generate(h100(catalog, "llama-3.1-8b"), prompt, tokens)
        assert g.decode_seconds == pytest.approx(closed, rel=1e-12)
        assert g.last_step_seconds == pytest.approx((15_009_849_344 + 131_072 * 9215) / 3.35e12)

    @pytest.mark.parametrize(
        ("model", "batch", "prompt", "tokens"),
        [
            ("llama-3.1-8b", 400, 0, 3000),  # crosses from compute- to memory-bound
            ("gemma-3-27b", 8, 10, 5000),  # crosses the 1,024-token window
            ("gpt-oss-20b", 64, 0, 2000),  # 128-token windows and MoE
            ("qwen3-next-80b-a3b", 4, 100, 1000),
        ],  # constant recurrent state
    )
    def test_matches_brute_force(
        self, catalog: Catalog, model: str, batch: int, prompt: int, tokens: int
    ) -> None:
        step = StepModel.of(h100(catalog, model, "fp8", "fp8", batch=batch))
        brute = sum(step.row(t).seconds_per_token for t in range(prompt, prompt + tokens))
        assert decode_seconds(step, prompt, tokens) == pytest.approx(brute, rel=1e-12)

    def test_prefill_is_compute_bound(self, catalog: Catalog) -> None:
        # 2 x 7,504,924,672 x 8,192 + 32 layers x 4 x 32 heads x 128 x (8,192 x 8,191 / 2)
        # = 122,960,685,826,048 + 17,590,038,560,768 = 140,550,724,386,816 FLOPs / 989.4e12
        g = generate(h100(catalog, "llama-3.1-8b"), 8192, 1)
        assert g.prefill_flops == 140_550_724_386_816
        assert g.prefill_seconds == pytest.approx(140_550_724_386_816 / 989.4e12)

    def test_cli_json(self, cli: Run) -> None:
        doc = json.loads(
            cli(
                "generate",
                "-m",
                "llama-3.1-8b",
                "-g",
                "h100",
                "--prompt",
                "8K",
                "--tokens",
                "1K",
                "--json",
            ).out
        )
        assert set(doc) >= {"decode_s", "mean_ms_per_token", "last_ms_per_token", "prefill_s"}
        assert doc["mean_ms_per_token"] == pytest.approx(doc["decode_s"] * 1000 / 1024)


class TestCalibration:
    def test_recovers_a_known_fit(self, catalog: Catalog, tmp_path: Path, cli: Run) -> None:
        # Synthetic points made with efficiency 0.8 and 0.25 ms of overhead per step.
        points = []
        for model, weights, batch, context in [
            ("llama-3.1-8b", "bf16", 1, 1000),
            ("llama-3.1-70b", "fp8", 4, 8000),
            ("qwen2.5-7b", "int8", 16, 2000),
            ("mistral-7b", "fp8", 1, 30000),
        ]:
            s = h100(
                catalog, model, weights, "bf16", batch=batch, efficiency=0.8, overhead_s=0.00025
            )
            ms = StepModel.of(s).row(context).seconds_per_token * 1000
            points.append(
                {
                    "model": model,
                    "gpu": "h100-sxm",
                    "weights": weights,
                    "kv_dtype": "bf16",
                    "batch": batch,
                    "tp": 1,
                    "context": context,
                    "ms_per_token": ms,
                }
            )
        path = tmp_path / "points.yaml"
        path.write_text(yaml.safe_dump(points))
        doc = json.loads(cli("calibrate", str(path), "--json").out)
        assert doc["efficiency"] == pytest.approx(0.8, rel=1e-9)
        assert doc["overhead_ms"] == pytest.approx(0.25, rel=1e-6)
        assert all(abs(p["error_pct"]) < 1e-6 for p in doc["points"])

    def test_saved_fit_is_used(
        self, cli: Run, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        saved = tmp_path / "fit.json"
        monkeypatch.setenv("DECODECALC_CALIBRATION", str(saved))
        assert cli("calibrate", str(DATA), "--save", "--json").code == 0
        fit = json.loads(saved.read_text())
        doc = json.loads(
            cli(
                "estimate",
                "-m",
                "llama-2-7b",
                "-g",
                "a100-80gb",
                "-c",
                "100",
                "-e",
                "calibrated",
                "--json",
            ).out
        )
        assert doc["inputs"]["efficiency"] == pytest.approx(fit["efficiency"])
        assert doc["inputs"]["overhead_ms"] == pytest.approx(fit["overhead_ms"])
        # The published points are A100 measurements: on that GPU no note, on another one.
        assert fit["gpus"] == ["a100-80gb"]
        assert "calibrated-elsewhere" not in [n["code"] for n in doc["notes"]]
        r = cli("estimate", "-m", "llama-2-7b", "-g", "h100", "-c", "100", "-e", "calibrated")
        assert "the calibration was fitted on a100-80gb, not h100-sxm" in r.err

    def test_published_points(self, cli: Run) -> None:
        """Every published point is predicted, with its error, and the fit beats the roofline."""
        doc = json.loads(cli("calibrate", str(DATA), "--json").out)
        assert len(doc["points"]) == 46
        assert 0.3 < doc["efficiency"] < 1
        roofline_rms = (
            sum((p["roofline_ms"] / p["measured_ms"] - 1) ** 2 for p in doc["points"]) / 46
        ) ** 0.5
        assert doc["rms_error_pct"] / 100 < roofline_rms
        assert all(p["source"] for p in doc["points"])

    def test_sustained_efficiency(self, cli: Run) -> None:
        doc = json.loads(
            cli(
                "estimate",
                "-m",
                "llama-2-7b",
                "-g",
                "a100-80gb",
                "-c",
                "1K",
                "-e",
                "sustained",
                "--json",
            ).out
        )
        assert doc["inputs"]["efficiency"] == pytest.approx(
            1397 / 2039
        )  # gpt-fast's measured / datasheet
        r = cli("estimate", "-m", "llama-2-7b", "-g", "h100", "-e", "sustained")
        assert r.code == 2 and "no sustained bandwidth is known for h100-sxm" in r.err

    @pytest.mark.parametrize(
        ("content", "message"),
        [
            ("[]", "expected a list of measured points"),
            (
                "- {model: llama-2-7b, gpu: h100, weights: bf16, kv_dtype: bf16, context: 10,"
                " ms_per_token: 5}",
                "at least two",
            ),
            (
                "- {model: llama-2-7b, gpu: h100, weights: bf16, kv_dtype: bf16, context: 10,"
                " ms: 5}",
                "missing required field 'ms_per_token'",
            ),
            (
                "- {model: llama-2-7b, gpu: h100, weights: bf16, kv_dtype: bf16, context: 10,"
                " ms_per_token: 1e400}",
                "ms_per_token: must be at most 3,600,000",  # as a float it would be infinite
            ),
        ],
    )
    def test_bad_points(self, cli: Run, tmp_path: Path, content: str, message: str) -> None:
        path = tmp_path / "p.yaml"
        path.write_text(content)
        r = cli("calibrate", str(path))
        assert r.code == 2 and message in r.err


def test_explain_walks_through_the_numbers(cli: Run) -> None:
    out = cli(
        "explain", "-m", "llama-3.1-70b", "-g", "h100", "-w", "fp8", "-k", "fp8", "-c", "200000"
    ).out
    for fragment in (
        "69,503,033,344",
        "32,768,000,000",
        "30.529 ms",
        "424,212.8 tokens",
        "memory-bound",
    ):
        assert fragment in out


@pytest.mark.parametrize("model", ["llama-3.1-8b", "qwen2.5-7b", "gemma-2-9b", "llama-3.2-1b"])
@pytest.mark.parametrize("context", [0, 64, 300])
def test_dense_ridge_closed_form_matches_the_search(
    catalog: Catalog, model: str, context: int
) -> None:
    from decodecalc.step.ridge import _dense_ridge, _searched_ridge

    s = h100(catalog, model)
    assert _dense_ridge(s, context, 989_400_000_000_000) == _searched_ridge(s, context)


def test_moe_ridge_uses_the_search(catalog: Catalog) -> None:
    # Mixtral FP8 at T=0: weights grow with B until every expert is read, so the crossing
    # batch comes from the search; at that batch compute is at least memory, one below not.
    s = h100(catalog, "mixtral-8x7b", "fp8", "fp8")
    ridge = ridge_batch(s, 0)
    assert ridge is not None
    at, below = (estimate(replace(s, batch=b), [0]).rows[0] for b in (ridge, ridge - 1))
    assert at.bound == "compute" or at.compute_seconds == at.memory_seconds
    assert below.bound == "memory"
