"""Cost per million output tokens and energy per token (docs/physics.md, 'Cost and energy'):
the formulas by hand, the figures estimate, compare and sweep carry, and the price lists
and board powers they come from."""

from __future__ import annotations

import csv
import io
import json
import math
from pathlib import Path
from typing import Any

import pytest
import yaml

from decodecalc.answers.cost import cost_and_energy
from decodecalc.loading.catalog import Catalog, presets_dir
from decodecalc.scenarios.rates import parse_power, parse_price
from tests.conftest import Run

PRICE_FILES = sorted((presets_dir() / "prices").glob("*.yaml"))


def json_of(cli: Run, *args: str) -> Any:
    result = cli(*args, "--json")
    assert result.code == 0, result.err
    return json.loads(result.out)


def test_cost_and_energy_by_hand() -> None:
    # An H100 at $2.49/h, a 10 ms step at batch 1 on one GPU:
    # cost = 2.49 / 3600 $/s x 0.010 s x 1e6 tokens = $6.91666... per million tokens;
    # energy = 700 W x 0.010 s = 7 J per token; 7 J x 1e6 / 3.6e6 J/kWh = 1.94444 kWh.
    r = cost_and_energy(0.010, 1, 1, 2.49, 700)
    assert r.cost_per_million_tokens == pytest.approx(6.916666666666667, rel=1e-12)
    assert r.joules_per_token == pytest.approx(7.0, rel=1e-12)
    assert r.kwh_per_million_tokens == pytest.approx(1.9444444444444444, rel=1e-12)


def test_batch_and_gpus_scale_the_share_of_a_step() -> None:
    # 8 GPUs at $4/h, a 40 ms step emitting 64 tokens:
    # 8 x 4 / 3600 x 0.040 / 64 x 1e6 = $5.5555... per million; 1000 W x 8 x 0.040 / 64 = 5 J.
    r = cost_and_energy(0.040, 64, 8, 4.0, 1000)
    assert r.cost_per_million_tokens == pytest.approx(5.555555555555555, rel=1e-12)
    assert r.joules_per_token == pytest.approx(5.0, rel=1e-12)


def test_an_unknown_rate_leaves_its_figures_out() -> None:
    r = cost_and_energy(0.010, 1, 1, None, None)
    assert (r.cost_per_million_tokens, r.joules_per_token, r.kwh_per_million_tokens) == (
        None,
        None,
        None,
    )


@pytest.mark.parametrize(
    ("text", "dollars"),
    [("2.49", 2.49), ("2.49USD/h", 2.49), ("$2.49/hr", 2.49), ("3/gpu-hour", 3.0), (" 1e1 ", 10.0)],
)
def test_price_texts(text: str, dollars: float) -> None:
    assert parse_price(text) == dollars


@pytest.mark.parametrize(("text", "watts"), [("700", 700.0), ("700W", 700.0), ("1.2kW", 1200.0)])
def test_power_texts(text: str, watts: float) -> None:
    assert parse_power(text) == pytest.approx(watts)


def test_estimate_rows_carry_cost_and_energy_from_the_expected_step(cli: Run) -> None:
    doc = json_of(
        cli, "estimate", "-m", "llama-3.1-8b", "-g", "h100", "-c", "8K,32K", "--batch", "4",
        "--price", "2.49", "--no-crossover-row",
    )  # fmt: skip
    assert doc["cost"] == {
        "price_per_gpu_hour": 2.49,
        "price_source": "given",
        "price_date": None,
        "power_w": 700,  # the H100 SXM datasheet's TDP
        "power_source": "h100-sxm",
        "gpus": 1,
        "cost_basis": "expected",
    }
    for row in doc["rows"]:
        seconds = row["expected_ms_per_token"] / 1000
        # cost = price / 3600 x seconds per step / tokens per step x 1e6
        assert row["cost_per_million_tokens"] == pytest.approx(2.49 / 3600 * seconds / 4 * 1e6)
        # joules = 700 W x 1 GPU x seconds / 4 tokens
        assert row["joules_per_token"] == pytest.approx(700 * seconds / 4)
        assert row["kwh_per_million_tokens"] == pytest.approx(700 * seconds / 4 / 3.6)
    codes = [n["code"] for n in doc["notes"]]
    assert "energy-at-tdp" in codes


