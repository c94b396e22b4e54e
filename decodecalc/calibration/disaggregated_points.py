"""Published disaggregated deployments (validation/points-disaggregated.yaml) replayed
through the two-pool serving model (answers/disaggregated.py) with the split they ran:
each point's decode workers take its scenario fields (tp, ep, dp_attention,
eplb_redundant, the links), its prefill workers its ``prefill:`` mapping over them, and
both the engine that measured it at its release line.

A point says which figures it measured (``measured``):

- ``decode_pool``: the decode workers saturated on their own at ``decode_batch`` requests
  each (a benchmark that gives the prefill side all it needs): TPOT and output tokens per
  second per decode GPU, held to the decode step at that batch (answers/disaggregated.py:
  pool_rates);
- ``prefill_pool``: the prefill workers saturated on their own: input tokens per second per
  prefill GPU, held to the prefill pool's saturation;
- ``deployment``: the whole deployment at a closed loop's ``concurrency``: TPOT, TTFT and
  output tokens per second per GPU (over both pools), held to serve_disaggregated.

Nothing is fitted on them: they are an out-of-sample check (docs/accuracy.md).
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from decodecalc.errors import InputError
from decodecalc.loading.datafile import read_yaml
from decodecalc.loading.fields import Fields
from decodecalc.record import record, replace

if TYPE_CHECKING:
    from decodecalc.answers.disaggregated import Pools
    from decodecalc.engine.scheduler import SchedulerLimits
    from decodecalc.loading.catalog import Catalog
    from decodecalc.scenarios.scenario import Scenario
    from decodecalc.scenarios.spec import ScenarioSpec
    from decodecalc.scenarios.workload import Workload

MEASURED_POOLS = ("decode_pool", "prefill_pool", "deployment")
PREFILL_LAYOUT = {"tp": "count", "ep": "flag", "dp_attention": "flag", "eplb_redundant": "count"}
"""What a point's ``prefill:`` mapping may change of the decode worker's layout."""
FIGURES = {
    "tpot_ms": "TPOT",
    "ttft_ms": "TTFT",
    "output_tok_s_per_decode_gpu": "output tok/s per decode GPU",
    "input_tok_s_per_prefill_gpu": "input tok/s per prefill GPU",
    "output_tok_s_per_gpu": "output tok/s per GPU",
}
"""Figures a point may give, each compared with its prediction."""
MAX_FIGURE = 10**9


@record
class DisaggregatedPoint:
    pools: Pools
    input_len: int
    output_len: int
    measured: str
    """A MEASURED_POOLS entry."""
    figures: dict[str, float]
    """What the source measured, by FIGURES key (times in ms, rates in tokens/s)."""
    source: str
    engine: str
    engine_version: str
    release: str | None = None
    decode_batch: int | None = None
    """Requests per decode worker (decode_pool points)."""
    concurrency: int | None = None
    """Requests in flight over the deployment (deployment points)."""


@record
class DisaggregatedCheck:
    point: DisaggregatedPoint
    predicted: dict[str, float]
    """The model's figure for each measured one (empty where it refuses the point)."""
    problem: str | None = None
    """Why the model refuses the deployment (a pool that cannot hold the model), as
    calibration/serving_points.py reports a refused workload."""

    @property
    def errors(self) -> dict[str, float]:
        """predicted / measured - 1 per figure predicted."""
        return {
            k: self.predicted[k] / v - 1
            for k, v in self.point.figures.items()
            if k in self.predicted
        }


def read_disaggregated_points(path: Path, catalog: Catalog) -> list[DisaggregatedPoint]:
    """Every point of a file (``points:`` holding a list), each resolved to its two pools."""
    doc = read_yaml(path)
    items = doc.data.get("points") if isinstance(doc.data, dict) else None
    if not isinstance(items, list) or not items:
        raise InputError(f"{path}: expected 'points:' holding a list of disaggregated points")
    return [_point(Fields(doc, ("points", i), item), catalog) for i, item in enumerate(items)]


def _point(f: Fields, catalog: Catalog) -> DisaggregatedPoint:
    from decodecalc.calibration.points import point_spec

    spec = point_spec(f)
    engine, version = f.text("engine"), f.text("engine_version")
    release = f.text("release", "") or None
    pools = _pools(f, spec, catalog, engine, release)
    measured = f.text("measured")
    if measured not in MEASURED_POOLS:
        raise f.error("measured", f"expected one of {', '.join(MEASURED_POOLS)}, got {measured!r}")
    figures = {key: float(f.fraction(key, MAX_FIGURE)) for key in FIGURES if f.has(key)}
    if not figures:
        raise f.error(None, "gives no measured figure (" + ", ".join(FIGURES) + ")")
    point = DisaggregatedPoint(
        pools=pools,
        input_len=f.integer("input_len"),
        output_len=f.integer("output_len", minimum=2),
        measured=measured,
        figures=figures,
        source=f.text("source"),
        engine=engine,
        engine_version=version,
        release=release,
        decode_batch=f.optional_integer("decode_batch"),
        concurrency=f.optional_integer("concurrency"),
    )
    f.text("notes", "")
    needed = {"decode_pool": "decode_batch", "deployment": "concurrency"}.get(measured)
    if needed is not None and getattr(point, needed) is None:
        raise f.error(needed, f"a {measured} point needs {needed}")
    f.finish()
    return point


