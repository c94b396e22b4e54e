"""The options that describe one scenario (model, GPU, dtypes, batch, TP, efficiency...),
shared by the commands that take them, and what turns them into core inputs."""

import copy
import functools
import inspect
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Annotated, Any, TypeVar

import typer

from decodecalc.cli import (
    PresetsOpt,
    completer,
    given_path,
    keyword_parameters,
    load_catalog,
    real_number,
    whole_number,
)
from decodecalc.errors import InputError
from decodecalc.record import field_defaults, replace
from decodecalc.scenarios.fields import SCENARIO_FIELDS, ScenarioField
from decodecalc.scenarios.spec import ScenarioSpec

if TYPE_CHECKING:
    from decodecalc.scenarios.workload import Workload, WorkloadField


def _given_contexts(text: str | None) -> str | None:
    """An empty --context is a mistake (an unset shell variable), not a request for the
    default range: refused before anything runs."""
    if text is not None and not text.strip():
        raise typer.BadParameter("is empty; give contexts such as 8K or 1K..128K")
    return text


ContextOpt = Annotated[
    str | None,
    typer.Option(
        "--context",
        "-c",
        callback=_given_contexts,
        help="Contexts in tokens: 32K (binary) or 32k (decimal), a list 1K,8K,32K, a doubling "
        "range 1K..256K, a step range 0..128K:16K, or a factor range 1K..1M:x4. "
        "Default: 1K doubling to the model's maximum context.",
        metavar="SPEC",
    ),
]


ChartOpt = Annotated[
    bool, typer.Option("--chart", help="Draw latency against context in the terminal.")
]


def _in_a_folder(name: str) -> None:
    """A file an option will write, refused as it is parsed when its folder is missing:
    before the command prints its answer, so that a pipe never gets a whole document and
    a failing status."""
    import os

    from decodecalc.paths import expand_user

    given_path(name)
    folder = expand_user(name).parent
    if not folder.is_dir():
        raise typer.BadParameter(f"cannot write {name!r}: no directory {str(folder)!r}")
    if not os.access(folder, os.W_OK | os.X_OK):
        raise typer.BadParameter(f"cannot write {name!r}: no permission in {str(folder)!r}")


def _plot_file(name: str | None) -> str | None:
    """--plot is checked as it is parsed, so that a wrong suffix, a missing folder or a
    missing matplotlib is refused before any output, never after the table was printed."""
    if name is not None:
        from decodecalc.views.charts import plot_format

        _in_a_folder(name)
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


def html_file(name: str) -> str:
    """An HTML page's file (--report, report's -o), checked as it is parsed: a page that
    cannot be written is refused before the command prints its answer, never after, and
    a name that says another format (``s.txt``, ``s.json``) is refused, not filled with
    HTML."""
    given_path(name)
    stem, dot, suffix = name.rpartition(".")
    if not dot or suffix.lower() not in ("html", "htm") or "/" in suffix:
        better = f"{stem if dot and '/' not in suffix else name}.html"
        raise typer.BadParameter(f"{name!r}: the page is HTML; name it {better!r}")
    _in_a_folder(name)
    return name


def _report_file(name: str | None) -> str | None:
    """--report: an HTML page's file (html_file)."""
    return None if name is None else html_file(name)


ReportOpt = Annotated[
    str | None,
    typer.Option(
        "--report",
        help="Also write the answer as one self-contained HTML page: interactive charts, "
        "the scenario with its presets' sources, the tables and notes (needs "
        "decodecalc[report]).",
        metavar="FILE.html",
        callback=_report_file,
    ),
]


NUMBERS: dict[str, Callable[[str], Any]] = {"count": whole_number, "fraction": real_number}
"""How a number option's text is read: ASCII only (cli/__init__.py)."""

F = TypeVar("F", bound=Callable[..., Any])


