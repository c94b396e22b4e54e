"""validation/points-2026-thin-regimes.yaml: more published decode measurements of 2025-2026
engine releases where points-2026.yaml is thin (AMD MI355X, concurrency 64-256, hybrid and
small-active MoE models, Apple and AMD APUs), each traced to its source and mapped by the rules
validation/README.md states; validate predicts it, out of sample but for the 36 vLLM 0.19
points validation/fit_engines.py fits (FITTED_SHARES)."""

from __future__ import annotations

from collections import Counter
from functools import cache
from pathlib import Path
from typing import Any

import pytest
import yaml

from decodecalc.calibration.points import MEASURED_KINDS, read_points
from decodecalc.engine.profile import release_order
from decodecalc.loading.catalog import Catalog, presets_dir

ROOT = Path(__file__).resolve().parents[2]
POINTS = ROOT / "validation" / "points-2026-thin-regimes.yaml"
ENGINES = {path.stem for path in (presets_dir() / "engines").glob("*.yaml")}
RESERVED = ("inferencex", "inferencemax", "semianalysis", "sgl-cookbook", "kyuz0", "rapid-mlx")
"""Sources kept as independent checks: never a source or a note here."""


@cache
def _points() -> tuple[dict[str, Any], ...]:
    return tuple(yaml.safe_load(POINTS.read_text(encoding="utf-8"))["points"])


def test_the_points_load(catalog: Catalog) -> None:
    assert len(read_points(POINTS, catalog)) == len(_points()) >= 150


@pytest.mark.parametrize("field", ["source", "engine_version", "release", "group", "notes"])
def test_every_point_says_where_it_comes_from(field: str) -> None:
    for p in _points():
        assert isinstance(p.get(field), str) and p[field].strip(), (field, p["source"])


def test_labels_name_real_profiles_kinds_and_release_lines() -> None:
    for p in _points():
        # ATOM has no profile of its own: its points name none and form their own group
        assert p.get("engine") in ENGINES or (
            "engine" not in p and p["group"] == "atom/amd-instinct"
        ), p["source"]
        assert p["measured"] in MEASURED_KINDS
        assert release_order(p["release"])
        assert "published as: " in p["notes"]
        text = (p["source"] + p["notes"] + p["engine_version"]).lower()
        assert not any(word in text for word in RESERVED), p["source"]


def test_every_source_is_pinned_to_a_commit_or_a_url_and_a_line() -> None:
    for p in _points():
        src = p["source"]
        assert ("@" in src and " line " in src) or src.startswith("https://"), src


def test_serving_context_is_input_plus_half_the_output() -> None:
    serving = [p for p in _points() if "input_len" in p]
    assert serving
    for p in serving:
        assert p["context"] == p["input_len"] + p["output_len"] // 2
        assert p["batch"] == p["concurrency"]  # no source gives the mean in flight


def test_atom_lengths_are_the_means_of_its_random_range() -> None:
    """ATOM's benchmark_serving draws lengths uniformly in [int(0.8 L), L]: nominal 1024 ->
    (819 + 1024) / 2 = 921.5, rounded 922; 8192 -> (6553 + 8192) / 2 = 7372.5 -> 7373.
    Context 922 + 922 // 2 = 1383; 7373 + 461 = 7834."""
    atom = [p for p in _points() if p["group"] == "atom/amd-instinct"]
    assert atom
    assert {(p["input_len"], p["output_len"], p["context"]) for p in atom} == {
        (922, 922, 1383),
        (7373, 922, 7834),
    }


def test_a_dashboard_figure_is_copied_unchanged() -> None:
    """ROCm/ATOM's dashboard, run 26242951282: 'ATOM::gpt-oss-120b 1024/1024 c=256 TPOT (ms)'
    = 20.36 ms on one MI355X."""
    (p,) = [
        p
        for p in _points()
        if p["group"] == "atom/amd-instinct"
        and p["model"] == "gpt-oss-120b"
        and p["concurrency"] == 256
        and p["input_len"] == 922
    ]
    assert (p["gpu"], p["tp"], p["measured"], p["ms_per_token"]) == (
        "mi355x",
        1,
        "tpot_mean",
        20.36,
    )


def test_no_point_is_listed_twice() -> None:
    keys = Counter(
        (
            p["source"].split(" (")[0],
            p["model"],
            p["weights"],
            p["gpu"],
            p["tp"],
            p["batch"],
            p["context"],
            p.get("engine"),
        )
        for p in _points()
    )
    assert [k for k, n in keys.items() if n > 1] == []


def test_llama_bench_steps_are_a_thousand_over_its_tokens_per_second() -> None:
    """lhl/strix-halo-testing's raw llama-bench JSON, gpt-oss-120b F16 GGUF, build 6097, HIP,
    flash attention off, tg128: avg_ts 33.580682 t/s -> 1000 / 33.580682 = 29.779 ms per step;
    128 tokens from an empty cache -> mean context 128 / 2 = 64."""
    (p,) = [
        p
        for p in _points()
        if p["gpu"] == "ryzen-ai-max-395"
        and p["model"] == "gpt-oss-120b"
        and p["context"] == 64
        and "HIP" in p["engine_version"]
        and "flash attention off" in p["engine_version"]
    ]
    assert (p["measured"], p["ms_per_token"]) == ("step", pytest.approx(29.779, abs=1e-3))
