"""The Python API: the estimator without a subprocess, for notebooks and other tools.

    >>> from decodecalc import estimate, load_model, load_gpu, scenario, to_dict
    >>> model, gpu = load_model("llama-3.1-70b"), load_gpu("h100-sxm")
    >>> s = scenario(model, gpu, weights="fp8", kv_dtype="fp8")
    >>> result = estimate(s, "0,200000")
    >>> round(result.rows[-1].seconds_per_token * 1000, 3)
    30.529
    >>> to_dict(result)["weight_bytes_per_step"]
    69503033344

Results are the core's frozen records; ``to_dict`` turns them into the same JSON
document the CLI prints.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

from decodecalc.answers.estimate import Estimate
from decodecalc.answers.estimate import estimate as _estimate
from decodecalc.answers.generate import Generation
from decodecalc.errors import InputError
from decodecalc.loading.catalog import Catalog
from decodecalc.model.dtypes import DType
from decodecalc.model.hardware import GpuSpec
from decodecalc.model.model import Model
from decodecalc.scenarios.scenario import Scenario


def catalog(presets: Sequence[str | Path] = ()) -> Catalog:
    """The built-in presets, with your own directories first."""
    return Catalog.with_user_dirs(presets)


def load_model(name: str, presets: Sequence[str | Path] = ()) -> Model:
    """A model by preset name or alias, or from a preset YAML or a config.json path."""
    return catalog(presets).model(name)


def load_gpu(name: str, presets: Sequence[str | Path] = ()) -> GpuSpec:
    return catalog(presets).gpu(name)


def load_dtype(name: str, presets: Sequence[str | Path] = ()) -> DType:
    return catalog(presets).dtype(name)


def scenario(
    model: Model | str,
    gpu: GpuSpec | str | None = None,
    *,
    presets: Sequence[str | Path] = (),
    **options: Any,
) -> Scenario:
    """A scenario from names or loaded objects, resolved exactly as the CLI resolves flags.

    ``options`` are ScenarioSpec's fields (bandwidth, weights, kv_dtype, batch, tp, pp,
    ep, dp_attention, efficiency, memory_utilization, overhead, link, link_bandwidth,
    gpus_per_node, node_link, engine, ...), with its defaults. A GpuSpec, Model, DType or
    Link you built is used as given.
    """
    from decodecalc.loading.fields import suggest
    from decodecalc.record import field_names
    from decodecalc.resolving.resolve import resolve
    from decodecalc.scenarios.spec import ScenarioSpec

    known = field_names(ScenarioSpec)
    for name in options:
        if name not in known:
            hint = suggest(name, list(known)) or "; valid: " + ", ".join(known[2:])
            raise InputError(f"scenario() has no option {name!r}{hint}")
    spec = ScenarioSpec(model=model, gpu=gpu, **options)
    return resolve(spec, catalog(presets))


def estimate(scenario: Scenario, contexts: Iterable[int] | str) -> Estimate:
    """Per-token latency at each context (a list of token counts, or a spec like '1K..128K')."""
    if isinstance(contexts, str):
        from decodecalc.context import parse_context

        contexts = parse_context(contexts)
    return _estimate(scenario, contexts)


def generate(scenario: Scenario, prompt_tokens: int, new_tokens: int) -> Generation:
    from decodecalc.answers.generate import generate as _generate

    return _generate(scenario, prompt_tokens, new_tokens)


def to_dict(result: Estimate | Generation) -> dict[str, Any]:
    """The JSON document the CLI prints for this result (with schema_version)."""
    if isinstance(result, Estimate):
        from decodecalc.views.estimate import estimate_report

        return estimate_report(result).document
    from decodecalc.views.generation import generation_report

    return generation_report(result).document