CLI_TYPES: dict[str, type] = {
    "text": str,
    "rate": str,
    "time": str,
    "count": int,
    "flag": bool,
    "fraction": float,
    "efficiency": str,
}
"""The Python type Typer parses each kind of field as (scenarios/fields.py KINDS)."""


def _declared(
    name: str,
    kind: Any,
    default: Any,
    flags: tuple[str, ...],
    **option: Any,
) -> inspect.Parameter:
    """One option as a keyword parameter (None among its values where its default is),
    its declaration standing as the default (Typer's other spelling, read the same way):
    ``Annotated[kind, ...]`` builds a typing alias that costs a query more than the
    option itself, once for each of the two dozen options a command declares."""
    if default is None:
        kind = kind | None
    given = ... if default is inspect.Parameter.empty else default
    return inspect.Parameter(
        name,
        inspect.Parameter.KEYWORD_ONLY,
        annotation=kind,
        default=typer.Option(given, *flags, **option),
    )


@functools.cache
def _parameter(option: ScenarioField, as_list: bool) -> inspect.Parameter:
    """One scenario option as a keyword parameter, built once for every command that
    declares it (Typer copies what it reads, plan_options copies before it edits)."""
    default = field_defaults(ScenarioSpec).get(option.name, inspect.Parameter.empty)
    listed = as_list and option.axis is not None
    if listed and default not in (None, inspect.Parameter.empty):
        default = str(default)
    return _declared(
        option.name,
        str if listed else CLI_TYPES[option.kind],
        default,
        option.flags,
        help=option.axis if listed else option.help,
        metavar=("LIST" if option.metavar == "N" else f"{option.metavar}S")
        if listed
        else option.metavar or None,
        autocompletion=None if option.complete is None else completer(option.complete),
        parser=None if listed else NUMBERS.get(option.kind),
    )


def scenario_option(name: str, help: str) -> Any:
    """One scenario field's option (its flags, metavar, completion and parser), for a
    command that takes it alone with its own help (check's --gpu: the GPU of files that
    name none): ``Annotated[TYPE, scenario_option(...)]``, where the first flag stands
    in the place of the default (_declared's declaration holds the default there)."""
    option = next(o for o in SCENARIO_FIELDS if o.name == name)
    declared = copy.copy(_parameter(option, False).default)
    declared.default, *rest = declared.param_decls
    declared.param_decls = tuple(rest)
    declared.help = help
    return declared


WORKLOAD_TYPES: dict[str, type] = {
    "tokens": str,
    "count": int,
    "rate": float,
    "share": float,
    "rates": str,
    "flag": bool,
    "text": str,
}
"""The Python type Typer parses each kind of serving field as (scenarios/workload.py
WORKLOAD_KINDS); a token count is read by parse_tokens, so 4K works as in files."""
WORKLOAD_NUMBERS: dict[str, Callable[[str], Any]] = {
    "count": whole_number,
    "rate": real_number,
    "share": real_number,
}


def _workload_parameter(row: "WorkloadField", sweep: bool, required: bool, help: str | None) -> Any:
    """A load (row.sweep) is a comma list's text in every command, read by workloads_of,
    which takes one value where the command does not ``sweep``."""
    metavar = f"{row.metavar}[,{row.metavar}...]" if sweep and row.sweep else row.metavar
    return _declared(
        row.name,
        str if row.sweep else WORKLOAD_TYPES[row.kind],
        inspect.Parameter.empty if required else row.default,
        row.flags,
        help=help or row.help,
        metavar=metavar or None,
        parser=None if row.sweep else WORKLOAD_NUMBERS.get(row.kind),
    )


