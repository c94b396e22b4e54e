"""The options that say on what a benchmark file's runs ran (calibrate, validate and
check --measured share them), and reading the files with them."""

from typing import TYPE_CHECKING, Annotated

import typer

from decodecalc.cli import whole_number

if TYPE_CHECKING:
    from decodecalc.calibration.measured_files import Given, ReadPoint
    from decodecalc.loading.catalog import Catalog
    from decodecalc.views.report import Report

ModelOpt = Annotated[
    str | None,
    typer.Option(
        "--model",
        "-m",
        help="Model of benchmark files that name none (or another).",
        metavar="MODEL",
    ),
]
GpuOpt = Annotated[
    str | None,
    typer.Option("--gpu", "-g", help="GPU the benchmark files ran on.", metavar="GPU"),
]
WeightsOpt = Annotated[
    str | None,
    typer.Option(
        "--weights",
        "-w",
        help="Weights format of benchmark files that do not say.",
        metavar="DTYPE",
    ),
]
KvOpt = Annotated[
    str | None,
    typer.Option(
        "--kv-dtype",
        "-k",
        help="KV cache format of benchmark files that do not say (serving runs: bf16).",
        metavar="DTYPE",
    ),
]
TpOpt = Annotated[
    int,
    typer.Option("--tp", parser=whole_number, help="Tensor parallelism of the benchmark runs."),
]
ReplicasOpt = Annotated[
    int | None,
    typer.Option(
        "--replicas",
        parser=whole_number,
        help="Data-parallel replicas a serving benchmark's requests were spread over (its "
        "requests in flight are divided among them); default: what the file says, else 1.",
    ),
]
ShowPointsOpt = Annotated[
    bool,
    typer.Option("--show-points", help="Print the points made from the files (YAML, on stderr)."),
]


def read_files(
    files: list[str], catalog: "Catalog", given: "Given", show: bool, engine_too: bool = True
) -> "list[ReadPoint]":
    """Every point of the files (benchmark results or YAML points), printed as points
    with how each was read when ``show``. Options that describe benchmark runs are refused
    when no file is one (a points file says its own deployment); ``engine_too``: --engine
    is one of them (calibrate's also stands in for what the points cannot identify)."""
    import sys

    from decodecalc.calibration.measured_files import read_measured
    from decodecalc.errors import InputError
    from decodecalc.views.measured import points_yaml

    if given.tp < 1 or (given.replicas is not None and given.replicas < 1):
        raise InputError("--tp and --replicas must be at least 1")
    read = read_measured(files, catalog, given)
    described = [
        flag
        for flag, value in (
            ("-m", given.model),
            ("-g", given.gpu),
            ("-w", given.weights),
            ("-k", given.kv_dtype),
            ("--tp", given.tp != 1 or None),
            ("--replicas", given.replicas),
            ("--engine", given.engine if engine_too else None),
        )
        if value is not None
    ]
    if described and all(r.run is None for r in read):
        raise InputError(
            f"{', '.join(described)} describe benchmark result files, and none of the files "
            "is one: a points file names its own deployment"
        )
    if show:
        sys.stderr.write(points_yaml(read))
    return read


def with_read_notes(report: "Report", read: "list[ReadPoint]") -> "Report":
    """The report with what a reader of its points must know, in its JSON notes and so on
    stderr: replicas taken from a benchmark file, and each point measured below its
    roofline (calibration/below_roofline.py), which calibrate would fit and validate
    score as it stands."""
    from decodecalc.calibration.below_roofline import below_roofline_notes
    from decodecalc.notes import unique
    from decodecalc.record import replace

    found = unique(
        [
            *(n for r in read for n in r.notes),
            *below_roofline_notes([(r.point, r.where) for r in read]),
        ]
    )
    if not found:
        return report
    doc = report.document
    notes = [*doc.get("notes", []), *(n.as_dict() for n in found)]
    return replace(report, document={**doc, "notes": notes})
