"""Comparisons, sweeps and charts."""

from __future__ import annotations

import csv
import io
import json
import math
import sys
from pathlib import Path

import pytest

from decodecalc.answers.estimate import estimate
from decodecalc.loading.catalog import Catalog
from decodecalc.scenarios.scenario import Scenario
from decodecalc.step.fast import ROW_FIELDS, FastStep
from decodecalc.views.charts import Series, terminal_chart
from tests.conftest import Run

COMPARE = (
    "compare",
    "-m",
    "llama-3.1-70b,mixtral-8x7b",
    "-g",
    "h100,h200",
    "-w",
    "fp8",
    "-k",
    "fp8,bf16",
    "--batch",
    "1,32",
    "-c",
    "8K,128K",
)


def test_compare_rows_equal_single_estimates(cli: Run) -> None:
    doc = json.loads(cli(*COMPARE, "--json").out)
    assert len(doc["rows"]) == 2 * 2 * 2 * 2 * 2  # models x GPUs x KV x batches x contexts
    for row in doc["rows"]:
        single = json.loads(
            cli(
                "estimate",
                "-m",
                row["model"],
                "-g",
                row["gpu"],
                "-w",
                "fp8",
                "-k",
                row["kv_dtype"],
                "--batch",
                str(row["batch"]),
                "-c",
                str(row["context"]),
                "--json",
            ).out
        )
        (match,) = [r for r in single["rows"] if r["context"] == row["context"]]
        assert row["ms_per_token"] == match["ms_per_token"]
        assert row["crossover_context"] == single["crossover_context"]


def test_ratio_is_to_the_first_scenario(cli: Run) -> None:
    doc = json.loads(cli(*COMPARE, "--json").out)
    for context in (8192, 131072):
        rows = [r for r in doc["rows"] if r["context"] == context]
        first = next(r for r in rows if r["scenario"] == 1)
        assert first["ratio_to_first"] == 1
        for r in rows:
            assert r["ratio_to_first"] == pytest.approx(r["ms_per_token"] / first["ms_per_token"])


def test_a_deployment_named_twice_is_one_row(cli: Run) -> None:
    """h100 is an alias of h100-sxm: one deployment, one row, as a model named twice."""
    result = cli("compare", "-m", "llama-3.1-8b", "-g", "h100,h100-sxm,h200", "-c", "1K", "--json")
    assert result.code == 0, result.err
    assert [r["gpu"] for r in json.loads(result.out)["rows"]] == ["h100-sxm", "h200"]


def test_compare_csv_and_table(cli: Run) -> None:
    rows = list(csv.DictReader(io.StringIO(cli(*COMPARE, "-f", "csv").out)))
    assert len(rows) == 32 and "ratio_to_first" in rows[0]
    table = cli(*COMPARE).out
    assert rows[0]["label"].startswith("llama-3.1-70b ")  # CSV keeps the whole label
    assert "every scenario: TP1" in table  # what all share, said once
    assert " TP1 " not in table and "llama-3.1-70b h200 fp8/fp8 B32" in table


def test_sweep_row_count_is_the_product_of_the_axes(cli: Run) -> None:
    r = cli(
        "sweep",
        "-m",
        "llama-3.1-8b,qwen3-8b",
        "-g",
        "h100,l40s,mi300x",
        "-w",
        "bf16,fp8",
        "-k",
        "bf16",
        "--batch",
        "1,4,16",
        "-c",
        "0..10K:1K",
    )
    lines = r.out.splitlines()
    assert lines[0].split(",") == [
        "model",
        "gpu",
        "weights",
        "kv_dtype",
        "batch",
        "tp",
        *ROW_FIELDS,
        "crossover_context",
        "engine",
        "v_dtype",
        *("pp", "ep", "dp_attention"),
        *("cost_per_million_tokens", "joules_per_token", "kwh_per_million_tokens"),
        *("expected_tokens_per_s", "expected_throughput_tokens_per_s"),
        *("roofline_ms_per_token", "roofline_tokens_per_s", "roofline_throughput_tokens_per_s"),
        "engine_line",
        "bandwidth_bytes_per_s",
    ]
    assert len(lines) - 1 == 2 * 3 * 2 * 1 * 3 * 11


