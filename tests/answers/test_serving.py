"""`decodecalc serving` and the steady-state model of a continuously batched server."""

from __future__ import annotations

import csv
import io
import itertools
import json
from pathlib import Path
from typing import Any

import pytest

from decodecalc.answers.serving import erlang_c, serve
from decodecalc.engine.profile import ROOFLINE
from decodecalc.engine.scheduler import scheduler_limits
from decodecalc.errors import InputError
from decodecalc.loading.catalog import Catalog
from decodecalc.scenarios.workload import Speculation, Workload
from decodecalc.step.kv_pool import kv_pool
from tests.conftest import Run, preset_scenario

BASE = ("serving", "-m", "llama-3.1-8b", "-g", "h100-sxm")
LIST = "1,2,4,8,16,32,64,128,256,512"
EAGLE = ("--speculative", "eagle", "--acceptance")
SMALL = ("--output-len", "100", "--concurrency", "4")


def run_json(cli: Run, *args: str) -> dict[str, Any]:
    result = cli(*BASE, *args, "--json")
    assert result.code == 0, result.err
    doc: dict[str, Any] = json.loads(result.out)
    return doc


def assert_little(doc: dict[str, Any]) -> None:
    """Requests in the system = request rate x end-to-end latency, and e2e = TTFT plus the
    tokens after the first at TPOT each."""
    output_len = doc["workload"]["output_len"]
    for row in doc["rows"]:
        in_system = row["request_throughput_per_s"] * row["e2e_latency_s"]
        assert in_system == pytest.approx(row["concurrency"], rel=1e-9)
        e2e_ms = row["ttft_ms"] + (output_len - 1) * row["tpot_ms"]
        assert e2e_ms == pytest.approx(row["e2e_latency_s"] * 1000, rel=1e-9)
        throughput = row["request_throughput_per_s"] * output_len
        assert row["output_throughput_tokens_per_s"] == pytest.approx(throughput, rel=1e-12)


@pytest.mark.parametrize(
    "args",
    [
        ("--input-len", "1000", "--output-len", "500", "--concurrency", LIST),
        ("--input-len", "4K", "--output-len", "256", "--concurrency", "1,64,2000"),
        ("--input-len", "1000", "--output-len", "500", "--request-rate", "3"),
        ("--input-len", "1000", "--output-len", "500", "--request-rate", "7"),
        ("--input-len", "1000", "--output-len", "300", "--concurrency", "1,32,300", *EAGLE, "0.7"),
        (
            "--input-len",
            "2000",
            "--output-len",
            "300",
            "--concurrency",
            "1,32,300",
            "--engine",
            "vllm",
            "--prefix-len",
            "1500",
            "--prefix-hit-rate",
            "0.8",
        ),
    ],
)
def test_littles_law_in_every_output(cli: Run, args: tuple[str, ...]) -> None:
    assert_little(run_json(cli, *args))


@pytest.mark.parametrize("engine", ["vllm", "roofline", "typical"])
def test_concurrency_one_is_the_single_stream_step(cli: Run, engine: str) -> None:
    # Prompt 100, 101 tokens out: the decode steps read contexts 100..200, whose mean is
    # 150, and the step is linear in the context, so TPOT is the step at 150 tokens.
    doc = run_json(
        cli, "--input-len", "100", "--output-len", "101", "--concurrency", "1", "--engine", engine
    )
    single = cli("estimate", *BASE[1:], "-c", "150", "--engine", engine, "--json")
    row = json.loads(single.out)["rows"][0]
    (served,) = doc["rows"]
    assert served["tpot_ms"] == pytest.approx(row["expected_ms_per_token"], rel=1e-9)
    assert served["itl_ms"] == pytest.approx(row["expected_ms_per_token"], rel=1e-9)
    assert served["running"] == 1 and served["limit"] == "concurrency"


def test_speculation_emits_2_952_tokens_per_step(cli: Run) -> None:
    doc = run_json(
        cli,
        *("--input-len", "500", "--output-len", "200", "--concurrency", "4"),
        *("--speculative", "eagle", "--num-speculative-tokens", "3", "--acceptance", "0.8"),
    )
    # 1 + 0.8 + 0.64 + 0.512
    assert doc["rows"][0]["tokens_per_step"] == pytest.approx(2.952)
    assert doc["workload"]["speculative"]["method"] == "eagle"


