"""The JSON Schema of deployment files (`decodecalc schema`), generated from the two field
tables: the scenario's keys (scenarios/fields.py) and the serving fields' sections and keys
(scenarios/workload.py), each typed by its kind and bounded by the limits the code refuses
past, so the schema cannot accept what `decodecalc check` refuses, nor the reverse
(tests/checks/test_schema_limits.py). What no table holds (a deployment's name, contexts, vLLM
config and targets, and the file's two shapes) is written here. deployment.schema.json
beside this module is this schema as committed, for editors that fetch it
(tests/checks/test_schema_limits.py holds it equal; DECODECALC_UPDATE_DOCS=1 rewrites it).
"""

from __future__ import annotations

from typing import Any

from decodecalc.checks.deployments import DEPLOYMENT_KEYS
from decodecalc.scenarios.fields import (
    EFFICIENCY_WORDS,
    MIN_FRACTION,
    SCENARIO_FIELDS,
    ScenarioField,
)
from decodecalc.scenarios.workload import WORKLOAD_FIELDS, WorkloadField, keys_under

TEXT = {"type": "string", "minLength": 1}
DECIMAL_PLACES = {"k": 3, "m": 6, "g": 9}
"""The decimals a decimal suffix makes whole (context.py parse_tokens: 1.5k, never 1.5K)."""
TOKEN_FORMS = "|".join(
    [
        "[0-9]+[KMG]?",  # binary suffixes take a whole number
        "[0-9]+(\\.0+)?",  # no suffix: decimals only of zeros
        *(f"[0-9]+(\\.[0-9]{{1,{places}}}0*)?{s}" for s, places in DECIMAL_PLACES.items()),
    ]
)
"""A token count as parse_tokens reads it: 32768, 32K (binary), 1.5k (decimal), whole."""


def token_text(least: int = 0) -> dict[str, Any]:
    """A token count as text, refused below ``least`` as the code refuses it (small
    bounds only: 0, 1 or 2 tokens); the upper bounds of the integer form hold too, but
    no pattern spells them, so the code states them."""
    below = [
        "0+(\\.0+)?[kmgKMG]?",
        *(
            f"0*{n}(\\.0+)?|0+\\.{'0' * (places - 1)}{n}0*{s}"
            for n in range(1, least)
            for s, places in DECIMAL_PLACES.items()
        ),
    ]
    refused = f"(?!\\s*({'|'.join(below)})\\s*$)" if least > 0 else ""
    return {"type": "string", "pattern": f"^{refused}\\s*({TOKEN_FORMS})\\s*$"}


FRACTION = {"type": "number", "minimum": MIN_FRACTION, "maximum": 1}
"""An efficiency or a memory utilization (scenarios/scenario.py check_fraction)."""


def _scenario_schema(field: ScenarioField) -> dict[str, Any]:
    """A scenario field by its kind (scenarios/fields.py KINDS), with its own limit."""
    kinds: dict[str, dict[str, Any]] = {
        "count": {"type": "integer", "minimum": 1},
        "flag": {"type": "boolean"},
        "fraction": FRACTION,
        "efficiency": {"oneOf": [FRACTION, {"enum": list(EFFICIENCY_WORDS)}]},
    }
    found = dict(kinds.get(field.kind, TEXT))
    if field.kind == "count":
        found["minimum"] = field.least
    if field.most is not None:
        found["maximum"] = field.most
    return {**found, "description": field.help}


def _number(row: WorkloadField, kind: str) -> dict[str, Any]:
    """A number bounded as ``row`` bounds it (scenarios/workload.py WorkloadField.check)."""
    found: dict[str, Any] = {"type": kind}
    if row.least is not None:
        found["exclusiveMinimum" if row.above else "minimum"] = row.least
    if row.most is not None:
        found["exclusiveMaximum" if row.under else "maximum"] = row.most
    return found


def _workload_schema(row: WorkloadField) -> dict[str, Any]:
    """A serving field by its kind (scenarios/workload.py WORKLOAD_KINDS)."""
    kinds: dict[str, Any] = {
        "tokens": lambda: {"oneOf": [_number(row, "integer"), token_text(int(row.least or 0))]},
        "count": lambda: _number(row, "integer"),
        "rate": lambda: _number(row, "number"),
        "share": lambda: _number(row, "number"),
        "rates": lambda: {
            "oneOf": [
                _number(row, "number"),
                {"type": "array", "minItems": 1, "items": _number(row, "number")},
            ]
        },
        "flag": lambda: {"type": "boolean"},
        "text": lambda: TEXT,
    }
    return {**kinds[row.kind](), "description": row.doc}


SECTIONS: dict[tuple[str, ...], tuple[str, str]] = {
    ("workload",): (
        "workload",
        "The traffic the serving targets are held under, as 'decodecalc serving' takes it",
    ),
    ("workload", "speculative"): (
        "",
        "Speculative decoding; a vLLM config's speculative-config gives method and "
        "num_speculative_tokens",
    ),
    ("prefill",): (
        "pool",
        "Disaggregated serving (with both prefill: and decode:): one pool's workers, each an "
        "engine instance, and its layout; tp, ep and dp_attention default to the "
        "deployment's (prefill: to decode:'s)",
    ),
    ("decode",): ("pool", ""),
}
"""Each section of serving fields: the definition it is kept under ('': inline) and what
it is; decode: takes what prefill: takes."""

REQUIRED = {
    ("workload",): ["input_len", "output_len"],
    ("workload", "speculative"): ["acceptance"],
    ("prefill",): ["workers"],
}
"""What a section cannot do without: a workload's request sizes (serving's required
options), the acceptance no config can know, a pool's workers."""


