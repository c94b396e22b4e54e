"""`decodecalc serving` as a user sizing a server reads it: prompt chunks, admission waits,
open-loop queues, request-rate sweeps and the notes on them, each with its figures worked
by hand."""

from __future__ import annotations

import json
import math
from typing import Any

import pytest

from tests.answers.test_serving import BASE, assert_little, run_json
from tests.conftest import Run

# An H100 SXM as vLLM sees it: 85,520,809,984 B less 450 MiB (471,859,200 B) that CUDA never
# reports, x 0.9 = 76,543,055,705.6 B, 76.54 GB, for weights, activations, reserve and cache.
H100_BUDGET_GB = "76.54 GB"


def test_a_prompt_of_the_whole_budget_is_one_chunk_when_alone(cli: Run) -> None:
    """vLLM's default budget on an H100 is 8,192 tokens. Alone (C = 1) a prompt of 8,192
    tokens shares its step with no decode token (its own request is not decoding yet), so
    it is one chunk and TTFT is one step; with a second request decoding beside it the
    budget left is 8,192 - 1 = 8,191 and the prompt takes ceil(8,192 / 8,191) = 2 chunks of
    4,096."""
    base = ("--input-len", "8192", "--output-len", "100", "--engine", "roofline")
    alone = run_json(cli, *base, "--concurrency", "1")["rows"][0]
    assert alone["chunk_tokens"] == 8192
    assert alone["ttft_ms"] == pytest.approx(alone["mixed_step_ms"], rel=1e-12)
    pair = run_json(cli, *base, "--concurrency", "2")["rows"][0]
    assert pair["chunk_tokens"] == 4096
    # Its two chunk steps, after the step it waits out to be admitted (see below).
    admission = mean_step_ms(pair)
    assert pair["ttft_ms"] == pytest.approx(admission + 2 * pair["mixed_step_ms"], rel=1e-12)


def mean_step_ms(row: dict[str, Any]) -> float:
    """t_dec + f (t_mix - t_dec): the mean step, f the share of steps with a chunk."""
    return row["decode_step_ms"] + row["chunk_share"] * (
        row["mixed_step_ms"] - row["decode_step_ms"]
    )


def test_a_closed_loop_waits_one_step_to_be_admitted(cli: Run) -> None:
    """The engine admits requests between steps. A closed loop sends the next request just
    after the step that ended the last one, and with others running the engine has already
    begun the next step: the request waits it out, one mean step, before its prefill. Alone
    (C = 1) the engine is idle and it starts at once. 1,000 prompt tokens in one chunk:
    TTFT = t_mean + t_mix + c_req at C = 8, t_mix + c_req at C = 1 (c_req: the profiles'
    per-request cost, outside the steps); e2e and Little's law follow."""
    sizes = ("--input-len", "1000", "--output-len", "500")
    one = run_json(cli, *sizes, "--concurrency", "1")["rows"][0]
    assert one["queue_ms"] == 0 and one["per_request_ms"] > 0
    assert one["ttft_ms"] == pytest.approx(one["mixed_step_ms"] + one["per_request_ms"])
    doc = run_json(cli, *sizes, "--concurrency", "8")
    row = doc["rows"][0]
    assert row["queue_ms"] == pytest.approx(mean_step_ms(row), rel=1e-12)
    c_req = row["per_request_ms"]
    assert row["ttft_ms"] == pytest.approx(
        mean_step_ms(row) + row["mixed_step_ms"] + c_req, rel=1e-12
    )
    # Each slot cycles through the step waited, L = 1 + 499 = 500 steps running (the
    # chunk step among them at its share of the mean) and c_req: X = 8 / (501 t_mean + c_req).
    cycle_ms = 500 * mean_step_ms(row) + mean_step_ms(row) + c_req
    assert row["request_throughput_per_s"] == pytest.approx(8 / cycle_ms * 1000, rel=1e-12)
    assert_little(doc)


