"""plan under a workload agrees with serving and check; serving prices its throughput;
estimate's CSV has one overhead column. Each run as the user runs it, through the CLI."""

from __future__ import annotations

import csv
import io
import json
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import Run

# The example, as a workload: plan's first answers must be what serving and check
# then confirm for the same deployment, workload and target.
WORKLOAD = ["--input-len", "2K", "--output-len", "256", "--concurrency", "64"]
# Three GPUs, not every priced one: the same first three answers (MI300X at TP 4, 4, 8)
# from a third of the search.
PLAN = [
    *("plan", "-m", "llama-3.1-70b", "--gpus", "h100-sxm,h200,mi300x"),
    *(*WORKLOAD, "--max-ms-per-token", "30"),
]


def json_of(cli: Run, *args: str) -> Any:
    result = cli(*args, "--json")
    assert result.code == 0, result.err
    return json.loads(result.out)


def deployment_flags(row: dict[str, Any]) -> list[str]:
    return [
        "-g", row["gpu"], "--tp", str(row["tp"]), "--pp", str(row["pp"]), "-w", row["weights"],
        "-k", row["kv_dtype"], *(["--ep"] if row["ep"] else []),
    ]  # fmt: skip


@pytest.fixture(scope="module")
def planned() -> Any:
    from decodecalc.cli import main

    out = io.StringIO()
    import contextlib

    with contextlib.redirect_stdout(out):
        assert main([*PLAN, "--json"]) == 0
    return json.loads(out.getvalue())


class TestPlanAgreesWithServing:
    def test_the_first_three_answers_meet_the_target_under_serving(
        self, cli: Run, planned: Any
    ) -> None:
        """serving at the same workload measures each of the first three answers at the
        TPOT plan ranked it by, within the 30 ms target, and at its throughput."""
        for row in planned["rows"][:3]:
            assert row["meets"]
            (served,) = json_of(
                cli, "serving", "-m", "llama-3.1-70b", *deployment_flags(row), *WORKLOAD
            )["rows"]
            assert served["tpot_ms"] <= 30
            assert served["tpot_ms"] == pytest.approx(row["ms_per_token"], rel=1e-9)
            assert served["ttft_ms"] == pytest.approx(row["ttft_ms"], rel=1e-9)
            per_replica = row["throughput_tokens_per_s"] / row["replicas"]
            assert served["output_throughput_tokens_per_s"] == pytest.approx(per_replica)

    def test_the_first_three_answers_pass_check(
        self, cli: Run, planned: Any, tmp_path: Path
    ) -> None:
        """The same answers as deployment files with the workload and max_tpot_ms: 30
        pass `check` (exit 0)."""
        for i, row in enumerate(planned["rows"][:3]):
            path = tmp_path / f"d{i}.yaml"
            path.write_text(
                f"name: answer-{i}\nmodel: llama-3.1-70b\ngpu: {row['gpu']}\n"
                f"tp: {row['tp']}\npp: {row['pp']}\nweights: {row['weights']}\n"
                f"kv_dtype: {row['kv_dtype']}\nep: {str(row['ep']).lower()}\n"
                "workload:\n  concurrency: 64\n  input_len: 2K\n  output_len: 256\n"
                "targets:\n  max_tpot_ms: 30\n"
            )
            result = cli("check", str(path), "-f", "json")
            assert result.code == 0, result.out + result.err
            (tpot,) = [r for r in json.loads(result.out)["results"] if r["target"] == "max_tpot_ms"]
            assert tpot["passed"] and tpot["value"] == pytest.approx(row["ms_per_token"])

    def test_cost_is_the_gpus_over_the_servers_throughput(self, planned: Any) -> None:
        """$ / M tok = GPUs x price per GPU-hour / 3600 / output tok/s x 1e6 (one replica)."""
        row = planned["rows"][0]
        per_replica = row["throughput_tokens_per_s"] / row["replicas"]
        gpus = row["gpus"] // row["replicas"]
        expected = gpus * row["price_per_gpu_hour"] / 3600 / per_replica * 1e6
        assert row["cost_per_million_tokens"] == pytest.approx(expected)
        assert planned["targets"]["workload"] == {
            "input_len": 2048,
            "output_len": 256,
            "concurrency": 64,
            "request_rate": None,
        }

    def test_a_rate_past_saturation_is_a_missed_target(self, cli: Run) -> None:
        """An open loop faster than a server can serve is that server's miss, not an error."""
        doc = json_of(
            cli, "plan", "-m", "llama-3.1-8b", "--gpus", "h100-sxm", "--tp", "1", "-w", "bf16",
            "-k", "bf16", "--input-len", "1K", "--output-len", "200", "--request-rate", "1000",
        )  # fmt: skip
        (row,) = doc["rows"]
        assert not row["meets"] and row["ms_per_token"] is None
        assert row["throughput_tokens_per_s"] is None and "cost_per_million_tokens" not in row
        assert [m["target"] for m in row["misses"]] == ["load"]

    def test_the_page_leaves_a_server_without_tpot_off_its_chart(
        self, cli: Run, tmp_path: Path
    ) -> None:
        """--report with options that have no TPOT (past saturation) writes the page."""
        page = tmp_path / "plan.html"
        result = cli(
            "plan", "-m", "llama-3.1-8b", "--gpus", "h100-sxm,a100-40gb", "--tp", "1",
            "-w", "bf16", "--input-len", "1K", "--output-len", "200", "--request-rate", "30",
            "--report", str(page),
        )  # fmt: skip
        assert result.code == 0, result.err
        assert page.stat().st_size > 0


