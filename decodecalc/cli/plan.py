"""The planning command: which deployments meet a latency, throughput and fit target, and
what each costs per million tokens."""

from typing import TYPE_CHECKING, Annotated, Any

import typer

from decodecalc.cli import (
    Format,
    Output,
    app,
    load_catalog,
    note,
    output_options,
    real_number,
    whole_number,
)
from decodecalc.cli.options import (
    ReportOpt,
    refuse_links_unused,
    scenario_options,
    spec_of,
    split_list,
    whole_numbers,
    workload_options,
    workloads_of,
)
from decodecalc.errors import InputError

if TYPE_CHECKING:
    from collections.abc import Callable

    from decodecalc.answers.plan import Choices, Targets
    from decodecalc.loading.catalog import Catalog
    from decodecalc.scenarios.spec import ScenarioSpec
    from decodecalc.scenarios.workload import Workload

PLAN_HELP = {
    "model": "The model to plan for (one).",
    "engine": "The engine profile to expect (one; 'decodecalc engines' lists them). Default: "
    "'typical'.",
    "gpu": "GPU presets to choose from, comma-separated. Default: every GPU a price list "
    "(presets/prices: hyperstack, lambda, vultr) prices.",
    "weights": "Weight formats to try. Default: the model's own, and FP8 and INT4 (group "
    "128) where they store fewer bits.",
    "kv_dtype": "KV formats to try. Default: as for estimate, and FP8.",
    "batch": "One batch for every deployment. Default: the largest that meets the latency "
    "target and fits, up to --max-batch.",
    "tp": "TP sizes to try. Default: every size the heads allow, up to 8.",
    "pp": "Pipeline sizes to try. Default: 1, and 2 and 4 stages of TP 8.",
    "ep": "Only expert-parallel layouts. Default: an MoE model tries both.",
    "price": "Price per GPU-hour: dollars, a price list (hyperstack, lambda, vultr), or 'lowest' "
    "(the default: the cheapest list naming each GPU).",
}
"""Help that says what plan does with the scenario options it treats as choices."""


def plan_options(command: "Callable[..., Any]") -> "Callable[..., Any]":
    """The scenario options with plan's help (PLAN_HELP) and no shown defaults, since plan
    chooses where the other commands default; the GPU option is a set to choose from,
    spelled --gpus (--gpu and -g too, as every other command's GPU option, compare's list
    of GPUs among them)."""
    import copy
    import inspect

    signature = inspect.signature(command)
    parameters = []
    for p in signature.parameters.values():
        if p.name in PLAN_HELP:
            declared = copy.copy(p.default)  # (the declaration stands as the default)
            declared.help, declared.show_default = PLAN_HELP[p.name], False
            if p.name == "gpu":
                declared.param_decls = ("--gpus", "--gpu", "-g")
                declared.metavar = "GPUS"
            if p.name == "engine":
                declared.metavar = "ENGINE"
            p = p.replace(default=declared)
        parameters.append(p)
    setattr(command, "__signature__", signature.replace(parameters=parameters))  # noqa: B010
    return command


PLAN_WORKLOAD_HELP = {
    "input_len": "The workload: prompt tokens per request, with --output-len and one of "
    "--concurrency and --request-rate; plan then ranks the servers serving prices.",
    "output_len": "The workload: output tokens per request.",
    "concurrency": "The workload: requests kept in flight per replica (closed loop).",
    "request_rate": "The workload: requests per second per replica, Poisson arrivals (open loop).",
}
"""Help that says how plan reads a workload: one load, per replica."""


