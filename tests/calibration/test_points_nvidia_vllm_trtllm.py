"""validation/points-nvidia-vllm-trtllm.yaml: published decode measurements of vLLM 0.12-0.19 on
NVIDIA H100 and B200 (the vLLM blog's FP8 KV-cache study, Vultr's HGX B200 cookbook), each
traced to its source and mapped by the rules validation/README.md states ("vLLM and
TensorRT-LLM on NVIDIA"); validate predicts them with the shipped profiles, out of sample."""

from __future__ import annotations

import re
from typing import Any

import pytest

from decodecalc.calibration.points import MEASURED_KINDS, read_points
from decodecalc.engine.profile import gpu_family, release_order
from decodecalc.loading.catalog import Catalog
from tests.calibration.points_files import RESERVED, VALIDATION, raw_points

POINTS = VALIDATION / "points-nvidia-vllm-trtllm.yaml"
COUNT = 26


def _points() -> tuple[dict[str, Any], ...]:
    return raw_points(POINTS.name)


def test_the_points_load_and_map_to_known_presets(catalog: Catalog) -> None:
    # read_points resolves every model, GPU and weight format against the presets
    points = read_points(POINTS, catalog)
    assert len(points) == len(_points()) == COUNT
    assert {p.engine for p in points} == {"vllm"}
    assert {gpu_family(p.scenario.gpu) for p in points} == {"nvidia-datacenter"}


@pytest.mark.parametrize("index", range(COUNT))
def test_each_point_is_cited_labelled_and_mapped(index: int) -> None:
    p = _points()[index]
    src, notes, version = p["source"], p["notes"], p["engine_version"]
    # pinned: a commit and a line in it, or the page's URL and its table row
    assert ("@" in src and " line " in src) or (src.startswith("https://") and " row " in src), src
    assert p["measured"] in MEASURED_KINDS and p["group"] == "vllm/nvidia-datacenter"
    assert release_order(p["release"]) and version.strip() and "published as: " in notes
    assert not any(word in (src + notes + version).lower() for word in RESERVED), src
    # serving benchmarks: the mean live context is input + output / 2, the batch the concurrency
    assert p["context"] == p["input_len"] + p["output_len"] // 2
    assert p["batch"] == p["concurrency"]


def test_a_fitted_line_is_read_at_the_sweep_ends() -> None:
    # the FP8 KV-cache post gives ITL = intercept + slope x input; Llama-3.1-8B BF16 on H100:
    # 6.44 ms + 4.37e-05 ms/token x 125,000 = 6.44 + 5.4625 = 11.9025 -> 11.902 (3 decimals)
    sweeps = [p for p in _points() if p["concurrency"] == 1 and p["output_len"] == 128]
    assert len(sweeps) == 12
    for p in sweeps:
        found = re.search(r"ITL = ([\d.]+) ms \+ ([\d.e-]+) ms/token", p["notes"])
        assert found, p["notes"]
        a, b = float(found.group(1)), float(found.group(2))
        assert p["ms_per_token"] == pytest.approx(a + b * p["input_len"], abs=1e-3)
    llama = next(
        p
        for p in sweeps
        if (p["model"], p["gpu"], p["kv_dtype"], p["input_len"])
        == ("llama-3.1-8b", "h100-sxm", "bf16", 125_000)
    )
    assert llama["ms_per_token"] == pytest.approx(11.902, abs=1e-3)


def test_the_cookbook_rows_are_copied_as_printed() -> None:
    # Vultr's concurrency-tuning tables, 2,048 in / 512 out: context 2,048 + 256 = 2,304
    nano = {p["concurrency"]: p["ms_per_token"] for p in _points() if p["tp"] == 2}
    assert nano == {1: 2.91, 8: 3.96, 16: 4.32, 32: 7.86, 64: 6.74, 128: 8.91, 256: 11.77}
    minimax = [p for p in _points() if p["model"] == "minimax-m2.5"]
    assert [p["ms_per_token"] for p in minimax] == [11.40, 13.37, 15.01]
    assert {p["release"] for p in minimax} == {"0.12"} and {p["context"] for p in minimax} == {2304}