def _section(path: tuple[str, ...]) -> dict[str, Any]:
    """The object a section of serving fields is: each key a row, or a nested section."""
    properties: dict[str, Any] = {}
    for key in keys_under(*path):
        inner = (*path, key)
        rows = [f for f in WORKLOAD_FIELDS if f.key == inner]
        properties[key] = _workload_schema(rows[0]) if rows else _section(inner)
    found: dict[str, Any] = {
        "type": "object",
        "additionalProperties": False,
        "required": REQUIRED[path],
    }
    loads = [f.key[-1] for f in WORKLOAD_FIELDS if f.sweep and f.key and f.key[:-1] == path]
    if loads:  # one of them: a closed or an open loop
        found["oneOf"] = [{"required": [load]} for load in loads]
    return {**found, "description": SECTIONS[path][1], "properties": properties}


def _serving_keys() -> dict[str, Any]:
    """The deployment's serving keys: a row's schema, or a reference to its section's."""
    found = {}
    for key in keys_under():
        rows = [f for f in WORKLOAD_FIELDS if f.key == (key,)]
        shared = SECTIONS.get((key,), ("", ""))[0]
        found[key] = _workload_schema(rows[0]) if rows else {"$ref": f"#/$defs/{shared}"}
    return found


CONTEXT = {
    "description": "Contexts in tokens, as on the command line: 32K, '1K,8K', '1K..128K', "
    "'0..128K:16K'; or a list of them",
    "oneOf": [
        {"type": "integer", "minimum": 0},
        TEXT,
        {
            "type": "array",
            "minItems": 1,
            "items": {"oneOf": [{"type": "integer", "minimum": 0}, TEXT]},
        },
    ],
}
VLLM_CONFIG = {
    **TEXT,
    "description": "A vLLM serve config (YAML) to take model, tp, context, batch, dtypes "
    "from; this file's keys win",
}


def _target(kind: str, description: str, **limits: Any) -> dict[str, Any]:
    return {"type": kind, **limits, "description": description}


def _positive(description: str) -> dict[str, Any]:
    return _target("number", description, exclusiveMinimum=0)


TARGETS = {
    "type": "object",
    "additionalProperties": False,
    "minProperties": 1,
    "description": "Every target holds at every context of the deployment; the worst "
    "context decides.",
    "properties": {
        "max_ms_per_token": _positive("Slowest decode step allowed, ms per token"),
        "min_tokens_per_s": _positive("Slowest per-sequence speed allowed, tokens/s"),
        "min_throughput_tokens_per_s": _positive(
            "Lowest aggregate speed of the batch, tokens/s (under a workload: the server's "
            "output tokens/s)"
        ),
        "must_fit": {
            "type": "boolean",
            "description": "Weights + KV + state within the room a server leaves (GPU memory "
            "x memory_utilization less its activations and reserve) and the batch within its "
            "KV pool, as serving sizes it (needs gpu)",
        },
        "min_crossover_context": {
            "oneOf": [{"type": "integer", "minimum": 0}, token_text()],
            "description": "The KV cache must not overtake the weights before this context "
            "(under a workload: at the server's mean decode batch)",
        },
        "max_kv_share": _target(
            "number",
            "Largest share of a step's bytes the KV cache may take (under a workload: at the "
            "server's mean decode batch and the workload's mean context)",
            exclusiveMinimum=0,
            maximum=1,
        ),
        "max_ttft_ms": _positive(
            "Mean time to first token under the workload, ms (needs workload)"
        ),
        "max_tpot_ms": _positive(
            "Mean time per output token after the first under the workload, ms (needs workload)"
        ),
        "min_output_throughput_tokens_per_s": _positive(
            "Output tokens per second of the whole server under the workload (needs workload)"
        ),
        "min_output_throughput_per_gpu": _positive(
            "Output tokens per second per GPU under the workload (every GPU of both pools "
            "when disaggregated); needs a workload"
        ),
    },
}
"""The targets (checks/targets.py Targets), each a bound a figure is held to."""


def deployment_schema() -> dict[str, Any]:
    """The schema, its deployment properties in the order deployment files list them."""
    written = {"name": TEXT, "context": CONTEXT, "vllm_config": VLLM_CONFIG}
    written["targets"] = {"$ref": "#/$defs/targets"}
    scenario = {f.name: _scenario_schema(f) for f in SCENARIO_FIELDS if f.in_files}
    keys = {**written, **scenario, **_serving_keys()}
    deployment = {
        "type": "object",
        "additionalProperties": False,
        "properties": {key: keys[key] for key in DEPLOYMENT_KEYS},
    }
    defined = {name: path for path, (name, what) in SECTIONS.items() if name and what}
    deployment_ref = {"$ref": "#/$defs/deployment"}
    return {
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "$id": "https://github.com/decodecalc/decodecalc/deployment.schema.json",
        "title": "decodecalc deployment file",
        "description": "One deployment, or a list under 'deployments' with optional shared "
        "'defaults'. Read by 'decodecalc check'.",
        "$defs": {
            "deployment": deployment,
            **{name: _section(path) for name, path in defined.items()},
            "targets": TARGETS,
        },
        "oneOf": [
            {
                "type": "object",
                "required": ["deployments"],
                "additionalProperties": False,
                "properties": {
                    "defaults": deployment_ref,
                    "deployments": {"type": "array", "minItems": 1, "items": deployment_ref},
                },
            },
            {"allOf": [deployment_ref, {"not": {"required": ["deployments"]}}]},
        ],
    }
