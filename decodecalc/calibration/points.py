"""Measured decode points for calibration and validation: a YAML list, each point a
scenario, a context and the ms per token someone measured.

Published figures measure different things (a timed decode step, a serving benchmark's
mean time per output token, a whole generate call divided by its tokens), come from
different engines, and some describe setups the physics does not model. So a point may
also say which engine measured it (``engine``, ``engine_version``, its ``release`` line),
which engine+GPU family it belongs to for leave-one-group-out validation (``group``), what
its figure is (``measured``, one of MEASURED_KINDS) and why it is left out (``exclude``).
"""

from __future__ import annotations

from collections.abc import Callable
from fractions import Fraction
from pathlib import Path

from decodecalc.engine.profile import release_order
from decodecalc.errors import InputError, PresetError
from decodecalc.loading.catalog import Catalog
from decodecalc.loading.datafile import read_yaml
from decodecalc.loading.fields import Fields, suggest
from decodecalc.record import record
from decodecalc.resolving.resolve import resolve
from decodecalc.scenarios.fields import SCENARIO_FIELDS, ScenarioField
from decodecalc.scenarios.scenario import Scenario
from decodecalc.scenarios.spec import ScenarioSpec

MAX_MS_PER_TOKEN = 3_600_000
MIN_MS = Fraction(1, 1000)
"""A microsecond: no step or first token is shorter (a kernel launch takes several), and a
subnormal time such as 1e-320 ms would turn the fit's squared errors into NaN."""
"""An hour per token: anything slower is a typo, not a measurement."""

MEASURED_KINDS: dict[str, str] = {
    "step": "decode steps alone, timed or averaged over the generated tokens (llama-bench tg)",
    "e2e_over_tokens": "a whole generate call or batch divided by its output tokens: "
    "one prefill is inside",
    "tpot_mean": "a serving benchmark's mean time per output token after the first",
    "tpot_median": "a serving benchmark's median time per output token after the first",
    "itl_mean": "a serving benchmark's mean inter-token latency",
    "itl_median": "a serving benchmark's median inter-token latency",
}
"""What a point's figure is. A serving benchmark's figures also absorb other requests'
prefills; the median inter-token latency is the closest of them to a pure decode step."""


@record
class ServingLoad:
    """What a serving benchmark sent and the TTFT it measured, beside the point's TPOT."""

    input_len: int
    output_len: int
    concurrency: int
    ttft_seconds: float | None = None
    ttft_fitted: bool = True
    """False where the point's ``ttft_exclude`` says why its TTFT breaks the steady-state
    model's assumptions: reported by validate, never fitted."""


@record
class MeasuredPoint:
    scenario: Scenario
    context_tokens: int
    measured_seconds: float
    source: str
    engine: str | None = None
    """The engine profile id that measured it (vllm, llama.cpp, ...)."""
    engine_version: str | None = None
    """As the source states it."""
    group: str | None = None
    """Engine and GPU family (llama.cpp/apple): the unit left out in leave-one-group-out."""
    measured: str | None = None
    """A key of MEASURED_KINDS; None where the file does not say."""
    gpu_count: int | None = None
    """GPUs used where it differs from tp x pp (a layer split across 8 GPUs at tp 1)."""
    serving: ServingLoad | None = None
    """A serving benchmark's workload, which 'decodecalc validate' replays through the
    serving model (calibration/serving_points.py); None for other points."""
    release: str | None = None
    """The engine's release line the point ran ('0.10'; 'YYYY-MM' for builds named by
    date): validate predicts each line from the engine's older ones (release_order)."""


def read_points(path: Path, catalog: Catalog) -> list[MeasuredPoint]:
    """The points that count. Excluded points are read as strictly (every field typed,
    unknown fields refused) but not resolved: they may name hardware no preset
    describes, such as a phone's CPU."""
    doc = read_yaml(path)
    items = doc.data.get("points") if isinstance(doc.data, dict) else doc.data
    if not isinstance(items, list) or not items:
        raise InputError(f"{path}: expected a list of measured points (or 'points:' holding one)")
    if isinstance(items[0], dict) and "prefill_workers" in items[0]:
        raise InputError(
            f"{path}: disaggregated points (prefill_workers, decode_workers): replay them "
            "with python validation/replay_disaggregated.py (calibration/disaggregated_points.py)"
        )
    key = ("points",) if isinstance(doc.data, dict) else ()
    read = [_point(Fields(doc, (*key, i), item), catalog) for i, item in enumerate(items)]
    points = [p for p in read if p is not None]
    if not points:
        raise InputError(f"{path}: every point is excluded; nothing is left to use")
    return points


