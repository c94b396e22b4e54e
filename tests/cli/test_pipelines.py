"""Pipelines: every command that prints data can write it to a file, the crossover row can
be left out, and CSV carries the crossover context."""

from __future__ import annotations

import csv
import io
import json
import re
from pathlib import Path

import pytest

from decodecalc.cli import COMMANDS
from tests.conftest import Run, cli_group

DATA_COMMANDS = {
    "estimate": ["-m", "llama-3.1-8b", "-g", "h100", "-c", "1K,64K", "--json"],
    "generate": ["-m", "llama-3.1-8b", "-g", "h100", "-p", "1K", "-n", "16", "--json"],
    "explain": ["-m", "llama-3.1-8b", "-g", "h100", "-c", "8K", "--json"],
    "compare": ["-m", "llama-3.1-8b,qwen3-8b", "-g", "h100", "-c", "8K", "--json"],
    "sweep": ["-m", "llama-3.1-8b", "-g", "h100", "-c", "8K,16K"],
    "check": ["examples/chat-h100.yaml", "--format", "json"],
    "calibrate": ["tests/data/measured-decode.yaml", "--json"],
    "models": ["--json"],
    "gpus": ["--json"],
    "dtypes": ["--json"],
    "recipes": ["--json"],
    "links": ["--json"],
    "validate": [
        *("tests/fixtures/benchmarks/llama-bench-depth.md", "-m", "qwen2.5-7b", "-g", "rtx-4080"),
        "--json",
    ],
    "engines": ["--json"],
    "show": ["llama-3.1-8b", "--json"],
    "import": ["tests/fixtures/configs/llama-3.1-8b.json", "--name", "x"],
    "schema": [],
    "serving": [
        *("-m", "llama-3.1-8b", "-g", "h100", "--concurrency", "1,8"),
        *("--input-len", "1K", "--output-len", "256", "--json"),
    ],
    "plan": [
        *("-m", "llama-3.1-8b", "--gpus", "h100", "-c", "8K"),
        *("--max-ms-per-token", "20", "--json"),
    ],
    "report": ["-m", "llama-3.1-8b", "-g", "h100", "-c", "1K,64K"],
}


def test_every_command_is_listed_here() -> None:
    assert set(DATA_COMMANDS) == set(COMMANDS)


@pytest.mark.parametrize("command", sorted(DATA_COMMANDS))
def test_every_data_command_takes_output(command: str) -> None:
    params = cli_group().commands[command].params
    assert any("--output" in p.opts and "-o" in p.opts for p in params), command


# report writes only to its file (its page names the command, --output and all).
@pytest.mark.parametrize("command", sorted(set(DATA_COMMANDS) - {"check", "report"}))
def test_output_file_holds_what_stdout_would(cli: Run, tmp_path: Path, command: str) -> None:
    args = [command, *DATA_COMMANDS[command]]
    printed = cli(*args)
    assert printed.code == 0, printed.err
    target = tmp_path / "out.txt"
    written = cli(*args, "--output", str(target))
    assert written.code == 0 and written.out == ""
    assert target.read_text() == printed.out


def test_an_unwritable_output_is_one_line(cli: Run, tmp_path: Path) -> None:
    r = cli("models", "--output", str(tmp_path / "no" / "such" / "dir" / "x.json"))
    assert r.code == 2 and r.out == "" and len(r.err.splitlines()) == 1
    assert "cannot write" in r.err


@pytest.mark.parametrize(
    ("option", "name"), [("--output", "x.json"), ("--plot", "p.svg"), ("--report", "r.html")]
)
def test_an_unwritable_file_is_refused_before_any_data(
    cli: Run, tmp_path: Path, option: str, name: str
) -> None:
    """A pipe never gets a whole document and then a failing status: every file a command
    writes is checked before stdout gets a byte."""
    missing = tmp_path / "no" / name
    r = cli("estimate", "-m", "llama-3.1-8b", "-g", "h100", "-c", "1K", option, str(missing))
    assert (r.code, r.out) == (2, "") and len(r.err.splitlines()) == 1
    assert f"cannot write '{missing}'" in r.err


def test_the_crossover_row_can_be_left_out(cli: Run) -> None:
    """Llama-3.1-70B FP8/FP8 on one GPU: KV is 80 layers x 2 x 8 heads x 128 x 1 byte =
    163,840 bytes per token, so T* = 69,503,033,344 / 163,840 = 424,212.85 tokens, inside
    1K..1M: a row is added at 424,213 unless asked not to."""
    args = ("estimate", "-m", "llama-3.1-70b", "-g", "h100", "-w", "fp8", "-k", "fp8")
    with_row = json.loads(cli(*args, "-c", "1K,1M", "--json").out)
    without = json.loads(cli(*args, "-c", "1K,1M", "--no-crossover-row", "--json").out)
    assert [r["context"] for r in with_row["rows"]] == [1024, 424_213, 1_048_576]
    assert [r["context"] for r in without["rows"]] == [1024, 1_048_576]
    assert without["crossover_context"] == with_row["crossover_context"] == 424_212.85
    assert with_row["rows"][0] == without["rows"][0]


