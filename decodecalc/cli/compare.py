"""Commands over many scenarios: a side-by-side comparison, and a streamed sweep."""

import contextlib
import sys
from collections.abc import Callable, Iterator, Sequence
from functools import partial
from typing import TYPE_CHECKING, Annotated, Any

import typer

from decodecalc.cli import (
    ForceOpt,
    Format,
    Output,
    app,
    destination,
    draw,
    load_catalog,
    note,
    options,
    output_file,
    output_options,
    output_stream,
)
from decodecalc.errors import InputError
from decodecalc.record import replace

if TYPE_CHECKING:
    from decodecalc.notes import Note
    from decodecalc.scenarios.scenario import Scenario


@app.command()
@options.scenario_options(axes=True)
@output_options
def compare(
    ctx: typer.Context,
    context: options.ContextOpt = None,
    out: Output = Output(),
    chart: options.ChartOpt = False,
    plot: options.PlotOpt = None,
    page: options.ReportOpt = None,
    **scenario_flags: Any,
) -> None:
    """Scenarios side by side: every combination of the comma lists, at each context.

    Examples:

      decodecalc compare -m llama-3.1-70b -g h100-sxm,h200 -w fp8 -k fp8,bf16 -c 8K,128K --tp 2

      decodecalc compare -m llama-3.1-8b,qwen3-8b,mistral-7b -g l40s -c 64K --chart
    """
    from decodecalc.answers.estimate import estimate as run_estimate
    from decodecalc.answers.sweep import skipped_note, valid_scenarios
    from decodecalc.views.charts import series_of
    from decodecalc.views.compare import compare_report, human_compare, label

    catalog = load_catalog(ctx.params["presets"])
    specs = options.specs_of(ctx)
    models = {str(s.model): catalog.model(str(s.model)) for s in specs}
    contexts = options.contexts_for(
        context, min(models.values(), key=lambda m: m.max_context_tokens)
    )
    _check_size(len(specs), len(contexts))
    # One row per deployment: a GPU or format named twice through an alias (-g
    # h100,h100-sxm) resolves to one scenario, as a repeated name does.
    scenarios, skipped = valid_scenarios(
        [replace(s, model=models[str(s.model)]) for s in specs], catalog
    )
    estimates = [run_estimate(s, contexts) for s in dict.fromkeys(scenarios)]
    notes = (skipped_note(skipped),) if skipped else ()
    if page:
        from decodecalc.cli.report import compare_page

        compare_page(ctx, page, estimates, contexts, notes)
    report = compare_report(estimates, contexts, notes)
    if out.format in (Format.table, Format.markdown):
        report = human_compare(report, [e.scenario for e in estimates])
    out.emit(report)
    series = [series_of(label(e.scenario), e) for e in estimates]
    draw(series, chart, destination(ctx, "plot"), data=out.data)


def _check_size(scenarios: int, contexts: int) -> None:
    """A comparison is read by a person: past these sizes it is a sweep's job (streamed,
    flat memory), and refused before any estimate is made."""
    if scenarios > MAX_COMPARED:
        raise InputError(f"{scenarios} scenarios; compare shows at most {MAX_COMPARED} (try sweep)")
    if scenarios * contexts > MAX_COMPARED_ROWS:
        raise InputError(
            f"{scenarios} scenarios x {contexts:,} contexts = {scenarios * contexts:,} rows; "
            f"compare shows at most {MAX_COMPARED_ROWS:,} (fewer contexts, or try sweep)"
        )


MAX_COMPARED = 64
MAX_COMPARED_ROWS = 10_000