def test_an_open_loop_waits_the_step_in_progress(cli: Run) -> None:
    """Poisson arrivals find a step in progress when any request runs, probability
    1 - e^-a with a = rate x service (M/G/infinity below the cap), and wait its mean
    residual E[S^2] / (2 E[S]) over decode and chunk steps. Far below the 295 slots the
    Erlang C wait is nil (a ~ 4 slots busy), so queue = (1 - e^-a) x residual."""
    row = run_json(cli, "--input-len", "1000", "--output-len", "500", "--request-rate", "1")[
        "rows"
    ][0]
    service_ms = row["e2e_latency_s"] * 1000 - row["queue_ms"] - row["per_request_ms"]
    offered = 1.0 * service_ms / 1000
    f, dec, mix = row["chunk_share"], row["decode_step_ms"], row["mixed_step_ms"]
    residual = ((1 - f) * dec**2 + f * mix**2) / (2 * mean_step_ms(row))
    assert row["queue_ms"] == pytest.approx((1 - math.exp(-offered)) * residual, rel=1e-9)
    assert row["ttft_ms"] == pytest.approx(row["queue_ms"] + mix + row["per_request_ms"], rel=1e-12)


def test_prefix_hit_rate_is_null_without_a_prefix(cli: Run) -> None:
    """A hit rate of a prefix that does not exist is no figure: null, not the default 1."""
    sizes = ("--input-len", "1000", "--output-len", "100", "--concurrency", "4")
    assert run_json(cli, *sizes)["workload"]["prefix_hit_rate"] is None
    cached = run_json(cli, *sizes, "--prefix-len", "800", "--prefix-hit-rate", "0.5")
    assert cached["workload"]["prefix_hit_rate"] == 0.5
    # 1,000 - floor(0.5 x 800) = 600 prompt tokens computed per request.
    assert cached["rows"][0]["chunk_tokens"] == 600


def test_a_request_rate_list_sweeps_the_open_loop(cli: Run) -> None:
    """One row per rate; in an open loop below saturation the server completes requests
    as fast as they arrive, so the request throughput is the rate itself, and the output
    throughput the rate x 500 tokens (2 x 500 = 1,000 and 4 x 500 = 2,000 tokens/s)."""
    sizes = ("--input-len", "1000", "--output-len", "500")
    doc = run_json(cli, *sizes, "--request-rate", "2,4")
    rows = doc["rows"]
    assert [r["request_rate_per_s"] for r in rows] == [2.0, 4.0]
    assert [r["request_throughput_per_s"] for r in rows] == pytest.approx([2.0, 4.0])
    assert [r["output_throughput_tokens_per_s"] for r in rows] == pytest.approx([1000, 2000])
    assert all(r["limit"] == "request-rate" for r in rows)
    assert_little(doc)
    table = cli(*BASE, *sizes, "--request-rate", "2,4")
    assert "utilization" in table.out and "at 2 requests/s" in table.out


@pytest.mark.parametrize(
    ("rates", "message"),
    [
        ("2,x", "--request-rate '2,x': expected numbers"),
        ("2,0", "request rate 0.0 must be above 0"),
        ("2,1e9", "request rate 1000000000.0 must be above 0 and at most"),
    ],
)
def test_bad_request_rate_lists(cli: Run, rates: str, message: str) -> None:
    r = cli(*BASE, "--input-len", "100", "--output-len", "10", "--request-rate", rates)
    assert r.code == 2 and r.out == ""
    assert r.err.count("\n") == 1 and message in r.err


def test_open_loop_near_saturation_says_requests_queue(cli: Run) -> None:
    """At 99% of the saturation rate arrivals wait for a slot: the KV pool caps the running
    requests at floor(max_concurrency_kv), and a note says so with the wait in TTFT, which
    is then most of it (TTFT = wait + the prefill steps)."""
    sizes = ("--input-len", "1000", "--output-len", "500")
    saturation = run_json(cli, *sizes, "--request-rate", "1")["saturation_rate_per_s"]
    rate = f"{saturation * 0.99:.4f}"
    result = cli(*BASE, *sizes, "--request-rate", rate, "--json")
    doc: dict[str, Any] = json.loads(result.out)
    row = doc["rows"][0]
    slots = math.floor(doc["max_concurrency_kv"])
    (note,) = [n for n in doc["notes"] if n["code"] == "serving-queued"]
    assert f"one of {slots:,} running slots (kv-pool caps them at {slots:,})" in note["message"]
    # The note gives the Erlang C wait for a slot: the queue less the admission wait for
    # the step in progress (see test_an_open_loop_waits_the_step_in_progress).
    offered = float(rate) * (row["e2e_latency_s"] - row["queue_ms"] / 1000)
    f, dec, mix = row["chunk_share"], row["decode_step_ms"], row["mixed_step_ms"]
    residual = ((1 - f) * dec**2 + f * mix**2) / (2 * mean_step_ms(row))
    for_slot = row["queue_ms"] - (1 - math.exp(-offered)) * residual
    assert f"a mean {for_slot:,.0f} ms in TTFT (Erlang C)" in note["message"]
    assert for_slot > row["ttft_ms"] - row["queue_ms"] > 0
    assert "decodecalc: note: at 99.0% of the saturation rate" in result.err
    assert_little(doc)
    # Far below saturation the wait is a sliver of TTFT and nothing is noted of it (only
    # the typical band's months on an H100 and that its engines, most fitted at batch 1,
    # run past their range).
    notes = run_json(cli, *sizes, "--request-rate", "1")["notes"]
    assert [n["code"] for n in notes] == ["typical-window", "engine-extrapolated"]


