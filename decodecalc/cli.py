"""The command line: parse options, load presets, call the core, hand the result to a renderer.

Every user error is an InputError (or a Click usage error) and becomes exactly one line on
stderr and exit code 2, here and nowhere else.
"""

import contextlib
import itertools
import os
import sys
from collections.abc import Callable, Iterator
from enum import Enum
from typing import TYPE_CHECKING, Annotated, Any, TypeVar

import typer

from decodecalc import __version__
from decodecalc.errors import InputError, InputErrors

if TYPE_CHECKING:
    from decodecalc.catalog import Catalog
    from decodecalc.report import Report

EXIT_OK = 0
EXIT_VIOLATION = 1
EXIT_USAGE = 2

app = typer.Typer(
    name="decodecalc",
    help="How fast will this model decode on this hardware, and where does the KV cache take over?",
    no_args_is_help=True,
    add_completion=True,
    pretty_exceptions_enable=False,
    # Click's plain help: Rich's boxed help costs 150 ms of start-up for every --help.
    rich_markup_mode=None,
)


class Format(str, Enum):
    table = "table"
    json = "json"
    csv = "csv"
    markdown = "markdown"


FormatOpt = Annotated[
    Format,
    typer.Option("--format", "-f", help="Output: a table, JSON (versioned), CSV or Markdown."),
]
JsonOpt = Annotated[bool, typer.Option("--json", help="Shortcut for --format json.")]
PresetsOpt = Annotated[
    list[str] | None,
    typer.Option(
        "--presets",
        help="A directory of your own presets (models/, gpus/, dtypes/ inside); "
        "may repeat. Also read from $DECODECALC_PRESETS.",
        metavar="DIR",
    ),
]

F = TypeVar("F", bound=Callable[..., Any])


def _emit(report: "Report", fmt: Format, as_json: bool, exact: bool = False) -> None:
    from decodecalc.render import RENDERERS

    RENDERERS["json" if as_json else fmt.value](report, sys.stdout, exact)


def _catalog(presets: list[str] | None) -> "Catalog":
    from decodecalc.catalog import Catalog

    return Catalog.with_user_dirs(presets or ())


def _version(value: bool) -> None:
    if value:
        typer.echo(f"decodecalc {__version__}")
        raise typer.Exit()


@app.callback()
def _root(
    version: Annotated[
        bool,
        typer.Option(
            "--version", callback=_version, is_eager=True, help="Print the version and exit."
        ),
    ] = False,
) -> None:
    """Decode speed from first principles: (weight bytes + KV bytes) / bandwidth.

    Each decode step streams the weights (constant) and the KV cache (growing with the
    context) from memory; past the crossover context the KV cache costs more than the weights.
    """


def _completer(kind: str) -> Callable[[str], list[str]]:
    """Shell completion of preset ids ('decodecalc --install-completion' sets it up)."""

    def complete(incomplete: str) -> list[str]:
        from decodecalc.catalog import Catalog

        return [i for i in Catalog().ids(kind) if i.startswith(incomplete.lower())]

    return complete


ModelOpt = Annotated[
    str,
    typer.Option(
        "--model",
        "-m",
        help="Model preset or alias, a model YAML file, or a config.json.",
        autocompletion=_completer("models"),
    ),
]
GpuOpt = Annotated[
    str | None,
    typer.Option(
        "--gpu", "-g", help="GPU preset (sets bandwidth).", autocompletion=_completer("gpus")
    ),
]
BandwidthOpt = Annotated[
    str | None,
    typer.Option(
        "--bandwidth",
        "-b",
        help="Memory bandwidth, e.g. 3.35TB/s, 819GB/s, 1.5TiB/s; overrides --gpu.",
    ),
]
WeightsOpt = Annotated[
    str,
    typer.Option(
        "--weights",
        "-w",
        help="Weight dtype (see 'decodecalc dtypes').",
        autocompletion=_completer("dtypes"),
    ),
]
KvOpt = Annotated[
    str | None,
    typer.Option(
        "--kv-dtype",
        "-k",
        help="KV-cache dtype. Default: the weight dtype if it is FP32/FP16/BF16, else BF16.",
    ),
]
BatchOpt = Annotated[int, typer.Option("--batch", help="Concurrent sequences per step.")]
TpOpt = Annotated[int, typer.Option("--tp", help="Tensor-parallel GPUs; figures are per GPU.")]
EfficiencyOpt = Annotated[
    str,
    typer.Option(
        "--efficiency",
        "-e",
        help="Fraction of peak bandwidth reached, in (0, 1] (1 is the roofline); 'sustained' "
        "(the GPU's measured bandwidth) or 'calibrated' (from 'decodecalc calibrate --save').",
    ),
]
MemoryUtilizationOpt = Annotated[
    float,
    typer.Option(
        "--memory-utilization",
        help="Share of GPU memory for weights and cache, like vLLM's gpu_memory_utilization.",
    ),
]
OverheadOpt = Annotated[
    str | None,
    typer.Option(
        "--overhead", help="Fixed time added to every step, e.g. 0.3ms (default 0, or calibrated)."
    ),
]
LinkOpt = Annotated[
    str | None,
    typer.Option(
        "--link",
        help="Interconnect for TP all-reduces (default: the GPU's; 'none' leaves them out).",
    ),
]
LinkBandwidthOpt = Annotated[
    str | None,
    typer.Option("--link-bandwidth", help="Override the link's bandwidth, e.g. 450GB/s."),
]
ContextOpt = Annotated[
    str | None,
    typer.Option(
        "--context",
        "-c",
        help="Contexts in tokens: 32K (binary) or 32k (decimal), a list 1K,8K,32K, a doubling "
        "range 1K..256K, a step range 0..128K:16K, or a factor range 1K..1M:x4. "
        "Default: 1K doubling to the model's maximum context.",
    ),
]


