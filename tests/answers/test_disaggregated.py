"""Disaggregated serving (docs/serving.md, "Disaggregated serving"): the laws of two pools
and a KV hand-over, the worked DeepSeek-R1 example's hand-over by hand, and the refusals."""

from __future__ import annotations

import json
import math
import re
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tests.conftest import Run

BASE = ("serving", "-m", "llama-3.1-8b", "-g", "h100-sxm")
DEEPSEEK_1P2D = (
    "serving", "-m", "deepseek-r1", "-g", "h200", "-w", "fp8", "--tp", "8", "--ep",
    "--dp-attention", "--prefill-workers", "1", "--decode-workers", "2",
    "--no-prefill-ep", "--no-prefill-dp-attention", "--input-len", "8K",
    "--output-len", "1K", "--concurrency", "128",
)  # fmt: skip
"""docs/serving.md's worked example (examples/disaggregated-deepseek.yaml)."""


def run(cli: Run, *args: str) -> dict[str, Any]:
    result = cli(*BASE, *args, "--json")
    assert result.code == 0, result.err
    doc: dict[str, Any] = json.loads(result.out)
    return doc


def rows(cli: Run, *args: str) -> list[dict[str, Any]]:
    found: list[dict[str, Any]] = run(cli, *args)["rows"]
    return found


def expected_ms(cli: Run, batch: int, context: int, engine: str) -> float:
    result = cli(
        "estimate", *BASE[1:], "--batch", str(batch), "-c", str(context), "--engine", engine,
        "--json",
    )  # fmt: skip
    assert result.code == 0, result.err
    value: float = json.loads(result.out)["rows"][0]["expected_ms_per_token"]
    return value


@pytest.mark.parametrize("engine", ["roofline", "vllm"])
@pytest.mark.parametrize(("concurrency", "decoders"), [(1, 1), (24, 2), (64, 4)])
def test_free_hand_over_and_enough_prefill_give_estimates_step(
    cli: Run, engine: str, concurrency: int, decoders: int
) -> None:
    """No transfer time and a prefill worker per request: TPOT is the decode worker's step
    at its batch, as estimate prices it (prompt 100, 101 out: the decode contexts run
    100..200, mean 150; a batch between whole ones interpolated between them)."""
    (row,) = rows(
        cli,
        *("--input-len", "100", "--output-len", "101", "--concurrency", str(concurrency)),
        *("--prefill-workers", str(concurrency), "--decode-workers", str(decoders)),
        *("--kv-link", "none", "--engine", engine),
    )
    batch = max(1.0, row["decode_batch"])
    low = math.floor(batch)
    at_low = expected_ms(cli, low, 150, engine)
    step = at_low
    if batch > low:
        step += (batch - low) * (expected_ms(cli, low + 1, 150, engine) - at_low)
    assert row["tpot_ms"] == pytest.approx(step, rel=1e-9)
    assert row["kv_transfer_ms"] == 0
    assert row["prefill_wait_ms"] == 0
    assert row["prefill_workers"] == concurrency and row["decode_workers"] == decoders


def test_ttft_grows_with_the_prompt(cli: Run) -> None:
    ttfts = [
        rows(
            cli,
            *("--input-len", str(prompt), "--output-len", "200", "--concurrency", "16"),
            *("--prefill-workers", "1", "--decode-workers", "1"),
        )[0]["ttft_ms"]
        for prompt in (256, 1024, 4096, 16384)
    ]
    assert ttfts == sorted(ttfts) and len(set(ttfts)) == 4


def test_ttft_falls_with_more_prefill_workers(cli: Run) -> None:
    ttfts = [
        rows(
            cli,
            *("--input-len", "4096", "--output-len", "200", "--concurrency", "64"),
            *("--prefill-workers", str(p), "--decode-workers", "2"),
        )[0]["ttft_ms"]
        for p in (1, 2, 4, 8)
    ]
    assert ttfts == sorted(ttfts, reverse=True)
    assert ttfts[0] > ttfts[-1]