def test_weights_past_the_memory_say_so(cli: Run) -> None:
    """Qwen3-Next-80B-A3B in BF16 at TP 2: 79.67B x 2 B / 2 = 79.7 GB of weights per GPU,
    past the 76.54 GB budget: no KV cache at all, and the error says what took the memory
    (not "a pool of 0 tokens")."""
    r = cli(
        "serving", "-m", "qwen3-next-80b-a3b", "-g", "h100-sxm", "--tp", "2",
        "--input-len", "4K", "--output-len", "1K", "--concurrency", "1",
    )  # fmt: skip
    assert r.code == 2 and r.out == "" and r.err.count("\n") == 1
    assert r.err.startswith("decodecalc: error: no room for a KV cache")
    # 85,520,809,984 B / 2^30 = 79.65 GiB; less 471,859,200 B: 85,048,950,784 B = 79.21 GiB.
    # The same room estimate's "GB usable" is (step/memory.py server_room).
    assert (
        "0.9 of the memory CUDA reports (79.21 GiB: the GPU's 79.65 GiB less 450 MiB it never "
        f"reports) is {H100_BUDGET_GB}, and the weights take 79.7"
    ) in r.err


def test_one_query_token_is_singular(cli: Run) -> None:
    r = cli(*BASE, "--input-len", "100", "--max-num-batched-tokens", "1", "--output-len", "10",
            "--concurrency", "1")  # fmt: skip
    assert r.code == 2 and "beside a decode step of 1 token\n" in r.err


def test_speculation_break_even_counts_the_prefill_chunks(cli: Run) -> None:
    """EAGLE with k = 5 at a = 0.6 (2.383 tokens per verify step) on Llama-3.1-8B at the
    roofline. A decode step alone at 256 sequences stays memory-bound (weights 15 GB and
    about 256 x 1,150 x 128 KiB = 38.6 GB of KV, 16 ms at 3.35 TB/s, against 256 x 6 x
    15 GFLOP = 23 TFLOP, 23 ms at 989 TFLOP/s, spread over 2.383 tokens), so the old
    decode-only test called speculation paying everywhere; but each step also carries
    about 256 x 1,000 / 126 = 2,025 prompt tokens, which makes it compute-bound, and
    there every verify token costs its arithmetic: at 256 running the plain server's TPOT
    is the shorter. The break-even is where the two TPOTs cross, and the note says so."""
    sizes = ("--input-len", "1000", "--output-len", "300", "--engine", "roofline")
    spec = ("--speculative", "eagle", "--num-speculative-tokens", "5", "--acceptance", "0.6")
    doc = run_json(cli, *sizes, "--concurrency", "256", *spec)
    even = doc["break_even_batch"]
    assert even is not None and 1 < even <= 256
    plain = run_json(cli, *sizes, "--concurrency", f"{even - 1},{even},256")["rows"]
    fast = run_json(cli, *sizes, "--concurrency", f"{even - 1},{even}", *spec)["rows"]
    assert fast[0]["tpot_ms"] < plain[0]["tpot_ms"] and fast[1]["tpot_ms"] >= plain[1]["tpot_ms"]
    assert doc["rows"][0]["tpot_ms"] > plain[2]["tpot_ms"]
    (note,) = [n for n in doc["notes"] if n["code"] == "speculation-does-not-pay"]
    assert f"from {even:,} running" in note["message"]