def test_the_roofline_is_the_basis_without_an_engine(cli: Run) -> None:
    doc = json_of(
        cli, "estimate", "-m", "llama-3.1-8b", "-g", "h100", "-c", "8K", "--tp", "2", "--pp", "2",
        "--engine", "roofline", "--price", "3", "--power", "500W",
    )  # fmt: skip
    assert doc["cost"]["cost_basis"] == "roofline"
    assert doc["cost"]["gpus"] == 4  # TP 2 x PP 2
    (row,) = [r for r in doc["rows"] if r["context"] == 8192]
    seconds = row["ms_per_token"] / 1000
    assert row["expected_ms_per_token"] == row["ms_per_token"]
    # 4 GPUs x $3/h / 3600 x seconds / 1 token x 1e6; 500 W x 4 GPUs x seconds
    assert row["cost_per_million_tokens"] == pytest.approx(4 * 3 / 3600 * seconds * 1e6)
    assert row["joules_per_token"] == pytest.approx(500 * 4 * seconds)


def test_no_rate_no_keys(cli: Run) -> None:
    doc = json_of(cli, "estimate", "-m", "llama-3.1-8b", "-b", "1TB/s", "-c", "8K")
    assert "cost" not in doc
    assert not {"cost_per_million_tokens", "joules_per_token"} & set(doc["rows"][0])


def test_a_gpu_without_a_price_carries_energy_only(cli: Run) -> None:
    doc = json_of(cli, "estimate", "-m", "llama-3.1-8b", "-g", "l40s", "-c", "8K")
    row = doc["rows"][0]
    assert "cost_per_million_tokens" not in row
    assert row["joules_per_token"] == pytest.approx(350 * row["expected_ms_per_token"] / 1000)


def test_price_lists_and_the_lowest(cli: Run) -> None:
    lambda_ = json_of(
        cli, "estimate", "-m", "llama-3.1-8b", "-g", "h100", "-c", "8K", "--price", "lambda"
    )
    assert lambda_["cost"]["price_per_gpu_hour"] == 3.99  # lambda.ai 8x H100 SXM, 2026-09-20
    assert (lambda_["cost"]["price_source"], lambda_["cost"]["price_date"]) == (
        "lambda",
        "2026-09-20",
    )
    lowest = json_of(
        cli, "estimate", "-m", "llama-3.1-8b", "-g", "h100", "-c", "8K", "--price", "lowest"
    )
    assert lowest["cost"]["price_per_gpu_hour"] == 3.20  # Hyperstack's H100 SXM beats Lambda's
    assert lowest["cost"]["price_source"] == "hyperstack"


@pytest.mark.parametrize(
    "flags",
    [
        ["-g", "h100", "--price", "0"],
        ["-g", "h100", "--price", "1e999"],
        ["-g", "h100", "--price", "nosuchcloud"],
        ["-g", "mi300x", "--price", "lambda"],
        ["-b", "1TB/s", "--price", "lambda"],
        ["-g", "h100", "--power", "0W"],
        ["-g", "h100", "--power", "lots"],
        ["-g", "h100", "--power", "nan"],
    ],
)
def test_bad_prices_and_powers_are_one_line(cli: Run, flags: list[str]) -> None:
    result = cli("estimate", "-m", "llama-3.1-8b", "-c", "8K", *flags)
    assert result.code == 2
    assert result.err.startswith("decodecalc: error: ")
    assert result.err.count("\n") == 1


def test_sweep_refuses_a_bad_price_before_any_row(cli: Run) -> None:
    result = cli("sweep", "-m", "llama-3.1-8b", "-g", "h100", "-c", "8K", "--price", "nosuch")
    assert result.code == 2 and result.out == ""
    assert result.err.startswith("decodecalc: error: price 'nosuch'")


