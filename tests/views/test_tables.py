"""Human tables fit the terminal: columns wrap at spaces or drop in their declared order,
and no number or name is ever cut (issue 11).

Each command's table is checked against its own JSON: every value of every column the
table shows must appear whole, on one line with the rest of its row.
"""

from __future__ import annotations

import contextlib
import functools
import io
import json
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from decodecalc.cli import main
from decodecalc.views import humanize as h
from decodecalc.views.render import (
    MIN_COLUMNS,
    fit_columns,
    table_width,
    to_markdown,
    to_table,
)
from decodecalc.views.report import Column, Report
from tests.conftest import Run

ROOT = Path(__file__).resolve().parents[2]
EXAMPLES = sorted(str(p.relative_to(ROOT)) for p in (ROOT / "examples").glob("*.yaml"))
Cell = Callable[[dict[str, Any]], str]


def _yes(v: dict[str, Any], key: str = "fits") -> str:
    return "yes" if v[key] else "NO"


@dataclass(frozen=True)
class Case:
    """A command, where its JSON keeps the rows, and each shown column's cell from a row."""

    command: str
    """The arguments, split at spaces."""
    rows: Callable[[dict[str, Any]], list[dict[str, Any]]]
    cells: dict[str, Cell]
    """Table header -> the cell a JSON row gives; text cells may wrap at spaces."""
    text: frozenset[str] = field(default_factory=frozenset)
    """Headers of text columns: only their first words need share the row's first line."""
    words: frozenset[str] = field(default_factory=frozenset)
    """Headers of columns of words (no cell to compare) a narrow table may drop."""


