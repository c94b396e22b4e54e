"""The validate command: how well the engine profiles predict measured points."""

from typing import Annotated

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


@app.command()
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
    model: ModelOpt = None,
    gpu: GpuOpt = None,
    weights: WeightsOpt = None,
    kv_dtype: KvOpt = None,
    tp: TpOpt = 1,
    engine: Annotated[
        str | None,
        typer.Option(
            "--engine",
            help="Engine profile (NAME or NAME@LINE) that measured the benchmark files' runs.",
            metavar="ENGINE",
        ),
    ] = None,
    replicas: ReplicasOpt = 1,
    show_points: ShowPointsOpt = False,
    fmt: FormatOpt = Format.table,
    as_json: JsonOpt = False,
    output: OutputOpt = None,
    force: ForceOpt = False,
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
    from decodecalc.cli.measured import read_files
    from decodecalc.views.calibration import validation_report
    from decodecalc.views.serving import with_serving_validation

    catalog = load_catalog(presets)
    given = Given(model, gpu, weights, kv_dtype, tp, engine, replicas)
    measured = [r.point for r in read_files(points, catalog, given, show_points)]
    report = validation_report(run_validate(measured, catalog))
    serving = validate_serving(measured, catalog)
    if serving.checks:
        report = with_serving_validation(report, serving)
    emit(report, fmt, as_json, False, destination(ctx))