def test_compare_rows_carry_each_scenarios_cost(cli: Run) -> None:
    doc = json_of(
        cli, "compare", "-m", "llama-3.1-8b", "-g", "h100,h200", "-c", "8K", "--price", "hyperstack"
    )
    prices = {s["gpu"]: s["cost"]["price_per_gpu_hour"] for s in doc["scenarios"]}
    assert prices == {"h100-sxm": 3.20, "h200": 3.99}
    for row in doc["rows"]:
        seconds = row["expected_ms_per_token"] / 1000
        assert row["cost_per_million_tokens"] == pytest.approx(
            prices[row["gpu"]] / 3600 * seconds * 1e6
        )


def test_sweep_csv_has_cost_columns_blank_where_unknown(cli: Run) -> None:
    result = cli(
        "sweep",
        "-m",
        "llama-3.1-8b",
        "-g",
        "h100,l40s",
        "-c",
        "8K",
        "--batch",
        "1,8",
        "--price",
        "2",
    )
    assert result.code == 0, result.err
    rows = list(csv.DictReader(io.StringIO(result.out)))
    assert len(rows) == 4
    for row in rows:
        seconds = float(row["expected_ms_per_token"]) / 1000
        batch = int(row["batch"])
        assert float(row["cost_per_million_tokens"]) == pytest.approx(
            2 / 3600 * seconds / batch * 1e6
        )
        watts = {"h100-sxm": 700, "l40s": 350}[row["gpu"]]
        assert float(row["joules_per_token"]) == pytest.approx(watts * seconds / batch)
    bare = cli("sweep", "-m", "llama-3.1-8b", "-b", "1TB/s", "-c", "8K")
    (row,) = list(csv.DictReader(io.StringIO(bare.out)))
    assert row["cost_per_million_tokens"] == row["joules_per_token"] == ""


def test_sweep_jsonl_keys_only_when_known(cli: Run) -> None:
    result = cli(
        "sweep", "-m", "llama-3.1-8b", "-g", "h100", "-c", "8K", "-f", "jsonl", "--price", "2"
    )
    record = json.loads(result.out)
    seconds = record["expected_ms_per_token"] / 1000
    assert record["cost_per_million_tokens"] == pytest.approx(2 / 3600 * seconds * 1e6)
    bare = json.loads(
        cli("sweep", "-m", "llama-3.1-8b", "-b", "1TB/s", "-c", "8K", "-f", "jsonl").out
    )
    assert "cost_per_million_tokens" not in bare and "joules_per_token" not in bare


@pytest.mark.parametrize("path", PRICE_FILES, ids=lambda p: p.stem)
def test_price_lists_are_dated_sourced_and_name_gpu_presets(catalog: Catalog, path: Path) -> None:
    listing = catalog.price_list(path.stem)
    assert listing.source.startswith("https://")
    assert len(listing.date) == 10 and listing.date[4] == listing.date[7] == "-"
    gpus = set(catalog.ids("gpus"))
    for gpu, dollars in listing.prices:
        assert gpu in gpus
        assert 0.1 < dollars < 20
    assert yaml.safe_load(path.read_text())["date"] == listing.date  # quoted: a string


def test_every_board_power_has_a_source(catalog: Catalog) -> None:
    powered = [g for g in catalog.gpus() if g.power_w is not None]
    assert len(powered) >= 15
    for gpu in powered:
        assert gpu.power_source
        assert math.isfinite(gpu.power_w) and 50 <= gpu.power_w <= 1500  # type: ignore[arg-type]


def test_a_gpu_missing_from_the_price_list_says_so(cli: Run) -> None:
    """Lambda's list (presets/prices/lambda.yaml) names no L40S, and neither list does: the
    message says the list gives *no* price, not that it gives one."""
    named = cli("estimate", "-m", "llama-3.1-8b", "-g", "l40s", "-c", "8K", "--price", "lambda")
    assert named.code == 2
    assert named.err == (
        "decodecalc: error: lambda gives no price for l40s: give --price in dollars per "
        "GPU-hour, e.g. --price 2.49\n"
    )
    lowest = cli("estimate", "-m", "llama-3.1-8b", "-g", "l40s", "-c", "8K", "--price", "lowest")
    assert lowest.code == 2 and "no price list gives a price for l40s" in lowest.err
