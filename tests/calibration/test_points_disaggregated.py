"""validation/points-disaggregated.yaml: published disaggregated prefill/decode measurements,
each mapped to the two pools it ran and replayed through the two-pool serving model with its
real split (decodecalc/calibration/disaggregated_points.py); an out-of-sample set, never
fitted."""

from __future__ import annotations

from functools import cache
from pathlib import Path
from typing import Any

import pytest
import yaml

from decodecalc.calibration.disaggregated_points import (
    FIGURES,
    MEASURED_POOLS,
    read_disaggregated_points,
    replay,
)
from decodecalc.errors import InputError
from decodecalc.loading.catalog import Catalog, presets_dir
from tests.conftest import Run

ROOT = Path(__file__).resolve().parents[2]
POINTS = ROOT / "validation" / "points-disaggregated.yaml"
ENGINES = {path.stem for path in (presets_dir() / "engines").glob("*.yaml")}


@cache
def _points() -> tuple[dict[str, Any], ...]:
    return tuple(yaml.safe_load(POINTS.read_text(encoding="utf-8"))["points"])


def test_the_points_load_with_their_split(catalog: Catalog) -> None:
    read = read_disaggregated_points(POINTS, catalog)
    # LMSYS 96 x H100: the decode pool and the prefill pool at 3 prompt lengths; vLLM GB200: the
    # prefill pool; LMSYS GB200 part II: the decode pool and both precisions' prefill pools
    assert len(read) == len(_points()) == 8
    decode = read[0]
    # LMSYS 2025-05-05: decode on 9 nodes x 8 H100 (EP72, DP attention), prefill on 4 nodes (EP32)
    pools = decode.pools
    assert (pools.decode.tp, pools.decode.gpus, pools.prefill.tp) == (72, 72, 32)
    assert decode.pools.decode.dp_attention and decode.pools.prefill.dp_attention
    assert decode.pools.decode.eplb_redundant == decode.pools.prefill.eplb_redundant == 32


@pytest.mark.parametrize("field", ["source", "engine", "engine_version", "release", "notes"])
def test_every_point_says_where_it_comes_from(field: str) -> None:
    for p in _points():
        assert isinstance(p.get(field), str) and p[field].strip(), (field, p["source"])


def test_labels_name_real_profiles_and_kinds() -> None:
    for p in _points():
        assert p["engine"] in ENGINES
        assert p["measured"] in MEASURED_POOLS
        assert "published as: " in p["notes"]
        text = (p["source"] + p["notes"]).lower()
        assert "inferencex" not in text and "cookbook" not in text  # reserved, never a source


@pytest.mark.parametrize(
    ("index", "figure", "expected"),
    [
        # 22,282 tok/s per node of 8 GPUs at 256 requests a GPU: 256 / (22,282 / 8) s
        (0, "tpot_ms", 256 / (22_282 / 8) * 1000),
        (0, "output_tok_s_per_decode_gpu", 22_282 / 8),
        # 57,674, 54,543 and 50,302 input tok/s per node of 8 GPUs at 1K, 2K and 4K prompts
        (1, "input_tok_s_per_prefill_gpu", 57_674 / 8),
        (2, "input_tok_s_per_prefill_gpu", 54_543 / 8),
        (3, "input_tok_s_per_prefill_gpu", 50_302 / 8),
        # GB200: 13,386 output tok/s per GPU at 1,408 requests a rank: 1,408 / 13,386 s
        (5, "tpot_ms", 1408 / 13_386 * 1000),
        (5, "decode_batch", 1408 * 48),
    ],
)
def test_the_mapped_figures_follow_from_the_published_ones(
    index: int, figure: str, expected: float
) -> None:
    assert _points()[index][figure] == pytest.approx(expected, abs=0.01)


def test_the_h100_points_ran_their_published_batch_and_prompts() -> None:
    assert _points()[0]["decode_batch"] == 256 * 72
    assert [p["input_len"] for p in _points()[1:4]] == [1000, 2000, 4096]


def test_the_replay_runs_on_every_point_and_gives_every_figure(catalog: Catalog) -> None:
    for point in read_disaggregated_points(POINTS, catalog):
        check = replay(point)
        if check.problem is not None:  # refused, with its reason, as the serving replay does
            assert not check.predicted and not check.errors
            continue
        assert set(check.predicted) == set(point.figures) <= set(FIGURES)
        for error in check.errors.values():
            assert -1 < error < 10  # finite and positive predictions


def test_a_pool_that_cannot_hold_the_model_is_refused_with_its_reason(catalog: Catalog) -> None:
    """vLLM's GB200 prefill instances of 2 GPUs offload half the MoE weights to the CPU,
    which decodecalc does not model: 2 GB200s cannot hold DeepSeek-R1 in NVFP4 with a whole
    copy of its BF16 attention on each (the 58 x 256 routed experts of 3 x 7,168 x 2,048
    parameters at 4.5 bits are 368 GB, 184 GB a GPU, past 0.9 of its 186 GiB)."""
    assert 58 * 256 * 3 * 7168 * 2048 * 4.5 / 8 / 2 > 0.9 * 186 * 2**30
    points = read_disaggregated_points(POINTS, catalog)
    for index in (4, 6):  # vLLM's and SGLang's 2-GPU GB200 prefill instances
        check = replay(points[index])
        assert check.problem is not None and "cannot hold the model" in check.problem