def test_tpot_falls_or_stays_with_more_decode_workers(cli: Run) -> None:
    tpots = [
        rows(
            cli,
            *("--input-len", "1024", "--output-len", "500", "--concurrency", "256"),
            *("--prefill-workers", "4", "--decode-workers", str(d)),
        )[0]["tpot_ms"]
        for d in (1, 2, 4, 8)
    ]
    assert tpots == sorted(tpots, reverse=True)


def test_deepseek_r1_hand_over_by_hand(cli: Run) -> None:
    """docs/serving.md's worked example: DeepSeek-R1 FP8 on H200, 1 prefill worker TP 8,
    2 decode workers TP 8 EP 8 with DP attention, 8K prompts, concurrency 128. The prompt's
    MLA cache is 8,192 tokens x 61 layers x 576 values x 2 bytes = 575,668,224 bytes, all
    of it received by the one decode GPU whose rank holds the request; over InfiniBand NDR
    (50 GB/s per GPU, 20 us): 20 us + 575,668,224 / 50e9 s = 11.533 ms."""
    result = cli(*DEEPSEEK_1P2D, "--kv-link", "ib-ndr", "--json")
    assert result.code == 0, result.err
    doc = json.loads(result.out)
    assert doc["kv_bytes_per_request"] == 8_192 * 61 * 576 * 2 == 575_668_224
    assert doc["kv_bytes_per_decode_gpu"] == 575_668_224
    (row,) = doc["rows"]
    assert row["kv_transfer_ms"] == pytest.approx((20e-6 + 575_668_224 / 50e9) * 1000)
    assert doc["gpus"] == 24
    assert doc["prefill"]["tp"] == 8 and not doc["prefill"]["ep"]
    assert doc["decode"]["ep"] and doc["decode"]["dp_attention"]
    # TTFT is made of its parts; Little's law ties the load to the rate.
    parts = (
        row["prefill_wait_ms"] + row["prefill_ms"] + row["kv_transfer_ms"]
        + row["decode_wait_ms"] + row["first_step_ms"] + row["per_request_ms"]
    )  # fmt: skip
    assert row["ttft_ms"] == pytest.approx(parts)
    assert row["concurrency"] == pytest.approx(
        row["request_throughput_per_s"] * row["e2e_latency_s"], rel=1e-6
    )
    assert row["ttft_low_ms"] <= row["ttft_ms"] <= row["ttft_high_ms"]
    assert row["tpot_low_ms"] <= row["tpot_ms"] <= row["tpot_high_ms"]
    assert doc["saturates_first"] in ("prefill", "decode")


@pytest.mark.parametrize(
    ("args", "words"),
    [
        (("--prefill-workers", "1"), "give --decode-workers too"),
        (("--decode-workers", "2"), "give --prefill-workers too"),
        (("--prefill-workers", "1", "--decode-workers", "1", "--kv-link", "ibb"), "--kv-link"),
        (("--prefill-tp", "2"), "--prefill-tp describes disaggregated serving"),
        (("--prefill-workers", "1", "--decode-workers", "1", "--chart"), "leave them out"),
        (
            ("-m", "deepseek-r1", "-g", "h200", "--tp", "1", "--prefill-workers", "1",
             "--decode-workers", "1"),
            "cannot hold the model",
        ),
        (
            ("-m", "deepseek-r1", "-g", "h200", "--tp", "8", "--ep", "--eplb-redundant",
             "30", "--prefill-workers", "1", "--decode-workers", "1"),
            "do not divide",
        ),
    ],
)  # fmt: skip
def test_bad_combinations_are_one_line(cli: Run, args: tuple[str, ...], words: str) -> None:
    result = cli(*BASE, "--input-len", "1000", "--output-len", "100", "--concurrency", "4", *args)
    assert result.code == 2, result.out
    assert words in result.err
    assert len(result.err.strip().splitlines()) == 1


