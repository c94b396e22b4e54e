"""`decodecalc validate` replays the serving benchmarks of a points file through the serving
model: the workload fields, the serving section, and the shipped points against the target."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import yaml

from decodecalc.answers.serving import prefill_share_s
from decodecalc.engine.scheduler import scheduler_limits
from decodecalc.engine.select import choose_engine
from decodecalc.errors import InputError
from decodecalc.loading.catalog import Catalog
from decodecalc.scenarios.workload import Workload
from tests.conftest import Run, preset_scenario

ROOT = Path(__file__).resolve().parents[2]
POINTS = ROOT / "validation" / "points.yaml"

ROW: dict[str, Any] = {
    "model": "llama-3.1-8b",
    "gpu": "h100-sxm",
    "weights": "bf16",
    "kv_dtype": "bf16",
    "batch": 8,
    "context": 1250,
    "ms_per_token": 9.0,
    "measured": "tpot_mean",
    "engine": "vllm",
    "group": "vllm/nvidia-datacenter",
    "source": "hand-written for this test",
}


def write(tmp_path: Path, *rows: dict[str, Any]) -> str:
    path = tmp_path / "points.yaml"
    path.write_text(yaml.safe_dump({"points": list(rows)}), encoding="utf-8")
    return str(path)


def test_serving_section_from_workload_fields(cli: Run, tmp_path: Path) -> None:
    serving = {**ROW, "input_len": 1000, "output_len": 500, "concurrency": 8, "ttft_ms": 40}
    path = write(tmp_path, serving, {**ROW, "batch": 1, "ms_per_token": 7.0})
    result = cli("validate", path, "--json")
    assert result.code == 0, result.err
    section = json.loads(result.out)["serving"]
    (point,) = section["points"]  # the row without a workload is not a serving point
    assert (point["input_len"], point["output_len"], point["concurrency"]) == (1000, 500, 8)
    assert point["tpot_error_pct"] == pytest.approx((point["tpot_ms"] / 9.0 - 1) * 100)
    assert point["ttft_error_pct"] == pytest.approx((point["ttft_ms"] / 40 - 1) * 100)
    assert section["summary"]["n"] == 1
    assert section["summary"]["tpot_mdape"] == pytest.approx(abs(point["tpot_error_pct"]))
    table = cli("validate", path)
    assert "serving: 1 benchmark points" in table.out and "TTFT" in table.out


def test_a_workload_needs_all_three_sizes(cli: Run, tmp_path: Path) -> None:
    result = cli("validate", write(tmp_path, {**ROW, "input_len": 1000, "output_len": 500}))
    assert result.code == 2
    assert result.err.count("\n") == 1 and "input_len, output_len and concurrency" in result.err


@pytest.mark.slow  # the whole shipped validation: 8 CPU-seconds, end to end
def test_shipped_serving_points_meet_the_tpot_target(shipped_validation: dict[str, Any]) -> None:
    """The serving rows of validation/points.yaml (DeepSeek-R1 on 8 x MI300X under SGLang
    and vLLM, Qwen3-8B, gpt-oss and DeepSeek on H100/H200/A100, Llama-3.3-70B NIM on
    2 x H100): the median absolute TPOT error is held to 15% (issue 13)."""
    summary = shipped_validation["serving"]["summary"]
    assert summary["n"] >= 35
    assert summary["tpot_mdape"] <= summary["tpot_target_pct"] == 15
    # Prefill at peak FLOP/s put TTFT a median 60-70% under on the rows the steady state
    # describes; the fitted prefill efficiencies and per-request costs (presets/engines)
    # bring it to about 30% in-sample and 50% with each group predicted by the others'.
    # The DeepSeek-R1 MI300X rows' TTFT (waves of requests started together, ttft_exclude)
    # is reported, never fitted, and stays about 99% under.
    assert summary["steady_ttft_mdape"] < 40
    assert summary["steady_left_out_ttft_mdape"] < 60
    assert summary["ttft_mdape"] > 80  # the bursts are still counted in the whole


def test_prefill_share_of_a_mean_tpot(catalog: Catalog) -> None:
    """What the other requests' prompts add to a mean TPOT, by hand. Llama-3.1-8B BF16 on an
    H100, 8 requests of 4,000 in / 101 out under vLLM's 8,192-token budget: each prompt is
    one chunk (n = 1), and TPOT - t_dec = (t_mix - t_dec) x n (R - 1) / (O - 1) = 0.07 x
    (t_mix - t_dec). The chunk's matmuls are 2 x 7,504,924,672 x 4,000 = 6.004e13 FLOPs =
    60.68 ms at 989.4 TFLOP/s, its causal attention at most 4 x 4,096 x 4,000^2 / 2 x 32
    layers = 4.19e12 = 4.24 ms more, and its KV written and read back 2 x 4,000 x 131,072 B
    = 0.31 ms at 3.35 TB/s: t_mix - t_dec is at most 65.23 ms. The decode step it overlaps
    with reads 15,009,849,344 weight bytes and 8 x 4,050 x 131,072 KV bytes: 5.75 ms. So
    the share lies between 0.07 x (60.68 - 5.75) = 3.85 ms and 0.07 x 65.23 = 4.57 ms."""
    scenario = preset_scenario(catalog, "llama-3.1-8b", batch=8)
    engine, _ = choose_engine(catalog, "vllm", scenario.gpu)
    limits = scheduler_limits(engine, scenario.gpu)
    assert limits.max_num_batched_tokens == 8192
    share = prefill_share_s(scenario, Workload(4000, 101, concurrency=8), limits)
    assert 3.85e-3 < share < 4.57e-3
    assert prefill_share_s(scenario, Workload(4000, 101, concurrency=1), limits) == 0
    with pytest.raises(InputError, match="closed loop"):
        prefill_share_s(scenario, Workload(4000, 101, request_rate=1.0), limits)


def test_an_excluded_ttft_is_reported_not_fitted(cli: Run, tmp_path: Path) -> None:
    """ttft_exclude keeps a TTFT out of the prefill fit but in validate's report; it needs
    a TTFT to speak of."""
    serving = {**ROW, "input_len": 1000, "output_len": 500, "concurrency": 8, "ttft_ms": 40}
    excluded = {**serving, "ttft_exclude": "a burst"}
    r = cli("validate", write(tmp_path, excluded), "--json")
    assert r.code == 0, r.err
    point = json.loads(r.out)["serving"]["points"][0]
    assert point["ttft_error_pct"] == pytest.approx((point["ttft_ms"] / 40 - 1) * 100)
    assert point["left_out_ttft_ms"] is None  # no fit held it out: none used it
    lonely = {k: v for k, v in excluded.items() if k != "ttft_ms"}
    r = cli("validate", write(tmp_path, lonely))
    assert r.code == 2 and "ttft_exclude" in r.err and "no ttft_ms" in r.err
