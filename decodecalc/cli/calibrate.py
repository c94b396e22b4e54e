"""The calibrate command: fit efficiency and overhead to measured decode speeds."""

from typing import Annotated

import typer

from decodecalc.cli import (
    Format,
    FormatOpt,
    JsonOpt,
    OutputOpt,
    PresetsOpt,
    app,
    emit,
    load_catalog,
)
from decodecalc.errors import InputError


@app.command()
def calibrate(
    points: Annotated[
        str, typer.Argument(help="A YAML list of measured points.", metavar="POINTS")
    ],
    save: Annotated[
        bool, typer.Option("--save", help="Keep the fit for --efficiency calibrated.")
    ] = False,
    save_to: Annotated[
        str | None,
        typer.Option("--save-to", help="Keep the fit in this file instead.", metavar="FILE"),
    ] = None,
    fmt: FormatOpt = Format.table,
    as_json: JsonOpt = False,
    output: OutputOpt = None,
    presets: PresetsOpt = None,
) -> None:
    """Fit the effective bandwidth fraction and per-step overhead to measured decode speeds.

    Each point: model, gpu, weights, kv_dtype, batch, tp, context (tokens), ms_per_token
    (optional: source, notes, engine, link). Measured = memory time / efficiency +
    overhead + communication, fitted by least squares.

    Example: decodecalc calibrate my-measurements.yaml --save
    """
    from decodecalc.calibration.calibrate import calibrate as run_calibrate
    from decodecalc.calibration.points import read_points
    from decodecalc.calibration.saved import save_calibration
    from decodecalc.loading.datafile import is_file
    from decodecalc.paths import expand_user
    from decodecalc.views.calibration import calibration_report

    path = expand_user(points)
    if not is_file(path):
        raise InputError(f"points file {points!r} does not exist")
    result = run_calibrate(read_points(path, load_catalog(presets)))
    saved = None
    if save or save_to:
        target = expand_user(save_to) if save_to else None
        gpus = tuple(
            dict.fromkeys(p.point.scenario.gpu.id for p in result.points if p.point.scenario.gpu)
        )
        saved = str(save_calibration(result.fit, str(path), target, gpus))
    emit(calibration_report(result, saved), fmt, as_json, False, output)