def test_a_slow_open_loop_runs_under_one_request(cli: Run) -> None:
    """At 0.01 requests/s each request runs about 3.8 s (1 chunk step + 499 decode steps
    of 7-8 ms), so by Little's law 0.01 x 3.8 = 0.038 requests run on average, not the
    whole one the old report gave (more running than in the system); the steps, while
    one runs, are a batch of one's. Running counts the steps' time, not c_req."""
    doc = run_json(cli, "--input-len", "1000", "--output-len", "500", "--request-rate", "0.01")
    row = doc["rows"][0]
    service_s = row["e2e_latency_s"] - (row["queue_ms"] + row["per_request_ms"]) / 1000
    assert row["running"] == pytest.approx(0.01 * service_s, rel=1e-12)
    assert 0.03 < row["running"] < row["concurrency"] < 0.05
    assert row["decode_batch"] == 1
    assert_little(doc)


def test_a_sweep_runs_in_ascending_order(cli: Run) -> None:
    """The rows of a list trace the throughput-latency curve, so they come in ascending
    order whatever order they were typed in (a chart would otherwise zig-zag)."""
    doc = run_json(cli, "--input-len", "1000", "--output-len", "100", "--concurrency", "64,1,8")
    assert [r["concurrency"] for r in doc["rows"]] == [1, 8, 64]


def test_table_shows_a_fraction_of_a_request(cli: Run) -> None:
    """0.01 requests/s x an E2E of about 3.9 s (one 1,000-token chunk and 499 decode steps
    of under 8 ms) in the system is about 0.039 requests: three figures, not the "0.0" a
    tenth's rounding printed. Little's law on the row's own E2E gives the figure the
    table must show; running leaves c_req out."""
    sizes = ("--input-len", "1000", "--output-len", "500", "--request-rate", "0.01")
    row = run_json(cli, *sizes)["rows"][0]
    cells = cli(*BASE, *sizes).out.splitlines()[-1].split("│")
    in_system = 0.01 * row["e2e_latency_s"]
    running = 0.01 * (row["e2e_latency_s"] - (row["queue_ms"] + row["per_request_ms"]) / 1000)
    assert 0.03 < running < in_system < 0.05
    assert cells[5].strip() == f"{row['e2e_latency_s']:.2f}"  # E2E s
    assert [c.strip() for c in cells[:2]] == [f"{in_system:.3g}", f"{running:.3g}"]


def test_data_parallel_attention_ranks_each_have_their_scheduler_limits(cli: Run) -> None:
    """DeepSeek-V3 in FP8 on 8 H200s with data-parallel attention: each rank is an engine
    of its own (vLLM's DP engine cores), so max-num-seqs 1,024 and the 8,192-token budget
    hold per rank: the replica runs up to 8 x 1,024 = 8,192 sequences, and the KV pool is
    the limit. By hand: a rank's pool of (131,014,066,176 - 98,856,244,736) / 70,272 B a
    token = 457,619.6, 457,616 tokens in 16-token blocks = 28,601 blocks; a request of
    500 + 500 tokens takes ceil(1,000 / 16) = 63, so 453 a rank (28,601 / 63 = 453.98),
    3,624 over the 8. All 3,000 run (before: 1,024, max-num-seqs for the whole replica);
    of 5,000, 3,624."""
    result = cli(
        "serving", "-m", "deepseek-v3", "-g", "h200", "--tp", "8", "-w", "fp8",
        "--dp-attention", "--engine", "roofline", "--input-len", "500", "--output-len", "500",
        "--concurrency", "3000,5000", "--json",
    )  # fmt: skip
    assert result.code == 0, result.err
    rows = json.loads(result.out)["rows"]
    assert [(r["running"], r["limit"]) for r in rows] == [(3000, "concurrency"), (3624, "kv-pool")]
    # The note's figure is the whole requests the ranks hold (453 x 8), not the pooled
    # blocks' 28,601 x 8 / 63 = 3,631.9 (review s41).
    assert (
        "3,624 requests run at once (the KV pools hold 3,624 whole requests of 1,000 tokens: "
        "453 on each of 8 attention ranks)"
    ) in result.err


def test_load_notes_print_loads_and_whole_counts_as_the_table_does(cli: Run) -> None:
    """Llama-3.1-8B on an H100 at concurrency 1,000,000: max-num-seqs (1,024 on a GPU of
    80 GB) runs 1,024 at once, a whole count, and the note names the load with thousands
    separated, as the table does (not 1e+06, nor 1,024.0)."""
    result = cli(
        *BASE, "--input-len", "100", "--output-len", "100", "--concurrency", "1,1000000",
        "--engine", "roofline",
    )  # fmt: skip
    assert result.code == 0, result.err
    assert "concurrency 1,000,000: 1,024 requests run at once (max-num-seqs is 1,024)" in result.err
