"""The JSON Schema of deployment files (`decodecalc schema`): the keys of the scenario
come from the one table of scenario fields (scenarios/fields.py), each typed by its kind
and described by its help; the rest (context, targets, workload, vLLM settings) is the
hand-written deployment.schema.json beside this module."""

from __future__ import annotations

import json
from importlib.resources import files
from typing import Any

from decodecalc.checks.deployments import DEPLOYMENT_KEYS
from decodecalc.scenarios.fields import EFFICIENCY_WORDS, SCENARIO_FIELDS

TEXT = {"type": "string", "minLength": 1}
FRACTION = {"type": "number", "exclusiveMinimum": 0, "maximum": 1}
KIND_SCHEMAS: dict[str, dict[str, Any]] = {
    "text": TEXT,
    "rate": TEXT,
    "time": TEXT,
    "count": {"type": "integer", "minimum": 1},
    "flag": {"type": "boolean"},
    "fraction": FRACTION,
    "efficiency": {"oneOf": [FRACTION, {"enum": list(EFFICIENCY_WORDS)}]},
}
"""Each kind of scenario field (scenarios/fields.py KINDS) as a JSON Schema."""


def deployment_schema() -> dict[str, Any]:
    """The schema, its deployment properties in the order deployment files list them."""
    schema: dict[str, Any] = json.loads(
        files("decodecalc.checks").joinpath("deployment.schema.json").read_text("utf-8")
    )
    deployment = schema["$defs"]["deployment"]
    written = deployment["properties"]
    scenario = {
        field.name: {**KIND_SCHEMAS[field.kind], "description": field.help}
        for field in SCENARIO_FIELDS
        if field.in_files
    }
    deployment["properties"] = {key: scenario.get(key) or written[key] for key in DEPLOYMENT_KEYS}
    return schema
