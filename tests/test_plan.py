"""decodecalc plan: the first answer meets every target when estimated alone, the solved
batch and context are exactly the largest that meet the latency target, and every other
option says which target it misses and by how much."""

from __future__ import annotations

import contextlib
import functools
import io
import json
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from decodecalc.cli import main
from decodecalc.physics.plan import largest
from tests.conftest import Run

CASES = [
    # A 70B dense model on every priced GPU, with a throughput target replicas must carry.
    ["-m", "llama-3.1-70b", "-c", "32K", "--max-ms-per-token", "50", "--min-throughput", "2000"],
    # An MoE model (EP tried), a tight latency target, chosen GPUs at one given price.
    ["-m", "qwen3-30b-a3b", "-c", "8K", "--max-ms-per-token", "15", "--gpus", "h100,mi300x",
     "-w", "bf16,fp8", "--price", "2.5"],
]  # fmt: skip


@functools.cache
def planned(*args: str) -> Any:
    """plan's JSON, computed once per module for the tests that read the same plan."""
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = main(["plan", *args, "--json"])
    assert code == 0, err.getvalue()
    return json.loads(out.getvalue())


def json_of(cli: Run, *args: str) -> Any:
    result = cli(*args, "--json")
    assert result.code == 0, result.err
    return json.loads(result.out)


def estimate_row(cli: Run, model: str, row: dict[str, Any], context: int, *extra: str) -> Any:
    """The plan row's deployment (one replica) estimated alone at the context."""
    flags = [
        "-m", model, "-g", row["gpu"], "--tp", str(row["tp"]), "--pp", str(row["pp"]),
        "-w", row["weights"], "-k", row["kv_dtype"], "--batch", str(row["batch"]),
        "-c", str(context), "--no-crossover-row", *(["--ep"] if row["ep"] else []), *extra,
    ]  # fmt: skip
    (found,) = json_of(cli, "estimate", *flags)["rows"]
    return found


@pytest.mark.parametrize("case", CASES, ids=["llama-70b", "qwen3-moe"])
def test_the_first_answer_meets_every_target_when_estimated_alone(
    cli: Run, case: list[str]
) -> None:
    doc = planned(*case)
    first = doc["rows"][0]
    assert first["rank"] == 1 and first["meets"] and not first["misses"]
    targets = doc["targets"]
    extra = ["--price", "2.5"] if "--price" in case else []
    row = estimate_row(cli, doc["model"], first, targets["context"], *extra)
    assert row["fits"] is True
    assert row["expected_ms_per_token"] <= targets["max_ms_per_token"]
    if targets["min_throughput_tokens_per_s"] is not None:
        # replicas x batch / expected step
        throughput = first["replicas"] * first["batch"] / (row["expected_ms_per_token"] / 1000)
        assert throughput >= targets["min_throughput_tokens_per_s"]
    assert row["expected_ms_per_token"] == pytest.approx(first["ms_per_token"])
    if extra:
        assert row["cost_per_million_tokens"] == pytest.approx(first["cost_per_million_tokens"])


def test_answers_come_cheapest_first_then_the_misses(cli: Run) -> None:
    doc = planned(*CASES[0])
    rows = doc["rows"]
    answers = [r for r in rows if r["meets"]]
    assert doc["answers"] == len(answers) > 0
    assert rows[: len(answers)] == answers  # every answer before any miss
    costs = [(r["cost_per_million_tokens"], r["gpus"]) for r in answers]
    assert costs == sorted(costs)
    assert [r["rank"] for r in answers] == list(range(1, len(answers) + 1))
    for r in rows:
        # cost = price x GPUs of one replica / 3600 x seconds per step / batch x 1e6
        group = r["tp"] * r["pp"]
        expected = r["price_per_gpu_hour"] * group / 3600 * r["ms_per_token"] / 1000 / r["batch"]
        assert r["cost_per_million_tokens"] == pytest.approx(expected * 1e6)
        assert r["gpus"] == group * r["replicas"] <= doc["targets"]["max_gpus"]
        if not r["meets"]:
            assert r["rank"] is None and r["why_not"] and r["misses"]


def test_the_solved_batch_and_context_are_the_largest(cli: Run) -> None:
    doc = json_of(
        cli, "plan", "-m", "llama-3.1-8b", "--gpus", "h100", "--tp", "1", "-w", "bf16",
        "-k", "bf16", "-c", "8K", "--max-ms-per-token", "20", "--max-batch", "100000",
    )  # fmt: skip
    (row,) = doc["rows"]
    limit = 20.0

    def step(batch: int, context: int) -> Any:
        return estimate_row(cli, "llama-3.1-8b", {**row, "batch": batch}, context)

    at_max = step(row["max_batch"], 8192)
    past_max = step(row["max_batch"] + 1, 8192)
    assert at_max["fits"] and at_max["expected_ms_per_token"] <= limit
    assert not past_max["fits"] or past_max["expected_ms_per_token"] > limit
    assert row["batch"] == row["max_batch"]  # under --max-batch, plan takes the largest
    longest = step(row["batch"], row["max_context"])
    longer = step(row["batch"], row["max_context"] + 1)
    assert longest["fits"] and longest["expected_ms_per_token"] <= limit
    assert not longer["fits"] or longer["expected_ms_per_token"] > limit


