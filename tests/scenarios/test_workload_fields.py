"""The one table of serving fields (scenarios/workload.py) drives every door: a row with
an option is an option of serving (plan takes the workload's own), a row with a key path is
a key of deployment files and of their JSON Schema, and the records refuse exactly past the
row's limits."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from decodecalc.cli import full_command
from decodecalc.errors import InputError
from decodecalc.record import field_names
from decodecalc.scenarios.workload import (
    WORKLOAD_FIELD,
    WORKLOAD_FIELDS,
    WORKLOAD_KINDS,
    Workload,
    WorkloadField,
)
from tests.conftest import Run

SERVING = ("serving", "-m", "llama-3.1-8b", "-g", "h100-sxm", "--input-len", "1000")


def test_every_workload_field_has_its_row() -> None:
    """Each Workload field is a row under workload: (its speculation a section of rows)."""
    keys = {f.key for f in WORKLOAD_FIELDS}
    for name in field_names(Workload):
        section = ("workload", name)
        assert section in keys or any(k and k[:2] == section for k in keys), name
    assert all(f.kind in WORKLOAD_KINDS for f in WORKLOAD_FIELDS)
    assert len({f.name for f in WORKLOAD_FIELDS}) == len(WORKLOAD_FIELDS)


@pytest.mark.parametrize("row", [f for f in WORKLOAD_FIELDS if f.flags], ids=lambda f: f.name)
def test_a_row_with_an_option_is_an_option_of_serving(row: WorkloadField) -> None:
    params = {p.name: p for p in full_command().commands["serving"].params}
    flags = [part for flag in row.flags for part in flag.split("/")]
    assert set(flags) <= {*params[row.name].opts, *params[row.name].secondary_opts}


def test_plan_takes_the_workload_with_its_own_help() -> None:
    plan = {p.name: p for p in full_command().commands["plan"].params}
    for name in ("input_len", "output_len", "concurrency", "request_rate"):
        assert plan[name].opts == list(WORKLOAD_FIELD[name].flags)
        assert plan[name].help.startswith("The workload: "), name


def _schema_at(schema: dict, key: tuple[str, ...]) -> dict:
    here = schema["$defs"]["deployment"]
    for part in key:
        here = here["properties"][part]
        if "$ref" in here:
            here = schema["$defs"][here["$ref"].rsplit("/", 1)[1]]
    return here


@pytest.mark.parametrize("row", [f for f in WORKLOAD_FIELDS if f.key], ids=lambda f: f.name)
def test_a_row_with_a_key_is_in_the_schema(cli: Run, row: WorkloadField) -> None:
    schema = json.loads(cli("schema").out)
    assert row.key is not None
    assert _schema_at(schema, row.key)["description"] == row.doc


@pytest.mark.parametrize(
    ("section", "typo", "meant"),
    [
        ("workload: {prefix_hit_rte: 1, concurrency: 1, input_len: 9, output_len: 9}",
         "prefix_hit_rte", "prefix_hit_rate', 'prefix_len"),
        ("prefill: {worker: 1}\ndecode: {workers: 1}", "worker", "workers"),
        ("max_num_seq: 8", "max_num_seq", "max_num_seqs"),
    ],
)  # fmt: skip
def test_a_misspelt_key_is_suggested_from_the_table(
    cli: Run, tmp_path: Path, section: str, typo: str, meant: str
) -> None:
    path = tmp_path / "d.yaml"
    content = f"model: llama-3.1-8b\ngpu: h100-sxm\ntargets: {{max_ms_per_token: 9}}\n{section}\n"
    path.write_text(content)
    r = cli("check", str(path))
    assert r.code == 2 and f"{typo}: unknown key; did you mean '{meant}'?" in r.err


@pytest.mark.parametrize(
    ("args", "message"),
    [
        # MAX_BATCH requests in flight, 2^24 tokens a request, 10^6 requests a second:
        # the table's limits, in the table's words.
        (("--output-len", "9", "--concurrency", "1000001"),
         "concurrency 1000001 must be a whole number from 1 to 1,000,000"),
        (("--output-len", "16777217", "--concurrency", "1"),
         "output length 16777217 must be from 2 to 16,777,216"),
        (("--output-len", "9", "--request-rate", "2e6"),
         "request rate 2000000.0 must be above 0 and at most 1e+06 requests/s"),
        (("--output-len", "9", "--concurrency", "1", "--prefix-len", "9",
          "--prefix-hit-rate", "1.5"), "prefix hit rate 1.5 must be from 0 to 1"),
    ],
)  # fmt: skip
def test_the_command_refuses_past_the_rows_limits(
    cli: Run, args: tuple[str, ...], message: str
) -> None:
    r = cli(*SERVING, *args)
    assert r.code == 2 and message in r.err


def test_a_limit_is_checked_with_its_bound_included_or_not() -> None:
    """A share from 0 to 1 takes both ends; a rate above 0 refuses 0; an acceptance rate
    under 1 refuses 1."""
    WORKLOAD_FIELD["prefix_hit_rate"].check(0)
    WORKLOAD_FIELD["prefix_hit_rate"].check(1)
    with pytest.raises(InputError, match="above 0"):
        WORKLOAD_FIELD["request_rate"].check(0)
    with pytest.raises(InputError, match="from 0 to under 1"):
        WORKLOAD_FIELD["acceptance"].check(1)
    with pytest.raises(InputError):
        WORKLOAD_FIELD["prefix_hit_rate"].check(float("nan"))
