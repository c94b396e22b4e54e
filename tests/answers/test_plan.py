"""decodecalc plan: the first answer meets every target when estimated alone, the solved
batch and context are exactly the largest that meet the latency target, and every other
option says which target it misses and by how much."""

from __future__ import annotations

import contextlib
import csv
import functools
import io
import json
import re
from pathlib import Path
from typing import Any

import pytest
import yaml
from hypothesis import given
from hypothesis import strategies as st

from decodecalc.answers.plan import largest
from decodecalc.cli import main
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


def test_plan_takes_back_every_batch_it_proposes(cli: Run) -> None:
    """Above 1,024 sequences (once refused as a TP would be): the batch plan solves,
    given back as --batch, is the same plan, not an error."""
    flags = ["-m", "llama-3.1-8b", "-c", "1K", "--gpus", "h200", "--tp", "1", "-w", "fp8"]
    solved = json_of(cli, "plan", *flags, "-k", "fp8", "--max-batch", "5000")["rows"][0]
    assert solved["batch"] > 1024
    given = json_of(cli, "plan", *flags, "-k", "fp8", "--batch", str(solved["batch"]))
    assert given["rows"][0]["batch"] == solved["batch"]


@pytest.mark.parametrize(("batch", "fits"), [(807, True), (808, False)])
def test_a_pipeline_stage_holds_one_batch_in_plan_as_in_estimate(
    cli: Run, batch: int, fits: bool
) -> None:
    """Llama-3.1-70B BF16, H100 SXM, TP 8 PP 4, 8K context. The last stage's GPU holds the
    most: 20 layers of (855,638,016 / 8 + 16,384 replicated norm) parameters, the final
    norm's 8,192 and 1/8 of the 128,256 x 8,192 LM head = 2,270,765,056 parameters,
    4,541,530,112 B in BF16. Its KV per token: 20 layers x 2 x 1 KV head (8 over TP 8) x
    128 x 2 B = 10,240 B, so a sequence at 8,192 tokens holds 83,886,080 B. The room a
    server leaves (step/memory.py server_room): (85,520,809,984 - 471,859,200) x 0.9 =
    76,544,055,705 B, less the sampler's activation peak 1,024 x 128,256 x 15 =
    1,970,012,160 B and the reserve 268,435,456 + 1,986,422,374 (1.85 GiB of all-reduce
    buffers at TP 8) = 2,254,857,830 B: 72,319,185,715 B. Less the weights that leaves
    67,777,655,603 B: 807.97 sequences, so 807 fit and 808 need 4,541,530,112 + 808 x
    83,886,080 = 72,321,482,752 B. (Charging the sum over the 4 stages, as a step streams,
    would let far fewer fit.)"""
    doc = json_of(
        cli, "plan", "-m", "llama-3.1-70b", "--gpus", "h100-sxm", "--tp", "8", "--pp", "4",
        "-w", "bf16", "-k", "bf16", "-c", "8K", "--batch", str(batch), "--price", "2.5",
    )  # fmt: skip
    (row,) = doc["rows"]
    assert row["max_batch"] == 807
    assert row["fits"] is fits and row["meets"] is fits
    if not fits:
        (miss,) = row["misses"]
        assert miss["target"] == "fit"
        assert (miss["value"], miss["limit"]) == (72_321_482_752, 72_319_185_715)
    assert estimate_row(cli, doc["model"], row, 8192)["fits"] is fits
    # The throughput credited is one batch's, as the memory holds one batch per stage.
    assert row["throughput_tokens_per_s"] == pytest.approx(batch / (row["ms_per_token"] / 1000))


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


def test_a_gpu_left_no_usable_memory_misses_the_fit_and_says_why(cli: Run) -> None:
    """--memory-utilization 0.02 of an H100's 81,559 MiB less the 450 MiB CUDA never reports
    is floor(85,048,950,784 x 0.02) = 1,700,979,015 bytes: less than the sampler's peak
    (1,024 rows x 128,256 logits x 15 B = 1,969,932,288) and the 256 MiB reserve
    (268,435,456) together, so nothing is usable and the deployment cannot fit (no division
    by the empty room). The miss counts the need with both, as serving's refusal does."""
    doc = json_of(
        cli, "plan", "-m", "llama-3.1-8b", "-g", "h100", "--tp", "1", "-w", "bf16", "-k", "bf16",
        "-c", "8K", "--max-ms-per-token", "30", "--memory-utilization", "0.02",
    )  # fmt: skip
    (row,) = doc["rows"]
    (miss,) = row["misses"]
    assert row["fits"] is False and miss["target"] == "fit"
    assert miss["limit"] == 1_700_979_015
    # 8.03e9 BF16 parameters (16.06 GB) and 8,192 tokens x 131,072 B of KV (1.07 GB)
    assert miss["value"] - 1_969_932_288 - 268_435_456 == pytest.approx(17.13e9, rel=1e-3)
    assert miss["message"] == (
        "needs 17.1 GB per GPU at batch 1 and 8,192 tokens, none usable: the activation peak "
        "(1.97 GB) and runtime reserve (0.27 GB) alone take the 1.70 GB its memory "
        "utilization gives"
    )


