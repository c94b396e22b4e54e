"""JSON schema 2 (issue 28, "the headline everywhere"): in JSON and CSV the plain names
(ms_per_token, tokens_per_s, throughput_tokens_per_s, ratio_to_first, generate's decode_s
and total_s) hold the expected figure, the roofline under --engine roofline; the bound
moved to roofline_*. The bound is computed here by hand; the expected figure is checked
against the expected_* keys, which kept their meaning."""

from __future__ import annotations

import csv
import io
import json
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from decodecalc.views.figures import latency_figure
from tests.conftest import Run

ROOT = Path(__file__).resolve().parents[2]
LLAMA_8B = ("-m", "llama-3.1-8b", "-g", "h100-sxm", "-w", "bf16", "-k", "bf16")
WEIGHT_BYTES = 15_009_849_344
"""Llama-3.1-8B's BF16 weights one step streams (the LM head and every layer; the
embedding's rows are gathered)."""
KV_BYTES_PER_TOKEN = 131_072
"""32 layers x 8 KV heads x 128 x (K and V) x 2 bytes."""
H100_SXM = 3.35e12
H200 = 4.8e12


def bound_ms(context: int, batch: int = 1, bandwidth: float = H100_SXM) -> float:
    """The roofline by hand: (weights + batch x context x KV per token) / bandwidth. At 4K
    and batch 1: 15,009,849,344 + 4,096 x 131,072 = 15,546,720,256 bytes / 3.35e12 B/s =
    4.6408 ms."""
    return (WEIGHT_BYTES + batch * context * KV_BYTES_PER_TOKEN) / bandwidth * 1000


def json_of(cli: Run, *args: str) -> Any:
    r = cli(*args)
    assert r.code == 0, r.err
    return json.loads(r.out)


class TestEstimate:
    def test_under_the_roofline_engine_both_names_are_the_bound(self, cli: Run) -> None:
        doc = json_of(cli, "estimate", *LLAMA_8B, "-c", "4K", "--engine", "roofline", "--json")
        assert doc["schema_version"] == 3 and doc["basis"] == "roofline"
        (row,) = doc["rows"]
        assert bound_ms(4096) == pytest.approx(4.6408, abs=1e-4)
        for key in ("ms_per_token", "roofline_ms_per_token", "expected_ms_per_token"):
            assert row[key] == pytest.approx(bound_ms(4096), rel=1e-12), key
        for key in ("tokens_per_s", "roofline_tokens_per_s", "expected_tokens_per_s"):
            assert row[key] == pytest.approx(1000 / bound_ms(4096), rel=1e-12), key

    def test_with_an_engine_the_plain_names_are_the_expected_figure(self, cli: Run) -> None:
        doc = json_of(cli, "estimate", *LLAMA_8B, "--batch", "8", "-c", "4K,32K", "--json")
        assert doc["basis"] == "expected"
        for row in doc["rows"]:
            context = row["context"]
            assert row["roofline_ms_per_token"] == pytest.approx(bound_ms(context, 8), rel=1e-12)
            assert row["roofline_throughput_tokens_per_s"] == pytest.approx(
                8000 / bound_ms(context, 8), rel=1e-12
            )
            ms = row["ms_per_token"]
            assert ms == row["expected_ms_per_token"] > row["roofline_ms_per_token"]
            assert row["tokens_per_s"] == row["expected_tokens_per_s"]
            assert row["tokens_per_s"] == pytest.approx(1000 / ms, rel=1e-12)
            assert row["throughput_tokens_per_s"] == pytest.approx(8000 / ms, rel=1e-12)

    def test_csv_keeps_each_plain_column_in_place_and_adds_the_roofline_last(
        self, cli: Run
    ) -> None:
        text = cli("estimate", *LLAMA_8B, "-c", "4K", "-f", "csv").out
        header = next(csv.reader(io.StringIO(text)))
        assert header[-3:] == [
            "roofline_ms_per_token",
            "roofline_tokens_per_s",
            "roofline_throughput_tokens_per_s",
        ]
        assert header.index("ms_per_token") < header.index("expected_ms_per_token")
        (row,) = csv.DictReader(io.StringIO(text))
        assert float(row["roofline_ms_per_token"]) == pytest.approx(bound_ms(4096), rel=1e-9)
        assert row["ms_per_token"] == row["expected_ms_per_token"]


