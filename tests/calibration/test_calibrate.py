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

    def test_saved_fit_minimises_the_relative_error(self, cli: Run, tmp_path: Path) -> None:
        """Review s39 #4's points: Llama-3.1-8B BF16 on an H100 SXM at 6.5, 8.9 and 11.0 ms
        (1,024, 32,768 and 65,536 tokens) and Llama-3.1-70B FP8 at TP 2, 28.0 ms at 1,024.
        Roofline memory times r (bytes / 3.35e12): 8B weights 15,009,849,344 + 131,072 a
        token: 15,144,067,072, 19,304,816,640 and 23,599,783,936 bytes = 4.520617,
        5.762632 and 7.044712 ms; 70B per GPU (69,503,033,344 - 1,318,912 norms) / 2
        + 1,318,912 = 34,752,176,128 weight bytes + 1,024 x 163,840 KV = 34,919,948,288
        bytes = 10.423865 ms, and its communication k = 160 all-reduces x (10 us + 2 x 1/2
        x 8,192 x 2 B / 450 GB/s) = 1.605825 ms, so t = 28.0 - k = 26.394175 ms.
        The weighted line (w = 1 / m^2) has a negative overhead (-5.66 ms), so the fit is
        through the origin: e = sum (r / m)^2 / sum r t / m^2, with r / m = 0.695480,
        0.647487, 0.640428, 0.372281: (0.483692 + 0.419239 + 0.410148 + 0.138593 =
        1.451672) / (0.695480 + 0.647487 + 0.640428 + 0.372281 x 26.394175 / 28 = 0.350930,
        = 2.334325) = 0.621881. The old fit in milliseconds, e = sum r^2 / sum r t
        = 211.929 / 433.295 = 0.489113, is what the review saw.
        Its own errors, (r / e + k) / m - 1: 4.520617 / 0.621881 = 7.269 ms, +11.83%;
        9.266 ms, +4.12%; 11.328 ms, +2.98%; 16.762 + 1.606 = 18.368 ms, -34.40%:
        RMS sqrt((11.83^2 + 4.12^2 + 2.98^2 + 34.40^2) / 4) = 18.4%, median
        (4.12 + 11.83) / 2 = 8.0% (the 0.489 fit: +42.2, +32.4, +30.9, -18.2%, RMS 32.1%)."""
        lines = [
            ("llama-3.1-8b", "bf16", 1, 1024, 6.5),
            ("llama-3.1-8b", "bf16", 1, 32768, 8.9),
            ("llama-3.1-8b", "bf16", 1, 65536, 11.0),
            ("llama-3.1-70b", "fp8", 2, 1024, 28.0),
        ]
        points = [
            {"model": model, "gpu": "h100-sxm", "weights": weights, "kv_dtype": "bf16",
             "tp": tp, "context": context, "ms_per_token": ms}
            for model, weights, tp, context, ms in lines
        ]  # fmt: skip
        path, saved = tmp_path / "points.yaml", tmp_path / "fit.json"
        path.write_text(yaml.safe_dump(points))
        r = [15_144_067_072, 19_304_816_640, 23_599_783_936, 34_919_948_288]
        r = [b / 3.35e12 for b in r]
        k = [0.0, 0.0, 0.0, 160 * (10e-6 + 16_384 / 450e9)]
        m = [ms / 1000 for *_, ms in lines]
        t = [mi - ki for mi, ki in zip(m, k, strict=True)]
        relative = sum((ri / mi) ** 2 for ri, mi in zip(r, m, strict=True)) / sum(
            ri * ti / mi**2 for ri, ti, mi in zip(r, t, m, strict=True)
        )
        assert relative == pytest.approx(0.621881, abs=1e-6)
        result = cli("calibrate", str(path), "--save-to", str(saved))
        assert result.code == 0, result.err
        assert (
            "saved the roofline fit (efficiency 0.622, overhead 0.000 ms per step; on these "
            "points RMS error 18.4%, median 8.0%)"
        ) in " ".join(result.out.split())
        fit = json.loads(saved.read_text())
        assert fit["efficiency"] == pytest.approx(relative, rel=1e-9)
        assert fit["overhead_ms"] == 0.0
        doc = json.loads(cli("calibrate", str(path), "--save-to", str(saved), "--json").out)
        errors = [(ri / relative + ki) / mi - 1 for ri, ki, mi in zip(r, k, m, strict=True)]
        rms = (sum(e**2 for e in errors) / 4) ** 0.5
        assert doc["saved_fit"]["rms_error_pct"] == pytest.approx(rms * 100, rel=1e-6)
        assert doc["saved_fit"]["median_abs_error_pct"] == pytest.approx(
            (abs(errors[0]) + abs(errors[1])) / 2 * 100, rel=1e-6
        )

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
