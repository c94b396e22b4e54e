"""Engine release lines (--engine NAME@LINE) and honest bands: widened outside the fitted
range, carried onto serving's TPOT and TTFT (issue 19, sections 2 and 4)."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from decodecalc.answers.serving import serve
from decodecalc.engine.profile import (
    Engine,
    EngineParams,
    EngineProfile,
    FitRange,
    ReleaseLine,
)
from decodecalc.engine.scheduler import scheduler_limits
from decodecalc.engine.select import Facts, at_line, beyond, choose_engine, extrapolated, widened
from decodecalc.loading.catalog import Catalog
from decodecalc.record import replace
from decodecalc.scenarios.workload import Workload
from tests.conftest import Run, preset_scenario

RANGE = FitRange(
    params_min=7_000_000_000,
    params_max=70_000_000_000,
    kinds=("dense",),
    batch_min=1,
    batch_max=64,
    context_min=128,
    context_max=8192,
    gpus=("h100-sxm",),
    lines=("0.4",),
    outside_band=(0.6, 2.5),
)
OLD = EngineParams(weight_efficiency=0.5, kv_efficiency=0.5, band=(0.9, 1.2), range=RANGE)
NEW = EngineParams(weight_efficiency=0.8, kv_efficiency=0.8, band=(0.9, 1.2))
POOLED = EngineParams(weight_efficiency=0.7, kv_efficiency=0.7, band=(0.9, 1.2))
PROFILE = EngineProfile(
    "toy",
    "Toy",
    (("nvidia-datacenter", POOLED), ("amd-instinct", POOLED)),
    lines=(
        ReleaseLine("0.4", params_by_family=(("nvidia-datacenter", OLD),), points=5),
        ReleaseLine("0.5", params_by_family=(("nvidia-datacenter", NEW),), points=5),
    ),
)


def test_a_line_selected_by_at() -> None:
    """'@0.4' takes line 0.4's own e_w (0.5); no '@' the newest line, 0.5 (e_w 0.8); a
    family the line was not fitted on keeps the fit over every line (e_w 0.7)."""
    old = at_line(PROFILE, "0.4", "nvidia-datacenter")
    assert dict(old.families)["nvidia-datacenter"].weight_efficiency == 0.5
    assert old.line == "0.4"
    newest = at_line(PROFILE, None, "nvidia-datacenter")
    assert dict(newest.families)["nvidia-datacenter"].weight_efficiency == 0.8
    assert newest.line == "0.5"
    assert dict(newest.families)["amd-instinct"].weight_efficiency == 0.7


def test_a_newer_line_than_fitted_takes_the_newest_older_one() -> None:
    """Line 0.6 is not kept: 0.5, the newest line not newer than it, stands in."""
    view = at_line(PROFILE, "0.6", "nvidia-datacenter")
    assert dict(view.families)["nvidia-datacenter"].weight_efficiency == 0.8
    assert view.line == "0.6"


def _apart_on_amd(pooled: EngineParams, held: tuple[str, ...], apart: str) -> EngineProfile:
    """A profile whose pooled amd-instinct fit holds the ``held`` lines' points, and a
    newer line ``apart`` fitted apart there (e_w 0.8, validation/fit_engines.py:
    with_lines)."""
    lines = (*(ReleaseLine(x, points=5) for x in held), ReleaseLine(apart, points=5))
    lines = (*lines[:-1], replace(lines[-1], params_by_family=(("amd-instinct", NEW),)))
    return EngineProfile("toy", "Toy", (("amd-instinct", pooled),), lines=lines)


def test_a_line_fitted_apart_does_not_stand_in_for_older_lines() -> None:
    """The pooled amd-instinct fit (e_w 0.7) holds line 0.4's points (its range's lines);
    line 0.5 was fitted apart on amd-instinct (e_w 0.8, validation/fit_engines.py:
    with_lines). '@0.4' keeps the pooled fit, which holds its points; no '@' takes 0.5.
    Where the pooled fit holds 0.5 too, 0.5 stands in for 0.4 as before (the oldest newer
    line fitted there)."""
    pooled = replace(POOLED, range=RANGE)  # lines ("0.4",)
    profile = _apart_on_amd(pooled, ("0.4",), "0.5")
    assert dict(at_line(profile, "0.4", "amd-instinct").families)["amd-instinct"] == pooled
    assert dict(at_line(profile, None, "amd-instinct").families)["amd-instinct"] == NEW
    both = replace(pooled, range=replace(RANGE, lines=("0.4", "0.5")))
    profile = replace(profile, params_by_family=(("amd-instinct", both),))
    assert dict(at_line(profile, "0.4", "amd-instinct").families)["amd-instinct"] == NEW


def test_a_line_fitted_apart_stands_in_for_a_release_nearer_to_it() -> None:
    """The pooled amd-instinct fit holds lines 0.7 and 0.10; line 0.19 was fitted apart.
    A release past them both takes the nearer, counted in releases: 0.17 lies 2 before
    0.19 and 7 past 0.10 (0.19 stands in), 0.11 1 past 0.10 and 8 before 0.19 (the pooled
    fit), 0.14 4 past and 5 before (pooled), 0.15 5 past and 4 before (0.19); 0.6 and 0.8
    are not past the pooled lines (pooled)."""
    pooled = replace(POOLED, range=replace(RANGE, lines=("0.7", "0.10")))
    profile = _apart_on_amd(pooled, ("0.7", "0.10"), "0.19")
    taken = {
        line: dict(at_line(profile, line, "amd-instinct").families)["amd-instinct"]
        for line in ("0.6", "0.8", "0.11", "0.14", "0.15", "0.17", "0.18")
    }
    assert taken == {
        "0.6": pooled,
        "0.8": pooled,
        "0.11": pooled,
        "0.14": pooled,
        "0.15": NEW,
        "0.17": NEW,
        "0.18": NEW,
    }


def test_the_shipped_vllm_lines_on_amd(cli: Run) -> None:
    """vLLM 0.19 (ATOM's plugin, MI355X, May 2026) is vLLM's own line on AMD Instinct:
    no '@' takes it there, with no transfer; '@0.10' keeps the 2025 pooled fit."""
    args = ("estimate", "-m", "gpt-oss-120b", "-g", "mi355x", "--json", "--engine")
    doc = json.loads(cli(*args, "vllm").out)
    assert doc["inputs"]["engine_line"] == "0.19"
    assert not any(n["code"] == "engine-transferred" for n in doc["notes"])
    old = json.loads(cli(*args, "vllm@0.10").out)
    assert old["inputs"]["engine_line"] == "0.10"
    # the 2025 fit's 444 us per MoE layer: the older line runs slower
    assert old["rows"][0]["expected_ms_per_token"] > doc["rows"][0]["expected_ms_per_token"]


def test_the_shipped_sglang_lines(cli: Run) -> None:
    """validation/points.yaml holds SGLang 0.4.2 points on MI300X and 0.5.3 on H100: no
    '@' takes today's line, 0.5, everywhere (issue 28); on an MI300X 0.5 has no points,
    so its H100 rates transfer with AMD's vendor factor and a note says so; '@0.4' keeps
    the older line's own MI300X fit. The factor is fitted on AMD's points of the twelve
    months before 2026-12-02 alone: vLLM 0.19's MI355X points of May 2026 (SGLang 0.4.2
    and vLLM 0.10.0 are older), each predicted through the MI355X's own link latency,
    its streaming efficiencies at AMD's GEMMs' share of bandwidth over NVIDIA's (x0.85)
    and its fixed costs through the kernels' fixed times, x1.10, each MoE layer the
    MI300X's fused MoE kernel's 43.03 us (engine/transfer.py across): x1.24 for MoE
    models, and x1.00 for dense ones (no dense point: validation/fit_engines.py
    vendor_factors)."""
    args = ("estimate", "-m", "llama-3.1-8b", "--json", "--engine")
    doc = json.loads(cli(*args, "sglang", "-g", "h100-sxm").out)
    assert doc["inputs"]["engine"] == "sglang" and doc["inputs"]["engine_line"] == "0.5"
    assert not any(n["code"] == "engine-older-line" for n in doc["notes"])
    for engine in ("sglang", "sglang@0.5"):
        doc = json.loads(cli(*args, engine, "-g", "mi300x").out)
        assert doc["inputs"]["engine_line"] == "0.5"
        (moved,) = [n["message"] for n in doc["notes"] if n["code"] == "engine-transferred"]
        assert moved.startswith("sglang@0.5 has no points on amd-instinct GPUs: sglang@0.5's")
        assert "its streaming x0.85 (the kernels' share of bandwidth)" in moved
        assert "fixed costs x1.10 (the kernels' fixed times)" in moved
        assert "43.0 us per MoE layer (its MoE kernel's)" in moved
        # the MoE factor refits with every fit (x1.24-x1.25 since 2026-12-02)
        assert re.search(r"x1\.00 for amd-instinct dense models and x1\.2\d for MoE models", moved)
        assert "vllm@0.19 on mi355x" in moved
        assert not any(n["code"] == "engine-older-line" for n in doc["notes"])
    doc = json.loads(cli(*args, "sglang@0.4", "-g", "mi300x").out)  # the line asked for
    assert doc["inputs"]["engine_line"] == "0.4"
    assert not any(n["code"] in ("engine-older-line", "engine-transferred") for n in doc["notes"])


POINT = "{model: llama-3.1-8b, gpu: h100-sxm, weights: bf16, kv_dtype: bf16, tp: 1, batch: 1"
FILES = {
    "deployment": "model: llama-3.1-8b\ngpu: h100-sxm\nengine: sglang@0.9\n"
    "targets:\n  max_ms_per_token: 40\n",
    "points": f"points:\n- {POINT}, context: 512, ms_per_token: 7.5}}\n"
    f"- {POINT}, context: 4096, ms_per_token: 7.9}}\n",
}
"""A deployment file naming an unknown line, and points for calibrate --engine NAME@LINE."""


@pytest.mark.parametrize("where", ["--engine", "deployment", "calibrate"])
def test_unknown_line_is_one_line_exit_2(cli: Run, tmp_path: Path, where: str) -> None:
    if where == "--engine":
        result = cli("estimate", "-m", "llama-3.1-8b", "-g", "h100-sxm", "--engine", "sglang@0.9")
    elif where == "deployment":
        path = tmp_path / "d.yaml"
        path.write_text(FILES["deployment"], encoding="utf-8")
        result = cli("check", str(path))
    else:
        path = tmp_path / "points.yaml"
        path.write_text(FILES["points"], encoding="utf-8")
        result = cli("calibrate", str(path), "--engine", "sglang@0.9")
    assert result.code == 2
    lines = result.err.strip().splitlines()
    assert len(lines) == 1, result.err
    assert "unknown release line '0.9' of sglang" in lines[0]
    assert "0.4, 0.5" in lines[0]  # the lines there are
    assert "did you mean" in lines[0]


def test_extrapolated_axes_in_words() -> None:
    """A 671B MoE model at batch 128 on an H200, line 0.5: five ways outside RANGE."""
    facts = Facts(671_000_000_000, "moe", 128, "h200", "0.5", context=4096)
    axes = extrapolated(RANGE, facts)
    assert len(axes) == 5
    assert axes[0] == "671B params (fitted 7B-70B)"
    assert axes[2] == "batch above the fitted 1-64"
    inside = Facts(8_000_000_000, "dense", 8, "h100-sxm", "0.4", context=1024)
    assert extrapolated(RANGE, inside) == ()


def test_band_widened_outside_the_range_by_hand(catalog: Catalog) -> None:
    """Widening takes the wider of each side: low min(0.9, 0.6) = 0.6, high max(1.2, 2.5)
    = 2.5. On Llama-3.1-8B at batch 1 (inside RANGE but for the GPU: an H200 is not the
    H100 it was fitted on), e_w = e_kv = 0.5 doubles the streaming time at 4.8 TB/s: the
    weights stream 16.06 GB less the input embedding, looked up not streamed (128,256 x
    4,096 x 2 B = 1.05 GB), 15.01 GB: 3.128 ms; the KV at 1,024 tokens is 1,024 x 32
    layers x 8 KV heads x 128 x 2 (K, V) x 2 B = 134.2 MB: 0.028 ms; expected 2 x 3.156 =
    6.31 ms, its band 0.6 x to 2.5 x that."""
    assert widened(OLD).band == (0.6, 2.5)
    scenario = preset_scenario(catalog, "llama-3.1-8b", gpu="h200")
    engine = Engine("toy", (OLD,), "nvidia-datacenter", ("toy",), line="0.4")
    facts = Facts(scenario.model.total_params(), "dense", 1, "h200", "0.4")
    wide, axes = beyond(engine, facts)
    assert axes == ("h200 (fitted h100-sxm)",)
    assert wide.params[0].band == (0.6, 2.5)
    from decodecalc.step.step import StepModel

    row = StepModel.of(replace(scenario, engine=wide)).row(1024)
    assert row.expected is not None
    e = row.expected
    assert e.seconds == pytest.approx(6.31e-3, rel=2e-3)
    assert e.low_seconds == pytest.approx(0.6 * e.seconds)
    assert e.high_seconds == pytest.approx(2.5 * e.seconds)


def test_serving_band_fields_by_hand(catalog: Catalog) -> None:
    """The step band's ratios carry onto TPOT; TTFT's c_req (20 ms) stays outside it:
    ttft_low = (ttft - 0.02) x 0.8 + 0.02."""
    params = EngineParams(
        weight_efficiency=0.5, kv_efficiency=0.5, band=(0.8, 1.5), per_request_s=0.02
    )
    scenario = preset_scenario(catalog, "llama-3.1-8b")
    vllm, _ = choose_engine(catalog, "vllm", scenario.gpu)
    engine = Engine("vllm", (params,), "nvidia-datacenter", ("vllm",), vllm.serving)
    scenario = replace(scenario, engine=engine)
    result = serve(
        scenario, Workload(1000, 101, concurrency=4), scheduler_limits(engine, scenario.gpu)
    )
    assert result.tpot_low_s == pytest.approx(0.8 * result.tpot_s)
    assert result.tpot_high_s == pytest.approx(1.5 * result.tpot_s)
    assert result.ttft_low_s == pytest.approx((result.ttft_s - 0.02) * 0.8 + 0.02)
    assert result.ttft_high_s == pytest.approx((result.ttft_s - 0.02) * 1.5 + 0.02)


@pytest.mark.parametrize("engine", ["vllm", "roofline", "typical", "sglang@0.4"])
def test_serving_rows_order_low_value_high(cli: Run, engine: str) -> None:
    result = cli(
        "serving", "-m", "llama-3.1-8b", "-g", "h100-sxm", "--engine", engine,
        "--input-len", "1000", "--output-len", "200", "--concurrency", "1,8,64", "--json",
    )  # fmt: skip
    assert result.code == 0, result.err
    for row in json.loads(result.out)["rows"]:
        assert row["tpot_low_ms"] <= row["tpot_ms"] <= row["tpot_high_ms"]
        assert row["ttft_low_ms"] <= row["ttft_ms"] <= row["ttft_high_ms"]


def test_engines_lists_lines(cli: Run) -> None:
    result = cli("engines", "--json")
    assert result.code == 0
    rows = {r["family"]: r for r in json.loads(result.out)["engines"] if r["id"] == "sglang"}
    assert rows["nvidia-datacenter"]["newest_line"] == "0.5"
    assert rows["amd-instinct"]["newest_line"] == "0.5"  # transferred there (issue 28)
    rows = list(rows.values())
    releases = [x["release"] for x in rows[0]["lines"]]
    assert releases == ["0.4", "0.5"]
    assert rows[0]["lines"][0]["versions"] == ["0.4.2.post4 (rocm/sglang-staging:20250212)"]


def test_engines_gives_the_band_outside_the_range(cli: Run) -> None:
    """engines --json holds both bands: band_* inside the fitted range, outside_band_* the
    wider one a scenario beyond it takes (the band as it was before 2026-12-02), each the
    wider of the parameters' band and the range's outside band on its side (widened)."""
    for r in json.loads(cli("engines", "--json").out)["engines"]:
        assert r["outside_band_low"] <= r["band_low"] <= 1 <= r["band_high"]
        assert r["band_high"] <= r["outside_band_high"]
    spread = EngineParams(1.0, 1.0, band=(0.8, 1.3), range=replace(RANGE, outside_band=(0.6, 1.2)))
    assert widened(spread).band == (0.6, 1.3)  # low from the range, high from its own band


def test_outside_band_from_the_residuals_outside_their_range_by_hand() -> None:
    """30 left-out ratios on one family: 20 inside their predictor's range (0.90, 0.92,
    0.94, fourteen at 1.0, 1.06, 1.08, 1.10), 10 outside it at 0.5-0.9 and 1.1-1.5.

    The band inside the range is the conformal 80% interval of the 20 inside alone: the
    floor(21 x 0.1) = 2nd and ceil(21 x 0.9) = 19th smallest, 0.92 and 1.08. Outside it,
    the wider of the band over all 30, the floor(31 x 0.1) = 3rd and ceil(31 x 0.9) = 28th
    smallest (0.7 and 1.3), and the band of the 10 outside, fewer than 20 so pooled over
    every family: the floor(11 x 0.1) = 1st and ceil(11 x 0.9) = 10th smallest, 0.5 and
    1.5."""
    from types import SimpleNamespace

    from decodecalc.calibration.validation import ALL_FAMILIES, outside_bands

    point = SimpleNamespace(family="f")
    near = [0.90, 0.92, 0.94, *[1.0] * 14, 1.06, 1.08, 1.10]
    outside = [0.5, 0.6, 0.7, 0.8, 0.9, 1.1, 1.2, 1.3, 1.4, 1.5]
    found = [(point, "group", r, False) for r in near]
    found += [(point, "model", r, True) for r in outside]
    table = outside_bands(found)  # type: ignore[arg-type]
    for family in ("f", ALL_FAMILIES):
        band, wide = table[family]
        assert band == pytest.approx((0.92, 1.08))
        assert wide == pytest.approx((0.5, 1.5))


def test_engines_shows_what_engine_name_takes(cli: Run) -> None:
    """vLLM on H100-class GPUs: --engine vllm takes the 0.11 line (the newest fitted there), so the
    listing's row shows that line's figures as presets/engines/vllm.yaml writes them under ``lines:
    '0.11': families: nvidia-datacenter`` (7 points; its all-reduces priced by the kernel tables, so
    no fitted latency), not the fit pooled over the 0.10 and 0.11 lines (9 points), which the JSON
    record keeps beside it."""
    import yaml

    from decodecalc.loading.catalog import presets_dir

    doc = yaml.safe_load((presets_dir() / "engines" / "vllm.yaml").read_text())
    line = doc["lines"]["0.11"]["families"]["nvidia-datacenter"]
    pooled = doc["families"]["nvidia-datacenter"]
    rows = {
        r["family"]: r
        for r in json.loads(cli("engines", "--json").out)["engines"]
        if r["id"] == "vllm"
    }
    row = rows["nvidia-datacenter"]
    assert row["points"] == pooled["points"] == 9
    taken = row["taken"]
    assert taken["line"] == row["newest_line"] == "0.11"
    assert taken["weight_efficiency"] == line["weight_efficiency"]
    assert taken["points"] == line["points"] == 7
    # the kernel tables price its all-reduces (no latency fitted: the file holds none)
    assert taken["allreduce_latency_us"] is None and "allreduce_latency" not in line
    estimate = cli("estimate", "-m", "llama-3.1-8b", "-g", "h100-sxm", "--engine", "vllm", "--json")
    assert json.loads(estimate.out)["inputs"]["engine_line"] == "0.11"
    table = [x.split("│") for x in cli("engines").out.splitlines() if x.startswith(" vllm ")]
    e_w = f"{line['weight_efficiency']:.2f}"
    assert [c.strip() for c in table[0][:4]] == ["vllm", "nvidia-datacenter", "0.11", e_w]