def test_sweep_skips_and_counts_invalid_combinations(cli: Run) -> None:
    r = cli("sweep", "-m", "llama-3.1-8b", "-g", "h100", "--tp", "1,3", "-c", "1K")
    assert len(r.out.splitlines()) == 2  # header + the TP 1 row
    assert "skipped 1 combination that is no valid deployment" in r.err and "tp 3" in r.err


class TestCompareSkipsWhatSweepSkips:
    """Qwen2.5-7B has 28 attention heads (its config.json), which TP 8 does not split;
    Llama-3.1-8B's 32 it does: of the four combinations three are deployments."""

    GRID = ("-m", "llama-3.1-8b,qwen2.5-7b", "-g", "h100", "--tp", "1,8", "-c", "8K")

    def test_the_valid_combinations_and_a_note(self, cli: Run) -> None:
        r = cli("compare", *self.GRID, "--json")
        assert r.code == 0, r.err
        doc = json.loads(r.out)
        assert [(x["model"], x["tp"]) for x in doc["scenarios"]] == [
            ("llama-3.1-8b", 1),
            ("llama-3.1-8b", 8),
            ("qwen2.5-7b", 1),
        ]
        (skipped,) = [n for n in doc["notes"] if n["code"] == "skipped-combinations"]
        assert skipped["message"].startswith(
            "skipped 1 combination that is no valid deployment; first: model=qwen2.5-7b, "
            "gpu=h100, batch=1, tp=8: tp 8 does not split qwen2.5-7b's attention heads"
        )
        swept = cli("sweep", *self.GRID)
        assert len(swept.out.splitlines()) == 1 + 3  # the same three, as sweep skips
        assert skipped["message"] in swept.err

    def test_no_valid_combination_is_an_error(self, cli: Run) -> None:
        r = cli("compare", "-m", "qwen2.5-7b", "-g", "h100", "--tp", "3,8", "-c", "8K")
        assert r.code == 2 and r.out == ""
        assert r.err.startswith("decodecalc: error: no combination is a valid deployment; ")
        alone = cli("compare", "-m", "qwen2.5-7b", "-g", "h100", "--tp", "8", "-c", "8K")
        assert alone.err == (
            "decodecalc: error: tp 8 does not split qwen2.5-7b's attention heads evenly; valid: "
            "1, 2, 4, 28\n"
        )


@pytest.mark.parametrize("fmt", ["csv", "jsonl"])
def test_sweep_rows_carry_the_engines_release_line(cli: Run, fmt: str) -> None:
    """vllm@0.7 and vllm@0.19 on an MI300X are two rows whose engine is vllm: the added
    engine_line (last) tells them apart, as compare's labels do; --engine vllm takes the
    newest line (0.19), typical none."""
    r = cli("sweep", "-m", "llama-3.1-8b", "-g", "mi300x", "-c", "8K", "-f", fmt,
            "--engine", "vllm@0.7,vllm@0.19,vllm,typical")  # fmt: skip
    assert r.code == 0, r.err
    if fmt == "csv":
        rows = list(csv.DictReader(io.StringIO(r.out)))
        assert ",engine_line" in r.out.splitlines()[0]
    else:
        rows = [json.loads(line) for line in r.out.splitlines()]
    found = [(row["engine"], row["engine_line"]) for row in rows]
    none = "" if fmt == "csv" else None
    assert found == [("vllm", "0.7"), ("vllm", "0.19"), ("vllm", "0.19"), ("typical", none)]


