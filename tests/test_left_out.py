"""`decodecalc validate`'s leave-out figures (summary.left_out): each group, model, GPU and
release line predicted by profiles fitted without it, checked against a recomputation that
shares only the fit itself with the code under test."""

from __future__ import annotations

import json
import statistics
from pathlib import Path
from typing import Any

import pytest
import yaml

from decodecalc.calibration.points import read_points, release_order
from decodecalc.calibration.validation import (
    Labelled,
    bands,
    fit_engines,
    labelled,
    profiles_of,
    stand_in,
)
from decodecalc.engine.profile import Engine
from decodecalc.loading.catalog import Catalog
from decodecalc.step.step import expected_for
from tests.conftest import Run
from tests.test_validate import EXPECTED_MS, POINTS, ROOFLINE_MS, toy

__all__ = ["toy"]
"""The toy points and profile of test_validate, a fixture both files use."""

UNITS = ("group", "model", "gpu", "release")


def test_every_way_of_leaving_out_is_reported(shipped_validation: dict[str, Any]) -> None:
    """Four ways, each with its figures in percent; the group's are the existing logo_*
    figures (additions only: their meaning is unchanged)."""
    summary = shipped_validation["summary"]
    assert set(summary["left_out"]) == set(UNITS)
    for figures in summary["left_out"].values():
        assert set(figures) == {"units", "n", "mdape", "p90", "band_coverage"}
        assert 0 <= figures["mdape"] <= figures["p90"]
        assert 0 <= figures["band_coverage"] <= 100
    group = summary["left_out"]["group"]
    assert (group["mdape"], group["p90"]) == (summary["logo_mdape"], summary["logo_p90"])
    assert group["n"] == summary["n"]
    # Points with a release line are those validation/points.yaml gives one (and that count).
    counted = [p for p in yaml.safe_load(POINTS.read_text())["points"] if "exclude" not in p]
    assert summary["left_out"]["release"]["n"] == sum(1 for p in counted if "release" in p)


def test_a_single_line_is_predicted_by_the_roofline(cli: Run, toy: tuple[Path, Path]) -> None:
    """The toy's three points are one group, one model, one GPU and one release line: left
    out in any way, no profile is left and the roofline predicts them, 4.519678 ms against
    9.039356 / (1 + e) ms measured for e = 0, 0.1, -0.2: errors -50, -45, -60 %, median 50,
    p90 50 + 0.8 x (60 - 50) = 58; the roofline's band is the roofline alone, which holds
    none of the measured figures (all above it)."""
    path, presets = toy
    points = yaml.safe_load(path.read_text())
    for p in points["points"]:
        p["release"] = "1.0"
    path.write_text(yaml.safe_dump(points))
    doc = json.loads(cli("validate", str(path), "--presets", str(presets), "--json").out)
    assert pytest.approx(2 * ROOFLINE_MS) == EXPECTED_MS
    for unit in UNITS:
        figures = doc["summary"]["left_out"][unit]
        assert figures == pytest.approx(
            {"units": 1, "n": 3, "mdape": 50.0, "p90": 58.0, "band_coverage": 0.0}
        ), unit


def test_a_release_line_that_is_no_number_is_refused(cli: Run, toy: tuple[Path, Path]) -> None:
    path, presets = toy
    points = yaml.safe_load(path.read_text())
    points["points"][0]["release"] = "latest"
    path.write_text(yaml.safe_dump(points))
    r = cli("validate", str(path), "--presets", str(presets))
    assert r.code == 2 and "release" in r.err and "\n" not in r.err.strip()


def _recomputed(items: list[Labelled], key: Any, keep: Any) -> dict[str, float]:
    """Leave each key out, fit on what ``keep`` allows, predict as --engine resolves;
    median, 90th percentile (statistics' inclusive method interpolates between ranks) and
    the share inside the band, in percent."""
    errors, inside = [], 0
    for unit in sorted({key(p) for p in items if key(p) is not None}):
        held = [p for p in items if key(p) == unit]
        train = [p for p in items if keep(p, held[0])]
        profiles = profiles_of(bands(train, fit_engines(train)))
        for p in held:
            params, _ = stand_in(profiles, p.engine, p.family)
            e = expected_for(p.step, p.row, Engine(p.engine, params, p.family))
            errors.append(abs(e.seconds / p.terms.measured_s - 1) * 100)
            inside += e.low_seconds <= p.terms.measured_s <= e.high_seconds
    return {
        "n": len(errors),
        "mdape": statistics.median(errors),
        "p90": statistics.quantiles(errors, n=10, method="inclusive")[-1],
        "band_coverage": 100 * inside / len(errors),
    }


def _older(p: Labelled, held: Labelled) -> bool:
    if p.engine != held.engine:
        return True
    return p.point.release is not None and release_order(p.point.release) < release_order(
        held.point.release or ""
    )


@pytest.mark.slow
def test_figures_match_an_independent_recomputation(
    shipped_validation: dict[str, Any], catalog: Catalog
) -> None:
    """Every left-out figure of the shipped points, recomputed by a loop of its own."""
    items = labelled(read_points(POINTS, catalog), catalog)
    keys = {
        "group": lambda p: p.group,
        "model": lambda p: p.point.scenario.model.id,
        "gpu": lambda p: p.point.scenario.gpu.id,
        "release": lambda p: f"{p.engine}@{p.point.release}" if p.point.release else None,
    }
    for unit, key in keys.items():
        keep = _older if unit == "release" else (lambda p, h, k=key: k(p) != k(h))
        expected = _recomputed(items, key, keep)
        got = shipped_validation["summary"]["left_out"][unit]
        assert {k: got[k] for k in expected} == pytest.approx(expected), unit


def test_release_lines_order_as_numbers() -> None:
    assert release_order("0.7") < release_order("0.10") < release_order("0.11")
    assert release_order("2023-12") < release_order("2024-05")
