"""The generate command: how long one whole answer takes, prefill and decode."""

from typing import Annotated, Any

import typer

from decodecalc.cli import Format, Output, app, output_options
from decodecalc.cli.options import refuse_unused, scenario_of, scenario_options
from decodecalc.errors import InputError


@app.command()
@scenario_options()
@output_options
def generate(
    ctx: typer.Context,
    prompt: Annotated[
        str, typer.Option("--prompt", "-p", help="Prompt tokens, e.g. 2K.", metavar="TOKENS")
    ],
    tokens: Annotated[
        str, typer.Option("--tokens", "-n", help="Tokens to generate, e.g. 512.", metavar="TOKENS")
    ],
    out: Output = Output(),
    **scenario_flags: Any,
) -> None:
    """How long a whole answer takes: prefill (time to first token) and N - 1 decode steps.

    The prefill yields the first token; decode step i (1 .. N-1) reads a cache of P + i
    tokens, the steps summed exactly. The roofline prefill is max(compute, memory) plus
    communication; an engine's is serving's TTFT at concurrency 1 (its prefill efficiency
    and per-request cost).

    Example: decodecalc generate -m llama-3.1-8b -g h100 --prompt 8K --tokens 1K
    """
    from decodecalc.answers.generate import generate as run_generate
    from decodecalc.context import MAX_CONTEXT_TOKENS, parse_tokens
    from decodecalc.views.generation import generation_report, generation_rows

    refuse_unused(
        ctx,
        {
            "memory_utilization": "an answer's time does not depend on the memory left "
            "(estimate says what fits)",
            "price": "it times one answer (estimate and serving price tokens)",
            "power": "it times one answer (estimate gives energy per token)",
        },
    )
    scenario = scenario_of(ctx)
    prompt_tokens = parse_tokens(prompt, "--prompt")
    new_tokens = parse_tokens(tokens, "--tokens")
    final = prompt_tokens + new_tokens
    if final > MAX_CONTEXT_TOKENS:
        raise InputError(
            f"--prompt {prompt} plus --tokens {tokens} reach a context of {final:,} tokens; "
            f"the limit is {MAX_CONTEXT_TOKENS:,}"
        )
    report = generation_report(run_generate(scenario, prompt_tokens, new_tokens))
    if out.format is Format.csv:
        report = generation_rows(report)
    out.emit(report)
