"""The HTML report page: ``decodecalc report COMMAND ARGS -o FILE.html``, and the
``--report FILE.html`` hook of estimate, compare, serving and plan.

Each hook takes the result its command computed, builds the same reports the other
formats print (views/page.py reads their documents) and writes one page. Nothing here is
imported unless a page is asked for, so a plain query starts as fast as before.
"""

from __future__ import annotations

import contextlib
import io
import shlex
from collections.abc import Sequence
from typing import TYPE_CHECKING, Annotated, Any

import typer

from decodecalc.cli import EXIT_OK, app, load_catalog, note
from decodecalc.errors import InputError

if TYPE_CHECKING:
    from decodecalc.answers.estimate import Estimate
    from decodecalc.answers.plan import Option, Targets
    from decodecalc.answers.serving import Saturated, ServingResult
    from decodecalc.notes import Note
    from decodecalc.views.page import Page
    from decodecalc.views.plan import Shown

PAGES = ("estimate", "compare", "serving", "plan")
"""The commands that draw a page; a report with none named draws estimate's."""

OTHER_FORMATS = ("--json", "--format", "-f")
"""The command's options that choose what stdout carries: report has no stdout to give
them, so they are refused, not silently dropped."""


def _page_file(name: str) -> str:
    """report's -o: an HTML page's file, checked as --report's is."""
    from decodecalc.cli.options import html_file

    return html_file(name)


def _other_format(args: Sequence[str]) -> str | None:
    """The first of args that asks for a format other than the page (``--json``,
    ``-f csv``, ``--format=csv``, ``-fcsv``), or None."""
    for at, arg in enumerate(args):
        if arg in ("--format", "-f"):  # its value follows: name both
            return " ".join(args[at : at + 2])
        if arg.partition("=")[0] in OTHER_FORMATS or (arg[:2] == "-f" and arg[:3] != "--f"):
            return arg
    return None


@app.command(
    context_settings={"allow_extra_args": True, "ignore_unknown_options": True},
    options_metavar="[estimate|compare|serving|plan] ARGS... -o FILE.html",
)
def report(
    ctx: typer.Context,
    output: Annotated[
        str,
        typer.Option(
            "--output",
            "-o",
            help="The HTML file to write.",
            metavar="FILE.html",
            callback=_page_file,
        ),
    ],
) -> None:
    """One self-contained HTML page of an answer: interactive charts, the scenario with
    its presets' sources, the tables, the worked step and the notes (needs
    decodecalc[report]). The same as the command's --report FILE.html, without its table.

    ARGS are those of estimate (the default), compare, serving or plan, named first.

    Examples:

      decodecalc report -m llama-3.1-70b -g h100-sxm -w fp8 -k fp8 -o llama.html

      decodecalc report serving -m llama-3.1-8b -g h100-sxm --input-len 1000
      --output-len 500 --concurrency 1,8,32,128 -o serving.html
    """
    from decodecalc.cli import _command

    args = list(ctx.args)
    if not args or args[0] not in PAGES:
        if args and not args[0].startswith("-"):
            raise InputError(
                f"report draws a page of {', '.join(PAGES)}, not {args[0]!r} (name the "
                "command first, or give estimate's options alone)"
            )
        args = ["estimate", *args]
    if any(a == "--report" or a.startswith("--report=") for a in args):
        raise InputError(
            "report writes its page to -o FILE.html; --report is the option of "
            f"'decodecalc {args[0]}' run with its table"
        )
    other = _other_format(args)
    if other is not None:
        raise InputError(
            f"{other}: report writes only the HTML page (-o FILE.html); did you mean "
            f"'decodecalc {args[0]} ... {other}'?"
        )
    # The command runs as it would, its table going nowhere: the page is the output.
    with contextlib.redirect_stdout(io.StringIO()):
        code = _command(args).main(
            args=[*args, "--report", output],
            prog_name="decodecalc",
            standalone_mode=False,
            obj=ctx.obj,
        )
    # The command's own exit (130 when interrupted, 1...) is report's: dropped, a page
    # never written read as success.
    if isinstance(code, int) and code != EXIT_OK:
        raise typer.Exit(code)


