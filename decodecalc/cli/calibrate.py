"""The commands over measured decode speeds: calibrate fits the engine step model to them,
validate says how well the engine profiles predict them."""

from typing import TYPE_CHECKING, Annotated

import typer

from decodecalc.cli import (
    Output,
    PresetsOpt,
    app,
    given_path,
    load_catalog,
    measured,
    note,
    output_options,
)
from decodecalc.errors import InputError

if TYPE_CHECKING:
    from pathlib import Path

    from decodecalc.calibration.calibrate import Calibration
    from decodecalc.calibration.points import MeasuredPoint
    from decodecalc.engine.profile import EngineParams
    from decodecalc.loading.catalog import Catalog


@app.command()
@output_options
def calibrate(
    ctx: typer.Context,
    points: Annotated[
        list[str],
        typer.Argument(
            help="Measured points: YAML lists of points, or benchmark result files (vLLM "
            "bench serve, SGLang bench_serving, llama-bench, genai-perf/AIPerf), globs too.",
            metavar="FILES...",
            callback=given_path,
        ),
    ],
    engine: Annotated[
        str | None,
        typer.Option(
            "--engine",
            help="Engine profile (NAME, or NAME@LINE for a release line) whose values stand in "
            "for what the points cannot identify (default: KV read at the weights' "
            "efficiency, no fixed costs, the link's all-reduce latency, prefill at peak "
            "FLOP/s with no per-request cost: a profile saved so says so where it is used).",
            metavar="ENGINE",
        ),
    ] = None,
    save: Annotated[
        bool,
        typer.Option(
            "--save",
            help="Keep a roofline fit (one efficiency, a per-step overhead, fitted on the "
            "relative error; its own error is printed) for --efficiency calibrated.",
        ),
    ] = False,
    save_to: Annotated[
        str | None,
        typer.Option(
            "--save-to",
            help="Keep that fit in this file instead.",
            metavar="FILE",
            callback=given_path,
        ),
    ] = None,
    save_engine: Annotated[
        str | None,
        typer.Option(
            "--save-engine",
            help="Keep the fit as an engine profile NAME, usable as --engine NAME: written to "
            "engines/NAME.yaml in the first --presets directory, else the first in "
            "$DECODECALC_PRESETS (a built-in profile's name overrides it there).",
            metavar="NAME",
        ),
    ] = None,
    model: measured.ModelOpt = None,
    gpu: measured.GpuOpt = None,
    weights: measured.WeightsOpt = None,
    kv_dtype: measured.KvOpt = None,
    tp: measured.TpOpt = 1,
    replicas: measured.ReplicasOpt = None,
    show_points: measured.ShowPointsOpt = False,
    out: Output = Output(),
    presets: PresetsOpt = None,
) -> None:
    """Fit the engine step model to measured decode speeds.

    Each point: model, gpu, weights, kv_dtype, context (tokens), ms_per_token (optional:
    batch and tp, 1 when not given; source, notes, engine (a profile, or the --save-engine
    NAME being fitted: another is noted), engine_version, group, measured, link). A step is
    weights / (bandwidth x e_w) + KV / (bandwidth x e_kv) + layers x per-layer cost +
    per-step cost + all-reduces; the fit minimises the relative error, the error it
    reports. Only what the points identify is fitted: e_kv needs one scenario at several
    contexts, per-layer and per-step costs need models of several layer counts, the
    all-reduce latency needs TP 1 and TP > 1 points; the rest keeps --engine's values.

    Benchmark files are read by their format's rule (docs/accuracy.md, "Benchmark
    files"); what they do not say comes from -m, -g, -w, -k, --tp and --replicas, and
    --engine labels their points. --show-points prints the points made.

    Example: decodecalc calibrate my-measurements.yaml --save-engine my-vllm --presets ~/dc

    Example: decodecalc calibrate 'runs/*.json' -g h100-sxm --engine vllm --save-engine my-vllm
    """
    from decodecalc.calibration.calibrate import calibrate as run_calibrate
    from decodecalc.calibration.calibrate import roofline_fit
    from decodecalc.calibration.measured_files import Given, expand
    from decodecalc.calibration.validation import prefill_share
    from decodecalc.loading.saved import save_calibration
    from decodecalc.paths import expand_user
    from decodecalc.views.calibration import calibration_report

    catalog = load_catalog(presets)
    if engine is not None:  # a profile, not a mode (else its did-you-mean), before any output
        catalog.engine(engine.partition("@")[0])
    given = Given(model, gpu, weights, kv_dtype, tp, engine, replicas)
    read = measured.read_files(points, catalog, given, show_points, engine_too=False)
    found = [r.point for r in read]
    paths = expand(points)
    source = ", ".join(str(p) for p in paths)
    unknown = _unknown_engines(catalog, found, save_engine)
    prefills = [prefill_share(p, catalog) for p in found]
    result = run_calibrate(found, _prior(catalog, engine, found), prefills)
    engine_saved = None
    if save_engine is not None:  # into a presets directory this run read: only points count
        saved_engine = _save_engine(result, save_engine, presets, source, out.to.force, paths)
        engine_saved = str(saved_engine)
    saved, roofline = None, None
    if save or save_to:
        target = expand_user(save_to) if save_to else None
        if target is not None and not target.parent.is_dir():  # as every other output
            raise InputError(f"cannot write {save_to!r}: no directory {str(target.parent)!r}")
        gpus = tuple(dict.fromkeys(p.scenario.gpu.id for p in found if p.scenario.gpu))
        roofline = roofline_fit(found)
        saved = str(
            save_calibration(
                roofline.fit, source, target, gpus, force=out.to.force, inputs=out.to.inputs
            )
        )
    report = calibration_report(result, saved, roofline, engine_saved)
    out.emit(measured.with_read_notes(report, read))
    for message in unknown:  # after the answer: a run that fails says its one line alone
        note(message)