class TestABandwidthGivenBesideSeveralGpus:
    """-b 1TB/s with -g h100,h200: both rows are priced at 1 TB/s (15.01 GB of weights
    and 1.07 GB of KV at 8K: 16.08 ms at the roofline, for either GPU), so each row says
    the bandwidth it was priced at, and a note each GPU's own: 3.35 TB/s for the H100 SXM
    and 4.8 TB/s for the H200 (their datasheets)."""

    GRID = ("-m", "llama-3.1-8b", "-g", "h100,h200", "-b", "1TB/s", "-c", "8K")

    def test_compare_labels_and_notes(self, cli: Run) -> None:
        r = cli("compare", *self.GRID, "--engine", "roofline", "--json")
        assert r.code == 0, r.err
        doc = json.loads(r.out)
        assert [row["label"] for row in doc["rows"]] == [
            "llama-3.1-8b h100-sxm@1TB/s bf16/bf16 B1 TP1 roofline",
            "llama-3.1-8b h200@1TB/s bf16/bf16 B1 TP1 roofline",
        ]
        assert [row["ms_per_token"] for row in doc["rows"]] == pytest.approx([16.084] * 2, 1e-4)
        given = [n["message"] for n in doc["notes"] if "(--bandwidth) stands in" in n["message"]]
        assert len(given) == 2
        assert "h100-sxm's own 3,350 GB/s" in given[0] and "h200's own 4,800 GB/s" in given[1]

    def test_sweep_has_a_bandwidth_column(self, cli: Run) -> None:
        r = cli("sweep", *self.GRID)
        rows = list(csv.DictReader(io.StringIO(r.out)))
        assert [(x["gpu"], x["bandwidth_bytes_per_s"]) for x in rows] == [
            ("h100-sxm", "1000000000000"),
            ("h200", "1000000000000"),
        ]
        own = cli("sweep", "-m", "llama-3.1-8b", "-g", "h200", "-c", "8K", "--json")
        assert json.loads(own.out)["bandwidth_bytes_per_s"] == 4_800_000_000_000


def test_sweep_jsonl_parses_line_by_line(cli: Run) -> None:
    r = cli(
        "sweep", "-m", "gemma-3-27b", "-g", "h100", "--batch", "1,8", "-c", "512,4K", "-f", "jsonl"
    )
    records = [json.loads(line) for line in r.out.splitlines()]
    assert len(records) == 4
    assert set(records[0]) == {
        *("model", "gpu", "weights", "kv_dtype", "batch", "tp"),
        *ROW_FIELDS,
        "crossover_context",
        "engine",
        "v_dtype",
        *("pp", "ep", "dp_attention"),
        *("joules_per_token", "kwh_per_million_tokens"),  # the H100's board power; no price
        *("expected_tokens_per_s", "expected_throughput_tokens_per_s"),
        *("roofline_ms_per_token", "roofline_tokens_per_s", "roofline_throughput_tokens_per_s"),
        "engine_line",
        "bandwidth_bytes_per_s",
    }
    assert isinstance(records[0]["batch"], int) and isinstance(records[0]["kv_bytes"], int)


@pytest.mark.parametrize(
    "model", ["llama-3.1-8b", "gemma-3-27b", "deepseek-v3", "qwen3-next-80b-a3b"]
)
def test_sweep_rows_equal_the_estimator(catalog: Catalog, model: str) -> None:
    gpu = catalog.gpu("h200")
    s = Scenario(
        catalog.model(model),
        catalog.dtype("nvfp4"),
        catalog.dtype("fp8"),
        gpu.bandwidth_bytes_per_s,
        gpu=gpu,
        batch=16,
    )
    contexts = [0, 100, 1024, 5000, 100_000]
    fast = {
        row[0]: dict(zip(ROW_FIELDS, row, strict=True)) for row in FastStep.of(s).rows(contexts)
    }
    for r in estimate(s, contexts).rows:
        if r.is_crossover:
            continue
        f = fast[r.context_tokens]
        assert (f["kv_bytes"], f["total_bytes"], f["bound"], f["fits"]) == (
            r.kv_bytes,
            r.total_bytes,
            r.bound,
            r.fits,
        )
        assert math.isclose(f["ms_per_token"], r.seconds_per_token * 1000, rel_tol=1e-12)


def test_sweep_refuses_a_huge_grid(cli: Run) -> None:
    r = cli(
        "sweep",
        "-m",
        "llama-3.1-8b",
        "-g",
        "h100",
        "--batch",
        ",".join(map(str, range(1, 20001))),
        "-c",
        "0..9M:1K",
    )
    assert r.code == 2 and "at most 100,000,000" in r.err