def estimate_page(ctx: typer.Context, path: str, result: Estimate) -> None:
    """estimate's page, its worked step at the longest context shown."""
    from decodecalc.answers.explain import explain
    from decodecalc.views.estimate import estimate_report, human_view
    from decodecalc.views.explain import explain_report
    from decodecalc.views.page import estimate_page as page_of

    s = result.scenario
    step = explain_report(explain(s, result.rows[-1].context_tokens))
    report = human_view(estimate_report(result), s.batch)
    _write(ctx, path, page_of(report, step, _sources(ctx, [s]), command_line(ctx)))


def compare_page(
    ctx: typer.Context,
    path: str,
    estimates: Sequence[Estimate],
    contexts: Sequence[int],
    notes: Sequence[Note] = (),
) -> None:
    """compare's page, the first scenario's step worked at the longest context; ``notes``:
    the run's own beside the estimates' (the combinations it skipped), as it prints them."""
    from decodecalc.answers.explain import explain
    from decodecalc.views.compare import compare_report, headline_view
    from decodecalc.views.explain import explain_report
    from decodecalc.views.page import compare_page as page_of

    step = explain_report(explain(estimates[0].scenario, max(contexts)))
    report = headline_view(compare_report(estimates, contexts, notes))
    scenarios = [e.scenario for e in estimates]
    _write(ctx, path, page_of(report, step, _sources(ctx, scenarios), command_line(ctx)))


def serving_page(
    ctx: typer.Context,
    path: str,
    results: Sequence[ServingResult],
    saturated: Sequence[Saturated] = (),
) -> None:
    """serving's page, with the request rates past saturation the run reports (no row)."""
    from decodecalc.views.page import serving_page as page_of
    from decodecalc.views.serving import human_view, serving_report

    report = human_view(serving_report(results, saturated))
    sources = _sources(ctx, [results[0].scenario])
    _write(ctx, path, page_of(report, sources, command_line(ctx)))


def disaggregated_page(
    ctx: typer.Context, path: str, results: Sequence[Any], saturated: Sequence[Saturated] = ()
) -> None:
    """serving's page for two pools: each pool's section and both workers' scenarios, and
    the request rates past the pools' saturation the run reports."""
    from decodecalc.views.disaggregated import disaggregated_report, human_disaggregated
    from decodecalc.views.estimate import scenario_inputs
    from decodecalc.views.page import disaggregated_page as page_of

    report = human_disaggregated(disaggregated_report(results, saturated))
    pools = results[0].pools
    workload = report.document["workload"]
    inputs = [
        {**scenario_inputs(s), "label": f"{name} worker", **workload}
        for name, s in (("prefill", pools.prefill), ("decode", pools.decode))
    ]
    sources = _sources(ctx, [pools.prefill, pools.decode])
    _write(ctx, path, page_of(report, inputs, sources, command_line(ctx)))


def plan_page(
    ctx: typer.Context,
    path: str,
    options: Sequence[Option],
    targets: Targets,
    shown: Shown | None,
    notes: Sequence[Note],
) -> None:
    """plan's page: every option on the chart, the table as the command's (its best ten
    for a machine format, which has no table of its own)."""
    from decodecalc.views.page import plan_page as page_of
    from decodecalc.views.plan import Shown, plan_report

    report = plan_report(options, targets, shown or Shown(top=10), notes)
    sources = _sources(ctx, [o.scenario for o in options])
    _write(ctx, path, page_of(report, sources, command_line(ctx)))


def command_line(ctx: typer.Context) -> str:
    """The command as typed (main passes its arguments down as the context's obj)."""
    given = ctx.obj if isinstance(ctx.obj, tuple) else (ctx.info_name or "",)
    return shlex.join(["decodecalc", *given])


def _sources(ctx: typer.Context, scenarios: Sequence[Any]) -> Any:
    from decodecalc.views.page import sources_of

    return sources_of(load_catalog(ctx.params.get("presets")), scenarios)


def _write(ctx: typer.Context, path: str, page: Page) -> None:
    """The page, written whole or not at all like every file (decodecalc/writing.py):
    --report FILE of a command, or report's own -o FILE."""
    from decodecalc.cli import destination, output_stream
    from decodecalc.views.html import page_html

    with output_stream(destination(ctx, "page" if "page" in ctx.params else "output")) as out:
        out.write(page_html(page))
    # Said when the command ends, after its own notes: the last line names the file.
    ctx.call_on_close(lambda: note(f"wrote {path}"))
