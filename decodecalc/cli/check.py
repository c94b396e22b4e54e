"""The check command (deployment files against their targets) and the schema of those files."""

import sys
from enum import Enum
from typing import TYPE_CHECKING, Annotated

import typer

from decodecalc.cli import (
    EXIT_VIOLATION,
    ForceOpt,
    JsonOpt,
    OutputOpt,
    PresetsOpt,
    app,
    destination,
    given_path,
    load_catalog,
    note,
    output_stream,
    say_notes,
)
from decodecalc.cli.measured import (
    KvOpt,
    ModelOpt,
    ReplicasOpt,
    ShowPointsOpt,
    TpOpt,
    WeightsOpt,
)
from decodecalc.cli.options import scenario_option
from decodecalc.errors import InputError, InputErrors

if TYPE_CHECKING:
    from collections.abc import Callable
    from pathlib import Path
    from typing import IO

    from decodecalc.calibration.measured_files import Given
    from decodecalc.checks.deployments import Deployment, DeploymentReader
    from decodecalc.checks.run import CheckedDeployment
    from decodecalc.loading.catalog import Catalog
    from decodecalc.views.report import Report


GpuOpt = Annotated[
    str | None, scenario_option("gpu", "GPU for deployments that name none (vLLM configs).")
]
EngineOpt = Annotated[
    str | None,
    scenario_option(
        "engine",
        "Engine profile for deployments that name none ('decodecalc engines'): speed targets "
        "are then held to its expected step; 'roofline' holds them to the roofline. Default: "
        "'typical'.",
    ),
]
"""The scenario fields check takes for the deployments that leave them out, declared as
every scenario command declares them (scenarios/fields.py), with check's own help."""


class CheckFormat(str, Enum):
    table = "table"
    json = "json"
    junit = "junit"


@app.command()
def check(
    ctx: typer.Context,
    files: Annotated[
        list[str],
        typer.Argument(
            help="Deployment files or vLLM serve configs; with --measured, benchmark results.",
            metavar="FILE...",
            callback=given_path,
        ),
    ],
    fmt: Annotated[
        CheckFormat,
        typer.Option("--format", "-f", help="A table, a JSON report, or JUnit XML for CI."),
    ] = CheckFormat.table,
    as_json: JsonOpt = False,
    output: Annotated[
        str | None,
        typer.Option(
            "--output",
            "-o",
            help="Write the report here (without -f, FILE.json is JSON and FILE.xml JUnit); "
            "the table still goes to stdout.",
            metavar="FILE",
            callback=given_path,
        ),
    ] = None,
    force: ForceOpt = False,
    gpu: GpuOpt = None,
    target: Annotated[
        list[str] | None,
        typer.Option(
            "--target",
            "-t",
            help="A target for every deployment, e.g. max_ms_per_token=40 (repeatable).",
            metavar="NAME=VALUE",
        ),
    ] = None,
    engine: EngineOpt = None,
    measured: Annotated[
        bool,
        typer.Option(
            "--measured",
            help="FILE... are benchmark results (or measured points): hold each to the band "
            "decodecalc expects for its deployment; -g, -m, -w, -k, --tp, --replicas and "
            "--engine say what the files do not.",
        ),
    ] = False,
    model: ModelOpt = None,
    weights: WeightsOpt = None,
    kv_dtype: KvOpt = None,
    tp: TpOpt = 1,
    replicas: ReplicasOpt = None,
    show_points: ShowPointsOpt = False,
    presets: PresetsOpt = None,
) -> None:
    """Check deployment files against their latency, throughput and memory targets.

    Speed targets are held to the expected step of the deployment's engine (engine: in the
    file, --engine, or vllm for a vLLM config); with none named, to the default selection's
    ('typical', the median of the profiles measured on the GPU's family); with engine:
    roofline, to decodecalc's roofline (bytes per step / bandwidth x efficiency). A vLLM
    config given no targets is held to what vLLM checks when it starts: the weights and
    one max-model-len sequence fit in memory.
    FILE '-' reads standard input.

    Exit 0 when every target is met, 1 when any is missed, 2 when a file is invalid (every
    problem in it is listed, with file:line:column; JUnit written with -o still reports the
    valid files, and each invalid one as an error). 'decodecalc schema' prints the format.

    Examples:

      decodecalc check deploy/*.yaml

      decodecalc check serve.yaml --gpu h100-sxm -t max_ms_per_token=40 -f junit -o report.xml

      decodecalc check --measured results/*.json -g h100-sxm --engine vllm -f junit -o m.xml

    With --measured, exit 0 when every measured figure lies inside the expected band, 1
    when one lies outside (its ratio to the expected figure is shown), 2 on a bad file.
    """
    from decodecalc.calibration.measured_files import Given
    from decodecalc.checks.deployments import DeploymentReader
    from decodecalc.engine.select import choose_engine

    fmt = check_format(fmt, as_json, output)
    catalog = load_catalog(presets)
    _measured_only(measured, model, weights, kv_dtype, tp, replicas, show_points)
    if measured and target:
        raise InputError(
            "--target holds deployment files to targets; --measured holds results to the band "
            "decodecalc expects (give one or the other)"
        )
    if measured:
        given = Given(model, gpu, weights, kv_dtype, tp, engine, replicas)
        _check_measured(ctx, files, given, show_points, fmt, output, catalog)
        return
    if gpu is not None:  # a typo is an error even when every file names its own GPU
        catalog.gpu(gpu)
    if engine is not None:
        choose_engine(catalog, engine, None)
    reader = DeploymentReader(catalog, gpu=gpu, targets=_overrides(target), engine=engine)
    outcome, checked = _check_files(reader, files)
    problems = [problem for found in outcome.values() for problem in found]
    if gpu is not None and not reader.gpu_taken and not problems:
        raise InputError(f"--gpu {gpu}: every file names its own GPU (or bandwidth); none used it")
    if problems and not (fmt is CheckFormat.junit and output is not None):
        raise InputErrors(problems)
    from decodecalc.views.check import check_report, to_junit

    _write(
        ctx,
        fmt,
        output,
        check_report(checked),
        lambda out, to_file: to_junit(checked, out, outcome if to_file else None),
    )
    if problems:
        raise InputErrors(problems)  # the JUnit report holds them too; the run still failed
    if not all(c.passed for c in checked):
        raise typer.Exit(EXIT_VIOLATION)


