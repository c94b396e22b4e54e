"""validation/points.yaml: every published measurement in ../shared/validation mapped to a
scenario decodecalc resolves, each exactly once, with its engine, group and mapping notes;
and the fields measured points may carry, read strictly."""

from __future__ import annotations

import re
from collections import Counter
from functools import cache
from pathlib import Path
from typing import Any

import pytest
import yaml

from decodecalc.calibration.points import MEASURED_KINDS, read_points
from decodecalc.errors import InputError
from decodecalc.loading.catalog import Catalog, presets_dir

ROOT = Path(__file__).resolve().parents[2]
POINTS = ROOT / "validation" / "points.yaml"
MEASURED = ROOT.parent / "shared" / "validation" / "measured.yaml"
"""The collected measurements: beside the repository in CI, absent from an sdist."""

ENGINES = {path.stem for path in (presets_dir() / "engines").glob("*.yaml")}
"""The engine profiles a point may name."""

RECIPES = (
    "gpt-oss-mxfp4",
    "gguf-gpt-oss-mxfp4",
    "fp8-bf16-head",
    "nvfp4-bf16-head",
    "fp8-block128",
)
"""Weight recipes for mixed-precision checkpoints: the points that name one load once the
recipe is a preset."""

SOURCE_ROWS = 232
EXCLUDED = 6  # the phone CPU, four 8 x RTX 4090 layer-split rows, the 48 GB M3 Max 70B row


@cache
def _points() -> tuple[dict[str, Any], ...]:
    """Read once: the tests only read the mappings (pure-Python YAML takes ~1 s a file)."""
    points = yaml.safe_load(POINTS.read_text(encoding="utf-8"))["points"]
    assert isinstance(points, list)
    return tuple(points)


def _measured_rows() -> tuple[dict[str, Any], ...]:
    if not MEASURED.is_file():
        pytest.skip(f"{MEASURED} is not here (CI has it beside the repository; an sdist does not)")
    return _source_rows()


@cache
def _source_rows() -> tuple[dict[str, Any], ...]:
    rows = yaml.safe_load(MEASURED.read_text(encoding="utf-8"))["measured"]
    assert isinstance(rows, list)
    return tuple(rows)


def _read(points: list[dict[str, Any]], tmp_path: Path, catalog: Catalog) -> int:
    path = tmp_path / "points.yaml"
    path.write_text(yaml.safe_dump({"points": points}), encoding="utf-8")
    return len(read_points(path, catalog))


def test_every_point_without_a_recipe_loads(tmp_path: Path, catalog: Catalog) -> None:
    plain = [p for p in _points() if "exclude" not in p and p["weights"] not in RECIPES]
    # 232 rows - 6 excluded - 78 on recipes (38 fp8-bf16-head, 19 fp8-block128,
    # 16 gguf-gpt-oss-mxfp4, 4 gpt-oss-mxfp4, 1 nvfp4-bf16-head)
    assert len(plain) == 148
    assert _read(plain, tmp_path, catalog) == 148


@pytest.mark.parametrize("recipe", RECIPES)
def test_points_on_each_recipe_load(recipe: str, tmp_path: Path, catalog: Catalog) -> None:
    on_it = [p for p in _points() if "exclude" not in p and p["weights"] == recipe]
    assert on_it
    try:
        loaded = _read(on_it, tmp_path, catalog)
    except InputError as exc:
        if f"'{recipe}'" not in str(exc):
            raise
        pytest.skip(f"weight recipe {recipe!r} is not a preset yet; its {len(on_it)} points wait")
    assert loaded == len(on_it)


def test_excluded_points_stay_in_the_file_with_a_reason() -> None:
    excluded = [p for p in _points() if "exclude" in p]
    assert len(excluded) == EXCLUDED
    assert all(isinstance(p["exclude"], str) and p["exclude"].strip() for p in excluded)
    assert sum(p.get("gpu_count") == 8 for p in excluded) == 4  # the layer-split rows


def test_every_source_row_appears_exactly_once() -> None:
    rows = _measured_rows()
    assert len(rows) == SOURCE_ROWS
    points = _points()
    assert len(points) == SOURCE_ROWS
    source = Counter((r["source"], r["ms_per_token"]) for r in rows)
    mapped = Counter((p["source"], p["ms_per_token"]) for p in points)
    assert max(source.values()) == 1  # the pair identifies a row
    assert mapped == source


def test_every_point_names_its_engine_group_kind_and_rule() -> None:
    for i, p in enumerate(_points()):
        where = f"point {i} ({p['source'][:60]})"
        assert p.get("notes", "").strip(), where
        assert p["measured"] in MEASURED_KINDS, where
        assert p.get("engine_version", "").strip(), where
        if "exclude" not in p:  # the phone row's ExecuTorch has no profile
            assert p["engine"] in ENGINES, where
        engine, family = p["group"].split("/")
        assert engine == p["engine"] and family, where


