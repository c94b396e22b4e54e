"""Measured decode points for calibration: a YAML list, each point a scenario, a context
and the ms per token someone measured."""

from __future__ import annotations

from pathlib import Path

from decodecalc.errors import InputError
from decodecalc.loading.catalog import Catalog
from decodecalc.loading.datafile import Document, read_yaml
from decodecalc.loading.fields import Fields
from decodecalc.physics.estimator import Scenario
from decodecalc.record import record
from decodecalc.scenario_spec import ScenarioSpec
from decodecalc.scenarios import resolve

MAX_MS_PER_TOKEN = 3_600_000
"""An hour per token: anything slower is a typo, not a measurement."""


@record
class MeasuredPoint:
    scenario: Scenario
    context_tokens: int
    measured_seconds: float
    source: str


def read_points(path: Path, catalog: Catalog) -> list[MeasuredPoint]:
    doc = read_yaml(path)
    items = doc.data.get("points") if isinstance(doc.data, dict) else doc.data
    if not isinstance(items, list) or not items:
        raise InputError(f"{path}: expected a list of measured points (or 'points:' holding one)")
    key = ("points",) if isinstance(doc.data, dict) else ()
    return [_point(doc, Fields(doc, (*key, i), item), catalog) for i, item in enumerate(items)]


def _point(doc: Document, f: Fields, catalog: Catalog) -> MeasuredPoint:
    # Fields report their own file position; only preset lookups need this point's added.
    model, gpu = f.text("model"), f.text("gpu")
    weights, kv_dtype = f.text("weights"), f.text("kv_dtype")
    batch, tp = f.integer("batch", default=1), f.integer("tp", default=1)
    link = f.text("link", "") or None
    try:
        scenario = resolve(
            ScenarioSpec(
                model=model,
                gpu=gpu,
                weights=weights,
                kv_dtype=kv_dtype,
                batch=batch,
                tp=tp,
                overhead=0.0,
                link=link,
            ),
            catalog,
        )
    except InputError as exc:
        raise f.error(None, str(exc)) from None
    context = f.integer("context", minimum=0)
    ms = float(f.fraction("ms_per_token", MAX_MS_PER_TOKEN))
    source = f.text("source", "")
    for optional in ("notes", "engine"):
        f.text(optional, "")
    f.finish()
    return MeasuredPoint(scenario, context, ms / 1000, source)