def workload_options(
    names: tuple[str, ...],
    *,
    sweep: bool = False,
    required: tuple[str, ...] = (),
    help: dict[str, str] | None = None,
    after: str = "ctx",
) -> Callable[[F], F]:
    """Give a command the serving fields ``names`` (scenarios/workload.py), right after
    its parameter ``after``; it reads them back from ``ctx.params``. With ``sweep`` the
    loads' help shows their comma lists (serving's curve); ``help`` words a field for this
    command."""

    def decorate(command: F) -> F:
        # Here, not at the top: estimate, compare and explain take no workload, and their
        # start-up need not import it (serving's does, with the answer).
        from decodecalc.scenarios.workload import WORKLOAD_FIELD

        own = keyword_parameters(command)
        cut = next(i for i, p in enumerate(own) if p.name == after) + 1
        added = [
            _workload_parameter(WORKLOAD_FIELD[n], sweep, n in required, (help or {}).get(n))
            for n in names
        ]
        parameters = [*own[:cut], *added, *own[cut:]]
        setattr(command, "__signature__", inspect.Signature(parameters))  # noqa: B010
        return command

    return decorate


def scenario_options(*, axes: bool = False, omit: tuple[str, ...] = ()) -> Callable[[F], F]:
    """Give a command the scenario options first, its own after them, and --presets last;
    it takes them as ``**scenario`` and reads them back with spec_of / specs_of.

    One declaration for every command that builds a scenario, the way sqlite-utils shares
    its output options: Typer builds options from the signature, so they join the
    signature (keyword-only, which is how Typer passes them). With ``axes`` the options
    that may vary take comma lists (compare, sweep); ``omit`` names fields the command sets
    itself (serving's batch is its running requests), which it then does not offer.
    """

    def decorate(command: F) -> F:
        own = keyword_parameters(command)
        first = [p for p in own if p.name == "ctx"]
        rest = [p for p in own if p.name != "ctx"]
        shared = [_parameter(o, axes) for o in SCENARIO_FIELDS if o.name not in omit]
        keyword = inspect.Parameter.KEYWORD_ONLY
        presets = inspect.Parameter("presets", keyword, annotation=PresetsOpt, default=None)
        parameters = [*first, *shared, *rest, presets]
        setattr(command, "__signature__", inspect.Signature(parameters))  # noqa: B010
        return command

    return decorate


def given(ctx: typer.Context, name: str) -> bool:
    """Whether the option ``name`` was typed on the command line (not its default)."""
    source = ctx.get_parameter_source(name)  # (Typer's own copy of Click's enum)
    return source is not None and source.name == "COMMANDLINE"


def refuse_unused(ctx: typer.Context, unused: dict[str, str]) -> None:
    """Refuse the scenario options a command's answer does not use, each with why: an
    option accepted and ignored would read as though it had been priced in."""
    command = ctx.command_path
    for name, why in unused.items():
        if given(ctx, name):
            flag = next(o.flags[0] for o in SCENARIO_FIELDS if o.name == name)
            raise InputError(f"{command} does not use {flag}: {why}")


def spec_of(ctx: typer.Context) -> ScenarioSpec:
    """The scenario a command's options describe, unresolved."""
    return ScenarioSpec(
        **{o.name: ctx.params[o.name] for o in SCENARIO_FIELDS if o.name in ctx.params}
    )


def scenario_of(ctx: typer.Context) -> Any:
    """The resolved scenario a command's options describe (see scenario_options)."""
    from decodecalc.resolving.resolve import resolve

    scenario = resolve(spec_of(ctx), load_catalog(ctx.params.get("presets")))
    refuse_links_unused(ctx, [(scenario.gpus, scenario.node_link is not None)])
    return scenario