def _unknown_engines(
    catalog: "Catalog", points: "list[MeasuredPoint]", fitted: str | None
) -> list[str]:
    """What to say of the engines the points name that are no profile (with a
    did-you-mean, as validate, which refuses them, says): calibrate fits points as
    measured, so an engine is a label here, but a typo should not pass unseen. The
    --save-engine NAME this run fits is a profile to be."""
    said = []
    names = {p.engine for p in points if p.engine is not None}
    for name in sorted(names - {(fitted or "").strip().lower()}):
        try:
            catalog.engine(name)
        except InputError as exc:
            said.append(f"points name {exc}; fitted as measured, though validate refuses them")
    return said


def _prior(catalog: "Catalog", name: str | None, points: "list[MeasuredPoint]") -> "EngineParams":
    """The values the points cannot identify: --engine's (NAME or NAME@LINE) for the
    points' GPU family (the most common one), else the roofline's assumptions."""
    from decodecalc.calibration.engine_fit import DEFAULT_PRIOR
    from decodecalc.engine.profile import gpu_family
    from decodecalc.engine.select import choose_engine

    if name is None:
        return DEFAULT_PRIOR
    families = [gpu_family(p.scenario.gpu) for p in points]
    family = max(dict.fromkeys(families), key=families.count)
    gpu = points[families.index(family)].scenario.gpu
    return choose_engine(catalog, name, gpu)[0].params[0]


RESERVED = ("typical", "roofline")
"""Engine names --engine reads as modes, not profiles."""


def _save_engine(
    result: "Calibration",
    name: str,
    presets: list[str] | None,
    source: str,
    force: bool,
    inputs: "list[Path]",
) -> "Path":
    """Write the fit as a user engine profile where the catalog reads user presets."""
    import re

    from decodecalc.calibration.calibrate import profile_text, with_lines_of
    from decodecalc.loading.catalog import ENV_VAR, user_dirs
    from decodecalc.loading.datafile import is_file, read_yaml
    from decodecalc.loading.saved import save_engine_profile

    engine_id = name.strip().lower()
    if not re.fullmatch(r"[a-z0-9][a-z0-9._-]*", engine_id) or engine_id in RESERVED:
        raise InputError(
            f"engine name {name!r} must be letters, digits, '.', '_' or '-' (starting with a "
            f"letter or digit), and not {' or '.join(RESERVED)}"
        )
    dirs = user_dirs(presets or ())
    if not dirs:
        raise InputError(
            f"--save-engine needs a presets directory to write into: give --presets DIR or "
            f"set ${ENV_VAR}"
        )
    text = profile_text(result, name, source)
    earlier = dirs[0] / "engines" / f"{engine_id}.yaml"
    if is_file(earlier):  # a line of a profile saved before: its other lines stay
        text = with_lines_of(text, read_yaml(earlier).data)
    return save_engine_profile(dirs[0], engine_id, text, force=force, inputs=inputs)


@app.command()
@output_options
def validate(
    ctx: typer.Context,
    points: Annotated[
        list[str],
        typer.Argument(
            help="Measured points or benchmark result files, as calibrate reads them (globs "
            "too); several files are one set.",
            metavar="FILES...",
            callback=given_path,
        ),
    ],
    model: measured.ModelOpt = None,
    gpu: measured.GpuOpt = None,
    weights: measured.WeightsOpt = None,
    kv_dtype: measured.KvOpt = None,
    tp: measured.TpOpt = 1,
    engine: Annotated[
        str | None,
        typer.Option(
            "--engine",
            help="Engine profile (NAME or NAME@LINE) that measured the benchmark files' runs.",
            metavar="ENGINE",
        ),
    ] = None,
    replicas: measured.ReplicasOpt = None,
    show_points: measured.ShowPointsOpt = False,
    out: Output = Output(),
    presets: PresetsOpt = None,
) -> None:
    """Predict every measured point with its engine's profile; the error per engine+GPU group.

    Each point is predicted with the profile its `engine` names (none: the typical band's
    centre) for its GPU's family. Leave-one-group-out refits every profile from the same
    points without one group (a point's `group`, else engine/family) and predicts the group
    with what stands in for it: the same engine on that family fitted on its other points,
    else the engine's family with the most points, else the typical of the other engines on
    that family. Errors are |expected / measured - 1|: median (mdape) and 90th percentile
    (p90), in percent. Points with a serving workload (input_len, output_len, concurrency)
    are also replayed through the serving model: predicted mean TPOT and TTFT against the
    measured (docs/serving.md). A report, not a gate: it exits 0 whatever the errors.

    Example: decodecalc validate validation/points.yaml validation/points-2026.yaml
    """
    from decodecalc.calibration.measured_files import Given
    from decodecalc.calibration.serving_points import validate_serving
    from decodecalc.calibration.validation import validate as run_validate
    from decodecalc.views.calibration import validation_report
    from decodecalc.views.serving import with_serving_validation

    catalog = load_catalog(presets)
    given = Given(model, gpu, weights, kv_dtype, tp, engine, replicas)
    read = measured.read_files(points, catalog, given, show_points)
    found = [r.point for r in read]
    report = validation_report(run_validate(found, catalog))
    serving = validate_serving(found, catalog)
    if serving.checks:
        report = with_serving_validation(report, serving)
    out.emit(measured.with_read_notes(report, read))
