"""The options that describe one scenario (model, GPU, dtypes, batch, TP, efficiency...),
shared by the commands that take them, and what turns them into core inputs."""

import inspect
from collections.abc import Callable
from typing import Annotated, Any, TypeVar

import typer

from decodecalc.cli import PresetsOpt, completer, load_catalog, real_number, whole_number
from decodecalc.errors import InputError
from decodecalc.record import field_defaults, record
from decodecalc.scenario_spec import ScenarioSpec

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


def _plot_file(name: str | None) -> str | None:
    """--plot is checked as it is parsed, so that a wrong suffix or a missing matplotlib
    is refused before any output, never after the table was printed."""
    if name is not None:
        from decodecalc.views.charts import plot_format

        plot_format(name)
    return name


PlotOpt = Annotated[
    str | None,
    typer.Option(
        "--plot",
        help="Write the chart to FILE.svg or FILE.png (needs decodecalc[plot]).",
        metavar="FILE",
        callback=_plot_file,
    ),
]


@record
class ScenarioOption:
    """How one ScenarioSpec field is given on the command line. compare and sweep take the
    ``axis`` options as comma lists (every combination is a scenario), the rest as one value."""

    name: str
    flags: tuple[str, ...]
    help: str
    metavar: str
    kind: type = str
    axis: str | None = None
    """Help for the comma-list form (None: one value in every command)."""
    complete: str | None = None
    """Which presets complete it."""


