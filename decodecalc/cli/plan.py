"""The planning command: which deployments meet a latency, throughput and fit target, and
what each costs per million tokens."""

from typing import TYPE_CHECKING, Annotated, Any

import typer

from decodecalc.cli import (
    ForceOpt,
    Format,
    FormatOpt,
    JsonOpt,
    OutputOpt,
    app,
    destination,
    emit,
    load_catalog,
    note,
    real_number,
    whole_number,
)
from decodecalc.cli.options import ReportOpt, scenario_options, spec_of, split_list, whole_numbers
from decodecalc.errors import Conflict, InputError

if TYPE_CHECKING:
    from collections.abc import Callable

    from decodecalc.loading.catalog import Catalog
    from decodecalc.model.model import Model
    from decodecalc.notes import Note
    from decodecalc.scenarios.scenario import Scenario
    from decodecalc.scenarios.spec import ScenarioSpec

NODE_GPUS = 8
"""The largest TP group plan tries by default: one node's NVLink or Infinity Fabric domain."""
DEFAULT_WEIGHTS = ("fp8", "int4-g128")
"""Weight formats tried besides the model's own, where they store fewer bits than it."""
DEFAULT_KV = ("fp8",)
"""KV formats tried besides the default (the weights' compute format, else BF16)."""


PLAN_HELP = {
    "model": "The model to plan for (one).",
    "gpu": "GPU presets to choose from, comma-separated. Default: every GPU a price list "
    "(presets/prices: lambda, hyperstack) prices.",
    "weights": "Weight formats to try. Default: the model's own, and FP8 and INT4 (group "
    "128) where they store fewer bits.",
    "kv_dtype": "KV formats to try. Default: as for estimate, and FP8.",
    "batch": "One batch for every deployment. Default: the largest that meets the latency "
    "target and fits, up to --max-batch.",
    "tp": "TP sizes to try. Default: every size the heads allow, up to 8.",
    "pp": "Pipeline sizes to try. Default: 1, and 2 and 4 stages of TP 8.",
    "ep": "Only expert-parallel layouts. Default: an MoE model tries both.",
    "price": "Price per GPU-hour: dollars, a price list (lambda, hyperstack), or 'lowest' "
    "(the default: the cheapest list naming each GPU).",
}
"""Help that says what plan does with the scenario options it treats as choices."""


def plan_options(command: "Callable[..., Any]") -> "Callable[..., Any]":
    """The scenario options with plan's help (PLAN_HELP) and no shown defaults, since plan
    chooses where the other commands default; the GPU option is a set to choose from,
    spelled --gpus (--gpu too; no -g: a letter means one option in every command)."""
    import copy
    import inspect
    from typing import get_args

    signature = inspect.signature(command)
    parameters = []
    for p in signature.parameters.values():
        if p.name in PLAN_HELP:
            kind, declared = get_args(p.annotation)
            declared = copy.copy(declared)
            declared.help, declared.show_default = PLAN_HELP[p.name], False
            if p.name == "gpu":  # (under Annotated, Typer keeps the first flag as default)
                declared.default, declared.param_decls = "--gpus", ("--gpu",)
                declared.metavar = "GPUS"
            p = p.replace(annotation=Annotated[kind, declared])
        parameters.append(p)
    setattr(command, "__signature__", signature.replace(parameters=parameters))  # noqa: B010
    return command


