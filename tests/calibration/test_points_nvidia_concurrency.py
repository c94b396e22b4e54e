"""validation/points-nvidia-concurrency.yaml: published decode measurements of today's engines on
NVIDIA datacenter GPUs at concurrency 32-256 (issue 28, items 3 and 4), each traced to its source
and mapped by the rules validation/README.md states ("NVIDIA at concurrency 32-256"); validate
predicts them with the shipped profiles, out of sample (no share of the file is fitted)."""

from __future__ import annotations

from typing import Any

import pytest

from decodecalc.calibration.points import MEASURED_KINDS, read_points
from decodecalc.engine.profile import gpu_family, release_order
from decodecalc.loading.catalog import Catalog
from tests.calibration.points_files import RESERVED, VALIDATION, raw_points

POINTS = VALIDATION / "points-nvidia-concurrency.yaml"
COUNT = 1


def _points() -> tuple[dict[str, Any], ...]:
    return raw_points(POINTS.name)


def test_the_points_load_and_map_to_known_presets(catalog: Catalog) -> None:
    # read_points resolves every model, GPU and weight format against the presets
    points = read_points(POINTS, catalog)
    assert len(points) == len(_points()) == COUNT
    assert {gpu_family(p.scenario.gpu) for p in points} == {"nvidia-datacenter"}


@pytest.mark.parametrize("index", range(COUNT))
def test_each_point_is_cited_labelled_and_mapped(index: int) -> None:
    p = _points()[index]
    src, notes, version = p["source"], p["notes"], p["engine_version"]
    # pinned at a commit and a line in it
    assert "@" in src and " line" in src, src
    assert p["measured"] in MEASURED_KINDS and p["group"] == f"{p['engine']}/nvidia-datacenter"
    assert release_order(p["release"]) and version.strip() and "published as: " in notes
    assert not any(word in (src + notes + version).lower() for word in RESERVED), src
    # serving benchmarks: the mean live context is input + output / 2; the batch the concurrency
    # (an upper bound) unless the source prints the mean in flight
    assert p["context"] == p["input_len"] + p["output_len"] // 2
    assert p["batch"] <= p["concurrency"]
    assert 32 <= p["concurrency"] <= 256 or p["concurrency"] <= 16


def test_the_recipe_run_is_mapped_from_its_totals() -> None:
    # vllm-project/recipes@1bc2b47 Qwen3-Next on 4 x B200 at max concurrency 256: 1,000 requests,
    # 2,043,736 input and 957,462 generated tokens -> means 2,043.7 -> 2044 and 957.46 -> 957
    # (rounded); context 2044 + 957 // 2 = 2044 + 478 = 2522; Mean TPOT 29.40 ms as printed
    (p,) = [q for q in _points() if q["model"] == "qwen3-next-80b-a3b"]
    assert (p["input_len"], p["output_len"], p["context"]) == (2044, 957, 2522)
    assert p["ms_per_token"] == 29.40 and p["ttft_ms"] == 1387.84
    assert (p["tp"], p["gpu"], p["batch"]) == (4, "b200", 256)
