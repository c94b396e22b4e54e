"""The estimate command: one scenario's decode latency across contexts, with the crossover.

generate and explain, about one scenario too, live in modules of their own: a run builds
only its own command's options, and declaring theirs cost every estimate a share of its
start-up."""

from typing import Annotated, Any

import typer

from decodecalc.cli import Format, Output, app, destination, draw, output_options
from decodecalc.cli.options import (
    ChartOpt,
    ContextOpt,
    PlotOpt,
    ReportOpt,
    contexts_for,
    scenario_of,
    scenario_options,
)


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