class TestPlanWorkloadOptions:
    @pytest.mark.parametrize(
        ("extra", "message"),
        [
            ([], "give --context"),
            (["--input-len", "1K"], "needs --input-len and --output-len"),
            (["--input-len", "1K", "--output-len", "9"], "give one of --concurrency"),
            ([*WORKLOAD, "-c", "4K"], "--context: the workload sets"),
            ([*WORKLOAD, "--batch", "8"], "--batch: the workload sets"),
            (
                ["--input-len", "1K", "--output-len", "9", "--concurrency", "1,2"],
                "plan takes one load",
            ),
        ],
    )
    def test_refused_with_one_line(self, cli: Run, extra: list[str], message: str) -> None:
        result = cli("plan", "-m", "llama-3.1-8b", *extra)
        assert result.code == 2 and message in result.err
        assert "Traceback" not in result.err

    def test_without_a_workload_plan_keeps_its_decode_step_meaning(self, cli: Run) -> None:
        """No workload: the targets hold for a decode step at --context, as before."""
        doc = json_of(
            cli, "plan", "-m", "llama-3.1-8b", "--gpus", "h100-sxm", "--tp", "1", "-w", "bf16",
            "-k", "bf16", "-c", "4K", "--batch", "8",
        )  # fmt: skip
        assert doc["targets"]["workload"] is None and doc["rows"][0]["batch"] == 8


class TestServingPrices:
    def test_price_adds_cost_per_million_output_tokens(self, cli: Run) -> None:
        """$2.50 per GPU-hour on one GPU: 2.5 / 3600 / (output tok/s) x 1e6 per million."""
        args = ["serving", "-m", "llama-3.1-8b", "-g", "h100-sxm", "--input-len", "1K",
                "--output-len", "200", "--concurrency", "8", "--price", "2.5"]  # fmt: skip
        doc = json_of(cli, *args)
        (row,) = doc["rows"]
        throughput = row["output_throughput_tokens_per_s"]
        assert row["cost_per_million_tokens"] == pytest.approx(2.5 / 3600 / throughput * 1e6)
        assert doc["cost"]["price_per_gpu_hour"] == 2.5
        table = cli(*args)
        assert table.code == 0 and "$ / M tok" in table.out

    def test_power_adds_energy_per_output_token(self, cli: Run) -> None:
        """500 W on one GPU: 500 / (output tok/s) joules per token."""
        args = ["serving", "-m", "llama-3.1-8b", "-g", "h100-sxm", "--input-len", "1K",
                "--output-len", "200", "--concurrency", "8", "--power", "500W"]  # fmt: skip
        (row,) = json_of(cli, *args)["rows"]
        assert row["joules_per_token"] == pytest.approx(500 / row["output_throughput_tokens_per_s"])
        table = cli(*args)
        assert "J / tok" in table.out and "$ / M tok" not in table.out


def test_estimate_csv_has_one_overhead_column(cli: Run) -> None:
    result = cli("estimate", "-m", "llama-3.1-8b", "-g", "h100-sxm", "--overhead", "0.5ms",
                 "--engine", "roofline", "-f", "csv")  # fmt: skip
    assert result.code == 0
    header, first, *_ = csv.reader(io.StringIO(result.out))
    assert header.count("overhead_ms") == 1
    assert float(first[header.index("overhead_ms")]) == 0.5


class TestEstimateCarriesItsCosts:
    def test_the_answer_holds_what_the_json_rows_show(self, cli: Run) -> None:
        """The estimate answer carries each row's cost and energy and its notes, and the
        view writes them as they are: $3.60 per GPU-hour on one GPU is $1e-6 per GPU-ms,
        so a batch of 1 costs 1e-6 x 1e6 = $1 per million tokens per expected ms."""
        from decodecalc.answers.estimate import estimate
        from decodecalc.api import scenario

        s = scenario("llama-3.1-8b", "h100-sxm", price=3.6)
        est = estimate(s, [4096])
        (row,) = json_of(
            cli, "estimate", "-m", "llama-3.1-8b", "-g", "h100-sxm", "--price", "3.6",
            "-c", "4096", "--no-crossover-row",
        )["rows"]  # fmt: skip
        (costs,) = est.costs
        assert costs is not None
        assert costs.cost_per_million_tokens == row["cost_per_million_tokens"]
        assert row["cost_per_million_tokens"] == pytest.approx(row["expected_ms_per_token"])
        assert {n.code for n in est.notes} >= {"energy-at-tdp"}


def test_plan_under_a_workload_sizes_the_pool_per_pipeline_stage(cli: Run) -> None:
    """Llama-3.1-405B in FP8 at TP 2 x PP 4 on H100s: a middle stage's GPU holds 32 of the
    126 layers, 51.0 GB of weights, and a pool of 323,040 tokens (worked by hand in
    tests/answers/test_serving.py), so 8 requests of 1,500 tokens run; all 126 layers'
    203 GB on each GPU would leave no room for a cache."""
    doc = json_of(
        cli,
        *("plan", "-m", "llama-3.1-405b", "--gpus", "h100-sxm", "-w", "fp8", "-k", "bf16"),
        *("--tp", "2", "--pp", "4", "--input-len", "1000", "--output-len", "500"),
        *("--concurrency", "8", "--max-ms-per-token", "200"),
    )
    (row,) = doc["rows"]
    assert (row["tp"], row["pp"], row["batch"], row["meets"]) == (2, 4, 8, True)