ChartOpt = Annotated[
    bool, typer.Option("--chart", help="Draw latency against context in the terminal.")
]
PlotOpt = Annotated[
    str | None,
    typer.Option(
        "--plot", help="Write the chart to FILE.svg or FILE.png (needs decodecalc[plot])."
    ),
]


SCENARIO_FLAGS = (
    "gpu",
    "bandwidth",
    "weights",
    "kv_dtype",
    "batch",
    "tp",
    "efficiency",
    "memory_utilization",
    "overhead",
    "link",
    "link_bandwidth",
)


def _scenario(ctx: typer.Context) -> Any:
    """The scenario a command's flags describe (estimate, generate and explain share them)."""
    from decodecalc.scenarios import build_scenario

    params = ctx.params
    catalog = _catalog(params.get("presets"))
    flags = {name: params[name] for name in SCENARIO_FLAGS}
    return build_scenario(catalog, catalog.model(params["model"]), **flags)


@app.command()
def estimate(
    ctx: typer.Context,
    model: ModelOpt,
    gpu: GpuOpt = None,
    bandwidth: BandwidthOpt = None,
    weights: WeightsOpt = "bf16",
    kv_dtype: KvOpt = None,
    context: ContextOpt = None,
    batch: BatchOpt = 1,
    tp: TpOpt = 1,
    efficiency: EfficiencyOpt = "1",
    memory_utilization: MemoryUtilizationOpt = 0.9,
    overhead: OverheadOpt = None,
    link: LinkOpt = None,
    link_bandwidth: LinkBandwidthOpt = None,
    fmt: FormatOpt = Format.table,
    as_json: JsonOpt = False,
    exact: Annotated[
        bool, typer.Option("--exact", help="Tables show exact bytes and more digits.")
    ] = False,
    chart: ChartOpt = False,
    plot: PlotOpt = None,
    presets: PresetsOpt = None,
) -> None:
    """Per-token decode latency across a range of contexts, with the crossover point.

    Examples:

      decodecalc estimate -m llama-3.1-70b -g h100-sxm -w fp8 -k fp8 -c 1K..256K

      decodecalc estimate -m qwen2.5-7b -b 1TB/s -c 8K,32K,128K --batch 16 --json
    """
    from decodecalc.estimator import estimate as run_estimate
    from decodecalc.views import estimate_report, human_view

    scenario = _scenario(ctx)
    contexts = _contexts(context, scenario.model)
    result = run_estimate(scenario, contexts)
    report = estimate_report(result)
    if not as_json and fmt in (Format.table, Format.markdown):
        report = human_view(report, batch)
    _emit(report, fmt, as_json, exact)
    if chart or plot:
        from decodecalc.charts import series_of

        _draw([series_of(scenario.model.id, result)], chart, plot)


