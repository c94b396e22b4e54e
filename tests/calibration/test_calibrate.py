"""Calibrating the roofline against measured points: the fit recovered, saved and used
(decodecalc calibrate)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml

from decodecalc.loading.catalog import Catalog
from decodecalc.step.step import StepModel
from tests.conftest import Run
from tests.conftest import preset_scenario as h100

DATA = Path(__file__).parents[1] / "data" / "measured-decode.yaml"


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
                "--engine",
                "roofline",
                "--json",
            ).out
        )
        assert doc["inputs"]["efficiency"] == pytest.approx(fit["efficiency"])
        assert doc["inputs"]["overhead_ms"] == pytest.approx(fit["overhead_ms"])
        # The published points are A100 measurements: on that GPU no note, on another one.
        assert fit["gpus"] == ["a100-80gb"]
        assert "calibrated-elsewhere" not in [n["code"] for n in doc["notes"]]
        r = cli(
            "estimate", "-m", "llama-2-7b", "-g", "h100", "-c", "100", "-e", "calibrated",
            "--engine", "roofline",
        )  # fmt: skip
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
                "--engine",
                "roofline",
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
