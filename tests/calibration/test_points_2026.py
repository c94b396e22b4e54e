"""validation/points-2026.yaml: published decode measurements of 2025-2026 engines (big MoE and
70B+ dense on H200, B200, GB300, MI300X), each traced to its source and mapped by the rules
validation/README.md states; an out-of-sample set validate predicts."""

from __future__ import annotations

from functools import cache
from pathlib import Path
from typing import Any

import pytest
import yaml

from decodecalc.calibration.points import MEASURED_KINDS, read_points, release_order
from decodecalc.loading.catalog import Catalog, presets_dir

ROOT = Path(__file__).resolve().parents[2]
POINTS = ROOT / "validation" / "points-2026.yaml"
ENGINES = {path.stem for path in (presets_dir() / "engines").glob("*.yaml")}


@cache
def _points() -> tuple[dict[str, Any], ...]:
    return tuple(yaml.safe_load(POINTS.read_text(encoding="utf-8"))["points"])


def test_the_points_load(catalog: Catalog) -> None:
    # 10 TensorRT-LLM #5929 + 16 ROCm vLLM 0.7.3 (the SGLang cookbook's 10 rows were removed: it is
    # a reserved independent check, never read)
    assert len(read_points(POINTS, catalog)) == len(_points()) == 26


@pytest.mark.parametrize("field", ["source", "engine", "engine_version", "release", "notes"])
def test_every_point_says_where_it_comes_from(field: str) -> None:
    for p in _points():
        assert isinstance(p.get(field), str) and p[field].strip(), (field, p["source"])


def test_labels_name_real_profiles_kinds_and_release_lines() -> None:
    for p in _points():
        assert p["engine"] in ENGINES
        assert p["measured"] in MEASURED_KINDS
        assert release_order(p["release"])
        assert "published as: " in p["notes"]
        assert "inferencex" not in (p["source"] + p["notes"]).lower()  # reserved, never a source


def test_serving_context_is_input_plus_half_the_output() -> None:
    serving = [p for p in _points() if "input_len" in p]
    assert len(serving) == 10
    for p in serving:
        assert p["context"] == p["input_len"] + p["output_len"] // 2
        assert p["batch"] == p["concurrency"]  # no source gives the mean in flight


@pytest.mark.parametrize(
    ("model", "batch", "context", "ms"),
    [
        # ROCm/vllm@b309ea79 README: Llama 3.1 70B FP8, batch 1, input 128, output 2048, 17.654 s:
        # 17.654 s / 2048 tokens = 8.620 ms; context 128 + 2048 / 2 = 1152
        ("llama-3.1-70b", 1, 1152, 8.620),
        # 405B, batch 128, input 2048: 162.503 s / 2048 = 79.347 ms; context 2048 + 1024 = 3072
        ("llama-3.1-405b", 128, 3072, 79.347),
    ],
)
def test_latency_rows_are_whole_batch_seconds_over_output_tokens(
    model: str, batch: int, context: int, ms: float
) -> None:
    (p,) = [
        p for p in _points() if (p["model"], p["batch"], p["context"]) == (model, batch, context)
    ]
    assert p["measured"] == "e2e_over_tokens"
    assert p["ms_per_token"] == pytest.approx(ms, abs=1e-3)


def test_itl_seconds_become_milliseconds() -> None:
    """TensorRT-LLM issue #5929 prints ITL p50 in seconds: DeepSeek-R1 FP8, batch 1, 1600/600,
    EP None 0.01378 s = 13.78 ms."""
    (p,) = [
        p
        for p in _points()
        if p["gpu"] == "h200" and p["batch"] == 1 and p["context"] == 1900 and not p.get("ep")
    ]
    assert (p["measured"], p["ms_per_token"]) == ("itl_median", 13.78)