def test_tpot_grows_with_concurrency_and_throughput_to_the_knee(cli: Run) -> None:
    doc = run_json(cli, "--input-len", "1000", "--output-len", "500", "--concurrency", LIST)
    rows = doc["rows"]
    tpots = [r["tpot_ms"] for r in rows]
    assert tpots == sorted(tpots)
    knee = [r["concurrency"] for r in rows].index(doc["knee_concurrency"])
    rates = [r["output_throughput_tokens_per_s"] for r in rows[: knee + 1]]
    assert rates == sorted(rates)
    # Past the KV pool the running count stops at it and the rest queue in TTFT.
    last = rows[-1]
    assert last["running"] <= doc["max_concurrency_kv"] < last["concurrency"]
    assert last["queue_ms"] > 0 and last["ttft_ms"] > rows[0]["ttft_ms"]


def test_prefill_tokens_per_step_by_hand(cli: Run) -> None:
    # 8 requests of 1,000 prompt tokens fit one chunk each (budget 8,192 - 8 decode tokens),
    # so a request lives 1 prefill step + 100 decode steps = 101 steps; 8 / 101 requests
    # start per step, each bringing 1,000 tokens: 8,000 / 101 = 79.2079 tokens per step.
    doc = run_json(cli, "--input-len", "1000", "--output-len", "101", "--concurrency", "8")
    row = doc["rows"][0]
    assert row["prefill_tokens_per_step"] == pytest.approx(8000 / 101)
    assert row["chunk_tokens"] == 1000
    assert row["chunk_share"] == pytest.approx(8 / 101)


def test_kv_pool_figures_are_the_pools(cli: Run, catalog: Catalog) -> None:
    doc = run_json(cli, "--input-len", "1000", "--output-len", "500", "--concurrency", "4")
    scenario = preset_scenario(catalog, "llama-3.1-8b")
    pool = kv_pool(scenario, scheduler_limits(ROOFLINE, scenario.gpu))
    assert doc["kv_pool_tokens"] == doc["rows"][0]["kv_pool_tokens"] == pool.tokens
    assert doc["max_concurrency_kv"] == pytest.approx(pool.max_concurrency(1500))


def test_prefix_cache_and_shared_prefix_attention(cli: Run) -> None:
    base = ("--input-len", "2000", "--output-len", "300", "--concurrency", "64")
    plain = run_json(cli, *base, "--engine", "vllm")["rows"][0]
    cached = run_json(cli, *base, "--engine", "vllm", "--prefix-len", "1500")
    row = cached["rows"][0]
    # 1,500 of 2,000 prompt tokens hit the cache: a quarter of the prefill is left.
    assert row["chunk_tokens"] == 500
    assert row["ttft_ms"] < plain["ttft_ms"]
    assert cached["workload"]["shared_prefix_attention"] is True  # vLLM's default
    apart = run_json(
        cli, *base, "--engine", "vllm", "--prefix-len", "1500", "--no-shared-prefix-attention"
    )
    assert apart["workload"]["shared_prefix_attention"] is False
    # Reading the shared 1,500 tokens once instead of 64 times makes the decode step faster.
    assert row["decode_step_ms"] < apart["rows"][0]["decode_step_ms"]


def test_open_loop_utilization_and_saturation(cli: Run) -> None:
    doc = run_json(cli, "--input-len", "1000", "--output-len", "500", "--request-rate", "4")
    row = doc["rows"][0]
    assert row["utilization"] == pytest.approx(4 / doc["saturation_rate_per_s"])
    assert row["request_throughput_per_s"] == pytest.approx(4)
    past = cli(*BASE, "--input-len", "1000", "--output-len", "500", "--request-rate", "1000")
    assert past.code == 2
    assert past.err.count("\n") == 1 and "saturation rate" in past.err


def test_erlang_c_by_hand() -> None:
    # M/M/1 at load 0.5: an arrival waits with probability rho = 0.5.
    assert erlang_c(1, 0.5) == pytest.approx(0.5)
    # M/M/2 at offered load 1: (a^2/2! x 2/(2-1)) / (1 + a + a^2/2! x 2/(2-1)) = 1/3.
    assert erlang_c(2, 1.0) == pytest.approx(1 / 3)


