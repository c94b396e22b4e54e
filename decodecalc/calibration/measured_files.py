"""Measured points from the files users have: decodecalc's YAML points, or the result files
benchmark tools write (loading/benchmarks.py), several at once and by glob.

A benchmark file says what it measured but rarely on what: the GPU, TP, the weights'
format and the engine profile come from the same options as every scenario (Given), and
the file's own model id, weights and cache type where it names them (an option wins).
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from decodecalc.calibration.points import MeasuredPoint, ServingLoad, read_points
from decodecalc.errors import InputError, PresetError
from decodecalc.loading.benchmarks import KNOWN, BenchRun, read_benchmark
from decodecalc.loading.catalog import Catalog
from decodecalc.notes import Note
from decodecalc.record import record, replace
from decodecalc.resolving.resolve import resolve
from decodecalc.scenarios.scenario import Scenario
from decodecalc.scenarios.spec import ScenarioSpec

SERVING_KV = "bf16"
"""The cache format a serving run is read at where neither the file nor -k says: the
engines' default (vLLM and SGLang keep the model's BF16 unless told otherwise)."""


@record
class Given:
    """What the command line says about the runs in benchmark files."""

    model: str | None = None
    gpu: str | None = None
    weights: str | None = None
    kv_dtype: str | None = None
    tp: int = 1
    engine: str | None = None
    """The engine profile a point is labelled with (NAME or NAME@LINE)."""
    replicas: int | None = None
    """Data-parallel replicas a serving run's requests were spread over (--replicas); None:
    what the benchmark file says, else 1."""


@record
class ReadPoint:
    """A point, where it was read, and for one from a benchmark file the run it was read
    from."""

    point: MeasuredPoint
    where: str
    """``file:line`` or ``file[row]`` of a benchmark result, ``file #N`` of a YAML point."""
    run: BenchRun | None = None
    notes: tuple[Note, ...] = ()
    """How it was read where the reader should know: replicas taken from the file."""


def expand(files: Sequence[str]) -> list[Path]:
    """Each name, or the files a glob in it matches (in name order), once each; a name
    that is neither a file nor a matching glob is an error."""
    import glob

    from decodecalc.loading.datafile import is_file
    from decodecalc.paths import expand_user

    found: dict[Path, None] = {}
    for name in files:
        path = expand_user(name)
        if is_file(path):
            found[path] = None
            continue
        matches = sorted(glob.glob(str(path))) if glob.has_magic(str(path)) else []
        hits = [Path(m) for m in matches if is_file(Path(m))]
        if not hits:
            raise InputError(f"measured file {name!r} does not exist")
        found.update(dict.fromkeys(hits))
    return list(found)


def read_measured(files: Sequence[str], catalog: Catalog, given: Given) -> list[ReadPoint]:
    """Every point of every file, in the order given: benchmark results read by their
    format's rule, anything else as a YAML list of points (read_points)."""
    read: list[ReadPoint] = []
    for path in expand(files):
        runs = read_benchmark(path)
        if runs is not None:
            read.extend(_runs_read(path, runs, catalog, given))
            continue
        side = _side_file(path, given)
        if side is not None:
            for listed in expand(side[0]):
                found = read_benchmark(listed)
                if found is None:
                    raise InputError(f"{path}: benchmarks: {listed} is no benchmark result file")
                read.extend(_runs_read(listed, found, catalog, side[1]))
            continue
        points = _points_file(path, catalog)
        read.extend(ReadPoint(p, f"{path} #{i}") for i, p in enumerate(points, 1))
    return read


def _runs_read(
    path: Path, runs: Sequence[BenchRun], catalog: Catalog, given: Given
) -> list[ReadPoint]:
    if not runs:
        raise InputError(f"{path}: no decode measurement in it (prompt tests only?)")
    return [
        ReadPoint(point_of(run, catalog, given), run.where, run, _replica_notes(run, given))
        for run in runs
    ]


def replicas_of(run: BenchRun, given: Given) -> int:
    """--replicas (or a side file's) where given, else the file's, else 1."""
    return given.replicas if given.replicas is not None else run.replicas or 1