class TestCharts:
    def test_terminal_chart_at_80_columns_marks_the_crossover(self, cli: Run) -> None:
        out = cli(
            "estimate",
            "-m",
            "llama-3.1-8b",
            "-g",
            "h100",
            "--batch",
            "8",
            "-c",
            "1K..128K",
            "--chart",
        ).out
        chart = out[out.index("decode latency per token") :]
        assert "crossover (KV = weights)" in chart and "context (tokens)" in chart
        assert "ms per token" in chart and "\x1b[" not in chart

    def test_chart_width(self) -> None:
        series = [Series("a", (0, 1000), (1.0, 2.0), (500.0, 1.5))]
        text = terminal_chart(series, width=80)
        assert max(len(line) for line in text.splitlines()) <= 80

    @pytest.mark.parametrize("suffix", [".svg", ".png"])
    def test_plot_files(self, cli: Run, tmp_path: Path, suffix: str) -> None:
        pytest.importorskip("matplotlib")
        path = tmp_path / f"chart{suffix}"
        r = cli(
            *COMPARE[:3],
            "-g",
            "h100",
            "-w",
            "fp8",
            "-k",
            "fp8",
            "--batch",
            "32",
            "-c",
            "1K..64K",
            "--plot",
            str(path),
        )
        assert r.code == 0, r.err
        data = path.read_bytes()
        if suffix == ".svg":
            import xml.etree.ElementTree as ET

            assert ET.fromstring(data).tag.endswith("svg")
        else:
            assert data.startswith(b"\x89PNG\r\n\x1a\n")

    def test_missing_matplotlib_says_how_to_install(
        self, cli: Run, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        monkeypatch.setitem(sys.modules, "matplotlib", None)
        r = cli(
            "estimate",
            "-m",
            "llama-3.1-8b",
            "-g",
            "h100",
            "-c",
            "1K",
            "--plot",
            str(tmp_path / "c.png"),
        )
        assert r.code == 2 and "pip install 'decodecalc[plot]'" in r.err

    def test_plot_needs_svg_or_png(self, cli: Run, tmp_path: Path) -> None:
        r = cli(
            "estimate",
            "-m",
            "llama-3.1-8b",
            "-g",
            "h100",
            "-c",
            "1K",
            "--plot",
            str(tmp_path / "c.pdf"),
        )
        assert r.code == 2 and ".svg or .png" in r.err


@pytest.mark.slow
def test_sweep_to_a_file_with_a_progress_bar(cli: Run, tmp_path: Path) -> None:
    out = tmp_path / "grid.csv"
    batches = ",".join(str(b) for b in range(1, 11))
    r = cli(
        "sweep",
        "-m",
        "llama-3.1-8b",
        "-g",
        "h100",
        "--batch",
        batches,
        "-c",
        "1..10000:1",
        "-o",
        str(out),
    )
    assert r.code == 0 and r.out == ""
    with out.open() as lines:
        assert sum(1 for _ in lines) == 1 + 10 * 10_000


@pytest.mark.parametrize("fmt", ["csv", "jsonl"])
def test_sweep_says_once_how_many_rows_do_not_fit(cli: Run, fmt: str) -> None:
    """Review item 9: the rows said fits=false and stderr said nothing. Llama-3.1-8B holds
    8,030,261,248 x 2 = 16.06 GB of BF16 weights and 2 x 32 x 8 x 128 x 2 = 131,072 B of
    KV a token. Batch 16 at 32,768 tokens: 16 x 32,768 x 131,072 = 68.72 GB of KV, with
    the weights 84.8 GB, past the H100's 80 GB whatever the utilization; batch 16 at 1,024
    (2.1 GB of KV) and batch 1 at 32,768 (4.3 GB) fit. One row of four does not."""
    run = cli(
        "sweep",
        "-m",
        "llama-3.1-8b",
        "-g",
        "h100-sxm",
        "--batch",
        "1,16",
        "-c",
        "1K,32K",
        "-f",
        fmt,
    )
    lines = [line for line in run.err.splitlines() if "does not fit" in line]
    assert len(lines) == 1
    assert "does not fit: 1 of 4 rows (fits false)" in lines[0]
    assert "the smallest: batch 16 at 32,768 tokens (llama-3.1-8b h100-sxm" in lines[0]
    fitting = cli("sweep", "-m", "llama-3.1-8b", "-g", "h100-sxm", "-c", "1K")
    assert "does not fit" not in fitting.err