_LABELS = ("engine", "engine_version", "group", "release")
"""Free-text labels a point may carry; read in MeasuredPoint's order."""


def _point(f: Fields, catalog: Catalog) -> MeasuredPoint | None:
    # Fields report their own file position; only preset lookups need this point's added.
    spec = point_spec(f)
    excluded = bool(f.text("exclude", ""))
    scenario = None if excluded else _resolved(f, spec, catalog)
    context = f.integer("context", minimum=0)
    ms = float(f.fraction("ms_per_token", MAX_MS_PER_TOKEN, MIN_MS))
    source = f.text("source", "")
    f.text("notes", "")
    engine, version, group, release = (f.text(name, "") or None for name in _LABELS)
    measured = _measured_kind(f)
    gpu_count = f.optional_integer("gpu_count")
    serving = _serving_load(f)
    if gpu_count is not None and gpu_count < spec.tp * spec.pp:
        least = "tp" if spec.pp == 1 else "tp x pp"
        raise f.error(
            "gpu_count", f"must be at least {least} ({spec.tp * spec.pp}), got {gpu_count}"
        )
    if engine is not None and "@" in engine:
        engine, _, line = engine.partition("@")
        if release is not None and release != line:
            raise f.error("release", f"{release!r} is not the line of engine '{engine}@{line}'")
        release = line
    if release is not None and not release_order(release):
        raise f.error(
            "release", f"a release line holds numbers ('0.10', '2024-05'), got {release!r}"
        )
    f.finish()
    if scenario is None:
        return None
    return MeasuredPoint(
        scenario,
        context,
        ms / 1000,
        source,
        engine,
        version,
        group,
        measured,
        gpu_count,
        serving,
        release,
    )


def point_spec(f: Fields) -> ScenarioSpec:
    """The deployment a point measured: every scenario field points take
    (scenarios/fields.py), read by its kind; measured at efficiency 1 with no overhead."""
    readers: dict[str, Callable[[ScenarioField], object]] = {
        "text": lambda field: f.text(field.name),
        "count": lambda field: f.integer(field.name, minimum=field.least),
        "flag": lambda field: f.boolean(field.name, False),
    }
    given = {
        field.name: readers[field.kind](field)
        for field in SCENARIO_FIELDS
        if field.in_points and (field.required_in_points or f.has(field.name))
    }
    return ScenarioSpec(**given, overhead=0.0)  # type: ignore[arg-type]


def _serving_load(f: Fields) -> ServingLoad | None:
    """A serving point's workload (input_len, output_len, concurrency, optionally
    ttft_ms and ttft_exclude): the first three all or none."""
    sizes = [f.optional_integer(name) for name in ("input_len", "output_len", "concurrency")]
    ttft = f.fraction("ttft_ms", MAX_MS_PER_TOKEN, MIN_MS) if f.has("ttft_ms") else None
    unfitted = bool(f.text("ttft_exclude", ""))
    if unfitted and ttft is None:
        raise f.error("ttft_exclude", "says why a TTFT is not fitted, but there is no ttft_ms")
    if all(size is None for size in sizes) and ttft is None:
        return None
    input_len, output_len, concurrency = sizes
    if input_len is None or output_len is None or concurrency is None:
        raise f.error("input_len", "a serving workload needs input_len, output_len and concurrency")
    return ServingLoad(
        input_len,
        output_len,
        concurrency,
        None if ttft is None else float(ttft) / 1000,
        ttft_fitted=not unfitted,
    )


def _resolved(f: Fields, spec: ScenarioSpec, catalog: Catalog) -> Scenario:
    try:
        return resolve(spec, catalog)
    except PresetError:
        raise  # the preset file is to blame, and its problem says where
    except InputError as exc:
        raise f.error(None, str(exc)) from None


def _measured_kind(f: Fields) -> str | None:
    kind = f.text("measured", "")
    if kind and kind not in MEASURED_KINDS:
        hint = suggest(kind, list(MEASURED_KINDS)) or "; known: " + ", ".join(MEASURED_KINDS)
        raise f.error("measured", f"unknown kind {kind!r}{hint}")
    return kind or None
