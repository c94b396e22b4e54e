"""The calibrate command: fit the engine step model to measured decode speeds."""

from typing import TYPE_CHECKING, Annotated

import typer

from decodecalc.cli import (
    ForceOpt,
    Format,
    FormatOpt,
    JsonOpt,
    OutputOpt,
    PresetsOpt,
    app,
    destination,
    emit,
    given_path,
    load_catalog,
    note,
)
from decodecalc.cli.measured import (
    GpuOpt,
    KvOpt,
    ModelOpt,
    ReplicasOpt,
    ShowPointsOpt,
    TpOpt,
    WeightsOpt,
)
from decodecalc.errors import InputError

if TYPE_CHECKING:
    from pathlib import Path

    from decodecalc.calibration.calibrate import Calibration
    from decodecalc.calibration.points import MeasuredPoint
    from decodecalc.engine.profile import EngineParams
    from decodecalc.loading.catalog import Catalog


@app.command()
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
            "efficiency, no fixed costs, the link's all-reduce latency).",
            metavar="ENGINE",
        ),
    ] = None,
    save: Annotated[
        bool,
        typer.Option(
            "--save",
            help="Keep a roofline fit (one efficiency, a per-step overhead) for "
            "--efficiency calibrated.",
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
    model: ModelOpt = None,
    gpu: GpuOpt = None,
    weights: WeightsOpt = None,
    kv_dtype: KvOpt = None,
    tp: TpOpt = 1,
    replicas: ReplicasOpt = 1,
    show_points: ShowPointsOpt = False,
    fmt: FormatOpt = Format.table,
    as_json: JsonOpt = False,
    output: OutputOpt = None,
    force: ForceOpt = False,
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
    from decodecalc.cli.measured import read_files
    from decodecalc.loading.saved import save_calibration
    from decodecalc.paths import expand_user
    from decodecalc.views.calibration import calibration_report

    catalog = load_catalog(presets)
    given = Given(model, gpu, weights, kv_dtype, tp, engine, replicas)
    measured = [r.point for r in read_files(points, catalog, given, show_points, engine_too=False)]
    paths = expand(points)
    source = ", ".join(str(p) for p in paths)
    unknown = _unknown_engines(catalog, measured, save_engine)
    prefills = [prefill_share(p, catalog) for p in measured]
    result = run_calibrate(measured, _prior(catalog, engine, measured), prefills)
    engine_saved = None
    if save_engine is not None:  # into a presets directory this run read: only points count
        saved_engine = _save_engine(result, save_engine, presets, source, force, paths)
        engine_saved = str(saved_engine)
    saved, roofline = None, None
    if save or save_to:
        target = expand_user(save_to) if save_to else None
        if target is not None and not target.parent.is_dir():  # as every other output
            raise InputError(f"cannot write {save_to!r}: no directory {str(target.parent)!r}")
        gpus = tuple(dict.fromkeys(p.scenario.gpu.id for p in measured if p.scenario.gpu))
        roofline = roofline_fit(measured)
        saved = str(
            save_calibration(
                roofline, source, target, gpus, force=force, inputs=destination(ctx).inputs
            )
        )
    emit(
        calibration_report(result, saved, roofline, engine_saved),
        fmt,
        as_json,
        False,
        destination(ctx),
    )
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
    catalog.engine(name.partition("@")[0])  # a profile, not a mode: else its did-you-mean
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
