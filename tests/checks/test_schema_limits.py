"""The JSON Schema of deployment files against the code that reads them: it is generated
from the two field tables (checks/schema.py), committed as it is generated, and every
number it bounds is bounded where the code bounds it: a value at a schema bound is read
by `decodecalc check`, the next value past it refused by both."""

from __future__ import annotations

import functools
import json
import math
import os
from pathlib import Path
from typing import Any

import jsonschema
import pytest
import yaml

from decodecalc.checks.deployments import DeploymentReader
from decodecalc.checks.schema import deployment_schema
from decodecalc.errors import InputError
from decodecalc.loading.catalog import Catalog

COMMITTED = Path(__file__).resolve().parents[2] / "decodecalc/checks/deployment.schema.json"

MODEL = "layers=1024,hidden=1024,heads=1024,kv_heads=1024,head_dim=1,intermediate=1024,vocab=1024"
"""A model by numbers that every TP and PP up to 1,024 splits (1,024 heads and layers), so
that a layout at its bound is no conflict with the model."""
BASE: dict[str, Any] = {
    "model": MODEL,
    "gpu": "h100-sxm",
    "targets": {"max_tpot_ms": 1000},
    "workload": {"input_len": 2**24, "output_len": 100, "concurrency": 8},
}
"""A deployment every probe starts from: valid, its prompt as long as a request may be
(2^24 tokens), so that a shared prefix may reach its own bound below it."""
SPECULATIVE = {"method": "eagle", "num_speculative_tokens": 1, "acceptance": 0.5}
POOLS = {"prefill": {"workers": 1}, "decode": {"workers": 1}}
REDUNDANT_EXPERTS = {"model": "qwen3-30b-a3b", "ep": True}
"""Redundant expert replicas need experts spread with --ep: a MoE model (128 experts)."""


@functools.cache
def _validator() -> Any:
    """The schema's validator, made once: jsonschema.validate checks the schema against its
    meta-schema on every call, three quarters of a probe's time (the test below checks it
    once)."""
    schema = deployment_schema()
    return jsonschema.validators.validator_for(schema)(schema)


@functools.cache
def _reader() -> DeploymentReader:
    """One reader over one catalog for every probe (the catalog only looks names up)."""
    return DeploymentReader(Catalog())


def _schema_reads(doc: dict[str, Any]) -> bool:
    return bool(_validator().is_valid(doc))


def test_the_schema_is_a_valid_json_schema() -> None:
    schema = deployment_schema()
    jsonschema.validators.validator_for(schema).check_schema(schema)


def test_the_committed_schema_is_the_generated_one() -> None:
    """decodecalc/checks/deployment.schema.json is the schema `decodecalc schema` prints;
    DECODECALC_UPDATE_DOCS=1 rewrites it after a change to a field table."""
    text = json.dumps(deployment_schema(), indent=2) + "\n"
    if os.environ.get("DECODECALC_UPDATE_DOCS"):
        COMMITTED.write_text(text)
    assert COMMITTED.read_text() == text


def test_the_schema_command_prints_it(cli: Any) -> None:
    assert json.loads(cli("schema").out) == json.loads(COMMITTED.read_text())


def _numbers(schema: dict[str, Any]) -> list[dict[str, Any]]:
    """The numeric forms a value's schema allows (a token count's integer, a rate's number
    or each of a list of them)."""
    if schema.get("type") in ("integer", "number"):
        return [schema]
    if schema.get("type") == "array":
        return [{**n, "list": True} for n in _numbers(schema["items"])]
    return [n for branch in schema.get("oneOf", []) for n in _numbers(branch)]


def _bounds(
    properties: dict[str, Any], defs: dict[str, Any], path: tuple[str, ...] = ()
) -> list[tuple[tuple[str, ...], dict[str, Any]]]:
    """Every numeric form of every key, sections followed, with its key path."""
    found = []
    for key, schema in properties.items():
        at = (*path, key)
        if "$ref" in schema:
            schema = defs[schema["$ref"].rsplit("/", 1)[1]]
        if schema.get("type") == "object":
            found += _bounds(schema["properties"], defs, at)
        else:
            found += [(at, number) for number in _numbers(schema)]
    return found


def _next(value: float, toward: float, integer: bool) -> float:
    if integer:
        return value + (1 if toward > value else -1)
    return math.nextafter(value, toward)


def _probes() -> list[Any]:
    """(key path, value, whether it is inside the schema) at each side of each bound."""
    schema = deployment_schema()
    defs = schema["$defs"]
    probes = []
    for path, number in _bounds(defs["deployment"]["properties"], defs):
        integer = number["type"] == "integer"
        for bound, inside_at, direction in (
            ("minimum", True, -math.inf),
            ("exclusiveMinimum", False, math.inf),
            ("maximum", True, math.inf),
            ("exclusiveMaximum", False, -math.inf),
        ):
            if bound not in number:
                continue
            value = number[bound]
            other = _next(value, direction, integer)
            inside, outside = (value, other) if inside_at else (other, value)
            form = [inside] if number.get("list") else inside
            name = ".".join(path)
            probes.append(pytest.param(path, form, True, id=f"{name}={inside!r}"))
            form = [outside] if number.get("list") else outside
            probes.append(pytest.param(path, form, False, id=f"{name}={outside!r}"))
    return probes


