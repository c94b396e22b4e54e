"""validation/points-datacenter.yaml: the 84 datacenter measurements of
../shared/validation/measured-datacenter.yaml mapped by validation/map_datacenter.py's rule
per source, each with what its engine ran, and predicted out of sample by validate."""

from __future__ import annotations

import importlib.util
import json
import os
import statistics
from functools import cache
from pathlib import Path
from typing import Any

import pytest
import yaml

from decodecalc.calibration.points import read_points
from decodecalc.loading.catalog import Catalog
from tests.conftest import Run

ROOT = Path(__file__).resolve().parents[2]
POINTS = ROOT / "validation" / "points-datacenter.yaml"
MEASURED = (
    Path(os.environ.get("DECODECALC_SHARED", ROOT.parent / "shared"))
    / "validation"
    / "measured-datacenter.yaml"
)
"""Beside the repository in CI; DECODECALC_SHARED names the folder elsewhere."""


@cache
def _points() -> tuple[dict[str, Any], ...]:
    return tuple(yaml.safe_load(POINTS.read_text(encoding="utf-8"))["points"])


def _source() -> list[dict[str, Any]]:
    if not MEASURED.is_file():
        pytest.skip(f"{MEASURED} is not here (CI has it beside the repository)")
    rows: list[dict[str, Any]] = yaml.safe_load(MEASURED.read_text(encoding="utf-8"))["measured"]
    return rows


def test_every_source_row_once_in_order() -> None:
    rows = _source()
    assert len(rows) == len(_points()) == 84
    for row, point in zip(rows, _points(), strict=True):
        assert (point["source"], point["ms_per_token"]) == (row["source"], row["ms_per_token"])
        assert point["engine_version"] == row["engine"]


def test_the_mapping_script_writes_this_file(tmp_path: Path) -> None:
    _source()
    spec = importlib.util.spec_from_file_location("m", ROOT / "validation" / "map_datacenter.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    out = tmp_path / "points.yaml"
    assert module.main([str(MEASURED), str(out)]) == 0
    assert out.read_bytes() == POINTS.read_bytes(), "re-run validation/map_datacenter.py"


@pytest.mark.parametrize(
    ("launch", "field", "value"),
    [
        ("--enable-dp-attention", "dp_attention", True),
        ("--ep_size 4", "ep", True),
        ("2 nodes over InfiniBand", "gpus_per_node", 8),
    ],
)
def test_what_the_launch_line_says_is_mapped(launch: str, field: str, value: object) -> None:
    """Every row whose engine line names a parallelism carries it, and no other row does."""
    for p in _points():
        assert (p.get(field) == value) == (launch in p["engine_version"]), p["engine_version"]


def test_a_serving_row_takes_the_concurrency_its_source_quotes() -> None:
    """InferenceX PR #1092's row of "~234 tokens/sec/user (TP=8 conc=4 ...)" is a serving run of
    1,024 / 1,024 tokens at concurrency 4 (its batch), replayed by serving like the others."""
    (row,) = [p for p in _points() if "conc=4" in p["source"]]
    assert (row["input_len"], row["output_len"], row["concurrency"]) == (1024, 1024, 4)
    assert row["batch"] == 4


def test_release_lines_follow_the_stated_versions() -> None:
    lines = {p["engine_version"].split(" (")[0]: p.get("release") for p in _points()}
    assert lines["SGLang 0.4.3.post2"] == "0.4"
    assert lines["vLLM 0.7.4.dev181+gf35f8e22"] == "0.7"
    assert lines["TensorRT-LLM 0.17.post1.dev"] == "0.17"
    assert lines["SGLang v0.5.7"] == "0.5"
    assert lines["vLLM"] is None  # version not stated


def test_the_points_load(catalog: Catalog) -> None:
    # One row left out: the concurrency-16 SGLang 0.5.7 run on a thermally throttled node.
    assert len(read_points(POINTS, catalog)) == 83


@pytest.mark.slow  # validates the whole file (83 points), end to end: 2 CPU-seconds
def test_out_of_sample_errors_are_those_of_the_points(cli: Run) -> None:
    """The shipped profiles were fitted without these points, so validate's shipped figures
    are out of sample: the median and band coverage recomputed from its per-point records."""
    doc = json.loads(cli("validate", str(POINTS), "--json").out)
    errors, inside = [], 0
    for p in doc["points"]:
        step = p["measured_ms"] - p["prefill_ms"]
        errors.append(abs(p["expected_ms"] / step - 1) * 100)
        inside += p["expected_low_ms"] <= step <= p["expected_high_ms"]
    summary = doc["summary"]
    assert summary["n"] == len(errors) == 83
    assert summary["mdape"] == pytest.approx(statistics.median(errors))
    assert summary["band_coverage"] == pytest.approx(100 * inside / len(errors))