def refuse_links_unused(ctx: typer.Context, uses: Sequence[tuple[int, bool]]) -> None:
    """The interconnect options price what GPUs send each other, one rule for the four:
    one that nothing in the run is sent over is refused, for it would read as priced in.
    ``uses``: each scenario's GPUs and whether its group spans nodes. --link,
    --link-bandwidth and --gpus-per-node need a scenario of more than one GPU; --node-link
    one whose group spans nodes, or disaggregated serving, whose prompt KV it carries when
    --kv-link is not given (resolving/resolve.py unused_link)."""
    from decodecalc.resolving.resolve import LINK_OPTIONS, unused_link

    typed = {
        name: ctx.params[name] for name in LINK_OPTIONS if name in ctx.params and given(ctx, name)
    }
    carries_kv = ctx.params.get("prefill_workers") is not None and not ctx.params.get("kv_link")
    problem = unused_link(typed, uses, carries_kv, lambda name: "--" + name.replace("_", "-"))
    if problem is not None:
        raise InputError(problem)


def specs_of(ctx: typer.Context) -> list[ScenarioSpec]:
    """Every combination of the comma-list options, in the order the lists give them (the
    last option varies fastest)."""
    import itertools

    values = []
    for option in SCENARIO_FIELDS:
        given = ctx.params[option.name]
        if option.axis is None or given is None:
            values.append([given])
            continue
        items = split_list(given, option.flags[0])
        values.append(items if option.kind != "count" else whole_numbers(items, option.flags[0]))
    names = [o.name for o in SCENARIO_FIELDS]
    specs = [
        ScenarioSpec(**dict(zip(names, combo, strict=True))) for combo in itertools.product(*values)
    ]
    refuse_links_unused(ctx, _link_uses(ctx, specs))
    return specs


def _link_uses(ctx: typer.Context, specs: list[ScenarioSpec]) -> list[tuple[int, bool]]:
    """Each layout's GPUs and whether its group spans nodes (refuse_links_unused), from the
    specs before they are resolved: a grid resolves its scenarios one by one, later. Whether
    a group spans nodes is looked up only where --node-link asks."""
    from decodecalc.resolving.resolve import node_network, spans_nodes

    layouts = {(s.gpu, s.tp or 1, s.pp or 1, s.link, s.gpus_per_node): s for s in specs}
    catalog = load_catalog(ctx.params.get("presets")) if given(ctx, "node_link") else None
    if catalog is not None:  # a bad name is the error to give, before whether it is used
        for name in {s.node_link for s in specs}:
            node_network(catalog, name)
    return [
        (s.tp * s.pp, catalog is not None and spans_nodes(catalog, s))
        for s in (replace(s, tp=s.tp or 1, pp=s.pp or 1) for s in layouts.values())
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


def workloads_of(params: dict[str, Any], **rest: Any) -> "list[Workload]":
    """--input-len, --output-len and one of --concurrency (closed loop) and --request-rate
    (open loop), each load a comma list, as one workload per load in increasing order (a
    sweep: the curve in order); ``rest``: the other Workload fields. serving and plan take
    a workload the same way."""
    from decodecalc.context import parse_tokens
    from decodecalc.scenarios.workload import Workload

    concurrency, request_rate = params["concurrency"], params["request_rate"]
    if (concurrency is None) == (request_rate is None):
        raise InputError(
            "give one of --concurrency N (closed loop) and --request-rate R (open loop)"
        )
    loads: list[tuple[int | None, float | None]]
    if concurrency is not None:
        counts = whole_numbers(split_list(concurrency, "--concurrency"), "--concurrency")
        loads = [(count, None) for count in sorted(counts)]
    else:
        loads = [(None, rate) for rate in sorted(_rates(request_rate))]
    inputs = parse_tokens(params["input_len"], "--input-len")
    outputs = parse_tokens(params["output_len"], "--output-len")
    return [
        Workload(input_len=inputs, output_len=outputs, concurrency=c, request_rate=r, **rest)
        for c, r in loads
    ]


def _rates(text: str) -> list[float]:
    """--request-rate's comma list as numbers (Workload checks each is a usable rate)."""
    from decodecalc.units import ascii_float

    try:
        return [ascii_float(v) for v in split_list(text, "--request-rate")]
    except ValueError:
        raise InputError(
            f"--request-rate {text!r}: expected numbers of requests per second separated by commas"
        ) from None