def _deployment(path: tuple[str, ...], value: Any) -> dict[str, Any]:
    doc = json.loads(json.dumps(BASE))
    if "speculative" in path:
        doc["workload"]["speculative"] = dict(SPECULATIVE)
    if path[0] in ("prefill", "decode"):
        doc.update(json.loads(json.dumps(POOLS)))
    if path[0] == "targets":
        doc["targets"] = {}
    if path == ("workload", "request_rate"):  # an open loop has no concurrency
        del doc["workload"]["concurrency"]
    if path == ("eplb_redundant",):
        doc.update(REDUNDANT_EXPERTS)
    if path == ("gpus_per_node",):  # refused as pricing nothing on one GPU (unused_link)
        doc["tp"] = 2
    if path == ("efficiency",):  # below 1, one's own engine: only the roofline's step takes it
        doc["engine"] = "roofline"
    here = doc
    for key in path[:-1]:
        here = here.setdefault(key, {})
    here[path[-1]] = value
    return doc


def _both_read(doc: dict[str, Any], inside: bool) -> None:
    """The schema and the code both read ``doc`` (``inside``) or both refuse it."""
    schema_reads = _schema_reads(doc)
    try:
        _reader().read_text(yaml.safe_dump(doc), "probe.yaml")
        code_reads, why = True, ""
    except InputError as exc:
        code_reads, why = False, str(exc)
    assert schema_reads is inside
    assert code_reads is inside, why


@pytest.mark.parametrize(("path", "value", "inside"), _probes())
def test_code_refuses_exactly_past_the_schema_bound(
    path: tuple[str, ...], value: Any, inside: bool
) -> None:
    doc = _deployment(path, value)
    _both_read(doc, inside)


@pytest.mark.parametrize(
    ("key", "most", "past"),
    [
        # The three the hand-written schema let through (issue 29): the code's own limits,
        # from scenarios/fields.py, as docs/development.md's limits table states them.
        ("batch", 1_000_000, 1_000_001),
        ("tp", 1024, 1025),
        ("pp", 1024, 1025),
    ],
)
def test_the_counts_the_schema_let_through(key: str, most: int, past: int) -> None:
    properties = deployment_schema()["$defs"]["deployment"]["properties"]
    assert properties[key]["maximum"] == most
    assert not _schema_reads({**BASE, key: past})
    with pytest.raises(InputError, match=f"{key} {past} must be a whole number from 1 to"):
        _reader().read_text(yaml.safe_dump({**BASE, key: past}), "probe")


def test_memory_utilization_below_a_thousandth_is_refused_by_both() -> None:
    properties = deployment_schema()["$defs"]["deployment"]["properties"]
    assert properties["memory_utilization"]["minimum"] == 0.001
    doc = {**BASE, "memory_utilization": 0.0009}
    assert not _schema_reads(doc)
    with pytest.raises(InputError, match=r"memory utilization 0\.0009 must be from 0\.001 to 1"):
        _reader().read_text(yaml.safe_dump(doc), "probe")


@pytest.mark.parametrize(
    ("key", "text", "inside"),
    [
        ("input_len", "1.5k", True),  # 1,500
        ("input_len", "4K", True),  # 4,096
        ("input_len", " 4K ", True),  # parse_tokens strips the text
        ("input_len", "1.0", True),  # 1 token: its decimals are zeros
        ("input_len", "0.001k", True),  # 1 token
        ("input_len", "1.5K", False),  # binary suffixes need a whole number
        ("input_len", "1.5", False),  # half a token
        ("input_len", "1.0005k", False),  # 1,000.5 tokens
        ("input_len", "0", False),  # at least 1 prompt token
        ("input_len", "0.0k", False),
        ("output_len", "1", False),  # at least 2 output tokens
        ("output_len", "0.001k", False),  # 1 token
        ("output_len", "0.002k", True),  # 2 tokens
        ("output_len", "2", True),
    ],
)
def test_a_token_text_is_read_by_both_or_by_neither(key: str, text: str, inside: bool) -> None:
    doc = json.loads(json.dumps(BASE))
    doc["workload"][key] = text
    _both_read(doc, inside)


def test_a_refused_token_text_is_labelled_as_a_token_count() -> None:
    doc = json.loads(json.dumps(BASE))
    doc["workload"]["input_len"] = "1.5K"
    with pytest.raises(InputError) as caught:
        _reader().read_text(yaml.safe_dump(doc), "probe.yaml")
    assert "workload.input_len: token count '1.5K': decimals work only" in str(caught.value)
    assert "context" not in str(caught.value)
