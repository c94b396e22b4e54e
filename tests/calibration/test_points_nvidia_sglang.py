"""validation/points-nvidia-sglang.yaml: published SGLang 0.4 and 0.5 decode measurements on NVIDIA
datacenter GPUs (H100, H200, H20, B200), each traced to its source and mapped by the rules
validation/README.md states ("SGLang on NVIDIA datacenter GPUs"); validation/fit_engines.py fits
All 43 stay out of sample: no share of the file is fitted (FITTED_SHARES)."""

from __future__ import annotations

import re
from typing import Any

import pytest
import yaml

from decodecalc.calibration.points import MEASURED_KINDS, read_points
from decodecalc.engine.profile import gpu_family, release_order
from decodecalc.loading.catalog import Catalog, presets_dir
from tests.calibration.points_files import RESERVED, VALIDATION, raw_points
from tests.calibration.test_validate import fitting_script

POINTS = VALIDATION / "points-nvidia-sglang.yaml"
COUNT = 43


def _points() -> tuple[dict[str, Any], ...]:
    return raw_points(POINTS.name)


def test_the_points_load_and_map_to_known_presets(catalog: Catalog) -> None:
    # read_points resolves every model, GPU and weight format against the presets
    points = read_points(POINTS, catalog)
    assert len(points) == len(_points()) == COUNT
    assert {p.engine for p in points} == {"sglang"}
    assert {gpu_family(p.scenario.gpu) for p in points} == {"nvidia-datacenter"}
    assert {p.release for p in points} == {"0.4", "0.5"}


@pytest.mark.parametrize("index", range(COUNT))
def test_each_point_is_cited_labelled_and_its_context_mapped(index: int) -> None:
    p = _points()[index]
    src, notes, version = p["source"], p["notes"], p["engine_version"]
    assert p["group"] == "sglang/nvidia-datacenter" and p["measured"] in MEASURED_KINDS
    assert release_order(p["release"]) and version.strip() and "published as: " in notes
    # pinned: a commit and a line in it, or a URL and the table row
    assert ("@" in src and " line" in src) or (src.startswith("https://") and " row " in src), src
    assert not any(word in (src + notes + version).lower() for word in RESERVED), src
    if "input_len" in p:  # serving benchmarks: the mean live context is input + output / 2
        assert p["context"] == p["input_len"] + p["output_len"] // 2


def test_batch_one_rates_invert_to_the_step() -> None:
    # LMSYS's gpt-oss post, batch 1: B200 MXFP4 416.02 tok/s -> 1000 / 416.02 = 2.404 ms;
    # H100 BF16 293.12 tok/s -> 3.412 ms; context 1,024 + 512 / 2 = 1,280
    steps = {(p["gpu"], p["weights"]): p for p in _points() if p["measured"] == "step"}
    assert steps[("b200", "gpt-oss-mxfp4")]["ms_per_token"] == pytest.approx(2.404, abs=1e-3)
    assert steps[("h100-sxm", "bf16")]["ms_per_token"] == pytest.approx(3.412, abs=1e-3)
    assert {p["context"] for p in steps.values()} == {1280}


def test_request_rate_runs_take_the_mean_in_flight_as_batch() -> None:
    # DataCrunch's Llama-3.3-70B at 1 request/s: 300 requests x 7,840.6 ms mean E2E over a
    # 298.37 s run = 7.88 in flight -> 8; mean input 152,612 / 300 = 508.7 -> 509, output
    # 160,347 / 300 = 534.5 -> 534 (534.49); context 509 + 534 // 2 = 776
    first = next(p for p in _points() if p["model"] == "llama-3.1-70b")
    assert (first["batch"], first["input_len"], first["output_len"]) == (8, 509, 534)
    assert first["context"] == 776 and first["measured"] == "itl_median"
    for p in _points():
        if p["measured"] == "itl_median":
            found = re.search(r"duration = ([\d.]+) \(", p["notes"])
            assert found and p["batch"] == p["concurrency"] == round(float(found.group(1)))


def test_the_shipped_0_4_line_has_no_nvidia_fit_of_its_own() -> None:
    # The file is out of sample: SGLang's 0.4 line keeps its AMD fit alone
    path = presets_dir() / "engines" / "sglang.yaml"
    profile = yaml.safe_load(path.read_text(encoding="utf-8"))
    assert set(profile["lines"]["0.4"]["families"]) == {"amd-instinct"}


def test_a_whole_call_rate_counts_the_prompt_too() -> None:
    # Qwen's speed benchmark: (prompt + 2,048 generated) / time. Qwen3-8B BF16, a 6,144-token
    # prompt, 296.25 tok/s: (6,144 + 2,048) / 296.25 = 27.652 s; / 2,048 = 13.502 ms per
    # generated token (one prefill inside); context 6,144 + 2,048 / 2 = 7,168
    rows = [p for p in _points() if p["gpu"] == "h20" and p["model"] == "qwen3-8b"]
    six = next(p for p in rows if p["context"] == 7168 and p["weights"] == "bf16")
    assert six["ms_per_token"] == pytest.approx(13.502, abs=1e-3)
    assert six["measured"] == "e2e_over_tokens" and len(rows) == 6


@pytest.mark.slow  # reads and labels the file through the fitting script
def test_the_fitting_script_shares_none_of_the_file(catalog: Catalog) -> None:
    script = fitting_script()
    assert script.shared_points(POINTS, catalog) == []
