"""validation/points-nvidia-concurrency.yaml: published decode measurements of today's engines on
NVIDIA datacenter GPUs at concurrency 32-256 (issue 28, items 3 and 4), each traced to its source
and mapped by the rules validation/README.md states ("NVIDIA at concurrency 32-256"); validate
predicts them with the shipped profiles, out of sample (no share of the file is fitted)."""

from __future__ import annotations

import re
from typing import Any

import pytest

from decodecalc.calibration.points import MEASURED_KINDS, read_points
from decodecalc.engine.profile import gpu_family, release_order
from decodecalc.loading.catalog import Catalog
from tests.calibration.points_files import RESERVED, VALIDATION, raw_points
from tests.calibration.test_validate import fitting_script

POINTS = VALIDATION / "points-nvidia-concurrency.yaml"
COUNT = 42


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
    # pinned at a commit and a line in it, or a pull request's comment by its author and date
    assert ("@" in src and " line" in src) or ("/pull/" in src and " comment by " in src), src
    assert p["measured"] in MEASURED_KINDS and p["group"] == f"{p['engine']}/nvidia-datacenter"
    assert release_order(p["release"]) and version.strip() and "published as: " in notes
    assert not any(word in (src + notes + version).lower() for word in RESERVED), src
    if p["measured"] == "step":
        return  # one fixed batch (bench_one_batch_server): its context is checked below
    # serving benchmarks: the mean live context is input + output / 2; the batch the concurrency
    # (an upper bound) or the mean in flight the source prints, rounded
    assert p["context"] == p["input_len"] + p["output_len"] // 2
    assert p["batch"] <= p["concurrency"]
    assert 1 <= p["concurrency"] <= 256  # the regime issue 28 names, with its low-load anchors


def test_the_recipe_run_is_mapped_from_its_totals() -> None:
    # vllm-project/recipes@1bc2b47 Qwen3-Next on 4 x B200 at max concurrency 256: 1,000 requests,
    # 2,043,736 input and 957,462 generated tokens -> means 2,043.7 -> 2044 and 957.46 -> 957
    # (rounded); context 2044 + 957 // 2 = 2044 + 478 = 2522; Mean TPOT 29.40 ms as printed
    (p,) = [q for q in _points() if q["model"] == "qwen3-next-80b-a3b"]
    assert (p["input_len"], p["output_len"], p["context"]) == (2044, 957, 2522)
    assert p["ms_per_token"] == 29.40 and p["ttft_ms"] == 1387.84
    assert (p["tp"], p["gpu"], p["batch"]) == (4, "b200", 256)


def test_the_chart_bars_are_read_from_their_coordinates() -> None:
    # the LMSYS gpt-oss decode chart (matplotlib SVG): tick '0' at y = 544.467632, '1000' at
    # 475.436877, so 69.030755 px per 1,000 tok/s. B200 input 1k bar top at 54.418994:
    # (544.467632 - 54.418994) / 69.030755 x 1000 = 490.048638 / 69.030755 x 1000 = 7099.0 tok/s,
    # a step of 32 x 1000 / 7099.0 = 4.508 ms; H100 input 8k at 228.531815: 315.935817 / 69.030755
    # x 1000 = 4576.7 tok/s -> 6.992 ms
    steps = [p for p in _points() if p["measured"] == "step"]
    bars = {(p["gpu"], p["context"]): p["ms_per_token"] for p in steps}
    assert bars[("b200", 1024 + 256)] == pytest.approx(4.508, abs=1e-3)
    assert bars[("h100-sxm", 8192 + 256)] == pytest.approx(6.992, abs=1e-3)
    assert {p["batch"] for p in steps} == {32}


def test_the_tpot_is_the_mean_decode_time_of_fixed_length_requests() -> None:
    # achatbot PR #183, gpt-oss-20b on one H100 at max concurrency 32: 160 requests of 1,024
    # tokens each; (mean E2E 11,769.33 - mean TTFT 3,721.89) / 1,023 = 8,047.44 / 1,023 = 7.867 ms;
    # at concurrency 4: (8,432.23 - 2,731.00) / 1,023 = 5,701.23 / 1,023 = 5.573 ms
    tpot = {p["concurrency"]: p["ms_per_token"] for p in _points() if p["model"] == "gpt-oss-20b"}
    assert tpot == {4: pytest.approx(5.573, abs=1e-3), 32: pytest.approx(7.867, abs=1e-3)}


def test_the_mean_in_flight_follows_littles_law() -> None:
    # llm-benchmaq prints the completed requests, the duration and the mean E2EL; the mean in
    # flight is their product over the duration. Llama-3.1-70B on 8 x H100 at max concurrency
    # 200, input 1,024: 1,000 x 11,010.5 ms / 55.27 s = 11,010.5 / 55.27 = 199.2 -> batch 199
    found = 0
    for p in _points():
        if "llm-benchmaq" not in p["source"]:
            continue
        m = re.search(r"printed figures, (\d+) x ([\d.]+) ms / ([\d.]+) s", p["notes"])
        assert m, p["notes"]
        n, e2el, duration = int(m.group(1)), float(m.group(2)), float(m.group(3))
        assert p["batch"] == round(n * e2el / 1000 / duration)
        assert p["batch"] <= p["concurrency"] and p["tp"] == 8 and p["release"] == "0.15"
        found += 1
    assert found == 35
    llama = [p for p in _points() if p["model"] == "llama-3.1-70b" and p["concurrency"] == 200]
    assert {p["batch"] for p in llama if p["input_len"] == 1023} == {199}


@pytest.mark.slow  # reads and labels the file through the fitting script
def test_the_fitting_script_shares_none_of_the_file(catalog: Catalog) -> None:
    # fitting vLLM 0.15's 35 H100 points as a line of their own was tried and left out
    # (validation/README.md, "NVIDIA at concurrency 32-256")
    assert fitting_script().shared_points(POINTS, catalog) == []