@app.command()
@plan_options
@scenario_options(axes=True)
def plan(
    ctx: typer.Context,
    context: Annotated[
        str,
        typer.Option(
            "--context", "-c", help="The context the targets hold at, e.g. 32K.", metavar="TOKENS"
        ),
    ],
    max_ms_per_token: Annotated[
        float | None,
        typer.Option(
            "--max-ms-per-token",
            help="Latency target: the expected ms per output token per sequence at the context.",
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
            help="The most sequences per step when plan chooses the batch (no --batch).",
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
    fmt: FormatOpt = Format.table,
    as_json: JsonOpt = False,
    output: OutputOpt = None,
    page: ReportOpt = None,
    force: ForceOpt = False,
    **scenario_flags: Any,
) -> None:
    """Deployments that meet the targets, cheapest first, and why each other one fails.

    Every GPU x TP x PP (x EP for MoE) x weight format x KV format is tried; each gets
    the largest batch that meets the latency target and fits (or --batch), and replicas
    for the throughput. The table shows the best --top answers and sums up the failing
    options by the target they miss (--why lists each); JSON and CSV hold every option.

    Examples:

      decodecalc plan -m llama-3.1-70b -c 32K --max-ms-per-token 50 --min-throughput 2000

      decodecalc plan -m qwen3-32b --gpus h100-sxm,h200,mi300x --price 2.5 -c 8K --json
    """
    from decodecalc.answers.plan import Targets
    from decodecalc.answers.plan import plan as run_plan
    from decodecalc.context import parse_tokens
    from decodecalc.views.plan import Shown, plan_report

    catalog = load_catalog(ctx.params["presets"])
    # Typer carries its own copy of Click, so the source is matched by name.
    given = {
        name: getattr(ctx.get_parameter_source(name), "name", "DEFAULT") != "DEFAULT"
        for name in ("batch", "tp", "pp", "ep", "price")
    }
    batches = _numbers(ctx.params["batch"], "--batch") if given["batch"] else [None]
    if len(batches) > 1:
        raise InputError("--batch: plan takes one batch (leave it out to have plan solve it)")
    if max_ms_per_token is not None and not 0 < max_ms_per_token < 3_600_000:
        raise InputError("--max-ms-per-token must be more than 0 and under an hour")
    if min_throughput is not None and not 0 < min_throughput <= 1e12:
        raise InputError("--min-throughput must be more than 0 tokens per second")
    if not 1 <= max_gpus <= 100_000 or not 1 <= max_batch <= 1_000_000:
        raise InputError("--max-gpus and --max-batch must be whole numbers of at least 1")
    if top < 0:
        raise InputError("--top must be a whole number of answers, 0 for every one")
    targets = Targets(
        context=parse_tokens(context, "--context"),
        max_seconds_per_token=None if max_ms_per_token is None else max_ms_per_token / 1000,
        min_throughput=min_throughput,
        batch=batches[0],
        max_batch=max_batch,
        max_gpus=max_gpus,
    )
    skipped: list[str] = []
    notes: list[Note] = []
    candidates = _candidates(ctx, catalog, given, max_gpus, skipped, notes)
    if not candidates:
        first = f": {skipped[0]}" if skipped else ""
        raise InputError(f"no deployment to plan{first}")
    # CSV, like JSON, holds every option; a table or Markdown the chosen few.
    machine = as_json or fmt in (Format.json, Format.csv)
    shown = None if machine else Shown(top=None if show_all or top == 0 else top, why=why)
    options = run_plan(candidates, targets)
    emit(plan_report(options, targets, shown, notes), fmt, as_json, False, destination(ctx))
    if page:
        from decodecalc.cli.report import plan_page

        plan_page(ctx, page, options, targets, shown, notes)
    if skipped:
        note(
            f"left out {len(skipped)} combinations that are no valid deployment; "
            f"first: {skipped[0]}"
        )


def _candidates(
    ctx: typer.Context,
    catalog: "Catalog",
    given: dict[str, bool],
    max_gpus: int,
    skipped: list[str],
    notes: "list[Note]",
) -> "list[Scenario]":
    """Every GPU x TP x weight format x KV format the options allow, resolved; invalid
    combinations (a TP that does not split the heads) go to ``skipped``, GPUs the price
    lists leave without a price to ``notes``."""
    import itertools

    from decodecalc.loading.resolve import resolve
    from decodecalc.record import replace

    base = spec_of(ctx)
    if base.bandwidth is not None:
        raise InputError("plan chooses among GPU presets: give --gpus, not --bandwidth")
    models = split_list(str(base.model), "--model")
    engines = _listed(base.engine, "--engine") or [None]
    if len(models) > 1 or len(engines) > 1:
        raise InputError("plan takes one --model and one --engine")
    model = catalog.model(models[0])
    price = base.price if given["price"] else "lowest"
    gpus = _gpus(catalog, base.gpu, price, notes)
    layouts = _layouts(
        model,
        _numbers(str(base.tp), "--tp") if given["tp"] else None,
        _numbers(str(base.pp), "--pp") if given["pp"] else None,
        [True] if given["ep"] else [False, True] if model.moe() else [False],
        max_gpus,
    )
    weights = _listed(base.weights, "--weights") or _default_weights(catalog, model)
    kvs = _listed(base.kv_dtype, "--kv-dtype") or [None, *DEFAULT_KV]
    v_dtypes = _listed(base.v_dtype, "--v-dtype") or [None]
    scenarios: dict[tuple[object, ...], Scenario] = {}
    for gpu, (tp, pp, ep), weight, kv, v in itertools.product(
        gpus, layouts, weights, kvs, v_dtypes
    ):
        spec = replace(
            base,
            model=model,
            gpu=gpu,
            weights=weight,
            kv_dtype=kv,
            v_dtype=v,
            batch=1,
            tp=tp,
            pp=pp,
            ep=ep,
            engine=engines[0],
            price=price,
        )
        try:
            scenario = resolve(spec, catalog)
        except Conflict as exc:  # a bad value (a --link typo) is no layout to leave out
            skipped.append(f"{_describe(spec)}: {exc}")
            continue
        key = (gpu, tp, pp, ep, *_formats(scenario))
        scenarios.setdefault(key, scenario)  # fp8 KV where the default already is fp8
    return list(scenarios.values())


def _gpus(catalog: "Catalog", given: object, price: object, notes: "list[Note]") -> list[str]:
    """The GPUs to choose from: --gpus, each checked now (a typo gets its did-you-mean
    once, not as every candidate left out), or every GPU the price lists price (those
    --price names; with dollars, every list's). GPUs left without a price are left out and
    named in a note, since their cost is unknown."""
    from decodecalc.loading.resolve import price_lists
    from decodecalc.notes import Note

    lists = price_lists(catalog, price)[1] if isinstance(price, str) else []
    one = len(lists) == 1 and str(price).strip().lower() != "lowest"
    where = f"the {lists[0].id} price list" if one else "any price list"
    priced = {gpu for listing in lists or catalog.price_lists() for gpu, _ in listing.prices}
    if not isinstance(given, str):
        ids = sorted(gpu.id for gpu in catalog.gpus())
        unpriced = [gpu for gpu in ids if gpu not in priced]
        if unpriced:
            notes.append(
                Note(
                    "plan-unpriced-gpus",
                    f"not tried, having no price in {where}: {', '.join(unpriced)} (name "
                    "them in --gpus, with --price in dollars per GPU-hour, to plan them)",
                )
            )
        return [gpu for gpu in ids if gpu in priced]
    names = split_list(given, "--gpus")
    for name in names:
        try:
            catalog.gpu(name)
        except InputError as exc:
            raise InputError(f"--gpus: {exc}") from None
    if not lists:
        return list(names)
    unpriced = [name for name in names if catalog.gpu(name).id not in priced]
    if unpriced == names:
        raise InputError(
            f"{where} gives no price for {', '.join(unpriced)}: give --price in dollars per "
            "GPU-hour, e.g. --price 2.49"
        )
    if unpriced:
        notes.append(
            Note(
                "plan-unpriced-gpus",
                f"left out {', '.join(unpriced)}, having no price in {where} (give --price "
                "in dollars per GPU-hour to plan them)",
            )
        )
    return [name for name in names if name not in unpriced]


def _layouts(
    model: "Model",
    tps: list[int] | None,
    pps: list[int] | None,
    eps: list[bool],
    max_gpus: int,
) -> list[tuple[int, int, bool]]:
    """(TP, PP, EP) to try. By default every TP the heads allow within a node, then
    pipeline stages of a full node (2 and 4 of them, across nodes), and for an MoE model
    each TP > 1 with and without expert parallelism; never more GPUs than --max-gpus."""
    node = [t for t in model.valid_tp() if t <= NODE_GPUS]
    chosen_tps = tps or node
    chosen_pps = pps or [1]
    pairs = [(t, p) for t in chosen_tps for p in chosen_pps]
    if tps is None and pps is None and NODE_GPUS in node:
        pairs += [(NODE_GPUS, p) for p in (2, 4)]
    return [(t, p, ep) for t, p in pairs for ep in eps if t * p <= max_gpus and not (ep and t == 1)]


def _default_weights(catalog: "Catalog", model: "Model") -> list[str | None]:
    """The model's own weights, and FP8 and INT4 where they store fewer bits than those."""
    from decodecalc.loading.resolve import resolve_weights

    own = resolve_weights(catalog, None, model)[0]
    fewer = [w for w in DEFAULT_WEIGHTS if catalog.dtype(w).bits_per_value < own.bits_per_value]
    return [None, *fewer]


def _formats(s: "Scenario") -> tuple[str, str]:
    from decodecalc.views.estimate import kv_label, weights_label

    return weights_label(s), kv_label(s)


def _describe(spec: "ScenarioSpec") -> str:
    parts = {
        "gpu": spec.gpu,
        "tp": spec.tp,
        "pp": spec.pp,
        "ep": spec.ep or None,
        "weights": spec.weights,
        "kv": spec.kv_dtype,
    }
    return ", ".join(f"{k}={v}" for k, v in parts.items() if v is not None)


def _listed(value: Any, flag: str) -> list[str | None]:
    return list(split_list(value, flag)) if isinstance(value, str) else []


def _numbers(value: Any, flag: str) -> list[int]:
    """--tp or --pp: whole numbers, each in range whatever --max-gpus leaves out."""
    from decodecalc.scenarios.scenario import MAX_TP, check_count

    numbers = whole_numbers(split_list(str(value), flag), flag)
    for number in numbers:
        check_count(flag.lstrip("-"), number, MAX_TP)
    return numbers