def test_deepseek_r1_worked_example_on_the_roofline(cli: Run) -> None:
    """docs/serving.md's worked example on the roofline: one prefill worker is an M/M/1
    queue (wait = a / (1 - a) x T_p at a = X T_p); the prefill is its FLOPs at peak plus
    the 2 x 61 all-reduces of 8,192 x 7,168 x 2 bytes, each 10 us + 2 x 7/8 x bytes /
    450 GB/s; e2e = wait + prefill + hand-over + 1,024 decode steps."""
    result = cli(*DEEPSEEK_1P2D, "--engine", "roofline", "--json")
    assert result.code == 0, result.err
    (row,) = json.loads(result.out)["rows"]
    allreduces = 2 * 61 * (10e-6 + 2 * 7 / 8 * 8_192 * 7_168 * 2 / 450e9)
    assert allreduces == pytest.approx(0.05694, rel=1e-3)
    assert row["prefill_ms"] > allreduces * 1000 + 2 * 36.6e9 * 8_192 / (8 * 1979e12) * 1000
    load = row["request_throughput_per_s"] * row["prefill_ms"] / 1000
    assert row["prefill_wait_ms"] == pytest.approx(load / (1 - load) * row["prefill_ms"])
    e2e_ms = (
        row["prefill_wait_ms"] + row["prefill_ms"] + row["kv_transfer_ms"]
        + 1_024 * row["tpot_ms"]
    )  # fmt: skip
    assert row["e2e_latency_s"] * 1000 == pytest.approx(e2e_ms, rel=1e-9)
    assert row["output_tokens_per_s_per_gpu"] == pytest.approx(
        row["request_throughput_per_s"] * 1_024 / 24
    )


SERVING_DOC = Path(__file__).resolve().parents[2] / "docs" / "serving.md"


def test_the_worked_example_prints_the_tools_figures(cli: Run) -> None:
    """docs/serving.md's worked example is the tool's own run, figure by figure, to the
    decimals the text gives (review s41 #11: it kept the decode pool's 26.5 and 1.72
    after the tool moved to 26.334 and 1.71). The decode pool by hand: a rank's 28,601
    blocks hold floor(28,601 / ceil(9,216 / 16)) = 49 requests, a worker's 8 ranks 392."""
    text = SERVING_DOC.read_text()
    start = text.index("**Worked example**")
    example = " ".join(text[start : text.index("**Laws**", start)].split())
    result = cli(*DEEPSEEK_1P2D, "--engine", "roofline", "--json")
    assert result.code == 0, result.err
    doc = json.loads(result.out)
    (row,) = doc["rows"]
    said = {
        r"T_kv = [^=]+= ([\d.]+) ms": (row["kv_transfer_ms"], 2),
        r"T_p = ([\d.]+) ms": (row["prefill_ms"], 2),
        r"at b = ([\d.]+) requests per decode worker": (row["decode_batch"], 2),
        r"= ([\d.]+) ms = TPOT": (row["tpot_ms"], 2),
        r"X = ([\d.]+) requests/s": (row["request_throughput_per_s"], 3),
        r"TTFT = [^=]+= ([\d.]+) ms": (row["ttft_ms"], 1),
        r"e2e = [^=]+= ([\d.]+) s": (row["e2e_latency_s"], 2),
        r"= ([\d,]+) output tokens/s": (row["output_throughput_tokens_per_s"], 0),
        r"output tokens/s, (\d+) per GPU": (row["output_tokens_per_s_per_gpu"], 0),
        r"(\d+) per decode GPU": (row["output_tokens_per_s_per_decode_gpu"], 0),
        r"saturates first, at [^=]+= ([\d.]+) requests/s": (
            doc["prefill_saturation_rate_per_s"],
            2,
        ),
        r"the decode pool at ([\d.]+)": (doc["decode_saturation_rate_per_s"], 2),
        r"= ([\d.]+) prefill workers per decode worker": (doc["balanced_prefill_per_decode"], 2),
    }
    for pattern, (value, places) in said.items():
        found = re.search(pattern, example)
        assert found is not None, pattern
        assert float(found[1].replace(",", "")) == round(value, places), pattern
    assert doc["max_concurrency_kv"] * 576 / 8 == pytest.approx(28_601)
    assert math.floor(28_601 / 576) * 8 == 392