@app.command()
@plan_options
@scenario_options(axes=True)
@workload_options(tuple(PLAN_WORKLOAD_HELP), help=PLAN_WORKLOAD_HELP, after="context")
@output_options
def plan(
    ctx: typer.Context,
    context: Annotated[
        str | None,
        typer.Option(
            "--context",
            "-c",
            help="The context the targets hold at, e.g. 32K: a decode step of --batch "
            "sequences there (without a workload; required then).",
            metavar="TOKENS",
        ),
    ] = None,
    max_ms_per_token: Annotated[
        float | None,
        typer.Option(
            "--max-ms-per-token",
            help="Latency target: the expected ms per output token per sequence: the step at "
            "--context, or under a workload its TPOT.",
            parser=real_number,
            metavar="MS",
        ),
    ] = None,
    disaggregated: Annotated[
        bool,
        typer.Option(
            "--disaggregated",
            help="Under a workload: also try separate prefill and decode pools (1-3 "
            "workers each, over InfiniBand NDR) of the best layouts.",
        ),
    ] = False,
    max_ttft_ms: Annotated[
        float | None,
        typer.Option(
            "--max-ttft-ms",
            help="Under a workload: the mean time to first token, in ms.",
            parser=real_number,
            metavar="MS",
        ),
    ] = None,
    min_throughput: Annotated[
        float | None,
        typer.Option(
            "--min-throughput",
            help="Throughput target: output tokens per second over all replicas.",
            parser=real_number,
            metavar="TOK/S",
        ),
    ] = None,
    max_gpus: Annotated[
        int,
        typer.Option(
            "--max-gpus",
            help="The most GPUs in all (TP x PP x replicas).",
            parser=whole_number,
            metavar="N",
        ),
    ] = 64,
    max_batch: Annotated[
        int,
        typer.Option(
            "--max-batch",
            help="The most sequences per step when plan chooses the batch (no --batch); "
            "1 to 1,000,000, as --batch.",
            parser=whole_number,
            metavar="N",
        ),
    ] = 256,
    top: Annotated[
        int,
        typer.Option(
            "--top",
            help="The best answers a table shows (0: every one). JSON and CSV hold every option.",
            parser=whole_number,
            metavar="N",
        ),
    ] = 10,
    show_all: Annotated[
        bool, typer.Option("--all", help="Every answer in the table (as --top 0).")
    ] = False,
    why: Annotated[
        bool,
        typer.Option(
            "--why",
            help="Every failing option in the table too, with the targets it misses "
            "(default: a summary by target, with the closest of each kind).",
        ),
    ] = False,
    page: ReportOpt = None,
    out: Output = Output(),
    **flags: Any,
) -> None:
    """Deployments that meet the targets, cheapest first, and why each other one fails.

    Every GPU x TP x PP (x EP for MoE) x weight format x KV format is tried. With a
    workload (--input-len, --output-len and --concurrency or --request-rate, as serving
    takes them), each is the server serving prices: TPOT against --max-ms-per-token,
    prefill included, and cost from its output throughput. Without one, each gets the
    largest decode batch that meets the latency target at --context and fits (or --batch).
    Replicas carry the throughput. The table shows the best --top answers and sums up the
    failing options by the target they miss (--why lists each); JSON and CSV hold every
    option.

    Examples:

      decodecalc plan -m llama-3.1-70b --input-len 2K --output-len 256 --concurrency 64
      --max-ms-per-token 30

      decodecalc plan -m llama-3.1-70b -c 32K --max-ms-per-token 50 --min-throughput 2000

      decodecalc plan -m qwen3-32b --gpus h100-sxm,h200,mi300x --price 2.5 -c 8K --json
    """
    from decodecalc.answers.plan import candidates
    from decodecalc.answers.plan import plan as run_plan
    from decodecalc.views.plan import Shown, plan_report

    catalog = load_catalog(ctx.params["presets"])
    fmt, as_json = Format(out.fmt), out.as_json
    # Typer carries its own copy of Click, so the source is matched by name.
    given = {
        name: getattr(ctx.get_parameter_source(name), "name", "DEFAULT") != "DEFAULT"
        for name in ("batch", "tp", "pp", "ep", "price", "max_batch", "memory_utilization")
    }
    if top < 0:
        raise InputError("--top must be a whole number of answers, 0 for every one")
    targets = _targets(ctx, context, max_ms_per_token, min_throughput, given)
    if max_ttft_ms is not None:
        targets = _with_ttft(targets, max_ttft_ms)
    if disaggregated:
        targets = _with_pools(targets, catalog)
    found = candidates(*_choices(ctx, catalog, given))
    if not found.scenarios:
        first = f": {found.skipped[0]}" if found.skipped else ""
        raise InputError(f"no deployment to plan{first}")
    refuse_links_unused(ctx, [(s.gpus, s.node_link is not None) for s in found.scenarios])
    # CSV, like JSON, holds every option; a table or Markdown the chosen few.
    machine = as_json or fmt in (Format.json, Format.csv)
    shown = None if machine else Shown(top=None if show_all or top == 0 else top, why=why)
    options = run_plan(found.scenarios, targets)
    report = plan_report(options, targets, shown, found.notes)
    if page:
        from decodecalc.cli.report import plan_page

        plan_page(ctx, page, options, targets, shown, found.notes)
    out.emit(report)
    if found.skipped:
        from decodecalc.answers.sweep import skipped_note

        note(skipped_note(found.skipped, "left out").message)


