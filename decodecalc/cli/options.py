"""The options that describe one scenario (model, GPU, dtypes, batch, TP, efficiency...),
shared by the commands that take them, and what turns them into core inputs."""

from typing import Annotated, Any

import typer

from decodecalc.cli import completer, load_catalog, note

ModelOpt = Annotated[
    str,
    typer.Option(
        "--model",
        "-m",
        help="Model preset or alias, a model YAML file, or a config.json.",
        autocompletion=completer("models"),
    ),
]
GpuOpt = Annotated[
    str | None,
    typer.Option(
        "--gpu", "-g", help="GPU preset (sets bandwidth).", autocompletion=completer("gpus")
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
        autocompletion=completer("dtypes"),
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


def scenario_of(ctx: typer.Context) -> Any:
    """The scenario a command's flags describe (estimate, generate and explain share them)."""
    from decodecalc.scenarios import build_scenario

    params = ctx.params
    catalog = load_catalog(params.get("presets"))
    flags = {name: params[name] for name in SCENARIO_FLAGS}
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