class TestSweep:
    def test_csv_and_jsonl_rows(self, cli: Run) -> None:
        args = ("sweep", *LLAMA_8B, "--batch", "1,8", "-c", "4K,32K")
        rows = list(csv.DictReader(io.StringIO(cli(*args).out)))
        lines = [json.loads(line) for line in cli(*args, "-f", "jsonl").out.splitlines()]
        assert len(rows) == len(lines) == 4
        for row, line in zip(rows, lines, strict=True):
            batch, context = int(row["batch"]), int(row["context"])
            bound = bound_ms(context, batch)
            assert float(row["roofline_ms_per_token"]) == pytest.approx(bound, rel=1e-9)
            assert line["roofline_ms_per_token"] == pytest.approx(bound, rel=1e-12)
            assert line["roofline_tokens_per_s"] == pytest.approx(1000 / bound, rel=1e-12)
            assert row["ms_per_token"] == row["expected_ms_per_token"]
            assert row["tokens_per_s"] == row["expected_tokens_per_s"]
            assert line["ms_per_token"] == line["expected_ms_per_token"] > bound
            assert line["throughput_tokens_per_s"] == line["expected_throughput_tokens_per_s"]

    def test_under_the_roofline_engine_nothing_moves(self, cli: Run) -> None:
        args = ("sweep", *LLAMA_8B, "--batch", "8", "-c", "4K", "--engine", "roofline")
        (line,) = [json.loads(x) for x in cli(*args, "-f", "jsonl").out.splitlines()]
        assert line["ms_per_token"] == line["roofline_ms_per_token"]
        assert line["ms_per_token"] == pytest.approx(bound_ms(4096, 8), rel=1e-12)
        assert line["throughput_tokens_per_s"] == line["roofline_throughput_tokens_per_s"]


class TestCompare:
    def test_ratio_to_first_is_the_headline_s_and_the_bound_s_moved(self, cli: Run) -> None:
        doc = json_of(cli, "compare", *LLAMA_8B[:2], "-g", "h100-sxm,h200", "-c", "8K", "--json")
        first, second = doc["rows"]
        # The same bytes over 4.8 TB/s instead of 3.35: 3.35 / 4.8 = 0.6979 of the time.
        assert second["roofline_ratio_to_first"] == pytest.approx(H100_SXM / H200, rel=1e-12)
        assert second["roofline_ms_per_token"] == pytest.approx(bound_ms(8192, 1, H200), rel=1e-12)
        assert second["ratio_to_first"] == second["expected_ratio_to_first"]
        assert second["ratio_to_first"] == pytest.approx(
            second["ms_per_token"] / first["ms_per_token"], rel=1e-12
        )
        assert second["ms_per_token"] == second["expected_ms_per_token"]

    def test_under_the_roofline_engine_the_ratio_is_the_bound_s(self, cli: Run) -> None:
        doc = json_of(
            cli, "compare", *LLAMA_8B[:2], "-g", "h100-sxm,h200", "-c", "8K", "--engine",
            "roofline", "--json",
        )  # fmt: skip
        second = doc["rows"][1]
        assert second["ratio_to_first"] == pytest.approx(H100_SXM / H200, rel=1e-12)


class TestGenerate:
    PROMPT, NEW = 4096, 100

    def roofline_decode_s(self) -> float:
        """The prefill yields token 1; the other 99 steps read contexts 4,097 .. 4,195:
        99 x weights + KV per token x (99 x 4,096 + 1 + 2 + ... + 99 = 410,454) tokens,
        over the bandwidth."""
        steps = self.NEW - 1
        tokens = steps * self.PROMPT + steps * (steps + 1) // 2
        assert tokens == 410_454
        return (steps * WEIGHT_BYTES + KV_BYTES_PER_TOKEN * tokens) / H100_SXM

    def test_decode_is_the_expected_one_and_the_roofline_moved(self, cli: Run) -> None:
        doc = json_of(
            cli, "generate", *LLAMA_8B, "-p", str(self.PROMPT), "-n", str(self.NEW), "--json"
        )
        assert doc["roofline_decode_s"] == pytest.approx(self.roofline_decode_s(), rel=1e-9)
        assert doc["roofline_first_ms_per_token"] == pytest.approx(bound_ms(4097), rel=1e-12)
        assert doc["roofline_last_ms_per_token"] == pytest.approx(bound_ms(4195), rel=1e-12)
        assert doc["decode_s"] == doc["expected_decode_s"] > doc["roofline_decode_s"]
        assert doc["total_s"] == doc["expected_total_s"]
        assert doc["roofline_total_s"] == pytest.approx(
            doc["prefill_s"] + doc["roofline_decode_s"], rel=1e-12
        )
        assert doc["mean_ms_per_token"] == pytest.approx(doc["decode_s"] * 1000 / (self.NEW - 1))
        assert doc["first_ms_per_token"] <= doc["mean_ms_per_token"] <= doc["last_ms_per_token"]

    def test_under_the_roofline_engine_both_are_the_bound(self, cli: Run) -> None:
        doc = json_of(
            cli, "generate", *LLAMA_8B, "-p", "4096", "-n", "100", "--engine", "roofline", "--json"
        )
        for key in ("decode_s", "roofline_decode_s"):
            assert doc[key] == pytest.approx(self.roofline_decode_s(), rel=1e-9), key
        assert doc["first_ms_per_token"] == pytest.approx(bound_ms(4097), rel=1e-12)