SCENARIO_OPTIONS = (
    ScenarioOption(
        "model",
        ("--model", "-m"),
        "Model preset or alias, a model YAML file, a config.json, a Hugging Face Hub id "
        "(org/name; needs decodecalc[hub]) or numbers: 'layers=80,hidden=8192,heads=64,...'.",
        "MODEL",
        axis="One or more models, comma-separated (a numbers spec keeps its commas; a field "
        "given again starts the next spec).",
        complete="models",
    ),
    ScenarioOption(
        "gpu",
        ("--gpu", "-g"),
        "GPU preset (sets bandwidth, capacity and FLOP/s), or numbers: "
        "'bandwidth=3.35TB/s,memory=80GiB,bf16=989TFLOP/s'.",
        "GPU",
        axis="One or more GPU presets or numbers specs.",
        complete="gpus",
    ),
    ScenarioOption(
        "bandwidth",
        ("--bandwidth", "-b"),
        "Memory bandwidth, e.g. 3.35TB/s, 819GB/s, 1.5TiB/s; overrides --gpu.",
        "RATE",
    ),
    ScenarioOption(
        "weights",
        ("--weights", "-w"),
        "Weight dtype, every tensor in it ('decodecalc dtypes'), or a weight recipe, a "
        "format per tensor group ('decodecalc recipes'). Default: the checkpoint's recipe "
        "from config.json, else bf16.",
        "DTYPE",
        axis="One or more weight dtypes or recipes (default as for estimate).",
        complete="dtypes",
    ),
    ScenarioOption(
        "kv_dtype",
        ("--kv-dtype", "-k"),
        "KV-cache dtype. Default: the weight dtype if it is FP32/FP16/BF16, else BF16.",
        "DTYPE",
        axis="One or more KV dtypes (default as for estimate).",
        complete="dtypes",
    ),
    ScenarioOption(
        "v_dtype",
        ("--v-dtype",),
        "V-cache dtype where an engine stores K and V differently; --kv-dtype is then K's. "
        "MLA's latent has no separate V and linear attention's state none: both use "
        "--kv-dtype. Default: the same as --kv-dtype.",
        "DTYPE",
        axis="One or more V dtypes (default: the KV dtype).",
        complete="dtypes",
    ),
    ScenarioOption(
        "batch",
        ("--batch",),
        "Concurrent sequences per step.",
        "N",
        int,
        axis="One or more batch sizes, e.g. 1,8,64.",
    ),
    ScenarioOption(
        "tp",
        ("--tp",),
        "Tensor-parallel GPUs; figures are per GPU.",
        "N",
        int,
        axis="One or more TP sizes, e.g. 1,2,4,8.",
    ),
    ScenarioOption(
        "pp",
        ("--pp",),
        "Pipeline stages of --tp GPUs each: a token's step runs through them in turn, and "
        "memory per GPU holds one stage's layers.",
        "N",
        int,
        axis="One or more pipeline sizes, e.g. 1,2,4.",
    ),
    ScenarioOption(
        "ep",
        ("--ep",),
        "Expert parallelism (vLLM's enable-expert-parallel): whole experts on each of the "
        "--tp GPUs instead of every expert split over them.",
        "",
        bool,
    ),
    ScenarioOption(
        "dp_attention",
        ("--dp-attention",),
        "Data-parallel attention over the --tp GPUs (MoE models): each holds its own "
        "sequences' whole KV cache; experts stay spread over all of them.",
        "",
        bool,
    ),
    ScenarioOption(
        "efficiency",
        ("--efficiency", "-e"),
        "Fraction of peak bandwidth reached, in (0, 1] (1 is the roofline); 'sustained' "
        "(the GPU's measured bandwidth) or 'calibrated' (from 'decodecalc calibrate --save').",
        "EFF",
    ),
    ScenarioOption(
        "memory_utilization",
        ("--memory-utilization",),
        "Share of GPU memory for weights and cache, like vLLM's gpu_memory_utilization.",
        "FRACTION",
        float,
    ),
    ScenarioOption(
        "overhead",
        ("--overhead",),
        "Fixed time added to every step, e.g. 0.3ms (default 0, or calibrated).",
        "TIME",
    ),
    ScenarioOption(
        "link",
        ("--link",),
        "Interconnect for TP all-reduces (default: the GPU's; 'none' leaves them out).",
        "LINK",
    ),
    ScenarioOption(
        "link_bandwidth",
        ("--link-bandwidth",),
        "Override the link's bandwidth, e.g. 450GB/s.",
        "RATE",
    ),
    ScenarioOption(
        "gpus_per_node",
        ("--gpus-per-node",),
        "GPUs one node's link joins (default: the link's, 8 for NVLink boards, 72 for "
        "nvl72); larger groups and hand-offs between nodes take --node-link.",
        "N",
        int,
    ),
    ScenarioOption(
        "node_link",
        ("--node-link",),
        "Network between nodes: ib-ndr (default), ib-xdr, roce-400g ('decodecalc links').",
        "LINK",
    ),
    ScenarioOption(
        "engine",
        ("--engine",),
        "Engine profile whose measured step to expect ('decodecalc engines' lists them); "
        "default 'typical': the band across the profiles for the GPU's family; 'roofline': "
        "physics alone.",
        "ENGINE",
        axis="One or more engine profiles (default typical).",
        complete="engines",
    ),
    ScenarioOption(
        "price",
        ("--price",),
        "Price per GPU-hour for cost per million tokens: dollars (2.49, 2.49USD/h), a price "
        "list (lambda, hyperstack) or 'lowest' (the cheapest list naming the GPU).",
        "PRICE",
    ),
    ScenarioOption(
        "power",
        ("--power",),
        "Board power per GPU for energy per token, e.g. 700W (default: the GPU's TDP, "
        "an upper bound).",
        "WATTS",
    ),
)
"""Every option that describes one deployment, in the order help lists them; the defaults
are ScenarioSpec's, so no command can drift from another."""

NUMBERS: dict[type, Callable[[str], Any]] = {int: whole_number, float: real_number}
"""How a number option's text is read: ASCII only (cli/__init__.py)."""

F = TypeVar("F", bound=Callable[..., Any])


