"""The serving replay predicts a point with the parameters the estimate's validation takes
for it: its own release line's, or, where its source names none, the engine's pooled fit
(calibration/validation.py stand_in), not the newest line's."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.conftest import Run

ROW: dict[str, Any] = {
    "model": "llama-3.1-70b",
    "gpu": "h100-sxm",
    "weights": "fp8",
    "kv_dtype": "fp8",
    "tp": 4,
    "batch": 1,
    "context": 1500,
    "ms_per_token": 12.0,
    "measured": "tpot_mean",
    "engine": "vllm",
    "group": "vllm/nvidia-datacenter",
    "input_len": 1000,
    "output_len": 1000,
    "concurrency": 1,
    "source": "hand-written for this test",
}


def replayed(cli: Run, tmp_path: Path, row: dict[str, Any]) -> tuple[float, float]:
    """(the estimate's expected ms, the replay's TPOT ms) of one point."""
    path = tmp_path / "points.yaml"
    path.write_text(yaml.safe_dump({"points": [row]}), encoding="utf-8")
    result = cli("validate", str(path), "--json")
    assert result.code == 0, result.err
    doc = json.loads(result.out)
    (point,) = doc["points"]
    (served,) = doc["serving"]["points"]
    return point["expected_ms"], served["tpot_ms"]


def test_a_point_without_a_line_is_replayed_with_the_pooled_fit(cli: Run, tmp_path: Path) -> None:
    """One request at a time (no other request's prefill in its TPOT), its context from
    1,000 to 1,999 tokens: the replay's mean step is the estimate's at the mean context
    1,500 (the step is linear in the context), within the rounding of the decode steps."""
    expected, tpot = replayed(cli, tmp_path, ROW)
    assert tpot == pytest.approx(expected, rel=0.01)


def test_a_point_of_a_line_is_replayed_at_it(cli: Run, tmp_path: Path) -> None:
    """vLLM 0.11's own parameters on NVIDIA datacenter GPUs (56 us per all-reduce, 2 per
    layer at TP 4) differ from the pooled fit's: the two replays differ, and each agrees
    with its estimate."""
    pooled = replayed(cli, tmp_path, ROW)
    line = replayed(cli, tmp_path, {**ROW, "release": "0.11"})
    assert line[1] == pytest.approx(line[0], rel=0.01)
    assert line[1] != pytest.approx(pooled[1], rel=0.01)
