"""decodecalc: decode speed from first principles.

Each decode step streams the weights (constant) and the KV cache (growing with the
context) from memory, so ms per token = bytes per step / bandwidth. The Python API is
importable from here without loading the CLI, Rich or YAML until they are used.
"""

from __future__ import annotations

from decodecalc.version import __version__

TYPE_CHECKING = False
"""typing.TYPE_CHECKING without importing typing: the console script imports this package
before decodecalc/__main__.py turns the garbage collector off, and typing is the biggest
import of that stretch (Typer imports it again, collector off). Type checkers read any
name TYPE_CHECKING as true."""

__all__ = [
    "Catalog",
    "Estimate",
    "InputError",
    "Scenario",
    "__version__",
    "estimate",
    "generate",
    "load_dtype",
    "load_gpu",
    "load_model",
    "parse_bandwidth",
    "parse_context",
    "scenario",
    "to_dict",
]

if TYPE_CHECKING:
    from typing import Any

    from decodecalc.answers.estimate import Estimate
    from decodecalc.api import (
        estimate,
        generate,
        load_dtype,
        load_gpu,
        load_model,
        scenario,
        to_dict,
    )
    from decodecalc.context import parse_context
    from decodecalc.errors import InputError
    from decodecalc.loading.catalog import Catalog
    from decodecalc.scenarios.scenario import Scenario
    from decodecalc.units import parse_bandwidth

_API = ("estimate", "generate", "load_dtype", "load_gpu", "load_model", "scenario", "to_dict")
_LAZY = {
    **dict.fromkeys(_API, "decodecalc.api"),
    "Catalog": "decodecalc.loading.catalog",
    "parse_context": "decodecalc.context",
    "InputError": "decodecalc.errors",
    "Estimate": "decodecalc.answers.estimate",
    "Scenario": "decodecalc.scenarios.scenario",
    "parse_bandwidth": "decodecalc.units",
}


def __getattr__(name: str) -> Any:
    # Lazy so `import decodecalc` (and the CLI entry point) stays cheap.
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'decodecalc' has no attribute {name!r}")
    import importlib

    return getattr(importlib.import_module(module), name)