def _parameter(option: ScenarioOption, as_list: bool) -> inspect.Parameter:
    default = field_defaults(ScenarioSpec).get(option.name, inspect.Parameter.empty)
    listed = as_list and option.axis is not None
    kind: Any = str if listed else option.kind
    declared = typer.Option(
        *option.flags,
        help=option.axis if listed else option.help,
        metavar=("LIST" if option.metavar == "N" else f"{option.metavar}S")
        if listed
        else option.metavar or None,
        autocompletion=None if option.complete is None else completer(option.complete),
        parser=None if listed else NUMBERS.get(option.kind),
    )
    if listed and default not in (None, inspect.Parameter.empty):
        default = str(default)
    if default is None:
        kind = kind | None
    return inspect.Parameter(
        option.name,
        inspect.Parameter.KEYWORD_ONLY,
        annotation=Annotated[kind, declared],
        default=default,
    )


def scenario_options(*, axes: bool = False) -> Callable[[F], F]:
    """Give a command the scenario options first, its own after them, and --presets last;
    it takes them as ``**scenario`` and reads them back with spec_of / specs_of.

    One declaration for every command that builds a scenario, the way sqlite-utils shares
    its output options: Typer builds options from the signature, so they join the
    signature (keyword-only, which is how Typer passes them). With ``axes`` the options
    that may vary take comma lists (compare, sweep).
    """

    def decorate(command: F) -> F:
        keyword = inspect.Parameter.KEYWORD_ONLY
        own = [
            p.replace(kind=keyword)
            for p in inspect.signature(command).parameters.values()
            if p.kind is not p.VAR_KEYWORD
        ]
        first = [p for p in own if p.name == "ctx"]
        rest = [p for p in own if p.name != "ctx"]
        shared = [_parameter(o, axes) for o in SCENARIO_OPTIONS]
        presets = inspect.Parameter("presets", keyword, annotation=PresetsOpt, default=None)
        parameters = [*first, *shared, *rest, presets]
        setattr(command, "__signature__", inspect.Signature(parameters))  # noqa: B010
        return command

    return decorate


def spec_of(ctx: typer.Context) -> ScenarioSpec:
    """The scenario a command's options describe, unresolved."""
    return ScenarioSpec(**{o.name: ctx.params[o.name] for o in SCENARIO_OPTIONS})


def scenario_of(ctx: typer.Context) -> Any:
    """The resolved scenario a command's options describe (see scenario_options)."""
    from decodecalc.scenarios import resolve

    return resolve(spec_of(ctx), load_catalog(ctx.params.get("presets")))


def specs_of(ctx: typer.Context) -> list[ScenarioSpec]:
    """Every combination of the comma-list options, in the order the lists give them (the
    last option varies fastest)."""
    import itertools

    values = []
    for option in SCENARIO_OPTIONS:
        given = ctx.params[option.name]
        if option.axis is None or given is None:
            values.append([given])
            continue
        items = split_list(given, option.flags[0])
        values.append(items if option.kind is str else whole_numbers(items, option.flags[0]))
    names = [o.name for o in SCENARIO_OPTIONS]
    return [
        ScenarioSpec(**dict(zip(names, combo, strict=True))) for combo in itertools.product(*values)
    ]


def split_list(text: str, what: str) -> list[str]:
    from decodecalc.loading.numbers import split_items  # a numbers spec keeps its commas

    values = split_items(text)
    if not all(values):
        raise InputError(f"{what} {text!r} has an empty value between commas")
    return list(dict.fromkeys(values))


def whole_numbers(values: list[str], what: str) -> list[int]:
    try:
        return [whole_number(v) for v in values]
    except typer.BadParameter:
        raise InputError(
            f"{what} {','.join(values)!r}: expected whole numbers separated by commas"
        ) from None


def contexts_for(spec: str | None, model: Any) -> tuple[int, ...]:
    """The contexts asked for, by default 1K doubling to the model's maximum context."""
    from decodecalc.context import parse_context

    return parse_context(spec) if spec else parse_context(f"1K..{model.max_context_tokens}")
