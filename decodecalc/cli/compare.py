"""Commands over many scenarios: a side-by-side comparison, and a streamed sweep."""

import contextlib
import itertools
import math
import sys
from collections.abc import Callable, Iterator
from typing import Annotated, Any

import typer

from decodecalc.cli import (
    Format,
    FormatOpt,
    JsonOpt,
    PresetsOpt,
    app,
    draw,
    emit,
    load_catalog,
    note,
)
from decodecalc.cli.options import (
    BandwidthOpt,
    ChartOpt,
    ContextOpt,
    EfficiencyOpt,
    LinkOpt,
    MemoryUtilizationOpt,
    OverheadOpt,
    PlotOpt,
    contexts_for,
)
from decodecalc.errors import InputError

ModelsOpt = Annotated[
    str,
    typer.Option("--model", "-m", help="One or more models, comma-separated.", metavar="MODELS"),
]
GpusOpt = Annotated[
    str | None,
    typer.Option("--gpu", "-g", help="One or more GPU presets.", metavar="GPUS"),
]
WeightsListOpt = Annotated[
    str, typer.Option("--weights", "-w", help="One or more weight dtypes.", metavar="DTYPES")
]
BatchListOpt = Annotated[
    str, typer.Option("--batch", help="One or more batch sizes, e.g. 1,8,64.", metavar="LIST")
]
TpListOpt = Annotated[
    str, typer.Option("--tp", help="One or more TP sizes, e.g. 1,2,4,8.", metavar="LIST")
]
"""The axes compare and sweep take as comma lists."""


def split_list(text: str, what: str) -> list[str]:
    values = [v.strip() for v in text.split(",")]
    if not all(values):
        raise InputError(f"{what} {text!r} has an empty value between commas")
    return list(dict.fromkeys(values))


def int_list(text: str, what: str) -> list[int]:
    try:
        return [int(v) for v in split_list(text, what)]
    except ValueError:
        raise InputError(f"{what} {text!r}: expected whole numbers separated by commas") from None