@app.command()
def generate(
    ctx: typer.Context,
    model: ModelOpt,
    prompt: Annotated[str, typer.Option("--prompt", "-p", help="Prompt tokens, e.g. 2K.")],
    tokens: Annotated[str, typer.Option("--tokens", "-n", help="Tokens to generate, e.g. 512.")],
    gpu: GpuOpt = None,
    bandwidth: BandwidthOpt = None,
    weights: WeightsOpt = "bf16",
    kv_dtype: KvOpt = None,
    batch: BatchOpt = 1,
    tp: TpOpt = 1,
    efficiency: EfficiencyOpt = "1",
    memory_utilization: MemoryUtilizationOpt = 0.9,
    overhead: OverheadOpt = None,
    link: LinkOpt = None,
    link_bandwidth: LinkBandwidthOpt = None,
    fmt: FormatOpt = Format.table,
    as_json: JsonOpt = False,
    presets: PresetsOpt = None,
) -> None:
    """How long a whole answer takes: prefill (time to first token) and N decode steps.

    Step i reads a cache of P + i tokens; the steps are summed exactly. Prefill is
    estimated as compute-bound: its FLOPs over the GPU's peak FLOP/s.

    Example: decodecalc generate -m llama-3.1-8b -g h100 --prompt 8K --tokens 1K
    """
    from decodecalc.context import parse_tokens
    from decodecalc.generation import generate as run_generate
    from decodecalc.generation_view import generation_report

    scenario = _scenario(ctx)
    prompt_tokens, new_tokens = parse_tokens(prompt), parse_tokens(tokens)
    _contexts(str(prompt_tokens + new_tokens), scenario.model)
    _emit(generation_report(run_generate(scenario, prompt_tokens, new_tokens)), fmt, as_json)


@app.command()
def explain(
    ctx: typer.Context,
    model: ModelOpt,
    gpu: GpuOpt = None,
    bandwidth: BandwidthOpt = None,
    weights: WeightsOpt = "bf16",
    kv_dtype: KvOpt = None,
    context: Annotated[
        str, typer.Option("--context", "-c", help="The context to work through, e.g. 32K.")
    ] = "8K",
    batch: BatchOpt = 1,
    tp: TpOpt = 1,
    efficiency: EfficiencyOpt = "1",
    memory_utilization: MemoryUtilizationOpt = 0.9,
    overhead: OverheadOpt = None,
    link: LinkOpt = None,
    link_bandwidth: LinkBandwidthOpt = None,
    presets: PresetsOpt = None,
) -> None:
    """Work one decode step through, step by step, with the numbers substituted.

    Example: decodecalc explain -m llama-3.1-70b -g h100 -w fp8 -k fp8 -c 200000
    """
    from decodecalc.context import parse_tokens
    from decodecalc.estimator import StepModel
    from decodecalc.explain import explain_text

    scenario = _scenario(ctx)
    tokens = parse_tokens(context)
    _contexts(str(tokens), scenario.model)
    sys.stdout.write("\n".join(explain_text(StepModel.of(scenario), tokens)) + "\n")


@app.command()
def calibrate(
    points: Annotated[
        str, typer.Argument(help="A YAML list of measured points.", metavar="POINTS")
    ],
    save: Annotated[
        bool, typer.Option("--save", help="Keep the fit for --efficiency calibrated.")
    ] = False,
    save_to: Annotated[
        str | None, typer.Option("--save-to", help="Keep the fit in this file instead.")
    ] = None,
    fmt: FormatOpt = Format.table,
    as_json: JsonOpt = False,
    presets: PresetsOpt = None,
) -> None:
    """Fit the effective bandwidth fraction and per-step overhead to measured decode speeds.

    Each point: model, gpu, weights, kv_dtype, batch, tp, context (tokens), ms_per_token
    (optional: source, notes, engine, link). Measured = memory time / efficiency +
    overhead + communication, fitted by least squares.

    Example: decodecalc calibrate my-measurements.yaml --save
    """
    from pathlib import Path

    from decodecalc.calibration_view import calibration_report
    from decodecalc.datafile import is_file
    from decodecalc.fitfile import save_calibration
    from decodecalc.fitting import calibrate as run_calibrate
    from decodecalc.points import read_points

    path = Path(points)
    if not is_file(path):
        raise InputError(f"points file {points!r} does not exist")
    result = run_calibrate(read_points(path, _catalog(presets)))
    saved = None
    if save or save_to:
        saved = str(save_calibration(result.fit, str(path), Path(save_to) if save_to else None))
    _emit(calibration_report(result, saved), fmt, as_json)


@app.command()
def links(
    fmt: FormatOpt = Format.table, as_json: JsonOpt = False, presets: PresetsOpt = None
) -> None:
    """List interconnect presets for tensor-parallel all-reduces."""
    from decodecalc.listings import links_report

    _emit(links_report(_catalog(presets).links()), fmt, as_json)