@pytest.mark.parametrize(
    ("args", "words"),
    [
        (("--output-len", "0", "--concurrency", "4"), "output length 0"),
        (("--output-len", "1", "--concurrency", "4"), "output length 1"),
        (("--output-len", "100", "--request-rate", "0"), "request rate 0"),
        (("--output-len", "100", "--request-rate", "-3"), "request rate -3"),
        (("--output-len", "100", "--concurrency", "0"), "concurrency 0"),
        (("--output-len", "100", "--concurrency", "2000000"), "concurrency 2000000"),
        (("--output-len", "100", "--concurrency", "4,x"), "whole numbers"),
        (("--output-len", "100"), "--concurrency N"),
        (("--output-len", "100", "--concurrency", "4", "--request-rate", "2"), "one of"),
        (
            (*SMALL, *EAGLE, "1"),
            "under 1",
        ),
        (
            (*SMALL, *EAGLE, "1.5"),
            "under 1",
        ),
        (("--output-len", "100", "--concurrency", "4", "--speculative", "eagle"), "--acceptance"),
        (("--output-len", "100", "--concurrency", "4", "--prefix-len", "1000"), "prefix length"),
        (
            (
                "--output-len",
                "100",
                "--concurrency",
                "4",
                "--prefix-len",
                "8",
                "--prefix-hit-rate",
                "2",
            ),
            "hit rate",
        ),
        (("--output-len", "100", "--concurrency", "4", "--max-num-seqs", "0"), "max-num-seqs"),
        (("--output-len", "2M", "--concurrency", "1"), "maximum context"),
        ((*SMALL, "--speculative", "nosuchmodel", "--acceptance", "0.5"), "is not eagle"),
    ],
)
def test_bad_workloads_get_one_line(cli: Run, args: tuple[str, ...], words: str) -> None:
    result = cli(*BASE, "--input-len", "1000", *args)
    assert result.code == 2, result.out
    assert result.err.count("\n") == 1 and result.err.startswith("decodecalc: error: ")
    assert words in result.err
    assert "Traceback" not in result.err


def test_one_of_concurrency_or_rate_in_the_core(catalog: Catalog) -> None:
    with pytest.raises(InputError, match="one of them"):
        Workload(input_len=10, output_len=10)
    scenario = preset_scenario(catalog, "llama-3.1-8b")
    limits = scheduler_limits(ROOFLINE, scenario.gpu, max_num_batched_tokens=1)
    with pytest.raises(InputError, match="no room"):
        serve(scenario, Workload(input_len=10, output_len=10, concurrency=1), limits)
    # A quarter of 80 GiB is 21.5 GB; 16.1 GB of BF16 weights leave at most 5.4 GB, about
    # 41,000 tokens at 131,072 bytes each: one request of 120,000 tokens cannot be held.
    small = scheduler_limits(ROOFLINE, scenario.gpu, memory_utilization=0.25)
    with pytest.raises(InputError, match="does not fit in the KV pool"):
        serve(scenario, Workload(input_len=100_000, output_len=20_000, concurrency=1), small)


def test_table_csv_and_chart(cli: Run) -> None:
    args = ("--input-len", "1000", "--output-len", "500", "--concurrency", "1,16,64,256")
    table = cli(*BASE, *args)
    assert table.code == 0, table.err
    assert "TPOT ms" in table.out and "KV pool:" in table.out and "knee" in table.out
    rows = list(csv.DictReader(io.StringIO(cli(*BASE, *args, "-f", "csv").out)))
    assert [r["concurrency"] for r in rows] == ["1", "16", "64", "256"]  # %.12g: no ".0"
    assert {"tpot_ms", "ttft_ms", "model", "input_len"} <= set(rows[0])
    chart = cli(*BASE, *args, "--chart")
    assert "TPOT (ms)" in chart.out and "output throughput" in chart.out


def test_plot_file(cli: Run, tmp_path: Path) -> None:
    pytest.importorskip("matplotlib")
    path = tmp_path / "curve.svg"
    args = ("--input-len", "1000", "--output-len", "500", "--concurrency", "1,16,64,256")
    result = cli(*BASE, *args, "--plot", str(path))
    assert result.code == 0, result.err
    assert "TPOT (ms)" in path.read_text()


@pytest.mark.parametrize("model", ["qwen3-30b-a3b", "gpt-oss-20b", "qwen3-next-80b-a3b"])
@pytest.mark.parametrize("speculative", [None, Speculation("eagle", 2, (0.7,))])
def test_monotone_over_concurrency(
    catalog: Catalog, model: str, speculative: Speculation | None
) -> None:
    """MoE, hybrid and speculative servers alike: TPOT never falls and throughput never
    drops as the concurrency grows, through the KV pool, max-num-seqs and prefill caps."""
    scenario = preset_scenario(catalog, model, weights="fp8", gpu="h200")
    limits = scheduler_limits(ROOFLINE, scenario.gpu)
    results = [
        serve(scenario, Workload(2000, 400, concurrency=c, speculative=speculative), limits)
        for c in (1, 4, 16, 64, 256, 1024, 4096)
    ]
    for before, after in itertools.pairwise(results):
        assert after.tpot_s >= before.tpot_s * (1 - 1e-12)
        assert after.request_throughput_per_s >= before.request_throughput_per_s * (1 - 1e-12)
    rate = 0.999 * results[-1].saturation_rate_per_s
    near = serve(scenario, Workload(2000, 400, request_rate=rate, speculative=speculative), limits)
    assert near.concurrency == pytest.approx(rate * near.e2e_s, rel=1e-12)