def test_a_deployment_file_checks_both_pools(cli: Run) -> None:
    """examples/disaggregated-deepseek.yaml holds the serving command's own figures."""
    checked = cli("check", "examples/disaggregated-deepseek.yaml", "--format", "json")
    assert checked.code == 0, checked.err
    results = {r["target"]: r["value"] for r in json.loads(checked.out)["results"]}
    served = cli(*DEEPSEEK_1P2D, "--kv-link", "ib-ndr", "--json")
    (row,) = json.loads(served.out)["rows"]
    assert results["max_ttft_ms"] == pytest.approx(row["ttft_ms"])
    assert results["max_tpot_ms"] == pytest.approx(row["tpot_ms"])
    assert results["min_output_throughput_per_gpu"] == pytest.approx(
        row["output_throughput_tokens_per_s"] / 24
    )


@pytest.mark.parametrize(
    ("pools", "words"),
    [
        ("prefill: {workers: 1}", "give both prefill: and decode:"),
        ("prefill: {workers: 1}\ndecode: {tp: 8}", "decode: give workers"),
        ("prefill: {workers: 1, tpp: 2}\ndecode: {workers: 1}", "did you mean 'tp'"),
        ("prefill: {workers: 1}\ndecode: {workers: 1}\nkv_link: ibb", "unknown link 'ibb'"),
    ],
)
def test_bad_pools_in_a_file_are_said_where(
    cli: Run, tmp_path: Any, pools: str, words: str
) -> None:
    path = tmp_path / "pools.yaml"
    path.write_text(
        "model: deepseek-r1\ngpu: h200\ntp: 8\n" + pools + "\n"
        "workload: {input_len: 1K, output_len: 100, concurrency: 4}\n"
        "targets: {max_tpot_ms: 50}\n"
    )
    result = cli("check", str(path))
    assert result.code == 2
    assert words in result.err


@pytest.fixture(scope="module")
def llama_pools() -> Any:
    """Llama-3.1-8B on H100s (the vLLM profile), for the property tests: the API's pools
    at any split, without the CLI around them."""
    from decodecalc.answers.disaggregated import Pools
    from decodecalc.engine.scheduler import scheduler_limits
    from decodecalc.loading.catalog import Catalog
    from decodecalc.resolving.resolve import resolve
    from decodecalc.scenarios.spec import ScenarioSpec

    catalog = Catalog()
    scenario = resolve(ScenarioSpec(model="llama-3.1-8b", gpu="h100-sxm", engine="vllm"), catalog)
    limits = scheduler_limits(scenario.engine, scenario.gpu)
    link = catalog.link("ib-ndr")

    def pools(prefill: int, decode: int) -> Pools:
        return Pools(scenario, scenario, prefill, decode, link)

    return pools, limits


