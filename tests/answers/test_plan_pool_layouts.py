"""plan --disaggregated lays each pool out on its own: the decode workers as one of the
best aggregated layouts, the prefill workers as that layout or as the one of every layout
that fits (same GPU and formats) that prefills the most prompt tokens per GPU; the first
answer's line names both layouts where they differ."""

from __future__ import annotations

import json
from typing import Any

import pytest

from decodecalc.answers.disaggregated import Pools
from decodecalc.answers.plan import Option, Targets, layout_label, prefill_rate, why_first
from decodecalc.loading.catalog import Catalog
from decodecalc.record import replace
from decodecalc.resolving.resolve import resolve
from decodecalc.scenarios.spec import ScenarioSpec
from decodecalc.scenarios.workload import Workload
from tests.conftest import Run

LLAMA = (
    "plan", "-m", "llama-3.1-70b", "--gpus", "h100-sxm", "-w", "fp8", "-k", "fp8",
    "--input-len", "8K", "--output-len", "512", "--concurrency", "64",
    "--max-ms-per-token", "50", "--max-ttft-ms", "1500", "--disaggregated",
)  # fmt: skip
WORKLOAD = Workload(8192, 512, concurrency=64)


def _layout(row: dict[str, Any]) -> str:
    return (
        f"TP {row['tp']}"
        + (f" PP {row['pp']}" if row["pp"] > 1 else "")
        + (" EP" if row["ep"] else "")
    )


@pytest.fixture(scope="module")
def rows() -> list[dict[str, Any]]:
    import contextlib
    import io

    from decodecalc.cli import main

    out = io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(io.StringIO()):
        assert main([*LLAMA, "--json"]) == 0
    found: list[dict[str, Any]] = json.loads(out.getvalue())["rows"]
    return found


def test_some_pools_prefill_on_another_layout_than_they_decode(rows: list[dict[str, Any]]) -> None:
    pooled = [r for r in rows if r["prefill_workers"] is not None]
    mixed = [r for r in pooled if r["prefill_layout"] != _layout(r)]
    assert mixed and len(mixed) < len(pooled)
    for r in rows:
        if r["prefill_workers"] is None:
            assert r["prefill_layout"] is None
    for r in mixed:
        # each pool's own GPUs: prefill workers x its TP x PP + decode workers x the row's
        tp, *rest = r["prefill_layout"].split()[1:]
        pp = int(rest[1]) if rest[:1] == ["PP"] else 1
        per_replica = r["prefill_workers"] * int(tp) * pp + r["decode_workers"] * r["tp"] * r["pp"]
        assert r["gpus"] == per_replica * r["replicas"]
        assert r["gpus"] <= 64


def test_the_other_prefill_layout_is_the_one_without_all_reduces(
    rows: list[dict[str, Any]],
) -> None:
    """Llama-3.1-70B FP8 fits one 80 GB H100: TP 1 prefills an 8K prompt with the same
    FLOPs per GPU as TP 2, 4 or 8 and no all-reduce (2 x 80 of 8,192 x 8,192 x 2 bytes at
    TP 8 over NVLink), so it prefills the most prompt tokens per GPU."""
    mixed = {
        r["prefill_layout"]
        for r in rows
        if r["prefill_workers"] is not None and r["prefill_layout"] != _layout(r)
    }
    assert mixed == {"TP 1"}


def test_prefill_rate_per_gpu_falls_with_the_all_reduces(catalog: Catalog) -> None:
    targets = Targets(context=8704, workload=WORKLOAD)

    def rate(tp: int) -> float:
        spec = ScenarioSpec(
            model="llama-3.1-70b", gpu="h100-sxm", weights="fp8", kv_dtype="fp8", tp=tp
        )
        return prefill_rate(resolve(spec, catalog), targets)

    assert rate(1) > rate(2) > rate(8) > 0


def test_the_first_answers_line_names_each_pools_layout(catalog: Catalog) -> None:
    from decodecalc.answers.cost import CostEnergy
    from decodecalc.answers.disaggregated import serve_disaggregated
    from decodecalc.engine.scheduler import scheduler_limits

    spec = ScenarioSpec(model="llama-3.1-70b", gpu="h100-sxm", weights="fp8", kv_dtype="fp8")
    decode, prefill = resolve(replace(spec, tp=4), catalog), resolve(spec, catalog)
    pools = Pools(prefill, decode, 3, 1, catalog.link("ib-ndr"))
    served = serve_disaggregated(pools, WORKLOAD, scheduler_limits(decode.engine, decode.gpu))
    option = Option(decode, served.tpot_s, True, 1, CostEnergy(None, None, None), None, None, ())
    line = why_first(replace(option, served=served, pools=pools))
    assert "3 prefill workers of TP 1 (the most prompt tokens per GPU)" in line
    assert "1 decode worker of TP 4 at" in line
    same = why_first(replace(option, served=served, pools=replace(pools, prefill=decode)))
    assert "of TP" not in same and "1 decode worker at" in same


@pytest.mark.parametrize(
    ("tp", "pp", "ep", "words"),
    [(8, 1, False, "TP 8"), (4, 2, False, "TP 4 PP 2"), (8, 1, True, "TP 8 EP")],
)
def test_a_layout_in_words(catalog: Catalog, tp: int, pp: int, ep: bool, words: str) -> None:
    model = "deepseek-v3" if ep else "llama-3.1-70b"
    spec = ScenarioSpec(model=model, gpu="h200", tp=tp, pp=pp, ep=ep)
    assert layout_label(resolve(spec, catalog)) == words


def test_one_line_of_json_per_option(cli: Run) -> None:
    """The prefill layout is a row field, null for one pool. (At TP 4 alone: the search
    over every layout takes eight times as long, and the rows above hold what it finds.)"""
    import csv

    result = cli(*LLAMA, "--tp", "4", "--format", "csv")
    assert result.code == 0
    table = list(csv.DictReader(result.out.splitlines()))
    assert {r["prefill_layout"] for r in table if r["prefill_workers"]} == {"TP 4"}
    assert {r["prefill_layout"] for r in table if not r["prefill_workers"]} == {""}


def test_plan_shows_data_parallel_attention_as_it_shows_ep(cli: Run) -> None:
    """Review s41: plan --dp-attention printed `TP 8, EP yes` only. The layout carries a
    DPA column (yes) beside EP, and JSON an added dp_attention field; a plan without it
    has neither the column nor true."""
    args = "-m deepseek-v3 -g h200 -w fp8 -k bf16 --tp 8 --ep -c 4K --max-ms-per-token 50"
    table = cli("plan", *args.split(), "--dp-attention").out
    header = next(line for line in table.splitlines() if "┃" in line)
    cells = [c.strip() for c in header.split("┃")]
    assert cells[cells.index("EP") + 1] == "DPA"
    (row,) = json.loads(cli("plan", *args.split(), "--dp-attention", "--json").out)["rows"]
    assert row["dp_attention"] is True and row["ep"] is True
    plain = cli("plan", *args.split()).out
    assert "DPA" not in next(line for line in plain.splitlines() if "┃" in line)