def test_a_given_batch_is_kept_and_a_miss_says_by_how_much(cli: Run) -> None:
    doc = json_of(
        cli, "plan", "-m", "llama-3.1-70b", "--gpus", "l4,h100", "--tp", "1", "-w", "bf16", "-k",
        "bf16", "-c", "8K", "--batch", "4", "--max-ms-per-token", "1", "--price", "2",
    )  # fmt: skip
    assert {r["batch"] for r in doc["rows"]} == {4}
    assert doc["answers"] == 0
    for r in doc["rows"]:
        targets = {m["target"] for m in r["misses"]}
        assert {"latency", "fit"} <= targets  # 141 GB of BF16 weights fit on neither
        latency = next(m for m in r["misses"] if m["target"] == "latency")
        assert latency["limit"] == 1 and latency["value"] == pytest.approx(r["ms_per_token"])
        assert latency["by"] == pytest.approx(r["ms_per_token"] - 1)
        fit = next(m for m in r["misses"] if m["target"] == "fit")
        # 70.6e9 BF16 parameters are 141 GB: more than an H100's 0.9 x 79.65 GiB or an L4's.
        assert fit["value"] > 141e9 > fit["limit"]


def test_no_throughput_within_the_gpu_limit_is_a_miss(cli: Run) -> None:
    doc = json_of(
        cli, "plan", "-m", "llama-3.1-8b", "--gpus", "h100", "--tp", "1", "-w", "bf16",
        "-k", "bf16", "-c", "8K", "--batch", "1", "--min-throughput", "1000", "--max-gpus", "2",
        "--price", "2",
    )  # fmt: skip
    (row,) = doc["rows"]
    (miss,) = row["misses"]
    assert miss["target"] == "throughput" and miss["limit"] == 1000
    # two replicas of one GPU at batch 1: 2 / seconds per step
    assert miss["value"] == pytest.approx(2 / (row["ms_per_token"] / 1000))


def test_table_and_csv(cli: Run) -> None:
    small = [
        "-m",
        "qwen3-8b",
        "-c",
        "8K",
        "--gpus",
        "h100,l4",
        "-w",
        "fp8",
        "-k",
        "fp8",
        "--tp",
        "1",
    ]
    table = cli("plan", *small, "--max-ms-per-token", "10")
    assert table.code == 0, table.err
    assert "Why not" in table.out and "$ / M tok" in table.out and "ms per token" in table.out
    csv_out = cli("plan", *small, "-f", "csv")
    header = csv_out.out.splitlines()[0].split(",")
    assert header[:3] == ["rank", "gpu", "gpus"] and "misses" not in header


@pytest.mark.parametrize(
    "flags",
    [
        ["-m", "llama-3.1-8b"],  # no --context
        ["-m", "llama-3.1-8b", "-c", "8K", "--max-ms-per-token", "0"],
        ["-m", "llama-3.1-8b", "-c", "8K", "--min-throughput", "-5"],
        ["-m", "llama-3.1-8b", "-c", "8K", "-b", "1TB/s"],
        ["-m", "llama-3.1-8b,qwen3-8b", "-c", "8K"],
        ["-m", "llama-3.1-8b", "-c", "8K", "--batch", "1,2"],
        ["-m", "llama-3.1-8b", "-c", "8K", "--gpus", "nosuchgpu"],
        ["-m", "llama-3.1-8b", "-c", "8K", "--max-gpus", "0"],
        ["-m", "llama-3.1-8b", "-c", "8K", "--price", "nosuchcloud"],
    ],
)
def test_bad_input_is_one_line(cli: Run, flags: list[str]) -> None:
    result = cli("plan", *flags)
    assert result.code == 2
    assert result.err.startswith("decodecalc: error: ")
    assert result.err.count("\n") == 1


@given(
    st.integers(0, 60),
    st.integers(0, 2000),
    st.floats(-10, 5000, allow_nan=False),
    st.sampled_from(["linear", "concave", "convex", "steps"]),
)
def test_largest_is_the_brute_force_answer(low: int, span: int, limit: float, shape: str) -> None:
    """Any non-decreasing step time: the search finds what trying every n finds."""
    curves = {
        "linear": lambda n: 3.0 * n + 1,
        "concave": lambda n: 40 * n**0.5,
        "convex": lambda n: n * n / 100,
        "steps": lambda n: float(n // 7 * 7),
    }
    value = curves[shape]
    high = low + span
    expected = max((n for n in range(low, high + 1) if value(n) <= limit), default=low - 1)
    assert largest(low, high, value, limit) == expected