@app.command()
def compare(
    model: ModelsOpt,
    gpu: GpusOpt = None,
    bandwidth: BandwidthOpt = None,
    weights: WeightsListOpt = "bf16",
    kv_dtype: Annotated[
        str | None,
        typer.Option("--kv-dtype", "-k", help="One or more KV dtypes.", metavar="DTYPES"),
    ] = None,
    context: ContextOpt = None,
    batch: BatchListOpt = "1",
    tp: TpListOpt = "1",
    efficiency: EfficiencyOpt = "1",
    memory_utilization: MemoryUtilizationOpt = 0.9,
    overhead: OverheadOpt = None,
    link: LinkOpt = None,
    fmt: FormatOpt = Format.table,
    as_json: JsonOpt = False,
    chart: ChartOpt = False,
    plot: PlotOpt = None,
    presets: PresetsOpt = None,
) -> None:
    """Scenarios side by side: every combination of the comma lists, at each context.

    Examples:

      decodecalc compare -m llama-3.1-70b -g h100-sxm,h200 -w fp8 -k fp8,bf16 -c 8K,128K

      decodecalc compare -m llama-3.1-8b,qwen3-8b,mistral-7b -g l40s -c 64K --chart
    """
    from decodecalc.physics.estimator import estimate as run_estimate
    from decodecalc.views.charts import series_of
    from decodecalc.views.compare import compare_report, label

    catalog = load_catalog(presets)
    models = [catalog.model(m) for m in split_list(model, "--model")]
    gpus: list[str | None] = list(split_list(gpu, "--gpu")) if gpu else [None]
    kvs: list[str | None] = list(split_list(kv_dtype, "--kv-dtype")) if kv_dtype else [None]
    contexts = contexts_for(context, min(models, key=lambda m: m.max_context_tokens))
    from decodecalc.scenarios import build_scenario

    axes = (
        models,
        gpus,
        split_list(weights, "--weights"),
        kvs,
        int_list(batch, "--batch"),
        int_list(tp, "--tp"),
    )
    _check_size(math.prod(len(axis) for axis in axes), len(contexts))
    estimates = []
    for m, g, w, k, b, t in itertools.product(*axes):
        scenario = build_scenario(
            catalog,
            m,
            gpu=g,
            bandwidth=bandwidth,
            weights=w,
            kv_dtype=k,
            batch=b,
            tp=t,
            efficiency=efficiency,
            memory_utilization=memory_utilization,
            overhead=overhead,
            link=link,
            link_bandwidth=None,
        )
        estimates.append(run_estimate(scenario, contexts))
    emit(compare_report(estimates, contexts), fmt, as_json)
    draw([series_of(label(e), e) for e in estimates], chart, plot)


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
def sweep(
    model: ModelsOpt,
    context: Annotated[
        str, typer.Option("--context", "-c", help="Contexts, as for estimate.", metavar="SPEC")
    ],
    gpu: GpusOpt = None,
    weights: WeightsListOpt = "bf16",
    kv_dtype: Annotated[
        str, typer.Option("--kv-dtype", "-k", help="One or more KV dtypes.", metavar="DTYPES")
    ] = "bf16",
    batch: BatchListOpt = "1",
    tp: TpListOpt = "1",
    efficiency: EfficiencyOpt = "1",
    fmt: Annotated[
        str,
        typer.Option(
            "--format",
            "-f",
            help="csv or jsonl (JSON Lines: one object a line).",
            metavar="csv|jsonl",
        ),
    ] = "csv",
    output: Annotated[
        str | None,
        typer.Option("--output", "-o", help="Write here (a progress bar shows).", metavar="FILE"),
    ] = None,
    presets: PresetsOpt = None,
) -> None:
    """Stream one row per combination of every axis and context, for pandas or a spreadsheet.

    Rows stream as they are computed: a grid of millions keeps memory flat. Combinations
    that are no valid deployment (a TP that does not split the heads) are skipped and
    counted on stderr.

    Example: decodecalc sweep -m llama-3.1-8b,llama-3.1-70b -g h100,h200 -w bf16,fp8
    --batch 1,8,64 -c 1K..128K > grid.csv
    """
    from decodecalc.context import parse_context
    from decodecalc.physics.sweep import Axis, grid_size
    from decodecalc.physics.sweep import sweep as run_sweep
    from decodecalc.scenarios import build_scenario
    from decodecalc.views.compare import CSV_FITS, write_sweep_csv, write_sweep_jsonl

    if fmt not in ("csv", "jsonl"):
        raise InputError(f"--format {fmt!r}: sweep writes csv or jsonl")
    catalog = load_catalog(presets)
    if gpu is None:
        raise InputError("give --gpu with one or more GPU presets")
    axes = [
        Axis("model", tuple(split_list(model, "--model"))),
        Axis("gpu", tuple(split_list(gpu, "--gpu"))),
        Axis("weights", tuple(split_list(weights, "--weights"))),
        Axis("kv_dtype", tuple(split_list(kv_dtype, "--kv-dtype"))),
        Axis("batch", tuple(str(b) for b in int_list(batch, "--batch"))),
        Axis("tp", tuple(str(t) for t in int_list(tp, "--tp"))),
    ]
    for name in ("model", "gpu", "weights", "kv_dtype"):
        lookup = {"model": catalog.model, "gpu": catalog.gpu}.get(name, catalog.dtype)
        for value in next(a for a in axes if a.name == name).values:
            lookup(value)  # unknown names fail before any row is written
    contexts = parse_context(context)

    def build(combo: dict[str, str]) -> Any:
        return build_scenario(
            catalog,
            catalog.model(combo["model"]),
            gpu=combo["gpu"],
            bandwidth=None,
            weights=combo["weights"],
            kv_dtype=combo["kv_dtype"],
            batch=int(combo["batch"]),
            tp=int(combo["tp"]),
            efficiency=efficiency,
            memory_utilization=0.9,
            overhead=None,
            link=None,
            link_bandwidth=None,
        )

    import gc

    gc.enable()  # a sweep streams without bound; the console script starts with it off
    skipped: list[str] = []
    size = grid_size(axes, contexts)
    labels = CSV_FITS if fmt == "csv" else None
    scenarios = run_sweep(axes, contexts, build, skipped, labels)
    write = write_sweep_csv if fmt == "csv" else write_sweep_jsonl
    names = [a.name for a in axes]
    if output is None:
        write(names, scenarios, sys.stdout)
    else:
        try:
            with open(output, "w", encoding="utf-8", newline="") as out, _progress(size) as bar:
                write(names, scenarios, out, bar)
        except OSError as exc:
            raise InputError(f"cannot write {output!r}: {exc.strerror or exc}") from None
    if skipped:
        first = skipped[0]
        note(f"skipped {len(skipped)} combinations that are no valid deployment; first: {first}")


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
