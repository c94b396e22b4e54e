"""The serving command: a continuously batched server's TTFT, TPOT and throughput under a
workload (docs/serving.md)."""

from typing import TYPE_CHECKING, Annotated, Any

import typer

from decodecalc.cli import (
    Format,
    Output,
    app,
    data_on_stdout,
    destination,
    draw,
    load_catalog,
    output_options,
)
from decodecalc.cli.options import (
    PlotOpt,
    ReportOpt,
    given,
    scenario_of,
    scenario_options,
    split_list,
    workload_options,
    workloads_of,
)
from decodecalc.errors import InputError
from decodecalc.scenarios.workload import WORKLOAD_FIELDS

if TYPE_CHECKING:
    from decodecalc.answers.disaggregated import Pools
    from decodecalc.scenarios.workload import Speculation


SERVING_FIELDS = tuple(f.name for f in WORKLOAD_FIELDS if f.flags)
"""Every serving field with an option: serving takes them all (scenarios/workload.py)."""


@app.command()
@scenario_options(omit=("batch",))
@workload_options(SERVING_FIELDS, sweep=True, required=("input_len", "output_len"))
@output_options
def serving(
    ctx: typer.Context,
    chart: Annotated[
        bool,
        typer.Option("--chart", help="Draw TPOT against output throughput in the terminal."),
    ] = False,
    plot: PlotOpt = None,
    page: ReportOpt = None,
    out: Output = Output(),
    **flags: Any,
) -> None:
    """TTFT, TPOT, ITL and throughput of a continuously batched server under a workload.

    The steady state of a server like vLLM or SGLang: prefill chunks share decode steps,
    the KV pool caps the running requests, Little's law ties latency to throughput. The
    workload sets the batch (the running requests), so serving takes no --batch.

    Examples:

      decodecalc serving -m llama-3.1-8b -g h100-sxm --input-len 1000 --output-len 500
      --concurrency 1,8,32,128

      decodecalc serving -m qwen3-8b -g h100-sxm --input-len 2K --output-len 256
      --request-rate 5

      decodecalc serving -m llama-3.1-70b -g h100-sxm --tp 2 -w fp8 --input-len 1000
      --output-len 500 --concurrency 16 --speculative eagle --acceptance 0.7
    """
    from decodecalc.answers.serving import serve_each
    from decodecalc.context import parse_tokens
    from decodecalc.engine.scheduler import scheduler_limits
    from decodecalc.views.serving import SERVING_AXES, human_view, serving_report, serving_series

    scenario = scenario_of(ctx)
    params = ctx.params
    fmt, as_json = Format(out.fmt), out.as_json
    overrides: dict[str, Any] = {
        "max_num_batched_tokens": _tokens_or_none(params["max_num_batched_tokens"]),
        "max_num_seqs": params["max_num_seqs"],
    }
    if given(ctx, "memory_utilization"):  # given, not the default
        overrides["memory_utilization"] = scenario.memory_utilization
    limits = scheduler_limits(scenario.engine, scenario.gpu, **overrides)
    shared = parse_tokens(params["prefix_len"], "--prefix-len")
    if given(ctx, "prefix_hit_rate") and not shared:
        raise InputError("--prefix-hit-rate needs --prefix-len: the prompt tokens requests share")
    loads = workloads_of(
        params,
        prefix_len=shared,
        prefix_hit_rate=params["prefix_hit_rate"],
        speculative=_speculation(ctx),
        shared_prefix_attention=params["shared_prefix_attention"],
    )
    pools = _pools(ctx, bool(chart or plot))
    if pools is not None:
        from decodecalc.cli.disaggregated import run_disaggregated

        run_disaggregated(ctx, pools, loads, limits, (fmt, as_json, out.to), page)
        return
    results, saturated = serve_each(scenario, loads, limits)
    report = serving_report(results, saturated)
    if not as_json and fmt in (Format.table, Format.markdown):
        report = human_view(report)
    if page:
        from decodecalc.cli.report import serving_page

        serving_page(ctx, page, results, saturated)
    to = out.to
    out.emit(report)
    if chart or plot:
        draw(
            [serving_series(scenario.model.id, results)],
            chart,
            destination(ctx, "plot"),
            SERVING_AXES,
            data=data_on_stdout(fmt, as_json, to),
        )


def _tokens_or_none(text: str | None) -> int | None:
    """--max-num-batched-tokens as a token count (8192 or 8K, as files take it)."""
    from decodecalc.context import parse_tokens

    return None if text is None else parse_tokens(text, "--max-num-batched-tokens")


def _pools(ctx: typer.Context, drawn: bool) -> "Pools | None":
    """The disaggregated pools the --prefill-* and --decode-* options describe (None: one
    pool, and then no option of theirs may be given)."""
    params = ctx.params
    if params["prefill_workers"] is None and params["decode_workers"] is None:
        stray = [
            f.flags[0].split("/")[0]
            for f in WORKLOAD_FIELDS
            if f.key is not None and f.key[0] in ("prefill", "kv_link") and f.flags
            if params[f.name] is not None
        ]
        if stray:
            raise InputError(
                f"{stray[0]} describes disaggregated serving: give --prefill-workers and "
                "--decode-workers too"
            )
        return None
    from decodecalc.cli.disaggregated import pools_of

    if drawn:
        raise InputError(
            "--chart and --plot draw one pool's curve: leave them out with "
            "--prefill-workers and --decode-workers (--report draws both pools)"
        )
    layout = {name: params[f"prefill_{name}"] for name in ("tp", "ep", "dp_attention")}
    return pools_of(
        ctx, params["prefill_workers"], params["decode_workers"], layout, params["kv_link"]
    )


def _speculation(ctx: typer.Context) -> "Speculation | None":
    """The --speculative options as a Speculation: a method name, or a draft model preset."""
    from decodecalc.resolving.resolve import resolve_weights
    from decodecalc.scenarios.workload import METHODS, Speculation
    from decodecalc.units import ascii_float

    method, proposed = ctx.params["speculative"], ctx.params["num_speculative_tokens"]
    acceptance = ctx.params["acceptance"]

    if method is None:
        for name, flag in (
            ("acceptance", "--acceptance"),
            ("num_speculative_tokens", "--num-speculative-tokens"),
        ):
            if given(ctx, name):
                raise InputError(f"{flag} needs --speculative (eagle, mtp or a draft model)")
        return None
    if acceptance is None:
        raise InputError(
            "--speculative needs --acceptance: the share of proposed tokens accepted "
            "(one rate, or one per position as vLLM logs them)"
        )
    try:
        rates = tuple(ascii_float(v) for v in split_list(acceptance, "--acceptance"))
    except ValueError:
        raise InputError(
            f"--acceptance {acceptance!r}: expected numbers separated by commas"
        ) from None
    word = method.strip().lower()
    if word in METHODS and word != "draft":
        return Speculation(word, proposed, rates)
    catalog = load_catalog(ctx.params.get("presets"))
    try:
        draft = catalog.model(method)
    except InputError as exc:
        from decodecalc.loading.fields import suggest

        hint = suggest(word, [m for m in METHODS if m != "draft"])  # eagel, mpt
        raise InputError(
            f"--speculative {method!r} is not eagle, mtp or a draft model preset"
            + (hint or f": {exc}")
        ) from None
    return Speculation("draft", proposed, rates, draft, resolve_weights(catalog, None, draft))