RANKED = re.compile(r"^\s*(\d+|-) │", re.M)
"""A table row's first cell: its rank, or '-' for an option that misses a target."""


def ranks(table: str) -> list[str]:
    return RANKED.findall(table)


ON_H100 = [*CASES[0], "--gpus", "h100-sxm"]
"""The 70B case on H100s alone: 18 answers and 18 misses of all three targets, enough for
the table to choose from at a tenth of the search (the table is drawn five times)."""


def test_a_table_shows_the_best_answers_and_sums_up_the_misses(cli: Run) -> None:
    doc = planned(*ON_H100)
    rows, answers = doc["rows"], doc["answers"]
    misses = [r for r in rows if not r["meets"]]
    assert answers > 10 and misses  # enough of both for the table to choose from
    table = cli("plan", *ON_H100)
    assert table.code == 0, table.err
    assert ranks(table.out) == [str(n) for n in range(1, 11)]  # --top defaults to 10
    assert "Why not" not in table.out  # every row shown meets every target
    assert f"{len(misses):,} deployments miss a target" in table.out
    # One line per missed target: how many options miss it, and the nearest of them.
    for target, words in (("latency", "miss <= 50 ms"), ("throughput", "miss >= 2,000 tok/s")):
        missing = [m for r in misses for m in r["misses"] if m["target"] == target]
        if missing:
            nearest = min(missing, key=lambda m: m["by"])
            line = next(x for x in table.out.splitlines() if words in x)
            assert line.strip().startswith(f"{len(missing):,} {words}")
            assert nearest["message"].split(" (")[0] in table.out.replace("\n", " ")
    by_target = {m["target"]: m for m in doc["missed"]}
    for entry in doc["missed"]:
        closest = rows[entry["closest_row"]]
        assert entry["count"] == sum(
            any(m["target"] == entry["target"] for m in r["misses"]) for r in rows
        )
        assert entry["closest_message"] in [m["message"] for m in closest["misses"]]
    assert set(by_target) <= {"latency", "throughput", "fit"}

    top = cli("plan", *ON_H100, "--top", "3")
    assert ranks(top.out) == ["1", "2", "3"]
    every = cli("plan", *ON_H100, "--all")
    assert ranks(every.out) == [str(n) for n in range(1, answers + 1)]
    assert ranks(cli("plan", *ON_H100, "--top", "0").out) == ranks(every.out)
    why = cli("plan", *ON_H100, "--top", "2", "--why")
    assert ranks(why.out) == ["1", "2", *["-"] * len(misses)] and "Why not" in why.out


def test_csv_and_json_hold_every_option_with_its_reason(cli: Run) -> None:
    doc = planned(*ON_H100)
    result = cli("plan", *ON_H100, "-f", "csv", "--top", "1")
    assert result.code == 0, result.err
    table = list(csv.DictReader(io.StringIO(result.out)))
    assert len(table) == len(doc["rows"])  # --top is the table's, never the data's
    # JSON's fields but the nested misses (every row here has a price, so every field)
    assert list(table[0]) == [k for k in doc["rows"][0] if k != "misses"]
    for row, record in zip(table, doc["rows"], strict=True):
        assert (row["meets"] == "true") == record["meets"]
        assert bool(row["why_not"]) == (not record["meets"]) == bool(record["misses"])


def test_an_impossible_target_says_the_best_any_option_reaches(cli: Run) -> None:
    flags = [
        "-m", "llama-3.1-8b", "-c", "8K", "--gpus", "h100,a100-80gb", "--tp", "1,2",
        "-w", "fp8", "-k", "fp8", "--price", "2", "--max-ms-per-token", "1",
    ]  # fmt: skip
    doc = json_of(cli, "plan", *flags)
    assert doc["answers"] == 0
    # 8.03e9 FP8 parameters are 8 GB: even an H100's 3.35 TB/s takes 2.4 ms to read them
    # (1.2 ms at TP 2, before the all-reduces), so no option reaches 1 ms.
    best = min(r["ms_per_token"] for r in doc["rows"])
    assert best > 1
    table = cli("plan", *flags, "--top", "2")
    assert table.code == 0, table.err
    assert "No deployment meets every target" in table.out
    assert ranks(table.out) == ["-", "-"] and "Why not" in table.out  # the nearest two
    line = next(x for x in table.out.splitlines() if "miss <= 1 ms per token" in x)
    assert f"all {len(doc['rows'])} miss" in line and "the best any reaches" in line
    assert f"{best:,.1f} ms per token" in line