def test_contexts_follow_the_source_rules() -> None:
    """NOTES.md's rules, recomputed from the source rows: llama-bench tg32 at depth N and
    llama-batched-bench PP N with TG 32 are at N + 32/2; tgN from an empty cache averages
    N/2; serving and LMDeploy rows are input + output/2."""
    checked = Counter[str]()
    for row, point in zip(_measured_rows(), _points(), strict=True):
        context = str(row["context"])
        if m := re.search(r"tg32 @ d(\d+)|PP (\d+) then TG 32", context):
            assert point["context"] == int(m.group(1) or m.group(2)) + 16
            checked["depth"] += 1
        elif m := re.fullmatch(r"tg ?(\d+)", context):
            assert point["context"] == int(m.group(1)) // 2
            checked["from empty"] += 1
        elif m := re.search(r"(?:prompt|input) (\d+), output (\d+)", context):
            assert point["context"] == int(m.group(1)) + int(m.group(2)) // 2
            checked["input + output/2"] += 1
    # 25 llama-bench + 12 llama-batched-bench; 51 tgN + 3 Metal tg; 15 LMDeploy,
    # 32 benchmark_latency and 18 dstack serving rows
    assert checked == {"depth": 37, "from empty": 54, "input + output/2": 65}


def test_serving_rows_take_the_mean_number_in_flight() -> None:
    """dstack's DeepSeek-R1 rows: max concurrency 128 held 125.1 requests in flight on
    average, so the live batch is 125, not 128."""
    pattern = re.compile(
        r"Mean in-flight requests \(completed\s+x mean E2E / duration\) = (\d+\.\d)"
    )
    checked = 0
    for row, point in zip(_measured_rows(), _points(), strict=True):
        if m := pattern.search(str(row.get("notes", ""))):
            assert point["batch"] == round(float(m.group(1)))
            checked += 1
    assert checked == 18


# The fields themselves, on small files.


def _write(tmp_path: Path, *points: dict[str, Any]) -> Path:
    path = tmp_path / "points.yaml"
    path.write_text(yaml.safe_dump({"points": list(points)}), encoding="utf-8")
    return path


BASE = {
    "model": "llama-3.1-8b",
    "gpu": "h100-sxm",
    "weights": "bf16",
    "kv_dtype": "bf16",
    "context": 1000,
    "ms_per_token": 7.5,
}


def test_labels_are_carried(tmp_path: Path, catalog: Catalog) -> None:
    labels = {
        "engine": "vllm",
        "engine_version": "v0.11.0",
        "group": "vllm/nvidia-datacenter",
        "measured": "tpot_mean",
        "gpu_count": 2,
        "tp": 2,
    }
    (point,) = read_points(_write(tmp_path, {**BASE, **labels}), catalog)
    assert (point.engine, point.engine_version, point.group) == (
        "vllm",
        "v0.11.0",
        "vllm/nvidia-datacenter",
    )
    assert (point.measured, point.gpu_count, point.scenario.tp) == ("tpot_mean", 2, 2)
    assert point.measured_seconds == pytest.approx(0.0075)


def test_an_excluded_point_is_read_but_not_resolved(tmp_path: Path, catalog: Catalog) -> None:
    phone = {**BASE, "gpu": "a-phone-cpu", "exclude": "not a GPU"}
    (point,) = read_points(_write(tmp_path, BASE, phone), catalog)
    assert point.scenario.gpu is not None and point.scenario.gpu.id == "h100-sxm"
    # Still strict: a misspelt field of an excluded point is an error.
    with pytest.raises(InputError, match="unknown field"):
        read_points(_write(tmp_path, BASE, {**phone, "engin": "x"}), catalog)


def test_a_file_of_excluded_points_has_nothing_to_use(tmp_path: Path, catalog: Catalog) -> None:
    with pytest.raises(InputError, match="every point is excluded"):
        read_points(_write(tmp_path, {**BASE, "exclude": "reason"}), catalog)


def test_an_unknown_measured_kind_suggests_the_known(tmp_path: Path, catalog: Catalog) -> None:
    with pytest.raises(InputError, match="did you mean 'tpot_mean'"):
        read_points(_write(tmp_path, {**BASE, "measured": "tpot-mean"}), catalog)


def test_gpu_count_is_at_least_tp(tmp_path: Path, catalog: Catalog) -> None:
    with pytest.raises(InputError, match=r"gpu_count: must be at least tp \(2\), got 1"):
        read_points(_write(tmp_path, {**BASE, "tp": 2, "gpu_count": 1}), catalog)
