"""The options that describe one scenario (model, GPU, dtypes, batch, TP, efficiency...),
shared by the commands that take them, and what turns them into core inputs."""

import inspect
from collections.abc import Callable
from typing import Annotated, Any, TypeVar

import typer

from decodecalc.cli import PresetsOpt, completer, load_catalog, note

ModelOpt = Annotated[
    str,
    typer.Option(
        "--model",
        "-m",
        help="Model preset or alias, a model YAML file, or a config.json.",
        autocompletion=completer("models"),
        metavar="MODEL",
    ),
]
GpuOpt = Annotated[
    str | None,
    typer.Option(
        "--gpu",
        "-g",
        help="GPU preset (sets bandwidth).",
        autocompletion=completer("gpus"),
        metavar="GPU",
    ),
]
BandwidthOpt = Annotated[
    str | None,
    typer.Option(
        "--bandwidth",
        "-b",
        help="Memory bandwidth, e.g. 3.35TB/s, 819GB/s, 1.5TiB/s; overrides --gpu.",
        metavar="RATE",
    ),
]
WeightsOpt = Annotated[
    str,
    typer.Option(
        "--weights",
        "-w",
        help="Weight dtype (see 'decodecalc dtypes').",
        autocompletion=completer("dtypes"),
        metavar="DTYPE",
    ),
]
KvOpt = Annotated[
    str | None,
    typer.Option(
        "--kv-dtype",
        "-k",
        help="KV-cache dtype. Default: the weight dtype if it is FP32/FP16/BF16, else BF16.",
        metavar="DTYPE",
    ),
]
BatchOpt = Annotated[
    int, typer.Option("--batch", help="Concurrent sequences per step.", metavar="N")
]
TpOpt = Annotated[
    int, typer.Option("--tp", help="Tensor-parallel GPUs; figures are per GPU.", metavar="N")
]
EfficiencyOpt = Annotated[
    str,
    typer.Option(
        "--efficiency",
        "-e",
        help="Fraction of peak bandwidth reached, in (0, 1] (1 is the roofline); 'sustained' "
        "(the GPU's measured bandwidth) or 'calibrated' (from 'decodecalc calibrate --save').",
        metavar="EFF",
    ),
]
MemoryUtilizationOpt = Annotated[
    float,
    typer.Option(
        "--memory-utilization",
        help="Share of GPU memory for weights and cache, like vLLM's gpu_memory_utilization.",
        metavar="FRACTION",
    ),
]
OverheadOpt = Annotated[
    str | None,
    typer.Option(
        "--overhead",
        help="Fixed time added to every step, e.g. 0.3ms (default 0, or calibrated).",
        metavar="TIME",
    ),
]
LinkOpt = Annotated[
    str | None,
    typer.Option(
        "--link",
        help="Interconnect for TP all-reduces (default: the GPU's; 'none' leaves them out).",
        metavar="LINK",
    ),
]
LinkBandwidthOpt = Annotated[
    str | None,
    typer.Option(
        "--link-bandwidth", help="Override the link's bandwidth, e.g. 450GB/s.", metavar="RATE"
    ),
]
ContextOpt = Annotated[
    str | None,
    typer.Option(
        "--context",
        "-c",
        help="Contexts in tokens: 32K (binary) or 32k (decimal), a list 1K,8K,32K, a doubling "
        "range 1K..256K, a step range 0..128K:16K, or a factor range 1K..1M:x4. "
        "Default: 1K doubling to the model's maximum context.",
        metavar="SPEC",
    ),
]


ChartOpt = Annotated[
    bool, typer.Option("--chart", help="Draw latency against context in the terminal.")
]
PlotOpt = Annotated[
    str | None,
    typer.Option(
        "--plot",
        help="Write the chart to FILE.svg or FILE.png (needs decodecalc[plot]).",
        metavar="FILE",
    ),
]


SCENARIO_OPTIONS: tuple[tuple[str, Any, Any], ...] = (
    ("gpu", GpuOpt, None),
    ("bandwidth", BandwidthOpt, None),
    ("weights", WeightsOpt, "bf16"),
    ("kv_dtype", KvOpt, None),
    ("batch", BatchOpt, 1),
    ("tp", TpOpt, 1),
    ("efficiency", EfficiencyOpt, "1"),
    ("memory_utilization", MemoryUtilizationOpt, 0.9),
    ("overhead", OverheadOpt, None),
    ("link", LinkOpt, None),
    ("link_bandwidth", LinkBandwidthOpt, None),
)
"""What describes one deployment besides the model: name, option, default."""

F = TypeVar("F", bound=Callable[..., Any])


def scenario_options(command: F) -> F:
    """Give a command the scenario options, after its --model, and --presets last; it takes
    them as ``**scenario`` and reads them back with scenario_of(ctx).

    One declaration for estimate, generate and explain, the way sqlite-utils shares its
    output options: Typer builds options from the signature, so they join the signature
    (keyword-only, which is how Typer passes them, in the order help lists them).
    """
    keyword = inspect.Parameter.KEYWORD_ONLY
    own = [
        p.replace(kind=keyword)
        for p in inspect.signature(command).parameters.values()
        if p.kind is not p.VAR_KEYWORD
    ]
    after_model = [p.name for p in own].index("model") + 1
    shared = [
        inspect.Parameter(name, keyword, annotation=option, default=default)
        for name, option, default in SCENARIO_OPTIONS
    ]
    presets = inspect.Parameter("presets", keyword, annotation=PresetsOpt, default=None)
    parameters = [*own[:after_model], *shared, *own[after_model:], presets]
    setattr(command, "__signature__", inspect.Signature(parameters))  # noqa: B010
    return command


def scenario_of(ctx: typer.Context) -> Any:
    """The scenario a command's options describe (see scenario_options)."""
    from decodecalc.scenarios import build_scenario

    params = ctx.params
    catalog = load_catalog(params.get("presets"))
    flags = {name: params[name] for name, _, _ in SCENARIO_OPTIONS}
    return build_scenario(catalog, catalog.model(params["model"]), **flags)


def contexts_for(spec: str | None, model: Any) -> tuple[int, ...]:
    from decodecalc.context import parse_context

    contexts = parse_context(spec) if spec else parse_context(f"1K..{model.max_context_tokens}")
    if contexts[-1] > model.max_context_tokens:
        note(
            f"contexts above {model.max_context_tokens:,} tokens exceed {model.id}'s "
            "max_position_embeddings; the figures extrapolate the same physics"
        )
    return contexts
