"""What the tests of each validation/points-*.yaml file share: the file read as written, and
the sources that must never appear in it."""

from __future__ import annotations

from functools import cache
from pathlib import Path
from typing import Any

import yaml

VALIDATION = Path(__file__).resolve().parents[2] / "validation"

RESERVED = ("inferencex", "inferencemax", "semianalysis", "sgl-cookbook", "kyuz0", "rapid-mlx")
"""Sources kept as independent checks: never a source or a note in a points file."""


@cache
def raw_points(name: str) -> tuple[dict[str, Any], ...]:
    """The points of validation/``name`` as the YAML holds them (read once per process)."""
    text = (VALIDATION / name).read_text(encoding="utf-8")
    return tuple(yaml.safe_load(text)["points"])
