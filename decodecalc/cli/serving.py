"""The serving command: a continuously batched server's TTFT, TPOT and throughput under a
workload (docs/serving.md)."""

from typing import TYPE_CHECKING, Annotated, Any

import typer

from decodecalc.cli import (
    ForceOpt,
    Format,
    FormatOpt,
    JsonOpt,
    OutputOpt,
    app,
    data_on_stdout,
    destination,
    draw,
    emit,
    load_catalog,
    real_number,
    whole_number,
)
from decodecalc.cli.options import (
    ChartOpt,
    PlotOpt,
    ReportOpt,
    given,
    roofline_only,
    scenario_of,
    scenario_options,
    split_list,
    whole_numbers,
)
from decodecalc.errors import InputError

if TYPE_CHECKING:
    from decodecalc.scenarios.scenario import Scenario
    from decodecalc.scenarios.workload import Speculation, Workload


@app.command()
@scenario_options(omit=("batch",))
def serving(
    ctx: typer.Context,
    input_len: Annotated[
        str,
        typer.Option(
            "--input-len", help="Prompt tokens per request, e.g. 1000 or 4K.", metavar="TOKENS"
        ),
    ],
    output_len: Annotated[
        str,
        typer.Option(
            "--output-len", help="Output tokens per request (at least 2).", metavar="TOKENS"
        ),
    ],
    concurrency: Annotated[
        str | None,
        typer.Option(
            "--concurrency",
            help="Requests kept in flight (closed loop, like --max-concurrency); a comma "
            "list sweeps it and draws the throughput-latency curve.",
            metavar="N[,N...]",
        ),
    ] = None,
    request_rate: Annotated[
        str | None,
        typer.Option(
            "--request-rate",
            help="Requests per second, Poisson arrivals (open loop); a comma list sweeps it.",
            metavar="RATE[,RATE...]",
        ),
    ] = None,
    max_num_batched_tokens: Annotated[
        int | None,
        typer.Option(
            "--max-num-batched-tokens",
            help="Tokens one step may carry, the chunked-prefill budget (default: the engine's).",
            parser=whole_number,
            metavar="N",
        ),
    ] = None,
    max_num_seqs: Annotated[
        int | None,
        typer.Option(
            "--max-num-seqs",
            help="Requests one step may carry (default: the engine's).",
            parser=whole_number,
            metavar="N",
        ),
    ] = None,
    prefix_len: Annotated[
        str,
        typer.Option(
            "--prefix-len",
            help="Prompt tokens every request shares at its start.",
            metavar="TOKENS",
        ),
    ] = "0",
    prefix_hit_rate: Annotated[
        float,
        typer.Option(
            "--prefix-hit-rate",
            help="Share of requests finding the shared prefix in the prefix cache.",
            parser=real_number,
            metavar="FRACTION",
        ),
    ] = 1.0,
    shared_prefix_attention: Annotated[
        bool | None,
        typer.Option(
            "--shared-prefix-attention/--no-shared-prefix-attention",
            help="Read the shared prefix once per step for the whole batch (cascade "
            "attention). Default: on for vllm, off for other engines.",
        ),
    ] = None,
    speculative: Annotated[
        str | None,
        typer.Option(
            "--speculative",
            help="Speculative decoding: eagle, mtp, or a draft model preset.",
            metavar="METHOD",
        ),
    ] = None,
    num_speculative_tokens: Annotated[
        int,
        typer.Option(
            "--num-speculative-tokens",
            help="Tokens proposed per step (k).",
            parser=whole_number,
            metavar="K",
        ),
    ] = 3,
    acceptance: Annotated[
        str | None,
        typer.Option(
            "--acceptance",
            help="Acceptance: one per-token rate in [0, 1), or k per-position rates as vLLM "
            "logs them, e.g. 0.8 or 0.9,0.75,0.6.",
            metavar="RATE[,RATE...]",
        ),
    ] = None,
    prefill_workers: Annotated[
        int | None,
        typer.Option(
            "--prefill-workers",
            help="Disaggregated serving: prefill workers (engine instances) on their own "
            "GPUs; needs --decode-workers.",
            parser=whole_number,
            metavar="P",
        ),
    ] = None,
    decode_workers: Annotated[
        int | None,
        typer.Option(
            "--decode-workers",
            help="Disaggregated serving: decode workers, each with the scenario's --tp, --ep "
            "and --dp-attention; needs --prefill-workers.",
            parser=whole_number,
            metavar="D",
        ),
    ] = None,
    prefill_tp: Annotated[
        int | None,
        typer.Option(
            "--prefill-tp",
            help="Each prefill worker's TP (default: the decode workers' --tp).",
            parser=whole_number,
            metavar="N",
        ),
    ] = None,
    prefill_ep: Annotated[
        bool | None,
        typer.Option(
            "--prefill-ep/--no-prefill-ep",
            help="Expert parallelism in the prefill workers (default: as --ep).",
        ),
    ] = None,
    prefill_dp_attention: Annotated[
        bool | None,
        typer.Option(
            "--prefill-dp-attention/--no-prefill-dp-attention",
            help="Data-parallel attention in the prefill workers (default: as --dp-attention).",
        ),
    ] = None,
    kv_link: Annotated[
        str | None,
        typer.Option(
            "--kv-link",
            help="Link the prompt's KV crosses from a prefill to a decode worker (a link "
            "preset; 'none': no transfer time). Default: the network between nodes.",
            metavar="LINK",
        ),
    ] = None,
    fmt: FormatOpt = Format.table,
    as_json: JsonOpt = False,
    output: OutputOpt = None,
    force: ForceOpt = False,
    chart: ChartOpt = False,
    plot: PlotOpt = None,
    page: ReportOpt = None,
    **scenario_flags: Any,
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
    roofline_only(ctx, scenario.engine.id, "serving")
    overrides: dict[str, Any] = {
        "max_num_batched_tokens": max_num_batched_tokens,
        "max_num_seqs": max_num_seqs,
    }
    if given(ctx, "memory_utilization"):  # given, not the default
        overrides["memory_utilization"] = scenario.memory_utilization
    limits = scheduler_limits(scenario.engine, scenario.gpu, **overrides)
    shared = parse_tokens(prefix_len, "--prefix-len")
    if given(ctx, "prefix_hit_rate") and not shared:
        raise InputError("--prefix-hit-rate needs --prefix-len: the prompt tokens requests share")
    loads = workloads(
        input_len,
        output_len,
        concurrency,
        request_rate,
        prefix_len=shared,
        prefix_hit_rate=prefix_hit_rate,
        speculative=_speculation(ctx, scenario, speculative, num_speculative_tokens, acceptance),
        shared_prefix_attention=shared_prefix_attention,
    )
    if prefill_workers is not None or decode_workers is not None:
        from decodecalc.cli.disaggregated import pools_of, run_disaggregated

        if chart or plot or page:
            raise InputError(
                "--chart, --plot and --report draw one pool's curve: leave them out with "
                "--prefill-workers and --decode-workers"
            )
        layout = {"tp": prefill_tp, "ep": prefill_ep, "dp_attention": prefill_dp_attention}
        pools = pools_of(ctx, prefill_workers, decode_workers, layout, kv_link)
        run_disaggregated(pools, loads, limits, fmt, as_json, destination(ctx))
        return
    pool_only = {
        "--prefill-tp": prefill_tp,
        "--prefill-ep": prefill_ep,
        "--prefill-dp-attention": prefill_dp_attention,
        "--kv-link": kv_link,
    }
    stray = [flag for flag, value in pool_only.items() if value is not None]
    if stray:
        raise InputError(
            f"{stray[0]} describes disaggregated serving: give --prefill-workers and "
            "--decode-workers too"
        )
    results, saturated = serve_each(scenario, loads, limits)
    report = serving_report(results, saturated)
    if not as_json and fmt in (Format.table, Format.markdown):
        report = human_view(report)
    if page:
        from decodecalc.cli.report import serving_page

        serving_page(ctx, page, results)
    to = destination(ctx)
    emit(report, fmt, as_json, False, to)
    if chart or plot:
        draw(
            [serving_series(scenario.model.id, results)],
            chart,
            destination(ctx, "plot"),
            SERVING_AXES,
            data=data_on_stdout(fmt, as_json, to),
        )


def workloads(
    input_len: str,
    output_len: str,
    concurrency: str | None,
    request_rate: str | None,
    **rest: Any,
) -> "list[Workload]":
    """--input-len, --output-len and one of --concurrency (closed loop) and --request-rate
    (open loop), each load a comma list, as one workload per load in increasing order (a
    sweep: the curve in order); ``rest``: the other Workload fields. serving and plan take
    a workload the same way."""
    from decodecalc.context import parse_tokens
    from decodecalc.scenarios.workload import Workload

    if (concurrency is None) == (request_rate is None):
        raise InputError(
            "give one of --concurrency N (closed loop) and --request-rate R (open loop)"
        )
    loads: list[tuple[int | None, float | None]]
    if concurrency is not None:
        counts = whole_numbers(split_list(concurrency, "--concurrency"), "--concurrency")
        loads = [(count, None) for count in sorted(counts)]
    else:
        loads = [(None, rate) for rate in sorted(_rates(request_rate or ""))]
    inputs = parse_tokens(input_len, "--input-len")
    outputs = parse_tokens(output_len, "--output-len")
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


def _speculation(
    ctx: typer.Context,
    scenario: "Scenario",
    method: str | None,
    proposed: int,
    acceptance: str | None,
) -> "Speculation | None":
    """The --speculative options as a Speculation: a method name, or a draft model preset."""
    from decodecalc.scenarios.workload import METHODS, Speculation
    from decodecalc.units import ascii_float

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
    try:
        draft = load_catalog(ctx.params.get("presets")).model(method)
    except InputError as exc:
        raise InputError(
            f"--speculative {method!r} is not eagle, mtp or a draft model preset: {exc}"
        ) from None
    return Speculation("draft", proposed, rates, draft)