def _replica_notes(run: BenchRun, given: Given) -> tuple[Note, ...]:
    """Say when the file's replica count divides the requests in flight."""
    if given.replicas is not None or run.replicas is None or run.replicas == 1:
        return ()
    return (
        Note(
            "replicas-from-file",
            f"{run.where}: the file says {run.replicas_said}: its {run.batch} requests in "
            f"flight are spread over {run.replicas} replicas (give --replicas to say otherwise)",
        ),
    )


SIDE_FIELDS = ("model", "gpu", "weights", "kv_dtype", "engine")
"""Text fields a side file may give for its benchmarks (with tp and replicas, counts)."""


def _side_file(path: Path, given: Given) -> tuple[list[str], Given] | None:
    """A side file: ``benchmarks:`` (files or globs, relative to it) and what they do not
    say, its fields winning over the command line's; None for any other file."""
    from decodecalc.loading.datafile import read_yaml
    from decodecalc.loading.fields import Fields

    if path.suffix.lower() not in (".yaml", ".yml"):
        return None
    doc = read_yaml(path)
    if not isinstance(doc.data, dict) or "benchmarks" not in doc.data:
        return None
    f = Fields(doc)
    listed = f.texts("benchmarks") if isinstance(f.data["benchmarks"], list) else None
    names = list(listed) if listed is not None else [f.text("benchmarks")]
    texts = {name: f.text(name, "") or None for name in SIDE_FIELDS}
    counts = {name: f.optional_integer(name) for name in ("tp", "replicas")}
    f.finish()
    fields = {k: v for k, v in {**texts, **counts}.items() if v is not None}
    base = path.parent
    return [str(base / n) for n in names], replace(given, **fields)


def _points_file(path: Path, catalog: Catalog) -> list[MeasuredPoint]:
    """A points file, or a file in no format decodecalc knows: one line listing them."""
    try:
        return read_points(path, catalog)
    except InputError as exc:
        if path.suffix.lower() in (".yaml", ".yml") or "ms_per_token" in str(exc):
            raise
        raise InputError(
            f"{path}: not a file decodecalc reads: neither a YAML list of points nor a "
            f"benchmark result ({KNOWN})"
        ) from None


def _checkpoint_weights(scenario: Scenario) -> str:
    """What a point read at the checkpoint's own weights says of them."""
    own = scenario.weights_recipe or scenario.weights.id
    return f"; weights the checkpoint's {own} (-w to say otherwise)"


def point_of(run: BenchRun, catalog: Catalog, given: Given) -> MeasuredPoint:
    """A benchmark run as a point: the deployment from the options and the file; weights
    neither gives are the checkpoint's own format, as every command takes a model's (and
    as an engine serves a checkpoint it is not told to quantize)."""
    model = given.model or run.model
    weights = given.weights or run.weights
    kv = given.kv_dtype or run.kv_dtype or (SERVING_KV if run.input_len is not None else None)
    for value, option, what in (
        (model, "-m", "model"),
        (given.gpu, "-g", "GPU"),
        (kv, "-k", "KV cache format"),
    ):
        if value is None:
            raise InputError(f"{run.where}: the file does not say the {what}: give {option}")
    assert model is not None and kv is not None
    replicas = replicas_of(run, given)
    batch = max(1, round(run.batch / replicas))
    # Measured at efficiency 1 with no overhead, as every point (calibration/points.py).
    spec = ScenarioSpec(
        model=model,
        gpu=given.gpu,
        weights=weights,
        kv_dtype=kv,
        batch=batch,
        tp=given.tp,
        overhead=0.0,
    )
    try:
        scenario = resolve(spec, catalog)
    except PresetError:
        raise
    except InputError as exc:
        raise InputError(f"{run.where}: {exc}") from None
    engine, _, line = (given.engine or run.engine or "").partition("@")
    serving = None
    if run.input_len is not None and run.output_len is not None:
        ttft = None if run.ttft_ms is None else run.ttft_ms / 1000
        serving = ServingLoad(run.input_len, run.output_len, batch, ttft)
    split = f"; {run.batch} / {replicas} replicas = batch {batch}" if replicas > 1 else ""
    split += "" if weights is not None else _checkpoint_weights(scenario)
    return MeasuredPoint(
        scenario,
        run.context,
        run.ms_per_token / 1000,
        f"{run.where} ({run.tool}): {run.how}{split}",
        engine or None,
        run.engine_version,
        None,
        run.measured,
        None,
        serving,
        line or None,
    )