def _with_ttft(targets: "Targets", max_ttft_ms: float) -> "Targets":
    """--max-ttft-ms, which only a workload has (a decode step has no first token)."""
    from decodecalc.record import replace

    if targets.workload is None:
        raise InputError(
            "--max-ttft-ms holds a server under a workload: give --input-len, --output-len "
            "and --concurrency or --request-rate"
        )
    if not 0 < max_ttft_ms < 3_600_000:
        raise InputError("--max-ttft-ms must be more than 0 and under an hour")
    return replace(targets, max_ttft_seconds=max_ttft_ms / 1000)


def _with_pools(targets: "Targets", catalog: Any) -> "Targets":
    """--disaggregated, which only a workload has; the KV crosses InfiniBand NDR."""
    from decodecalc.record import replace
    from decodecalc.resolving.resolve import DEFAULT_NODE_LINK

    if targets.workload is None:
        raise InputError(
            "--disaggregated splits a server into prefill and decode pools: give a workload "
            "(--input-len, --output-len and --concurrency or --request-rate)"
        )
    return replace(targets, disaggregated=True, kv_link=catalog.link(DEFAULT_NODE_LINK))


def _targets(
    ctx: typer.Context,
    context: str | None,
    max_ms_per_token: float | None,
    min_throughput: float | None,
    given: dict[str, bool],
) -> "Targets":
    """The targets the options give: a workload (its four options) or a context, each
    refused where the other sets it."""
    from decodecalc.answers.plan import Targets
    from decodecalc.context import parse_tokens

    if max_ms_per_token is not None and not 0 < max_ms_per_token < 3_600_000:
        raise InputError("--max-ms-per-token must be more than 0 and under an hour")
    if min_throughput is not None and not 0 < min_throughput <= 1e12:
        raise InputError("--min-throughput must be more than 0 tokens per second")
    from decodecalc.scenarios.fields import MAX_BATCH

    max_gpus, max_batch = ctx.params["max_gpus"], ctx.params["max_batch"]
    if not 1 <= max_gpus <= 100_000:
        raise InputError(f"--max-gpus {max_gpus} must be a whole number from 1 to 100,000")
    if not 1 <= max_batch <= MAX_BATCH:
        raise InputError(f"--max-batch {max_batch} must be a whole number from 1 to {MAX_BATCH:,}")
    common = {
        "max_seconds_per_token": None if max_ms_per_token is None else max_ms_per_token / 1000,
        "min_throughput": min_throughput,
        "max_gpus": max_gpus,
    }
    if all(ctx.params[name] is None for name in PLAN_WORKLOAD_HELP):
        if context is None:
            raise InputError(
                "give --context (a decode step at that context) or a workload "
                "(--input-len, --output-len and --concurrency or --request-rate)"
            )
        batches = _numbers(ctx.params["batch"], "--batch") if given["batch"] else [None]
        if len(batches) > 1:
            raise InputError("--batch: plan takes one batch (leave it out to have plan solve it)")
        return Targets(
            parse_tokens(context, "--context"), batch=batches[0], max_batch=max_batch, **common
        )
    workload = _workload(ctx.params, context, given)
    return Targets(
        workload.input_len + workload.output_len,
        workload=workload,
        memory_utilization=ctx.params["memory_utilization"]
        if given["memory_utilization"]
        else None,
        **common,
    )


