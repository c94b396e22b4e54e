"""validation/points-apple.yaml: published MLX decode measurements on Apple silicon (mlx-lm
0.28-0.31, vllm-mlx, LM Studio's MLX engine; M4 Max and M3 Ultra), each traced to its source
and mapped by the rules validation/README.md states ("MLX on Apple"); validation/fit_engines.py
fits mlx-lm 0.31's ten points (FITTED_SHARES) and the rest stays out of sample."""

from __future__ import annotations

import re
from functools import cache
from pathlib import Path
from typing import Any

import pytest
import yaml

from decodecalc.calibration.points import MEASURED_KINDS, read_points
from decodecalc.engine.profile import gpu_family, release_order
from decodecalc.loading.catalog import Catalog, presets_dir

ROOT = Path(__file__).resolve().parents[2]
POINTS = ROOT / "validation" / "points-apple.yaml"
RESERVED = ("inferencex", "inferencemax", "semianalysis", "sgl-cookbook", "kyuz0", "rapid-mlx")
"""Sources kept as independent checks: never a source or a note here."""


@cache
def _points() -> tuple[dict[str, Any], ...]:
    return tuple(yaml.safe_load(POINTS.read_text(encoding="utf-8"))["points"])


def test_the_points_load_and_map_to_known_presets(catalog: Catalog) -> None:
    # read_points resolves every model, GPU and weight format against the presets
    points = read_points(POINTS, catalog)
    assert len(points) == len(_points()) == 34
    # 32 of MLX, two of llama.cpp's Metal build beside them (held out: not fitted)
    assert [p.engine for p in points].count("mlx") == 32
    assert {p.engine for p in points} == {"mlx", "llama.cpp-metal"}
    assert (presets_dir() / "engines" / "mlx.yaml").is_file()
    assert {gpu_family(p.scenario.gpu) for p in points} == {"apple"}


@pytest.mark.parametrize("index", range(34))
def test_each_point_is_cited_labelled_and_inverted_from_its_published_rate(index: int) -> None:
    p = _points()[index]
    src, notes, version = p["source"], p["notes"], p["engine_version"]
    assert all(isinstance(p.get(k), str) and p[k].strip() for k in ("release", "group"))
    # pinned: a commit and a line in it, or the URL
    assert ("@" in src and " line " in src) or src.startswith("https://github.com/"), src
    assert p["measured"] in MEASURED_KINDS and p["group"] == f"{p['engine']}/apple"
    assert release_order(p["release"]) and version.strip() and "published as: " in notes
    assert not any(word in (src + notes + version).lower() for word in RESERVED), src
    # e.g. GLM-4.7-Flash-4bit: 87.53 tok/s -> 1000 / 87.53 = 11.425 ms
    found = re.search(r"ms_per_token = 1000 / ([\d.]+) tok/s", notes)
    assert found and p["ms_per_token"] == pytest.approx(1000 / float(found.group(1)), abs=1e-3)


def test_a_long_prompt_is_its_ttft_times_its_prefill_rate() -> None:
    # GLM-4.7-Flash-4bit at '21K': 42.100 s x 514.78 tok/s = 21,672 tokens, + 512 / 2 generated
    glm = [p for p in _points() if p["model"] == "glm-4.7-flash" and p["context"] > 20_000]
    assert [p["context"] for p in glm] == [round(42.100 * 514.78) + 256] == [21_928]


def test_the_shipped_profile_is_fitted_on_mlx_lm_0_31_alone() -> None:
    # validation/fit_engines.py FITTED_SHARES: the ten mlx-lm 0.31 points; the rest held out
    fitted = [p for p in _points() if p["release"] == "0.31"]
    assert len(fitted) == 10 and len(_points()) - len(fitted) == 24
    profile = yaml.safe_load((presets_dir() / "engines" / "mlx.yaml").read_text(encoding="utf-8"))
    assert profile["families"]["apple"]["points"] == len(fitted)
    assert list(profile["lines"]) == ["0.31"]
    assert "carried" not in profile["families"]["apple"]["fitted"]