CASES = {
    "estimate": Case(
        "estimate -m llama-3.1-70b -g h100-sxm -w fp8 -k fp8 --batch 8 --tp 2 -c 1K..128K",
        lambda d: d["rows"],
        {
            "Context (tokens)": lambda r: f"{r['context']:,}",
            "Weights": lambda r: h.size(r["weight_bytes"]),
            "KV cache": lambda r: h.size(r["kv_bytes"]),
            "Total / step": lambda r: h.size(r["total_bytes"]),
            "KV share": lambda r: f"{r['kv_share'] * 100:.1f}%",
            # The expected step leads with its band; the roofline beside it is the bound,
            # and the rates are the expected step's.
            "Expected ms (band)": lambda r: (
                f"{r['expected_ms_per_token']:.1f} ({r['expected_low_ms_per_token']:.1f}-"
                f"{r['expected_high_ms_per_token']:.1f})"
            ),
            "Roofline bound ms": lambda r: f"{r['roofline_ms_per_token']:.3f}",
            "tok/s / seq": lambda r: h.rate(r["expected_tokens_per_s"]),
            "tok/s x8": lambda r: h.rate(r["expected_throughput_tokens_per_s"]),
            "Bound": lambda r: r["bound"],
            "Comm ms": lambda r: f"{r['comm_ms']:.3f}",
            "Fits": _yes,
        },
    ),
    "compare": Case(
        "compare -m gemma-2-9b,gemma-2-27b -g h100 -c 1K,128K",
        lambda d: d["rows"],
        {
            "Context": lambda r: f"{r['context']:,}",
            # The label starts with the model id: both ids, whole, on their rows' lines.
            "Scenario": lambda r: r["label"],
            "Expected ms": lambda r: f"{r['expected_ms_per_token']:.1f}",
            "low": lambda r: f"{r['expected_low_ms_per_token']:.1f}",
            "high": lambda r: f"{r['expected_high_ms_per_token']:.1f}",
            "Roofline bound ms": lambda r: f"{r['roofline_ms_per_token']:.3f}",
            "tok/s / seq": lambda r: h.rate(r["expected_tokens_per_s"]),
            "tok/s all": lambda r: h.rate(r["expected_throughput_tokens_per_s"]),
            "KV share": lambda r: f"{r['kv_share'] * 100:.1f}%",
            "Crossover": lambda r: f"{round(r['crossover_context']):,}",
            "vs #1": lambda r: f"{r['expected_ratio_to_first']:.2f}x",
            "Fits": _yes,
        },
        frozenset({"Scenario"}),
    ),
    "check": Case(
        f"check {' '.join(EXAMPLES)} -g h100-sxm -t max_ms_per_token=40",
        lambda d: d["results"],
        {
            "File": lambda r: r["file"],
            "Deployment": lambda r: r["deployment"],
            "Target": lambda r: r["target"],
            "Result": lambda r: "pass" if r["passed"] else "FAIL",
        },
        words=frozenset({"Limit"}),
    ),
    "models": Case(
        "models",
        lambda d: d["models"],
        {
            "Model": lambda r: r["id"],
            "Params": lambda r: h.count(r["params"]),
            "Active": lambda r: h.count(r["active_params"]),
            "Layers": lambda r: str(r["layers"]),
            "Hidden": lambda r: str(r["hidden_size"]),
            "KV/token (BF16)": lambda r: h.size(r["kv_bytes_per_token_bf16"]),
            "Max context": lambda r: f"{r['max_context']:,}",
            "Family": lambda r: r["family"],
            "Aliases": lambda r: ", ".join(r["aliases"]),
        },
        frozenset({"Aliases"}),
    ),
    "gpus": Case(
        "gpus",
        lambda d: d["gpus"],
        {
            "GPU": lambda r: r["id"],
            "Name": lambda r: r["name"],
            "Bandwidth": lambda r: h.bandwidth(r["bandwidth_bytes_per_s"]),
            "Memory": lambda r: h.binary_size(r["memory_bytes"]),
            "Kind": lambda r: r["memory_kind"],
            "Announced": lambda r: "yes" if r["announced"] else "-",
            "Aliases": lambda r: ", ".join(r["aliases"]),
        },
        frozenset({"Name", "Kind", "Aliases"}),
    ),
    "links": Case(
        "links",
        lambda d: d["links"],
        {
            "Link": lambda r: r["id"],
            "Name": lambda r: r["name"],
            "Bandwidth (one way)": lambda r: h.bandwidth(r["bandwidth_bytes_per_s"]),
            "Latency": lambda r: f"{r['latency_s'] * 1e6:g} us",
        },
        frozenset({"Name"}),
    ),
    "dtypes": Case(
        "dtypes",
        lambda d: d["dtypes"],
        {
            "Dtype": lambda r: r["id"],
            "Bits/value": lambda r: f"{r['bits_per_value']:g}",
            "Weights": lambda r: "yes" if r["weights"] else "no",
            "KV cache": lambda r: "yes" if r["kv_cache"] else "no",
            "Aliases": lambda r: ", ".join(r["aliases"]),
            "What it is": lambda r: r["description"],
        },
        frozenset({"Aliases", "What it is"}),
    ),
    "generate": Case(
        "generate -m llama-3.1-70b -g h100 -p 8K -n 1K",
        lambda d: [d],
        {"Value": lambda d: f"{d['prompt_tokens']:,} / {d['new_tokens']:,}"},
        frozenset({"Value"}),
    ),
    "calibrate": Case(
        "calibrate tests/data/measured-decode.yaml",
        lambda d: d["points"],
        {
            "Model": lambda r: r["model"],
            "GPU": lambda r: r["gpu"],
            "Weights": lambda r: r["weights"],
            "Batch": lambda r: str(r["batch"]),
            "TP": lambda r: str(r["tp"]),
            "Context": lambda r: f"{r['context']:,}",
            "Measured ms": lambda r: f"{r['measured_ms']:.3f}",
            "Roofline ms": lambda r: f"{r['roofline_ms']:.3f}",
            "Fitted ms": lambda r: f"{r['predicted_ms']:.3f}",
            "Error": lambda r: f"{r['error_pct']:+.1f}%",
        },
    ),
}


@functools.cache
def json_of(command: str) -> Any:
    """The command's JSON (from the repository root), once for both widths."""
    out = io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(io.StringIO()):
        assert main([*command.split(), "--format", "json"]) == 0
    return json.loads(out.getvalue())


NOTE = re.compile(r"not shown at (\d+) columns: (.*?) \(a wider terminal")


def dropped(out: str) -> list[str]:
    """The headers the note under a table names, and a check that it names the width."""
    match = NOTE.search(" ".join(out.split()))
    if match is None:
        return []
    return match.group(2).split(", ")


def row_lines(out: str) -> list[list[str]]:
    return [[c.strip() for c in line.split("│")] for line in out.splitlines() if "│" in line]


def shows(line: list[str], cell: str, text: bool) -> bool:
    """A number is a whole cell; text may have wrapped, so its first line is a prefix
    ending at a space."""
    return any(c == cell or (text and c and cell.startswith(c + " ")) for c in line)