def _pools(
    f: Fields, spec: ScenarioSpec, catalog: Catalog, engine: str, release: str | None
) -> Pools:
    from decodecalc.answers.disaggregated import Pools
    from decodecalc.resolving.resolve import resolve

    layout = f.mapping("prefill")
    readers: dict[str, Callable[[str], Any]] = {
        "count": lambda name: layout.integer(name, minimum=0 if name == "eplb_redundant" else 1),
        "flag": lambda name: layout.boolean(name, False),
    }
    changed = {k: readers[kind](k) for k, kind in PREFILL_LAYOUT.items() if layout.has(k)}
    try:
        decode = _with_engine(resolve(spec, catalog), catalog, engine, release)
        prefill = _with_engine(resolve(replace(spec, **changed), catalog), catalog, engine, release)
        link_name = f.text("kv_link", "ib-ndr")
        link = catalog.link(link_name)
        return Pools(
            prefill, decode, f.integer("prefill_workers"), f.integer("decode_workers"), link
        )
    except InputError as exc:
        raise f.error(None, str(exc)) from None


def _with_engine(scenario: Scenario, catalog: Catalog, name: str, release: str | None) -> Scenario:
    """The scenario with the engine that measured it, at its release line (as validate's
    serving replay takes it: calibration/serving_points.py), taking the GPU's kernel rates
    as `serving --engine NAME@LINE` does (resolving/resolve.py: kernel_rated, at any batch)."""
    from decodecalc.engine.select import engine_at, extrapolation
    from decodecalc.resolving.resolve import kernel_rated

    engine = engine_at(catalog, name, release, scenario.gpu)
    engine, _ = extrapolation(engine, scenario.model, scenario.batch, scenario.gpu)
    return kernel_rated(replace(scenario, engine=engine), None)


def workload_of(point: DisaggregatedPoint) -> Workload:
    from decodecalc.scenarios.workload import Workload

    concurrency = point.concurrency or point.decode_batch or 1
    return Workload(point.input_len, point.output_len, concurrency=concurrency)


def replay(point: DisaggregatedPoint) -> DisaggregatedCheck:
    """The model's figures for what the point measured, with its real split."""
    from decodecalc.answers.serving import Refused
    from decodecalc.engine.scheduler import scheduler_limits

    pools, workload = point.pools, workload_of(point)
    limits = scheduler_limits(pools.decode.engine, pools.decode.gpu)
    try:
        predicted = _predicted(point, workload, limits)
    except Refused as exc:
        return DisaggregatedCheck(point, {}, str(exc))
    missing = [k for k in point.figures if k not in predicted]
    if missing:
        raise InputError(f"a {point.measured} point cannot be held to {', '.join(missing)}")
    return DisaggregatedCheck(point, {k: predicted[k] for k in point.figures})


def _predicted(
    point: DisaggregatedPoint, workload: Workload, limits: SchedulerLimits
) -> dict[str, float]:
    from decodecalc.answers.disaggregated import pool_rates, serve_disaggregated

    pools = point.pools
    if point.measured == "deployment":
        result = serve_disaggregated(pools, workload, limits)
        return {
            "tpot_ms": result.tpot_s * 1000,
            "ttft_ms": result.ttft_s * 1000,
            "output_tok_s_per_decode_gpu": result.output_per_decode_gpu,
            "input_tok_s_per_prefill_gpu": result.input_per_prefill_gpu,
            "output_tok_s_per_gpu": result.output_per_gpu,
        }
    if point.measured == "decode_pool":
        # The decode pool's figures do not depend on the prefill workers, which its benchmark
        # gave all they needed: priced with the decode workers' layout in their place, so a
        # prefill layout decodecalc cannot hold (one that offloads weights) refuses nothing.
        pools = replace(pools, prefill=pools.decode)
    rates = pool_rates(pools, workload, limits, point.decode_batch or 1)
    return {
        "tpot_ms": rates.tpot_s * 1000,
        "output_tok_s_per_decode_gpu": rates.output_per_decode_gpu,
        "input_tok_s_per_prefill_gpu": rates.input_per_prefill_gpu,
    }


def replay_file(path: Path, catalog: Catalog) -> list[DisaggregatedCheck]:
    return [replay(p) for p in read_disaggregated_points(path, catalog)]
