"""The check command (deployment files against their targets) and the schema of those files."""

import sys
from enum import Enum
from typing import TYPE_CHECKING, Annotated, Any

import typer

from decodecalc.cli import (
    EXIT_VIOLATION,
    Format,
    OutputOpt,
    PresetsOpt,
    app,
    emit,
    load_catalog,
    output_stream,
)
from decodecalc.errors import InputError, InputErrors

if TYPE_CHECKING:
    from decodecalc.views.report import Report


class CheckFormat(str, Enum):
    table = "table"
    json = "json"
    junit = "junit"


@app.command()
def check(
    files: Annotated[
        list[str], typer.Argument(help="Deployment files or vLLM serve configs.", metavar="FILE...")
    ],
    fmt: Annotated[
        CheckFormat,
        typer.Option("--format", "-f", help="A table, a JSON report, or JUnit XML for CI."),
    ] = CheckFormat.table,
    output: Annotated[
        str | None,
        typer.Option(
            "--output",
            "-o",
            help="Write the report here; the table still goes to stdout.",
            metavar="FILE",
        ),
    ] = None,
    gpu: Annotated[
        str | None,
        typer.Option(
            "--gpu", "-g", help="GPU for deployments that name none (vLLM configs).", metavar="GPU"
        ),
    ] = None,
    target: Annotated[
        list[str] | None,
        typer.Option(
            "--target",
            "-t",
            help="A target for every deployment, e.g. max_ms_per_token=40 (repeatable).",
            metavar="NAME=VALUE",
        ),
    ] = None,
    presets: PresetsOpt = None,
) -> None:
    """Check deployment files against their latency, throughput and memory targets.

    Exit 0 when every target is met, 1 when any is missed, 2 when a file is invalid (every
    problem in it is listed, with file:line:column). 'decodecalc schema' prints the format.

    Examples:

      decodecalc check deploy/*.yaml

      decodecalc check serve.yaml --gpu h100-sxm -t max_ms_per_token=40 -f junit -o report.xml
    """
    from decodecalc.checks.deployments import DeploymentReader
    from decodecalc.checks.run import run_checks
    from decodecalc.loading.datafile import is_file
    from decodecalc.paths import expand_user
    from decodecalc.views.check import check_report, to_junit

    overrides = {}
    for item in target or ():
        name, sep, value = item.partition("=")
        if not sep or not name.strip() or not value.strip():
            raise InputError(f"--target {item!r}: expected NAME=VALUE, e.g. max_ms_per_token=40")
        overrides[name.strip()] = value.strip()
    reader = DeploymentReader(load_catalog(presets), gpu=gpu, targets=overrides)
    problems: list[str] = []
    deployments = []
    for file in files:
        path = expand_user(file)
        if not is_file(path):
            problems.append(f"{file}: no such file")
            continue
        try:
            deployments.extend(reader.read(path))
        except InputErrors as exc:
            problems.extend(exc.problems)
        except InputError as exc:
            problems.append(str(exc))
    if problems:
        raise InputErrors(problems)
    checked = run_checks(deployments)
    report = check_report(checked)
    if output is not None:
        _write_report(checked, report, fmt, expand_user(output))
        from decodecalc.views.render import to_table

        to_table(report, sys.stdout)
    elif fmt is CheckFormat.junit:
        to_junit(checked, sys.stdout)
    else:
        emit(report, Format(fmt.value), False)
    if not all(c.passed for c in checked):
        raise typer.Exit(EXIT_VIOLATION)


def _write_report(checked: Any, report: "Report", fmt: CheckFormat, path: Any) -> None:
    from decodecalc.views.check import to_junit
    from decodecalc.views.render import RENDERERS

    try:
        with open(path, "w", encoding="utf-8") as out:
            if fmt is CheckFormat.junit:
                to_junit(checked, out)
            else:
                RENDERERS[fmt.value](report, out, False)
    except OSError as exc:
        raise InputError(f"cannot write {str(path)!r}: {exc.strerror or exc}") from None


@app.command()
def schema(output: OutputOpt = None) -> None:
    """Print the JSON Schema of deployment files (what 'decodecalc check' reads)."""
    from importlib.resources import files

    with output_stream(output) as out:
        out.write(files("decodecalc.checks").joinpath("deployment.schema.json").read_text("utf-8"))