CHECK_SUFFIXES = {".json": CheckFormat.json, ".xml": CheckFormat.junit}
"""The format an --output file's name implies when no --format is given (as format_for
does for the other commands, with JUnit's .xml)."""


def check_format(fmt: CheckFormat, as_json: bool, output: str | None) -> CheckFormat:
    """The format written: JSON for --json; a table (the default) written to FILE.json
    or FILE.xml takes the format of the name, as every other report command does."""
    if as_json:
        return CheckFormat.json
    if fmt is not CheckFormat.table or output is None:
        return fmt
    import pathlib

    return CHECK_SUFFIXES.get(pathlib.PurePath(output).suffix.lower(), fmt)


def _measured_only(
    measured: bool,
    model: str | None,
    weights: str | None,
    kv_dtype: str | None,
    tp: int,
    replicas: int | None,
    show: bool,
) -> None:
    """The options that describe benchmark runs, refused without --measured: a deployment
    file names its own model, formats and split."""
    given = [
        flag
        for flag, value in (
            ("-m", model),
            ("-w", weights),
            ("-k", kv_dtype),
            ("--tp", tp != 1 or None),
            ("--replicas", replicas),
            ("--show-points", show or None),
        )
        if value is not None
    ]
    if given and not measured:
        raise InputError(
            f"{', '.join(given)} describe --measured files; deployment files and vLLM configs "
            "name their own (give --measured, or put them in the file)"
        )


def _check_measured(
    ctx: typer.Context,
    files: list[str],
    given: "Given",
    show: bool,
    fmt: CheckFormat,
    output: str | None,
    catalog: "Catalog",
) -> None:
    """Measured results against the expected band: the report in its format (on stdout,
    or in --output with the table on stdout), exit 1 when one lies outside."""
    from decodecalc.checks.measured import check_measured
    from decodecalc.cli.measured import read_files
    from decodecalc.views.check import measured_junit, measured_report

    checks = check_measured(read_files(files, catalog, given, show), catalog, given.engine)
    report = measured_report(checks)
    _write(ctx, fmt, output, report, lambda out, _: measured_junit(checks, out))
    if not all(c.passed for c in checks):
        raise typer.Exit(EXIT_VIOLATION)


def _overrides(target: list[str] | None) -> dict[str, str]:
    """--target NAME=VALUE items as a mapping, each checked for its shape."""
    overrides = {}
    for item in target or ():
        name, sep, value = item.partition("=")
        if not sep or not name.strip() or not value.strip():
            raise InputError(f"--target {item!r}: expected NAME=VALUE, e.g. max_ms_per_token=40")
        overrides[name.strip()] = value.strip()
    return overrides


