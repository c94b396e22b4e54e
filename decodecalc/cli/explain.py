"""The explain command: one decode step worked through, with the numbers substituted."""

from enum import Enum
from typing import Annotated, Any

import typer

from decodecalc.cli import (
    ForceOpt,
    Format,
    JsonOpt,
    OutputOpt,
    app,
    destination,
    emit,
    note,
    output_stream,
)
from decodecalc.cli.options import refuse_unused, scenario_of, scenario_options


class ExplainFormat(str, Enum):
    text = "text"
    json = "json"


@app.command()
@scenario_options()
def explain(
    ctx: typer.Context,
    context: Annotated[
        str,
        typer.Option(
            "--context", "-c", help="The context to work through, e.g. 32K.", metavar="TOKENS"
        ),
    ] = "8K",
    fmt: Annotated[
        ExplainFormat,
        typer.Option(
            "--format",
            "-f",
            help="The worked text, or JSON: the estimate at this context with the text's "
            "lines under 'explanation'.",
        ),
    ] = ExplainFormat.text,
    as_json: JsonOpt = False,
    output: OutputOpt = None,
    force: ForceOpt = False,
    **scenario_flags: Any,
) -> None:
    """Work one decode step through, step by step, with the numbers substituted.

    Example: decodecalc explain -m llama-3.1-70b -g h100 -w fp8 -k fp8 -c 200000
    """
    from decodecalc.answers.explain import explain
    from decodecalc.context import parse_tokens
    from decodecalc.views.explain import explain_report

    refuse_unused(
        ctx,
        {"memory_utilization": "it works one step's bytes through (estimate says what fits)"},
    )
    scenario = scenario_of(ctx)
    report = explain_report(explain(scenario, parse_tokens(context)))
    if as_json or fmt is ExplainFormat.json:
        emit(report, Format.json, True, False, destination(ctx))
        return
    from decodecalc.views.render import write_lines

    with output_stream(destination(ctx)) as out:
        write_lines([*report.title, *report.footer], out)
    for item in report.document["notes"]:
        note(item["message"])