@settings(max_examples=6, deadline=None)
@given(
    concurrency=st.integers(1, 400),
    prompt=st.integers(64, 8192),
    output=st.integers(2, 1000),
)
def test_laws_hold_at_any_load(
    llama_pools: Any, concurrency: int, prompt: int, output: int
) -> None:
    """TTFT falls (or stays) with more prefill workers and grows with the prompt; TPOT
    falls (or stays) with more decode workers; Little's law holds (docs/serving.md)."""
    from decodecalc.answers.disaggregated import serve_disaggregated
    from decodecalc.scenarios.workload import Workload

    pools, limits = llama_pools
    load = Workload(prompt, output, concurrency=concurrency)
    ttfts = [serve_disaggregated(pools(p, 2), load, limits).ttft_s for p in (1, 2, 4)]
    assert ttfts[0] >= ttfts[1] * (1 - 1e-9) and ttfts[1] >= ttfts[2] * (1 - 1e-9)
    tpots = [serve_disaggregated(pools(2, d), load, limits).tpot_s for d in (1, 2, 4)]
    assert tpots[0] >= tpots[1] * (1 - 1e-9) and tpots[1] >= tpots[2] * (1 - 1e-9)
    # A longer prompt at a fixed request rate: TTFT grows. (In a closed loop a longer
    # prompt also slows the loop and thins the decode load, so the first decode step
    # shortens: for short, weight-bound prompts TTFT may then fall by a percent or so.)
    longer = Workload(min(2 * prompt, 16_384), output, concurrency=concurrency)
    base = serve_disaggregated(pools(2, 2), load, limits)
    slower = serve_disaggregated(pools(2, 2), longer, limits)
    rate = slower.request_throughput_per_s * 0.5  # below both prompts' saturation
    at_rate = [
        serve_disaggregated(pools(2, 2), Workload(n, output, request_rate=rate), limits).ttft_s
        for n in (prompt, min(2 * prompt, 16_384))
    ]
    assert at_rate[1] >= at_rate[0]
    assert base.concurrency == pytest.approx(base.request_throughput_per_s * base.e2e_s, rel=1e-6)


def test_extrapolation_notes_name_the_decode_pool_and_their_load(cli: Run) -> None:
    """The decode workers' steps leave the engines' fitted range differently at 1 and at 32
    requests a worker: each such note says it is the decode pool's (in the text and as the
    note's pool in JSON) and at which load; the hand-over note, the same at every load and
    the deployment's, names neither."""
    result = cli(
        "serving", "-m", "deepseek-v3", "-g", "h200", "--tp", "8", "-w", "fp8",
        "--input-len", "2K", "--output-len", "512", "--concurrency", "1,64",
        "--prefill-workers", "1", "--decode-workers", "2", "--json",
    )  # fmt: skip
    assert result.code == 0, result.err
    notes = json.loads(result.out)["notes"]
    wide = [n for n in notes if n["code"] == "engine-extrapolated"]
    assert [n["message"].split(" typical extrapolated")[0] for n in wide] == [
        "concurrency 1: decode pool:",
        "concurrency 64: decode pool:",
    ]
    assert [n.get("pool") for n in wide] == ["decode", "decode"]
    (handover,) = [n for n in notes if n["code"] == "kv-transfer-after-prefill"]
    assert "pool" not in handover and handover["message"].startswith("the prompt's KV")


def test_a_free_hand_over_has_no_note(cli: Run) -> None:
    """--kv-link none: no transfer time, so no note on hiding it (0.00 ms of 0.00 ms); over
    a link the note stays, with the transfer it is about."""
    args = ("--input-len", "4K", "--output-len", "500", "--concurrency", "32")
    args += ("--prefill-workers", "1", "--decode-workers", "1")
    free = run(cli, *args, "--kv-link", "none")
    assert free["rows"][0]["kv_transfer_ms"] == 0
    assert "kv-transfer-after-prefill" not in [n["code"] for n in free["notes"]]
    linked = run(cli, *args)
    assert linked["rows"][0]["kv_transfer_ms"] > 0
    assert "kv-transfer-after-prefill" in [n["code"] for n in linked["notes"]]


def test_a_dp_attention_decode_worker_runs_max_num_seqs_on_each_rank(cli: Run) -> None:
    """Review s41 #2: each of a decode worker's 8 data-parallel attention ranks is an
    engine with its own max-num-seqs, so --max-num-seqs 4 lets a worker run 8 x 4 = 32
    requests (its KV pool holds 392): at concurrency 128 the two workers' 64 slots fill
    and the rest wait for one (before: 4 a worker)."""
    result = cli(*DEEPSEEK_1P2D, "--engine", "roofline", "--max-num-seqs", "4", "--json")
    assert result.code == 0, result.err
    (row,) = json.loads(result.out)["rows"]
    assert row["decode_batch"] == pytest.approx(32, rel=1e-5)
    assert row["decode_wait_ms"] > 0