def _check_files(
    reader: "DeploymentReader", files: list[str]
) -> "tuple[dict[str, list[str]], list[CheckedDeployment]]":
    """Each file's problems (by the name its deployments carry) and every deployment
    checked. A vLLM config that another file of the run points at (vllm_config:) is
    checked through that file, which names its GPU: ``check deploy/*.yaml`` holds both."""
    from decodecalc.checks.run import check_deployment
    from decodecalc.paths import expand_user

    outcome: dict[str, list[str]] = {}
    read: list[tuple[str, list[Deployment]]] = []
    for file in files:
        name = STDIN_NAME if file == STDIN else str(expand_user(file))
        found = outcome.setdefault(name, [])
        try:
            read.append((name, _read(reader, file)))
        except InputErrors as exc:
            found.extend(exc.problems)
        except InputError as exc:
            found.append(str(exc))
    through = {_same(d.serve_config): d.file for _, ds in read for d in ds if d.serve_config}
    checked = []
    for name, deployments in read:
        for deployment in deployments:
            try:
                checked.append(check_deployment(deployment))
            except InputError as exc:
                outcome[name].append(str(exc))
    for name, found in outcome.items():
        if found and _same(name) in through and all(NO_GPU in problem for problem in found):
            found.clear()
            note(f"{name}: checked through {through[_same(name)]}, which names its GPU")
    return outcome, checked


NO_GPU = "vLLM configs take --gpu"
"""What a vLLM config read alone without --gpu is told (checks/deployments.py)."""


def _same(path: str) -> str:
    """One spelling of a path, so that a file given and a file pointed at compare equal."""
    import os

    return os.path.realpath(path)


def _write(
    ctx: typer.Context,
    fmt: CheckFormat,
    output: str | None,
    report: "Report",
    junit: "Callable[[IO[str], bool], None]",
) -> None:
    """The report in its format on stdout, or in --output with the table on stdout;
    ``junit(stream, to_file)`` writes the JUnit form of the same results. The notes go
    to stderr in every format (docs/json.md), JUnit and --output included."""
    from decodecalc.views.render import RENDERERS

    if output is None and fmt is CheckFormat.junit:
        junit(sys.stdout, False)
    elif output is None:
        RENDERERS[fmt.value](report, sys.stdout, False)
    else:
        with output_stream(destination(ctx)) as out:
            if fmt is CheckFormat.junit:
                junit(out, True)
            else:
                RENDERERS[fmt.value](report, out, False)
        RENDERERS["table"](report, sys.stdout, False)
    say_notes(report)


STDIN = "-"
STDIN_NAME = "<stdin>"


def _read(reader: "DeploymentReader", file: str) -> "list[Deployment]":
    """The deployments of a file, or of standard input for '-'."""
    from decodecalc.loading.datafile import is_file
    from decodecalc.paths import expand_user

    if file == STDIN:
        return reader.read_text(_stdin_text(), STDIN_NAME)
    path = expand_user(file)
    if not is_file(path):
        raise InputError(f"{file}: no such file")
    try:
        return reader.read(path)
    except InputErrors:
        if _model_config(path):  # one line, not one per config key
            raise InputError(
                f"{file}: a model's config.json (it has architectures or model_type), not a "
                f"deployment file: give it to -m, e.g. decodecalc estimate -m {file} -g GPU, "
                f"or name it in a deployment's model: key"
            ) from None
        raise


MODEL_CONFIG_KEYS = ("architectures", "model_type")
"""Keys every Hugging Face config.json has and no deployment file may."""


def _model_config(path: "Path") -> bool:
    """Whether a file that failed as a deployment is a model's config.json."""
    from decodecalc.loading.datafile import read_yaml

    try:
        data = read_yaml(path, keep_duplicates=True).data
    except InputError:
        return False
    return isinstance(data, dict) and any(key in data for key in MODEL_CONFIG_KEYS)


def _stdin_text() -> str:
    """Standard input, held to a file's limits: UTF-8 text of at most MAX_FILE_BYTES."""
    from decodecalc.loading.datafile import MAX_FILE_BYTES

    data = sys.stdin.buffer.read(MAX_FILE_BYTES + 1)
    if len(data) > MAX_FILE_BYTES:
        raise InputError(f"{STDIN_NAME}: more than the limit of {MAX_FILE_BYTES:,} bytes")
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        raise InputError(f"{STDIN_NAME}: not a UTF-8 text") from None


@app.command()
def schema(ctx: typer.Context, output: OutputOpt = None, force: ForceOpt = False) -> None:
    """Print the JSON Schema of deployment files (what 'decodecalc check' reads)."""
    import json

    from decodecalc.checks.schema import deployment_schema

    with output_stream(destination(ctx)) as out:
        out.write(json.dumps(deployment_schema(), indent=2) + "\n")