def _workload(params: dict[str, Any], context: str | None, given: dict[str, bool]) -> "Workload":
    """The workload's four options as serving reads them (one load, not a sweep); a
    context or a batch beside it is refused, since the workload sets both."""
    setting = [
        flag
        for flag, set_ in (
            ("--context", context is not None),
            ("--batch", given["batch"]),
            ("--max-batch", given["max_batch"]),
        )
        if set_
    ]
    if setting:
        raise InputError(
            f"{', '.join(setting)}: the workload sets the context and the batch (leave "
            f"{'it' if len(setting) == 1 else 'them'} out, or give no workload)"
        )
    if params["input_len"] is None or params["output_len"] is None:
        raise InputError("a workload needs --input-len and --output-len")
    found = workloads_of(params)
    if len(found) > 1:
        raise InputError("plan takes one load: one --concurrency or one --request-rate")
    return found[0]


def _choices(
    ctx: typer.Context, catalog: "Catalog", given: dict[str, bool]
) -> "tuple[Catalog, ScenarioSpec, Choices]":
    """What the candidates are made of: the shared scenario options and the lists to try."""
    from decodecalc.answers.plan import Choices
    from decodecalc.record import replace

    base = spec_of(ctx)
    if base.bandwidth is not None:
        raise InputError("plan chooses among GPU presets: give --gpus, not --bandwidth")
    models = split_list(str(base.model), "--model")
    engines = _listed(base.engine, "--engine") or [None]
    if len(models) > 1 or len(engines) > 1:
        raise InputError("plan takes one --model and one --engine")
    choices = Choices(
        gpus=_tuple(base.gpu, "--gpus"),
        tps=tuple(_numbers(base.tp, "--tp")) if given["tp"] else None,
        pps=tuple(_numbers(base.pp, "--pp")) if given["pp"] else None,
        ep_only=given["ep"],
        weights=_tuple(base.weights, "--weights"),
        kv_dtypes=_tuple(base.kv_dtype, "--kv-dtype"),
        v_dtypes=_tuple(base.v_dtype, "--v-dtype"),
        price=base.price if given["price"] else "lowest",
        max_gpus=ctx.params["max_gpus"],
    )
    return catalog, replace(base, model=models[0], engine=engines[0]), choices


def _tuple(value: Any, flag: str) -> tuple[str, ...] | None:
    """A comma list as given, None where the option was left out (plan chooses)."""
    return tuple(split_list(value, flag)) if isinstance(value, str) else None


def _listed(value: Any, flag: str) -> list[str | None]:
    return list(split_list(value, flag)) if isinstance(value, str) else []


def _numbers(value: Any, flag: str) -> list[int]:
    """--tp, --pp or --batch: whole numbers, each in the range estimate takes (a batch up to
    MAX_BATCH, as --max-batch, so plan never proposes one it would refuse), whatever
    --max-gpus leaves out."""
    from decodecalc.scenarios.fields import MAX_BATCH, MAX_TP
    from decodecalc.scenarios.scenario import check_count

    numbers = whole_numbers(split_list(str(value), flag), flag)
    for number in numbers:
        check_count(flag.lstrip("-"), number, MAX_BATCH if flag == "--batch" else MAX_TP)
    return numbers