def test_a_decode_pool_is_priced_whatever_its_prefill_workers_hold(catalog: Catalog) -> None:
    """SGLang's GB200 decode pool ran beside 2-GPU prefill instances that offload weights;
    its figures depend on the decode workers alone, so it is predicted, not refused."""
    check = replay(read_disaggregated_points(POINTS, catalog)[5])
    assert check.problem is None and set(check.predicted) == {
        "tpot_ms",
        "output_tok_s_per_decode_gpu",
    }


def test_a_decode_point_predicts_tpot_and_throughput_as_one_step(catalog: Catalog) -> None:
    # TPOT and output per decode GPU are one decode step seen two ways: batch / step / GPUs
    point = read_disaggregated_points(POINTS, catalog)[0]
    check = replay(point)
    per_gpu = 18_432 / (check.predicted["tpot_ms"] / 1000) / 72
    assert check.predicted["output_tok_s_per_decode_gpu"] == pytest.approx(per_gpu)


def test_a_point_without_the_figure_its_kind_needs_is_one_line(
    catalog: Catalog, tmp_path: Path
) -> None:
    point = dict(_points()[0])
    del point["decode_batch"]
    bad = tmp_path / "points.yaml"
    bad.write_text(yaml.safe_dump({"points": [point]}), encoding="utf-8")
    with pytest.raises(InputError, match="decode_batch"):
        read_disaggregated_points(bad, catalog)


def test_data_parallel_attention_splits_no_heads(catalog: Catalog) -> None:
    # DeepSeek-V3's 128 heads do not divide over 72 GPUs, but under DP attention each rank
    # holds whole attention (SGLang's 9-node EP72 decode worker); under TP they must divide
    from decodecalc.record import replace
    from decodecalc.resolving.resolve import resolve
    from decodecalc.scenarios.spec import ScenarioSpec

    spec = ScenarioSpec(model="deepseek-v3", gpu="h100-sxm", tp=72, ep=True, eplb_redundant=32)
    assert resolve(replace(spec, dp_attention=True), catalog).tp == 72
    with pytest.raises(InputError, match="attention heads"):
        resolve(spec, catalog)


def test_a_dp_attention_prefill_worker_computes_a_prompt_on_every_rank(catalog: Catalog) -> None:
    # Each of the 32 ranks prefills its own prompt, the 32 sharing a pass: the worker's
    # saturation is 32 prompts per pass, above a worker computing one prompt at a time
    from decodecalc.answers.disaggregated import pool_rates, prefill_ranks
    from decodecalc.calibration.disaggregated_points import workload_of
    from decodecalc.engine.scheduler import scheduler_limits

    point = read_disaggregated_points(POINTS, catalog)[2]
    pools = point.pools
    assert prefill_ranks(pools.prefill) == 32
    limits = scheduler_limits(pools.decode.engine, pools.decode.gpu)
    rates = pool_rates(pools, workload_of(point), limits, 1)
    assert rates.input_per_prefill_gpu == pytest.approx(32 * 2000 / rates.prefill_s / 32)


def test_a_deployment_point_is_held_to_the_whole_server(catalog: Catalog, tmp_path: Path) -> None:
    """A whole deployment at a closed loop's concurrency: its TPOT, TTFT and output per GPU
    are serving's with the same split (docs/serving.md's worked 1P2D on H200s)."""
    from decodecalc.answers.disaggregated import serve_disaggregated
    from decodecalc.calibration.disaggregated_points import workload_of
    from decodecalc.engine.scheduler import scheduler_limits

    point = {
        **{"model": "deepseek-r1", "weights": "fp8", "kv_dtype": "bf16", "gpu": "h200"},
        **{"tp": 8, "ep": True, "dp_attention": True, "prefill_workers": 1, "decode_workers": 2},
        "prefill": {"tp": 8, "ep": False, "dp_attention": False},
        **{"input_len": 8192, "output_len": 1024, "concurrency": 128, "measured": "deployment"},
        **{"tpot_ms": 30, "ttft_ms": 1000, "output_tok_s_per_gpu": 200},
        **{"engine": "vllm", "engine_version": "example", "source": "a test", "notes": "x"},
    }
    path = tmp_path / "points.yaml"
    path.write_text(yaml.safe_dump({"points": [point]}), encoding="utf-8")
    (read,) = read_disaggregated_points(path, catalog)
    check = replay(read)
    pools = read.pools
    served = serve_disaggregated(
        pools, workload_of(read), scheduler_limits(pools.decode.engine, pools.decode.gpu)
    )
    assert check.predicted == pytest.approx(
        {
            "tpot_ms": served.tpot_s * 1000,
            "ttft_ms": served.ttft_s * 1000,
            "output_tok_s_per_gpu": served.output_throughput_tokens_per_s / 24,  # 3 x 8 GPUs
        }
    )
    assert check.errors["tpot_ms"] == pytest.approx(served.tpot_s * 1000 / 30 - 1)


def test_validate_points_the_disaggregated_file_to_its_replay(cli: Run) -> None:
    result = cli("validate", str(POINTS))
    assert result.code == 2
    assert "replay_disaggregated.py" in result.err
    assert len(result.err.strip().splitlines()) == 1
