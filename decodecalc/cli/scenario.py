"""Commands about one scenario: its latency across contexts, a whole answer, one step
worked through."""

from enum import Enum
from typing import Annotated, Any

import typer

from decodecalc.cli import (
    ForceOpt,
    Format,
    JsonOpt,
    Output,
    OutputOpt,
    app,
    destination,
    draw,
    emit,
    note,
    output_options,
    output_stream,
)
from decodecalc.cli.options import (
    ChartOpt,
    ContextOpt,
    PlotOpt,
    ReportOpt,
    contexts_for,
    refuse_unused,
    scenario_of,
    scenario_options,
)
from decodecalc.errors import InputError


@app.command()
@scenario_options()
@output_options
def estimate(
    ctx: typer.Context,
    context: ContextOpt = None,
    crossover_row: Annotated[
        bool,
        typer.Option(
            "--crossover-row/--no-crossover-row",
            help="Add a row at the crossover context when it falls inside the range "
            "(JSON marks it with crossover: true).",
        ),
    ] = True,
    out: Output = Output(),
    exact: Annotated[
        bool, typer.Option("--exact", help="Tables show exact bytes and more digits.")
    ] = False,
    chart: ChartOpt = False,
    plot: PlotOpt = None,
    page: ReportOpt = None,
    **scenario_flags: Any,
) -> None:
    """Per-token decode latency across a range of contexts, with the crossover point.

    Examples:

      decodecalc estimate -m llama-3.1-70b -g h100-sxm -w fp8 -k fp8 -c 1K..256K

      decodecalc estimate -m qwen2.5-7b -b 1TB/s -c 8K,32K,128K --batch 16 --json
    """
    from decodecalc.answers.estimate import estimate as run_estimate
    from decodecalc.views.estimate import estimate_report, human_view

    scenario = scenario_of(ctx)
    contexts = contexts_for(context, scenario.model)
    result = run_estimate(scenario, contexts, crossover_row)
    report = estimate_report(result)
    if out.format in (Format.table, Format.markdown):
        report = human_view(report, scenario.batch)
    if page:
        from decodecalc.cli.report import estimate_page

        estimate_page(ctx, page, result)
    out.emit(report, exact)
    if chart or plot:
        from decodecalc.views.charts import series_of

        series = [series_of(scenario.model.id, result)]
        draw(series, chart, destination(ctx, "plot"), data=out.data)


@app.command()
@scenario_options()
@output_options
def generate(
    ctx: typer.Context,
    prompt: Annotated[
        str, typer.Option("--prompt", "-p", help="Prompt tokens, e.g. 2K.", metavar="TOKENS")
    ],
    tokens: Annotated[
        str, typer.Option("--tokens", "-n", help="Tokens to generate, e.g. 512.", metavar="TOKENS")
    ],
    out: Output = Output(),
    **scenario_flags: Any,
) -> None:
    """How long a whole answer takes: prefill (time to first token) and N - 1 decode steps.

    The prefill yields the first token; decode step i (1 .. N-1) reads a cache of P + i
    tokens, the steps summed exactly. The roofline prefill is max(compute, memory) plus
    communication; an engine's is serving's TTFT at concurrency 1 (its prefill efficiency
    and per-request cost).

    Example: decodecalc generate -m llama-3.1-8b -g h100 --prompt 8K --tokens 1K
    """
    from decodecalc.answers.generate import generate as run_generate
    from decodecalc.context import MAX_CONTEXT_TOKENS, parse_tokens
    from decodecalc.views.generation import generation_report, generation_rows

    refuse_unused(
        ctx,
        {
            "memory_utilization": "an answer's time does not depend on the memory left "
            "(estimate says what fits)",
            "price": "it times one answer (estimate and serving price tokens)",
            "power": "it times one answer (estimate gives energy per token)",
        },
    )
    scenario = scenario_of(ctx)
    prompt_tokens = parse_tokens(prompt, "--prompt")
    new_tokens = parse_tokens(tokens, "--tokens")
    final = prompt_tokens + new_tokens
    if final > MAX_CONTEXT_TOKENS:
        raise InputError(
            f"--prompt {prompt} plus --tokens {tokens} reach a context of {final:,} tokens; "
            f"the limit is {MAX_CONTEXT_TOKENS:,}"
        )
    report = generation_report(run_generate(scenario, prompt_tokens, new_tokens))
    if out.format is Format.csv:
        report = generation_rows(report)
    out.emit(report)


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