def test_weights_a_gpu_cannot_multiply_in_are_said_to_be_weight_only(cli: Run) -> None:
    flags = ["-m", "llama-3.1-8b", "-c", "8K", "--gpus", "a100-80gb,h100", "--tp", "1"]
    doc = json_of(cli, "plan", *flags, "-w", "fp8", "-k", "fp8", "--price", "2")
    (note,) = [n["message"] for n in doc["notes"] if n["code"] == "plan-weight-only"]
    # The A100 (Ampere) has no FP8 tensor cores, the H100 (Hopper) has: vLLM runs FP8
    # checkpoints on an A100 through its FP8 Marlin kernels, weight-only, in BF16.
    assert "a100-80gb" in note and "h100" not in note and "BF16" in note
    for gpu, flops in (("a100-80gb", "bf16"), ("h100", "fp8")):
        alone = json_of(cli, "estimate", "-m", "llama-3.1-8b", "-g", gpu, "-w", "fp8", "-c", "8K")
        assert alone["flops_class"] == flops


def test_gpus_without_a_price_are_named(cli: Run) -> None:
    priced: set[str] = set()
    for path in (Path(__file__).parents[2] / "presets" / "prices").glob("*.yaml"):
        priced |= set(yaml.safe_load(path.read_text())["prices"])
    doc = planned(*CASES[0])
    (note,) = [n["message"] for n in doc["notes"] if n["code"] == "plan-unpriced-gpus"]
    assert {r["gpu"] for r in doc["rows"]} <= priced
    for gpu in ("rtx-4090", "mi325x", "l4"):  # no price list names them
        assert gpu not in priced and gpu in note
    given = ["-m", "llama-3.1-8b", "-c", "8K", "--tp", "1", "-w", "fp8", "-k", "fp8"]
    doc = json_of(cli, "plan", *given, "--gpus", "rtx-4090,h100")
    assert {r["gpu"] for r in doc["rows"]} == {"h100-sxm"}
    assert any("left out rtx-4090" in n["message"] for n in doc["notes"])
    alone = cli("plan", *given, "--gpus", "rtx-4090")
    assert alone.code == 2 and "give --price" in alone.err


def test_plan_takes_g_as_every_command_does(cli: Run) -> None:
    """-g is the GPU option of estimate, compare, serving...: plan's --gpus answers to it."""
    flags = ["-m", "llama-3.1-8b", "-c", "8K", "--tp", "1", "-w", "fp8"]
    short = json_of(cli, "plan", *flags, "-g", "h200,h100")
    assert short == json_of(cli, "plan", *flags, "--gpus", "h200,h100")
    assert {r["gpu"] for r in short["rows"]} == {"h200", "h100-sxm"}


def test_a_misspelt_gpu_gets_a_suggestion(cli: Run) -> None:
    result = cli("plan", "-m", "llama-3.1-8b", "-c", "8K", "--gpus", "h200,h10")
    assert result.code == 2 and result.err.count("\n") == 1
    assert result.err.startswith("decodecalc: error: --gpus: unknown GPU 'h10'; did you mean")


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
        ["-m", "llama-3.1-8b", "-c", "8K", "--max-batch", "2000000"],
        ["-m", "llama-3.1-8b", "-c", "8K", "--batch", "2000000"],
        ["-m", "llama-3.1-8b", "-c", "8K", "--price", "nosuchcloud"],
        ["-m", "llama-3.1-8b", "-c", "8K", "--top", "-1"],
    ],
)
def test_bad_input_is_one_line(cli: Run, flags: list[str]) -> None:
    result = cli("plan", *flags)
    assert result.code == 2
    assert result.err.startswith("decodecalc: error: ")
    assert result.err.count("\n") == 1


def test_a_context_past_the_models_maximum_is_refused(cli: Run) -> None:
    """Llama-3.1-8B's config.json has max_position_embeddings 131,072: 1M (1,048,576) is
    past it, and serving refuses such a request, so plan plans nothing for it; 128K
    (131,072) is the maximum itself, and every row's largest context is at least it."""
    past = cli("plan", "-m", "llama-3.1-8b", "-g", "h100", "-c", "1M", "--max-ms-per-token", "30")
    assert past.code == 2 and past.out == ""
    assert past.err == (
        "decodecalc: error: context 1,048,576 tokens is past llama-3.1-8b's maximum context of "
        "131,072: a server refuses such requests (plan a context up to it)\n"
    )
    at = cli("plan", "-m", "llama-3.1-8b", "-g", "h100", "-c", "128K", "--json")
    assert at.code == 0, at.err
    fitting = [o for o in json.loads(at.out)["rows"] if o["max_context"]]
    assert fitting and all(o["max_context"] == 131072 for o in fitting)


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


def test_the_engines_standing_in_are_said_once_per_gpu(cli: Run) -> None:
    """TensorRT-LLM was never measured on an MI300X: every MI300X option takes other
    parameters, and the plan says so once, as estimate does."""
    doc = json_of(
        cli,
        "plan",
        "-m",
        "llama-3.1-8b",
        "--gpus",
        "mi300x,h100-sxm",
        "--engine",
        "tensorrt-llm",
        "-c",
        "8K",
        "--max-ms-per-token",
        "40",
        "--price",
        "2",
    )
    fallback = [n for n in doc["notes"] if n["code"] == "engine-fallback"]
    assert len(fallback) == 1 and "amd-instinct" in fallback[0]["message"]