def test_an_engine_without_scheduler_defaults_says_whose_stand_in(cli: Run) -> None:
    """SGLang's profile has no serving: block; vLLM's limits stand in, and a note says so
    (vLLM's own profile has them, so no note there)."""
    args = ("serving", "-m", "llama-3.1-8b", "-g", "h100-sxm", "--input-len", "1K")
    args += ("--output-len", "256", "--concurrency", "4", "--json")
    sglang = json.loads(cli(*args, "--engine", "sglang").out)
    codes = [n["code"] for n in sglang["notes"]]
    # SGLang 0.5 was fitted on Qwen3-8B (8.19B) at batch 4: Llama-3.1-8B's 8.03B lies
    # within a quarter of it (engine/select.py SIZE_SLACK), so nothing is extrapolated
    assert codes == ["scheduler-stand-in"]
    assert sglang["scheduler"]["max_num_seqs"] == 1024  # vLLM's H100 default
    vllm = json.loads(cli(*args, "--engine", "vllm").out)
    assert "scheduler-stand-in" not in [n["code"] for n in vllm["notes"]]


@pytest.mark.parametrize(
    ("args", "code"),
    [
        (("-g", "a100-80gb", "-w", "fp8"), "matmul-fallback"),
        (("-g", "mi300x", "--engine", "tensorrt-llm"), "engine-fallback"),
        (("-g", "mi300x", "--engine", "sglang"), "engine-transferred"),
    ],
)
def test_serving_carries_the_scenarios_notes(cli: Run, args: tuple[str, ...], code: str) -> None:
    """What holds for the scenario at any load (a format multiplied at another rate, an
    engine standing in for one never measured on the GPU) is said under load too."""
    doc = run_json(
        cli, *args, "--input-len", "1000", "--output-len", "100", "--concurrency", "1,64"
    )
    assert code in [n["code"] for n in doc["notes"]]


def test_pipeline_stages_hold_the_pool_a_tp_group_alone_cannot(cli: Run) -> None:
    """Llama-3.1-405B in FP8 on H100s: at TP 2 alone each GPU would hold 203 GB of weights
    (no room for a KV cache), but TP 2 x PP 4 splits 126 layers 31, 32, 32, 31 and a
    middle stage's GPU, the fullest, holds only its 32 layers. By hand, per GPU at TP 2,
    1 B a weight: a layer's q, o 2 x 16,384^2 / 2 = 268,435,456, k, v 2 x 16,384 x 1,024 / 2
    = 16,777,216, MLP 3 x 16,384 x 53,248 / 2 = 1,308,622,848 and 2 norms 32,768 (not
    split): 1,593,868,288 B, 32 of them 51,003,785,216 B (the first stage's 31 + the
    embedding's 1,050,673,152 are 50,460,590,080). Cache 32 x 4 KV heads x 128 x 2 x 2 B
    = 65,536 B a token. Budget (85,520,809,984 - 450 MiB) x 0.9 = 76,544,055,705 B, less
    the forward pass's 8,192 x (3 x 16,384 + 3 x 53,248 / 2) x 2 = 2,113,929,216 B and the
    2,254,857,830 B reserve: 21,171,483,443 B, floor(/ (16 x 65,536)) = 20,190 blocks =
    323,040 tokens, and 20,190 / ceil(1,500 / 16) = 214.79 requests of 1,500 tokens."""
    args = ("-m", "llama-3.1-405b", "-g", "h100-sxm", "-w", "fp8", "--tp", "2")
    workload = ("--input-len", "1000", "--output-len", "500", "--concurrency", "8", "--json")
    refused = cli("serving", *args, *workload)
    assert refused.code == 2 and "no room for a KV cache" in refused.err
    result = cli("serving", *args, "--pp", "4", *workload)
    assert result.code == 0, result.err
    doc = json.loads(result.out)
    assert doc["kv_pool_tokens"] == 323_040
    assert doc["max_concurrency_kv"] == pytest.approx(20_190 / 94)