@app.command()
@options.scenario_options(axes=True)
def sweep(
    ctx: typer.Context,
    context: Annotated[
        str, typer.Option("--context", "-c", help="Contexts, as for estimate.", metavar="SPEC")
    ],
    fmt: Annotated[
        str | None,
        typer.Option(
            "--format",
            "-f",
            help="csv or jsonl (JSON Lines: one object a line; json is taken as jsonl). "
            "Default: from the --output name (FILE.jsonl, FILE.json), else csv.",
            metavar="csv|jsonl",
        ),
    ] = None,
    as_json: Annotated[
        bool, typer.Option("--json", help="Shortcut for --format jsonl (a stream of rows).")
    ] = False,
    output: Annotated[str | None, output_file("Write here (a progress bar shows).")] = None,
    force: ForceOpt = False,
    **scenario_flags: Any,
) -> None:
    """Stream one row per combination of every axis and context, for pandas or a spreadsheet.

    Rows stream as they are computed: a grid of millions keeps memory flat. Combinations
    of valid values that are no valid deployment (a TP that does not split the heads) are
    skipped and counted on stderr; a bad value, or a grid with no valid combination, is an
    error.

    Example: decodecalc sweep -m llama-3.1-8b,llama-3.1-70b -g h100,h200 -w bf16,fp8
    --batch 1,8,64 -c 1K..128K > grid.csv
    """
    from decodecalc.answers.sweep import MAX_SWEEP_ROWS, Misfits, skipped_note, sweep_scenarios
    from decodecalc.context import parse_context
    from decodecalc.engine.select import choose_engine
    from decodecalc.notes import many_notes
    from decodecalc.resolving.resolve import check_values, price_lists
    from decodecalc.views.compare import CSV_FITS, label, write_sweep_csv, write_sweep_jsonl

    fmt = _sweep_format(fmt, as_json, output)
    specs = options.specs_of(ctx)
    if specs[0].gpu is None and specs[0].bandwidth is None:
        raise InputError("give --gpu with one or more GPU presets, or --bandwidth")
    contexts = parse_context(context)
    size = len(specs) * len(contexts)
    if size > MAX_SWEEP_ROWS:
        raise InputError(
            f"the grid has {size:,} rows; at most {MAX_SWEEP_ROWS:,} are allowed (fewer values)"
        )
    catalog = load_catalog(ctx.params["presets"])
    for spec in specs:  # bad values and unknown names fail before any row is written
        check_values(spec, catalog)
        for name in ("model", "gpu", "weights", "kv_dtype", "v_dtype", "engine", "price"):
            value = getattr(spec, name)
            if isinstance(value, str):
                lookups: dict[str, Callable[[str], object]] = {
                    "model": catalog.model,
                    "gpu": catalog.gpu,
                    "weights": catalog.weights,
                    "kv_dtype": catalog.dtype,
                    "v_dtype": catalog.dtype,
                    "engine": partial(choose_engine, catalog, gpu=None),
                    "price": partial(price_lists, catalog),
                }
                lookups[name](value)

    import gc
    import itertools

    gc.enable()  # a sweep streams without bound; the console script starts with it off
    skipped: list[str] = []
    notes: list[tuple[Scenario, Sequence[Note]]] = []
    labels = CSV_FITS if fmt == "csv" else None
    misfits = Misfits()
    scenarios = sweep_scenarios(specs, contexts, catalog, skipped, notes, labels, misfits)
    head = next(scenarios, None)  # before the header: a grid of no deployment is an error
    if head is None:
        raise InputError(f"no combination is a valid deployment; the first: {skipped[0]}")
    scenarios = itertools.chain([head], scenarios)
    write = write_sweep_csv if fmt == "csv" else write_sweep_jsonl
    if output is None:
        write(scenarios, sys.stdout)
    else:
        with output_stream(destination(ctx)) as out, _progress(size) as bar:
            write(scenarios, out, bar)
    for item in many_notes((label(scenario), found) for scenario, found in notes):
        note(item.message)
    if (misfit := misfits.note(label)) is not None:
        note(misfit.message)
    if skipped:
        note(skipped_note(skipped).message)


def _sweep_format(fmt: str | None, as_json: bool, output: str | None) -> str:
    """csv or jsonl: a sweep streams rows, so JSON is JSON Lines (one object a line),
    which is what --json and -f json give, as they give JSON on every other command."""
    if as_json:
        fmt = fmt or "jsonl"
    elif fmt is None:
        suffix = "" if output is None else output.rsplit(".", 1)[-1].lower()
        fmt = "jsonl" if suffix in ("json", "jsonl") else "csv"
    fmt = "jsonl" if fmt == "json" else fmt
    if fmt not in ("csv", "jsonl") or (as_json and fmt != "jsonl"):
        raise InputError(f"--format {fmt!r}: sweep writes csv or jsonl (--json: jsonl)")
    return fmt


@contextlib.contextmanager
def _progress(total: int) -> Iterator[Callable[[int], None] | None]:
    """A progress bar on stderr for large grids written to a file (None for small ones)."""
    if total < PROGRESS_ROWS:
        yield None
        return
    import time

    from rich.console import Console
    from rich.progress import Progress

    # No refresh thread (it would contend with the rows for the interpreter), and at most
    # ten redraws a second.
    with Progress(console=Console(stderr=True), transient=True, auto_refresh=False) as bar:
        task = bar.add_task("sweep", total=total)
        last = [0.0]

        def advance(done: int) -> None:
            now = time.monotonic()
            if now - last[0] >= 0.1:
                last[0] = now
                bar.update(task, completed=done, refresh=True)

        yield advance


PROGRESS_ROWS = 100_000