@pytest.mark.parametrize("columns", [80, 120])
@pytest.mark.parametrize("name", CASES)
def test_the_table_fits_and_cuts_nothing(
    cli: Run, monkeypatch: pytest.MonkeyPatch, name: str, columns: int
) -> None:
    case = CASES[name]
    monkeypatch.chdir(ROOT)
    doc = json_of(case.command)
    monkeypatch.setenv("COLUMNS", str(columns))
    out = cli(*case.command.split()).out
    assert max(len(line) for line in out.splitlines()) <= columns
    assert "…" not in out
    hidden = dropped(out)
    assert set(hidden) <= set(case.cells) | case.words | {"crossover"}, hidden
    assert "Result" not in hidden  # a check's verdict is never what a narrow table drops
    if hidden:
        assert f"not shown at {columns} columns" in " ".join(out.split())
    lines = row_lines(out)
    words = set(out.split())
    for row in case.rows(doc):
        cells = {k: f(row) for k, f in case.cells.items() if k not in hidden}
        assert any(
            all(shows(line, cell, k in case.text) for k, cell in cells.items()) for line in lines
        ), (name, cells)
        for k in case.text & cells.keys():
            assert set(cells[k].split()) <= words, (k, cells[k])


def test_the_estimate_table_names_every_context_whole(
    cli: Run, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The issue's own example: 131,072 was shown as '131,0…'."""
    monkeypatch.setenv("COLUMNS", "80")
    out = cli(*CASES["estimate"].command.split()).out
    # 1K..128K doubles from 1,024, with the crossover context among them.
    for context in (1024 * 2**k for k in range(8)):
        assert f" {context:,} " in out


def test_compare_shows_whether_each_scenario_fits(
    cli: Run, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("COLUMNS", "120")
    out = cli(*CASES["compare"].command.split()).out
    # gemma-2-27b at 131,072 tokens: 27.23e9 params x 2 bytes = 54.5 GB of weights, plus
    # 376.8 kB x 131,072 = 49.4 GB of KV, past 0.9 x 80 GiB = 77.3 GB.
    (line,) = [
        line for line in out.splitlines() if "│" in line and "131,072" in line and "27b" in line
    ]
    assert line.rstrip().endswith("NO")
    assert "Fits" in out


def test_compare_has_no_fits_column_without_a_gpu(cli: Run) -> None:
    out = cli("compare", "-m", "llama-3.1-8b", "-b", "1TB/s", "-c", "1K").out
    assert "Fits" not in out
    assert (
        "fits"
        in json.loads(cli("compare", "-m", "llama-3.1-8b", "-b", "1TB/s", "--json").out)["rows"][0]
    )


def test_serving_title_shows_a_bandwidth_override_as_estimate_does(cli: Run) -> None:
    """Review s41: -b 1TB/s beside -g h100 prices the H100 at 1 TB/s; serving's title named
    the GPU alone, estimate's carries the bandwidth after the name."""
    load = ("--input-len", "1000", "--output-len", "100", "--concurrency", "1")
    out = cli("serving", "-m", "llama-3.1-8b", "-g", "h100", "-b", "1TB/s", *load).out
    assert out.startswith("Llama-3.1-8B on 1 x NVIDIA H100 SXM 1 TB/s (TP 1) ·")
    estimate = cli("estimate", "-m", "llama-3.1-8b", "-g", "h100", "-b", "1TB/s").out
    assert estimate.startswith("Llama-3.1-8B on NVIDIA H100 SXM 1 TB/s ·")
    own = cli("serving", "-m", "llama-3.1-8b", "-g", "h100", *load).out
    assert own.startswith("Llama-3.1-8B on 1 x NVIDIA H100 SXM (TP 1) ·")


# The renderer itself, on made-up reports.

WIDE = Column("wide", "A wide column", numeric=False, drop=1)
COLUMNS = (
    Column("id", "Id", numeric=False),
    Column("x", "Some figure", drop=2),
    Column("y", "Other", drop=2),
    WIDE,
    Column("z", "Last"),
)
RECORD = {"id": "model-7b", "x": 123_456_789, "y": 42, "wide": "alpha " * 8, "z": 7}


def _report(columns: tuple[Column, ...] = COLUMNS) -> Report:
    return Report({}, columns, (RECORD,), title=("a title",), footer=("a footer",))


def _render(report: Report, columns: int, monkeypatch: pytest.MonkeyPatch) -> str:
    monkeypatch.setenv("COLUMNS", str(columns))
    out = io.StringIO()
    to_table(report, out)
    return out.getvalue()


@pytest.mark.parametrize(
    ("width", "shown"),
    [
        # Widths needed (text width, then + 3 per column - 1): id 8, figure 9 (123456789
        # never wraps), Other 5, the wide column 6 ("column"), Last 4: 32 + 14 = 46.
        (46, ["id", "x", "y", "wide", "z"]),
        # 45: the two drop=2 columns go first, the rightmost of them (Other) before the
        # figure; 27 + 11 = 38 fits.
        (45, ["id", "x", "wide", "z"]),
        (38, ["id", "x", "wide", "z"]),
        # Then the figure (18 + 8 = 26 needed), then the wide column (drop=1): 12 + 5.
        (37, ["id", "wide", "z"]),
        (26, ["id", "wide", "z"]),
        (25, ["id", "z"]),
        (17, ["id", "z"]),
        # Then undeclared columns from the right; the last column always stays.
        (16, ["id"]),
        (3, ["id"]),
    ],
)
def test_columns_drop_highest_rank_first_then_from_the_right(width: int, shown: list[str]) -> None:
    cells = [[c.show(RECORD[c.key], False) for c in COLUMNS]]
    widths = fit_columns(COLUMNS, cells, width)
    assert [COLUMNS[i].key for i in widths] == shown
    if len(shown) > 1:
        assert table_width(widths.values()) <= width


def test_spare_width_unwraps_text_before_headers() -> None:
    cells = [[c.show(RECORD[c.key], False) for c in COLUMNS]]
    widths = fit_columns(COLUMNS, cells, 60)
    # 46 needed at the least, 14 spare: all of it to the wrapping text (47 wide).
    assert widths == {0: 8, 1: 9, 2: 5, 3: 6 + 14, 4: 4}
    assert table_width(widths.values()) == 60


def test_a_dropped_column_is_named_under_the_table(monkeypatch: pytest.MonkeyPatch) -> None:
    """At 40 columns (MIN_COLUMNS) the 46 the table needs are too many: Other (drop 2,
    right of the figure) goes, and 38 fit."""
    out = _render(_report(), 40, monkeypatch)
    lines = out.splitlines()
    assert max(map(len, lines)) <= 40
    assert "123456789" in out and "Other" not in out.split("not shown")[0]
    note = " ".join(out.split())
    assert "not shown at 40 columns: Other (a wider terminal or --format json" in note
    assert note.endswith("a footer")  # the note comes straight under the table


@pytest.mark.parametrize("columns", ["0", "1", "12", "39"])
def test_a_tiny_width_is_laid_out_at_the_minimum(
    cli: Run, monkeypatch: pytest.MonkeyPatch, columns: str
) -> None:
    """COLUMNS=0 printed the Context column alone, without the header lines or the line
    naming what was left out: below MIN_COLUMNS the table is laid out at MIN_COLUMNS, and
    the headline (the expected step) outlives the KV share."""
    monkeypatch.setenv("COLUMNS", columns)
    out = cli("estimate", "-m", "llama-3.1-8b", "-g", "h100", "-c", "4K").out
    assert out.startswith("Llama-3.1-8B on NVIDIA H100 SXM")
    assert max(map(len, out.splitlines())) <= MIN_COLUMNS
    (row,) = [line for line in out.splitlines() if line.lstrip().startswith("4,096 │")]
    assert "15.55 GB" in row and re.search(r"\d\.\d \(\d\.\d-\d+\.\d\)", row), row
    assert "not shown at 40 columns: Weights, KV cache, KV share," in " ".join(out.split())


def test_text_wraps_only_at_spaces(monkeypatch: pytest.MonkeyPatch) -> None:
    out = _render(_report(), 46, monkeypatch)
    assert "…" not in out
    assert "123456789" in out and "model-7b" in out and "not shown" not in out
    assert all(re.fullmatch(r"(alpha ?)*", cell) for line in row_lines(out) for cell in line[3:4])


def test_too_narrow_for_one_column_runs_past_the_edge(monkeypatch: pytest.MonkeyPatch) -> None:
    out = _render(_report(), 5, monkeypatch)
    assert "model-7b" in out and "…" not in out


def test_a_wide_table_is_left_whole_when_piped_without_columns(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Not a terminal and no COLUMNS: the 160-character canvas, wide enough for all."""
    monkeypatch.delenv("COLUMNS")
    out = io.StringIO()
    to_table(_report(), out)
    assert "alpha " * 7 + "alpha" in out.getvalue() and "not shown" not in out.getvalue()


def test_markdown_keeps_every_column_at_any_width(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("COLUMNS", "20")
    out = io.StringIO()
    to_markdown(_report(), out)
    assert "| Id | Some figure | Other | A wide column | Last |" in out.getvalue()


def test_four_digit_milliseconds_and_terabytes_are_separated(cli: Run) -> None:
    """Llama-3.1-8B at 2^30 tokens on an H100: KV 131,072 B x 1,073,741,824 =
    140,737,488,355,328 B (140.74 TB); with 15,009,849,344 B of weights the step reads
    140,752,498,204,672 B / 3.35 TB/s = 42,015.671 ms, the roofline bound."""
    out = cli("estimate", "-m", "llama-3.1-8b", "-g", "h100", "-c", "1G").out
    (row,) = [line for line in out.splitlines() if "1,073,741,824 │" in line]
    assert "140.74 TB" in row and " 42,015.671 " in row
    band = re.search(r"([\d,]+\.\d) \(([\d,]+\.\d)-([\d,]+\.\d)\)", row)
    assert band is not None and all(re.fullmatch(r"\d{1,3}(,\d{3})*\.\d", g) for g in band.groups())
    assert band[2] == "42,015.7"  # the band's low end is the roofline


def test_the_deepseek_batch_of_a_million_reads_with_separators(cli: Run) -> None:
    """DeepSeek-V3 at batch 1,000,000: the KV bytes run to thousands of TB and the comm
    time to thousands of ms; the header and the note name the batch separated."""
    r = cli("estimate", "-m", "deepseek-v3", "-g", "h200", "--tp", "8", "--batch", "1000000")
    assert "batch 1,000,000 ·" in r.out and "at batch 1,000,000," in r.err
    assert re.search(r" \d,\d{3}\.\d\d TB ", r.out) and re.search(r" \d,\d{3}\.\d{3} ", r.out)
    assert "1000000" not in r.out + r.err


def test_exact_gives_the_headline_more_digits_and_keeps_separators(cli: Run) -> None:
    """Llama-3.1-70B FP8/FP8 at 200,000 tokens: 69,503,033,344 B of weights + 200,000 x
    163,840 B of KV = 102,271,033,344 B / 3.35 TB/s = 30.528667 ms, the roofline."""
    out = cli(
        "estimate", "-m", "llama-3.1-70b", "-g", "h100-sxm", "-w", "fp8", "-k", "fp8",
        "-c", "0,200000", "--exact",
    ).out  # fmt: skip
    (row,) = [line for line in out.splitlines() if " 200,000 │" in line]
    assert " 102,271,033,344 " in row and " 30.528667 " in row
    assert re.search(r" \d+\.\d{3} \(30\.529-\d+\.\d{3}\) ", row), row


@pytest.mark.parametrize(("joules", "cell"), [(2.0037, "2.004"), (2.0, "2.000"), (1.2, "1.200")])
def test_energy_per_token_keeps_its_decimals(joules: float, cell: str) -> None:
    """J / tok: three decimals always, as $ / M tok keeps its two, so a column never
    reads '2' under '1.99' (estimate's, compare's and serving's column)."""
    from decodecalc.views.estimate import COST_COLUMNS

    (column,) = [c for c in COST_COLUMNS if c.key == "joules_per_token"]
    assert column.show(joules, False) == cell


def test_plan_s_energy_column_reads_the_json_to_three_decimals(cli: Run) -> None:
    flags = ["plan", "-m", "llama-3.1-8b", "-c", "8K", "--gpus", "h100", "--tp", "1", "-w", "fp8"]
    rows = json.loads(cli(*flags, "--json").out)["rows"]
    table = cli(*flags).out
    header = next(line for line in table.splitlines() if "J / tok" in line)
    at = [cell.strip() for cell in header.split("┃")].index("J / tok")
    cells = [line.split("│")[at].strip() for line in table.splitlines() if "│" in line]
    assert cells and cells == [f"{r['joules_per_token']:.3f}" for r in rows[: len(cells)]]


def test_check_separates_thousands_of_milliseconds(cli: Run, tmp_path: Path) -> None:
    """The roofline step at 2^30 tokens, 42,015.671 ms (worked out above), as check's
    Value cell says it."""
    deployment = tmp_path / "long.yaml"
    deployment.write_text(
        "model: llama-3.1-8b\ngpu: h100\ncontext: 1G\nengine: roofline\n"
        "targets:\n  max_ms_per_token: 30\n"
    )
    result = cli("check", str(deployment))
    assert result.code == 1 and "42,015.671 ms at 1,073,741,824 tokens" in result.out