def test_csv_carries_the_crossover_context(cli: Run) -> None:
    args = ("-m", "llama-3.1-70b", "-g", "h100", "-w", "fp8", "-k", "fp8", "-c", "1K,8K")
    rows = list(csv.DictReader(io.StringIO(cli("estimate", *args, "-f", "csv").out)))
    assert [float(r["crossover_context"]) for r in rows] == [424_212.85, 424_212.85]
    swept = list(csv.DictReader(io.StringIO(cli("sweep", *args).out)))
    assert [float(r["crossover_context"]) for r in swept] == [424_212.85, 424_212.85]
    # No crossover (every layer windowed): an empty cell, as other unknowns are.
    none = cli("sweep", "-m", "mistral-7b-v0.1", "-g", "h100", "-c", "1K").out
    assert next(csv.DictReader(io.StringIO(none)))["crossover_context"] == ""


@pytest.mark.parametrize("fmt", ["table", "json", "csv", "markdown"])
def test_notes_go_to_stderr_in_every_format(cli: Run, fmt: str) -> None:
    """docs/cli.md: stderr keeps pipes clean, tables included (JSON also carries them)."""
    args = ("estimate", "-m", "llama-3.1-8b", "-g", "h100", "-c", "1K", "--engine", "roofline")
    r = cli(*args, "-f", fmt)
    assert "decodecalc: note: these are bandwidth-roofline figures" in r.err
    assert "note:" not in r.out


def test_generate_csv_is_data(cli: Run) -> None:
    """One row of figures, the same as the JSON document's, not the human table's text."""
    args = ("generate", "-m", "llama-3.1-8b", "-g", "h100", "-p", "8K", "-n", "100")
    (row,) = csv.DictReader(io.StringIO(cli(*args, "-f", "csv").out))
    doc = json.loads(cli(*args, "--json").out)
    assert int(row["prompt_tokens"]) == 8192 and row["model"] == "llama-3.1-8b"
    # CSV floats carry 12 significant digits (views/report.py CSV_FLOAT)
    assert float(row["decode_s"]) == pytest.approx(doc["decode_s"], rel=1e-11)
    assert float(row["expected_decode_s"]) == pytest.approx(doc["expected_decode_s"], rel=1e-11)


@pytest.mark.parametrize(
    "args",
    [
        ["engines"],
        ["estimate", "-m", "llama-3.1-70b", "-g", "h100", "-w", "fp8", "-c", "1K,100K"],
        ["serving", "-m", "llama-3.1-8b", "-g", "h100", "--input-len", "1K", "--output-len",
         "100", "--concurrency", "3,7"],
    ],
    ids=["engines", "estimate", "serving"],
)  # fmt: skip
def test_every_csv_float_has_at_most_12_significant_digits(cli: Run, args: list[str]) -> None:
    """As sweep's rows: no binary noise (engines printed 89.27000000000001 and
    16.550639999999998), one format for every command's CSV."""
    out = cli(*args, "-f", "csv").out
    cells = [cell for row in csv.reader(io.StringIO(out)) for cell in row]
    floats = [c for c in cells if re.fullmatch(r"-?\d+\.\d+(e[-+]\d+)?", c)]
    assert floats
    for cell in floats:
        digits = cell.split("e")[0].replace(".", "").replace("-", "").lstrip("0")
        assert len(digits) <= 12, cell
    assert not re.search(r"\.\d*(0{6,}|9{6,})\d", out)  # no 89.27000000000001 tail


def test_every_sweep_csv_float_has_at_most_12_significant_digits(cli: Run) -> None:
    """docs/json.md: "CSV floats to 12 significant digits" (review item 16). Llama-3.1-8B
    reads 8,030,261,248 - 128,256 x 4,096 = 7,504,924,672 params a step, 15,009,849,344 B
    in BF16; its KV is 2 x 32 x 8 x 128 x 2 B = 131,072 B a token, so at batch 3
    T* = 15,009,849,344 / 393,216 = 38,172.02083333..., 38172.0208333 to 12 digits."""
    out = cli("sweep", "-m", "llama-3.1-8b", "-g", "h100", "-c", "4K", "--batch", "3").out
    row = next(csv.DictReader(io.StringIO(out)))
    assert row["crossover_context"] == "38172.0208333"
    for key, cell in row.items():
        if "." in cell and cell.replace(".", "").replace("e", "").replace("-", "").isdigit():
            digits = cell.split("e")[0].replace(".", "").replace("-", "").lstrip("0")
            assert len(digits) <= 12, (key, cell)