def _split(text: str, what: str) -> list[str]:
    values = [v.strip() for v in text.split(",")]
    if not all(values):
        raise InputError(f"{what} {text!r} has an empty value between commas")
    return list(dict.fromkeys(values))


def _ints(text: str, what: str) -> list[int]:
    try:
        return [int(v) for v in _split(text, what)]
    except ValueError:
        raise InputError(f"{what} {text!r}: expected whole numbers separated by commas") from None


def _draw(series: list[Any], chart: bool, plot: str | None) -> None:
    from pathlib import Path

    from decodecalc.charts import plot_file, terminal_chart

    if chart:
        import shutil

        width = min(shutil.get_terminal_size((100, 24)).columns, 120)
        color = sys.stdout.isatty() and "NO_COLOR" not in os.environ
        sys.stdout.write(terminal_chart(series, width=width, color=color) + "\n")
    if plot:
        plot_file(series, Path(plot))
        _note(f"wrote {plot}")


@app.command()
def compare(
    model: Annotated[
        str, typer.Option("--model", "-m", help="One or more models, comma-separated.")
    ],
    gpu: Annotated[str | None, typer.Option("--gpu", "-g", help="One or more GPU presets.")] = None,
    bandwidth: BandwidthOpt = None,
    weights: Annotated[
        str, typer.Option("--weights", "-w", help="One or more weight dtypes.")
    ] = "bf16",
    kv_dtype: Annotated[
        str | None, typer.Option("--kv-dtype", "-k", help="One or more KV dtypes.")
    ] = None,
    context: ContextOpt = None,
    batch: Annotated[
        str, typer.Option("--batch", help="One or more batch sizes, e.g. 1,32.")
    ] = "1",
    tp: Annotated[str, typer.Option("--tp", help="One or more TP sizes, e.g. 1,8.")] = "1",
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
    from decodecalc.charts import series_of
    from decodecalc.compare_view import compare_report, label
    from decodecalc.estimator import estimate as run_estimate

    catalog = _catalog(presets)
    models = [catalog.model(m) for m in _split(model, "--model")]
    gpus: list[str | None] = list(_split(gpu, "--gpu")) if gpu else [None]
    kvs: list[str | None] = list(_split(kv_dtype, "--kv-dtype")) if kv_dtype else [None]
    contexts = _contexts(context, min(models, key=lambda m: m.max_context_tokens))
    from decodecalc.scenarios import build_scenario

    estimates = []
    for m, g, w, k, b, t in itertools.product(
        models, gpus, _split(weights, "--weights"), kvs, _ints(batch, "--batch"), _ints(tp, "--tp")
    ):
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
    if len(estimates) > MAX_COMPARED:
        raise InputError(
            f"{len(estimates)} scenarios; compare shows at most {MAX_COMPARED} (try sweep)"
        )
    _emit(compare_report(estimates, contexts), fmt, as_json)
    _draw([series_of(label(e), e) for e in estimates], chart, plot)


MAX_COMPARED = 64


@app.command()
def sweep(
    model: Annotated[str, typer.Option("--model", "-m", help="Models, comma-separated.")],
    context: Annotated[str, typer.Option("--context", "-c", help="Contexts, as for estimate.")],
    gpu: Annotated[str | None, typer.Option("--gpu", "-g", help="GPU presets.")] = None,
    weights: Annotated[str, typer.Option("--weights", "-w", help="Weight dtypes.")] = "bf16",
    kv_dtype: Annotated[str, typer.Option("--kv-dtype", "-k", help="KV dtypes.")] = "bf16",
    batch: Annotated[str, typer.Option("--batch", help="Batch sizes, e.g. 1,8,64.")] = "1",
    tp: Annotated[str, typer.Option("--tp", help="TP sizes, e.g. 1,2,4,8.")] = "1",
    efficiency: EfficiencyOpt = "1",
    fmt: Annotated[
        str, typer.Option("--format", "-f", help="csv or jsonl (JSON Lines: one object a line).")
    ] = "csv",
    output: Annotated[
        str | None, typer.Option("--output", "-o", help="Write here (a progress bar shows).")
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
    from decodecalc.compare_view import CSV_FITS, write_sweep_csv, write_sweep_jsonl
    from decodecalc.context import parse_context
    from decodecalc.scenarios import build_scenario
    from decodecalc.sweep import Axis, grid_size
    from decodecalc.sweep import sweep as run_sweep

    if fmt not in ("csv", "jsonl"):
        raise InputError(f"--format {fmt!r}: sweep writes csv or jsonl")
    catalog = _catalog(presets)
    if gpu is None:
        raise InputError("give --gpu with one or more GPU presets")
    axes = [
        Axis("model", tuple(_split(model, "--model"))),
        Axis("gpu", tuple(_split(gpu, "--gpu"))),
        Axis("weights", tuple(_split(weights, "--weights"))),
        Axis("kv_dtype", tuple(_split(kv_dtype, "--kv-dtype"))),
        Axis("batch", tuple(str(b) for b in _ints(batch, "--batch"))),
        Axis("tp", tuple(str(t) for t in _ints(tp, "--tp"))),
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
        _note(f"skipped {len(skipped)} combinations that are no valid deployment; first: {first}")


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


def _contexts(spec: str | None, model: Any) -> tuple[int, ...]:
    from decodecalc.context import parse_context

    contexts = parse_context(spec) if spec else parse_context(f"1K..{model.max_context_tokens}")
    if contexts[-1] > model.max_context_tokens:
        _note(
            f"contexts above {model.max_context_tokens:,} tokens exceed {model.id}'s "
            "max_position_embeddings; the figures extrapolate the same physics"
        )
    return contexts


@app.command()
def models(
    fmt: FormatOpt = Format.table, as_json: JsonOpt = False, presets: PresetsOpt = None
) -> None:
    """List model presets: parameters, attention shape, KV bytes per token, maximum context."""
    from decodecalc.listings import models_report

    catalog = _catalog(presets)
    _emit(models_report(catalog.models(), catalog.dtype("bf16")), fmt, as_json)


@app.command()
def gpus(
    fmt: FormatOpt = Format.table, as_json: JsonOpt = False, presets: PresetsOpt = None
) -> None:
    """List GPU presets: peak memory bandwidth and capacity."""
    from decodecalc.listings import gpus_report

    _emit(gpus_report(_catalog(presets).gpus()), fmt, as_json)


@app.command()
def dtypes(
    fmt: FormatOpt = Format.table, as_json: JsonOpt = False, presets: PresetsOpt = None
) -> None:
    """List weight and KV-cache formats with their bits per value, block scales included."""
    from decodecalc.listings import dtypes_report

    _emit(dtypes_report(_catalog(presets).dtypes()), fmt, as_json)


@app.command()
def show(
    model: Annotated[
        str, typer.Argument(help="Model preset, model YAML file or config.json.", metavar="MODEL")
    ],
    fmt: FormatOpt = Format.table,
    as_json: JsonOpt = False,
    presets: PresetsOpt = None,
) -> None:
    """A model's architecture, its derived vs official parameter count, and KV bytes per token.

    Example: decodecalc show llama-3.1-70b
    """
    from decodecalc.listings import show_report

    catalog = _catalog(presets)
    _emit(show_report(catalog.model(model), catalog.dtypes()), fmt, as_json)


@app.command("import")
def import_config(
    config: Annotated[
        str, typer.Argument(help="A model's config.json (a local file).", metavar="CONFIG")
    ],
    name: Annotated[str, typer.Option("--name", "-n", help="The preset's display name.")],
    output: Annotated[
        str | None,
        typer.Option("--output", "-o", help="Write the preset here (default: stdout)."),
    ] = None,
    source: Annotated[
        str | None, typer.Option("--source", help="Where the config came from (a URL).")
    ] = None,
    official_params: Annotated[
        int | None,
        typer.Option(
            "--official-params", help="The model card's parameter count, to check against."
        ),
    ] = None,
) -> None:
    """Turn a config.json into a model preset YAML holding the fields decodecalc reads.

    Put the file in a presets directory (DIR/models/NAME.yaml, with --presets DIR or
    $DECODECALC_PRESETS) to use it by name. --model config.json works without importing.

    Example: decodecalc import ./Llama-3.1-8B/config.json --name Llama-3.1-8B -o my.yaml
    """
    from pathlib import Path

    from decodecalc.datafile import is_file, read_json
    from decodecalc.presets import preset_from_config

    if official_params is not None and official_params < 1:
        raise InputError(f"--official-params {official_params} must be a positive count")
    path = Path(config).expanduser()
    if not is_file(path):
        raise InputError(f"config file {config!r} does not exist")
    preset = preset_from_config(read_json(path), name, source, official_params)
    import yaml

    text = yaml.safe_dump(preset, sort_keys=False, default_flow_style=False)
    if output is None:
        sys.stdout.write(text)
        return
    try:
        Path(output).write_text(text, encoding="utf-8")
    except OSError as exc:
        raise InputError(f"cannot write {output!r}: {exc.strerror or exc}") from None
    _note(f"wrote {output}")


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
            "--output", "-o", help="Write the report here; the table still goes to stdout."
        ),
    ] = None,
    gpu: Annotated[
        str | None,
        typer.Option("--gpu", "-g", help="GPU for deployments that name none (vLLM configs)."),
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
    from pathlib import Path

    from decodecalc.check_view import check_report, to_junit
    from decodecalc.checks import run_checks
    from decodecalc.datafile import is_file
    from decodecalc.deployments import DeploymentReader

    overrides = {}
    for item in target or ():
        name, sep, value = item.partition("=")
        if not sep or not name.strip() or not value.strip():
            raise InputError(f"--target {item!r}: expected NAME=VALUE, e.g. max_ms_per_token=40")
        overrides[name.strip()] = value.strip()
    reader = DeploymentReader(_catalog(presets), gpu=gpu, targets=overrides)
    problems: list[str] = []
    deployments = []
    for file in files:
        path = Path(file)
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
        _write_report(checked, report, fmt, Path(output))
        from decodecalc.render import to_table

        to_table(report, sys.stdout)
    elif fmt is CheckFormat.junit:
        to_junit(checked, sys.stdout)
    else:
        _emit(report, Format(fmt.value), False)
    if not all(c.passed for c in checked):
        raise typer.Exit(EXIT_VIOLATION)


def _write_report(checked: Any, report: "Report", fmt: CheckFormat, path: Any) -> None:
    from decodecalc.check_view import to_junit
    from decodecalc.render import RENDERERS

    try:
        with open(path, "w", encoding="utf-8") as out:
            if fmt is CheckFormat.junit:
                to_junit(checked, out)
            else:
                RENDERERS[fmt.value](report, out, False)
    except OSError as exc:
        raise InputError(f"cannot write {str(path)!r}: {exc.strerror or exc}") from None


@app.command()
def schema() -> None:
    """Print the JSON Schema of deployment files (what 'decodecalc check' reads)."""
    from importlib.resources import files

    sys.stdout.write(files("decodecalc").joinpath("deployment.schema.json").read_text("utf-8"))


def _note(message: str) -> None:
    print(f"decodecalc: note: {message}", file=sys.stderr)


def _error(message: str) -> int:
    # One line, whatever the message held: scripts grep stderr line by line.
    print(f"decodecalc: error: {' '.join(message.split())}", file=sys.stderr)
    return EXIT_USAGE


def _errors(problems: list[str]) -> int:
    """Every problem found in a file, one line each."""
    for problem in problems:
        _error(problem)
    return EXIT_USAGE


def _command(argv: list[str]) -> Any:
    """The click command to run. Typer builds every registered command on each run (about
    a millisecond apiece, a third of a query's own time), so when the first argument names
    a command, only that one is built; the full app answers everything else (help, typos)."""
    wanted = argv[0] if argv else None
    chosen = [
        info
        for info in app.registered_commands
        if (info.name or (info.callback.__name__ if info.callback else None)) == wanted
    ]
    if not chosen and argv != ["--version"]:
        return typer.main.get_command(app)
    lean = typer.Typer(name=app.info.name, add_completion=False, rich_markup_mode=None)
    lean.registered_callback = app.registered_callback
    lean.registered_commands = chosen  # none for --version: the root callback answers it
    return typer.main.get_command(lean)


def main(argv: list[str] | None = None) -> int:
    """Run the CLI and return its exit code; usage errors become one line on stderr."""
    args = sys.argv[1:] if argv is None else argv
    if not args:
        args = ["--help"]  # a bare `decodecalc` is a request for help, not an error
    command = _command(args)
    try:
        result = command.main(args=args, prog_name="decodecalc", standalone_mode=False)
    except InputErrors as exc:
        return _errors(exc.problems)
    except InputError as exc:
        return _error(str(exc))
    except KeyboardInterrupt:
        return 130
    except Exception as exc:
        # Click's usage errors (unknown option, missing value, a word where a number
        # belongs) carry their own message; anything else is a bug and should say so.
        format_message = getattr(exc, "format_message", None)
        if format_message is None:
            raise
        return _error(f"{format_message()} (see 'decodecalc --help')")
    return result if isinstance(result, int) else EXIT_OK