def docs_pipeline() -> tuple[list[str], str]:
    """The sweep and the filter of docs/json.md's pipeline, as the page writes them."""
    text = (ROOT / "docs" / "json.md").read_text()
    block = re.search(r"```sh\n(decodecalc sweep .*?)```", text, re.DOTALL)
    assert block is not None
    sweep, _, rest = block.group(1).replace("\\\n", " ").partition("|")
    code = re.fullmatch(r'\s*python3 -c "(.*)"\s*', rest, re.DOTALL)
    assert code is not None
    return sweep.split()[1:], code.group(1)


def test_the_json_page_s_pipeline_keeps_the_deployments_expected_under_30_ms(
    cli: Run,
) -> None:
    """Its filter reads ms_per_token: the expected figure since schema 2. It keeps exactly
    the rows whose expected_ms_per_token is under 30 ms and that fit, which are fewer than
    the rows whose roofline is under 30 ms (the engines are slower than the bound)."""
    args, code = docs_pipeline()
    sweep = cli(*args)
    assert sweep.code == 0, sweep.err
    kept = subprocess.run(
        [sys.executable, "-c", code], input=sweep.out, capture_output=True, text=True, check=True
    ).stdout.splitlines()
    rows = list(csv.DictReader(io.StringIO(sweep.out)))
    fits = [r for r in rows if r["fits"] == "true"]
    expected = [r for r in fits if float(r["expected_ms_per_token"]) < 30]
    by_bound = [r for r in fits if float(r["roofline_ms_per_token"]) < 30]
    assert len(kept) == len(expected) < len(by_bound)
    shown = [
        f"{r['gpu']} {r['weights']} {r['kv_dtype']} tp {r['tp']} batch {r['batch']} "
        f"{r['expected_ms_per_token'][:6]}"
        for r in expected
    ]
    assert kept == shown


class TestCharts:
    def test_the_terminal_chart_labels_the_band_and_the_bound(self, cli: Run) -> None:
        out = cli("estimate", *LLAMA_8B, "--batch", "8", "-c", "1K..64K", "--chart").out
        chart = out[out.index("decode latency per token") :]
        for label in (": expected", ": band", ": roofline (the bound)"):
            assert f"llama-3.1-8b{label}" in chart, label

    def test_on_the_roofline_alone_there_is_no_bound_line(self, cli: Run) -> None:
        out = cli("estimate", *LLAMA_8B, "-c", "1K..64K", "--engine", "roofline", "--chart").out
        chart = out[out.index("decode latency per token") :]
        assert "llama-3.1-8b (roofline)" in chart and "the bound" not in chart

    def test_the_series_is_the_headline_with_the_roofline_as_its_bound(self) -> None:
        from decodecalc.answers.estimate import estimate
        from decodecalc.api import scenario
        from decodecalc.views.charts import series_of

        est = estimate(scenario("llama-3.1-8b", "h100-sxm"), [4096])
        (head,), (row,) = est.headlines, est.rows
        s = series_of("llama", est)
        assert s.ms_per_token == (head.seconds * 1000,)
        assert (s.low, s.high) == ((head.low_seconds * 1000,), (head.high_seconds * 1000,))
        assert s.bound == (pytest.approx(bound_ms(4096), rel=1e-12),)
        assert row.seconds_per_token * 1000 == s.bound[0] < s.ms_per_token[0]

    def test_the_page_draws_the_roofline_labelled_the_bound(self, cli: Run) -> None:
        doc = json_of(cli, "estimate", *LLAMA_8B, "-c", "4K,8K", "--json")
        traces = {t.get("name"): t for t in latency_figure(doc).data}
        bound = traces["roofline (the bound)"]
        assert bound["y"] == [r["roofline_ms_per_token"] for r in doc["rows"]]
        assert bound["y"][0] == pytest.approx(bound_ms(4096), rel=1e-12)
        (expected,) = [
            t for n, t in traces.items() if n.startswith("expected (") and "fill" not in t
        ]
        assert expected["y"] == [r["ms_per_token"] for r in doc["rows"]]
