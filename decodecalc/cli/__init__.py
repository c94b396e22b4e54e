"""The command line: parse options, load presets, call the core, hand the result to a renderer.

Every user error is an InputError (or a Click usage error) and becomes exactly one line on
stderr and exit code 2, here and nowhere else.

Commands live in modules by what they are about (``scenario``, ``compare``, ``check``,
``calibrate``, ``presets``); COMMANDS says which. A run imports and builds only the command
it names: Typer turns every registered signature into Click options on each run, and the
option declarations themselves take time to create, so a query pays for its own options only.
"""

import contextlib
import functools
import importlib
import inspect
import os
import re
import sys
from collections.abc import Callable, Iterator
from enum import Enum
from typing import IO, TYPE_CHECKING, Annotated, Any, TypeVar

import typer

from decodecalc import __version__
from decodecalc.errors import InputError, InputErrors
from decodecalc.record import record

if TYPE_CHECKING:
    from pathlib import Path

    from decodecalc.loading.catalog import Catalog
    from decodecalc.views.report import Report

F = TypeVar("F", bound=Callable[..., Any])

EXIT_OK = 0
EXIT_VIOLATION = 1
EXIT_USAGE = 2
EXIT_INTERRUPTED = 130

COMMANDS = {
    "estimate": "scenario",
    "generate": "generate",
    "explain": "explain",
    "serving": "serving",
    "compare": "compare",
    "sweep": "compare",
    "plan": "plan",
    "report": "report",
    "check": "check",
    "schema": "check",
    "calibrate": "calibrate",
    "validate": "calibrate",
    "models": "presets",
    "gpus": "presets",
    "dtypes": "presets",
    "recipes": "presets",
    "links": "presets",
    "engines": "presets",
    "show": "presets",
    "import": "presets",
}
"""Each command and the module under decodecalc.cli defining it, in the order help lists them."""

app = typer.Typer(
    name="decodecalc",
    help="How fast will this model decode on this hardware, and where does the KV cache take over?",
    no_args_is_help=True,
    add_completion=True,
    pretty_exceptions_enable=False,
    # Click's plain help: Rich's boxed help costs 150 ms of start-up for every --help.
    rich_markup_mode=None,
    context_settings={"help_option_names": ["-h", "--help"]},
)


class Format(str, Enum):
    table = "table"
    json = "json"
    csv = "csv"
    markdown = "markdown"


def given_path(value: Any) -> Any:
    """A path option or argument (or each of a repeated one) that is empty is a mistake,
    an unset shell variable most often: ``--presets ""`` would read the current folder and
    ``-o ""`` write nowhere. Refused as it is parsed, before anything runs."""
    for item in value if isinstance(value, (list, tuple)) else [value]:
        if isinstance(item, str) and not item.strip():
            raise typer.BadParameter(
                "is empty (an unset shell variable?); give a file or folder name"
            )
    return value


FormatOpt = Annotated[
    Format,
    typer.Option("--format", "-f", help="Output: a table, JSON (versioned), CSV or Markdown."),
]
JsonOpt = Annotated[bool, typer.Option("--json", help="Shortcut for --format json.")]
PresetsOpt = Annotated[
    list[str] | None,
    typer.Option(
        "--presets",
        help="A directory of your own presets (models/, gpus/, dtypes/ inside); "
        "may repeat. Also read from $DECODECALC_PRESETS.",
        metavar="DIR",
        callback=given_path,
    ),
]


def output_file(help_text: str) -> Any:
    """--output FILE (-o) with the command's own help; an empty name refused as it is parsed."""
    return typer.Option("--output", "-o", help=help_text, metavar="FILE", callback=given_path)


OutputOpt = Annotated[str | None, output_file("Write the output to FILE instead of stdout.")]
ForceOpt = Annotated[
    bool,
    typer.Option(
        "--force",
        help="Replace an existing output file that decodecalc did not write, or that was "
        "changed since (an input of the command is never replaced).",
    ),
]


def keyword_parameters(command: Callable[..., Any]) -> list[inspect.Parameter]:
    """A command's parameters as the keyword-only ones Typer passes, its ``**`` dropped
    (the options a decorator adds arrive through it)."""
    return [
        p.replace(kind=inspect.Parameter.KEYWORD_ONLY)
        for p in inspect.signature(command).parameters.values()
        if p.kind is not p.VAR_KEYWORD
    ]


@record
class Destination:
    """Where a command writes: the file an option names (None: stdout), whether --force was
    given, and the command's inputs, which it never replaces (decodecalc/writing.py)."""

    path: str | None = None
    force: bool = False
    inputs: tuple["Path", ...] = ()


def destination(ctx: typer.Context, option: str = "output") -> Destination:
    """The file ``option`` names in this command's parameters, with --force and the
    command's inputs: every file or directory its other arguments name (each item of a
    comma list too), and the preset folders (DIR/models/, ...) of --presets and
    $DECODECALC_PRESETS. Read from the parameters, so that no command can forget an input."""
    from decodecalc.loading.catalog import KINDS, user_dirs
    from decodecalc.paths import expand_user

    texts: list[str] = []
    for key, value in ctx.params.items():
        if key in (*OUTPUTS, "presets"):
            continue
        for item in value if isinstance(value, (list, tuple)) else [value]:
            if isinstance(item, str):
                texts += [item, *item.split(",")]
    inputs = [d / kind for d in user_dirs(ctx.params.get("presets") or ()) for kind in KINDS]
    for text in dict.fromkeys(texts):
        path = expand_user(text)
        with contextlib.suppress(OSError, ValueError):
            if path.exists():
                inputs.append(path)
    named = ctx.params.get(option)
    return Destination(named, bool(ctx.params.get("force")), tuple(inputs))


OUTPUTS = ("output", "plot", "save_to", "page")
"""The parameters that name files a command writes, not files it reads."""

STDOUT = Destination()


def emit(
    report: "Report", fmt: Format, as_json: bool, exact: bool = False, to: Destination = STDOUT
) -> None:
    """Write a report in its format to stdout or --output, and its notes on stderr in
    every format, so that a pipe carries data only (JSON carries the notes too)."""
    from decodecalc.views.render import RENDERERS

    name = "json" if as_json else format_for(fmt, to.path).value
    with output_stream(to) as out:
        RENDERERS[name](report, out, exact)
    say_notes(report)


def say_notes(report: "Report") -> None:
    """A report's notes on stderr, whatever its format and wherever its data went."""
    notes = report.document.get("notes")  # (show's is the model's own note text, a string)
    if isinstance(notes, list):
        for item in notes:
            note(item["message"])


SUFFIXES = {".json": Format.json, ".csv": Format.csv, ".md": Format.markdown}
"""The format an --output file's name implies when no --format is given."""


@record
class Output:
    """How and where a command writes its report: the format asked for (--format, --json)
    and the file (--output, --force; None: stdout). Commands declared with output_options
    receive it whole, so that every one of them reads these options the same way."""

    fmt: Format = Format.table
    as_json: bool = False
    to: Destination = STDOUT

    @property
    def format(self) -> Format:
        """The format written: JSON for --json, else format_for's."""
        return Format.json if self.as_json else format_for(self.fmt, self.to.path)

    @property
    def data(self) -> bool:
        """Whether stdout carries the answer as data (see data_on_stdout)."""
        return data_on_stdout(self.fmt, self.as_json, self.to)

    def emit(self, report: "Report", exact: bool = False) -> None:
        emit(report, self.fmt, self.as_json, exact, self.to)


def output_options(command: F) -> F:
    """Declare --format, --json, --output and --force once for every command that writes a
    report, the way sqlite-utils shares its output options: they take the place of the
    command's ``out: Output`` parameter (there in --help too), and the command receives
    them as that one Output. The command's first parameter is its ``ctx``."""
    import functools
    import inspect

    names = [name for name, _, _ in _OUTPUT_OPTIONS]
    own = inspect.signature(command)
    kind = own.parameters["out"].kind
    shared = [inspect.Parameter(n, kind, annotation=a, default=d) for n, a, d in _OUTPUT_OPTIONS]
    parameters = [q for p in own.parameters.values() for q in (shared if p.name == "out" else [p])]

    @functools.wraps(command)
    def run(**given: Any) -> Any:
        fmt, as_json, _, _ = (given.pop(name) for name in names)
        return command(**given, out=Output(fmt, as_json, destination(given["ctx"])))

    setattr(run, "__signature__", own.replace(parameters=parameters))  # noqa: B010
    return run  # type: ignore[return-value]


_OUTPUT_OPTIONS = (
    ("fmt", FormatOpt, Format.table),
    ("as_json", JsonOpt, False),
    ("output", OutputOpt, None),
    ("force", ForceOpt, False),
)
"""The parameters output_options puts in place of ``out``: name, declaration, default."""


def data_on_stdout(fmt: Format, as_json: bool, to: Destination) -> bool:
    """Whether stdout carries the answer as data (JSON, CSV, Markdown), not a table."""
    return to.path is None and (as_json or fmt is not Format.table)


def format_for(fmt: Format, path: str | None) -> Format:
    """The format asked for; a table (the default) written to FILE.json, FILE.csv or
    FILE.md takes the format of the name, as nobody wants a terminal table in those."""
    if fmt is not Format.table or path is None:
        return fmt
    import pathlib

    return SUFFIXES.get(pathlib.PurePath(path).suffix.lower(), fmt)


@contextlib.contextmanager
def output_stream(to: Destination, binary: bool = False) -> Iterator[IO[Any]]:
    """stdout, or the file, written whole or not at all and never over an input, nor
    without --force over a file decodecalc did not write (decodecalc/writing.py)."""
    if to.path is None:
        yield sys.stdout.buffer if binary else sys.stdout
        return
    from decodecalc.paths import expand_user
    from decodecalc.writing import write_file

    target = expand_user(to.path)
    with write_file(target, force=to.force, inputs=to.inputs, binary=binary, shown=to.path) as out:
        yield out


def draw(
    series: list[Any], chart: bool, plot: Destination, axes: Any = None, data: bool = False
) -> None:
    """The terminal chart (--chart) and the chart file (--plot) of estimate, compare and
    serving (``axes``: views/charts.py Axes; None: latency against context). ``data``:
    stdout carries JSON, CSV or Markdown, so the chart, drawn for people, goes to stderr."""
    from decodecalc.views.charts import DECODE, plot_file, plot_format, terminal_chart

    axes = axes or DECODE

    if chart:
        import shutil

        stream = sys.stderr if data else sys.stdout
        width = min(shutil.get_terminal_size((100, 24)).columns, 120)
        color = stream.isatty() and "NO_COLOR" not in os.environ
        stream.write(terminal_chart(series, width=width, color=color, axes=axes) + "\n")
    if plot.path:
        kind = plot_format(plot.path)  # before any file is touched
        with output_stream(plot, binary=True) as out:
            plot_file(series, out, kind, axes)
        note(f"wrote {plot.path}")


def whole_number(text: str | int) -> int:
    """An integer option's value in ASCII digits. Python's int() also reads full-width
    digits and other scripts' (U+FF11 U+FF12 is 12) and underscores ('1_0'), which nobody
    types on purpose. (Defaults arrive as numbers already.)"""
    if isinstance(text, int):
        return text
    if not re.fullmatch(r"\s*[+-]?[0-9]+\s*", text):
        from decodecalc.units import UNDERSCORES

        why = f": {UNDERSCORES}" if "_" in text else ""
        raise typer.BadParameter(f"{text!r} is not a whole number{why}")
    digits = len(text.strip().lstrip("+-"))
    if digits > MAX_OPTION_DIGITS:  # int() would raise a ValueError
        raise typer.BadParameter(
            f"a number of {digits:,} digits; no decodecalc value has more than a few dozen"
        )
    return int(text)


MAX_OPTION_DIGITS = 4300
"""Digits int() reads (sys.get_int_max_str_digits' default); a longer number is refused
here, a shorter one out of range by the option's own limit."""


def real_number(text: str | float) -> float:
    """A number option's value in ASCII: float() reads other scripts' digits too."""
    from decodecalc.units import ascii_float

    if isinstance(text, (int, float)):
        return float(text)
    try:
        return ascii_float(text)
    except ValueError:
        raise typer.BadParameter(f"{text!r} is not a number") from None


def load_catalog(presets: list[str] | None) -> "Catalog":
    from decodecalc.loading.catalog import Catalog

    return Catalog.with_user_dirs(presets or ())


def _version(value: bool) -> None:
    if value:
        typer.echo(f"decodecalc {__version__}")
        raise typer.Exit()


@app.callback()
def _root(
    version: Annotated[
        bool,
        typer.Option(
            "--version", callback=_version, is_eager=True, help="Print the version and exit."
        ),
    ] = False,
) -> None:
    """Decode speed from first principles: (weight bytes + KV bytes) / bandwidth.

    Each decode step streams the weights (constant) and the KV cache (growing with the
    context) from memory; past the crossover context the KV cache costs more than the weights.
    """


def completer(kind: str) -> Callable[[str], list[str]]:
    """Shell completion of preset ids ('decodecalc --install-completion' sets it up)."""

    def complete(incomplete: str) -> list[str]:
        from decodecalc.loading.catalog import Catalog

        return [i for i in Catalog().ids(kind) if i.startswith(incomplete.lower())]

    return complete


def note(message: str) -> None:
    print(f"decodecalc: note: {message}", file=sys.stderr)


MAX_MESSAGE = 1000
"""Characters of an error line: a 100 KB argument echoed back helps nobody."""


def _error(message: str) -> int:
    # One line, whatever the message held: scripts grep stderr line by line.
    line = " ".join(message.split())
    if len(line) > MAX_MESSAGE:  # keep the start (what) and the end (what would be valid)
        cut = len(line) - MAX_MESSAGE
        line = f"{line[:600]} [... {cut:,} characters ...] {line[-400:]}"
    print(f"decodecalc: error: {line}", file=sys.stderr)
    return EXIT_USAGE


def _errors(problems: list[str]) -> int:
    """Every problem found in a file, one line each."""
    for problem in problems:
        _error(problem)
    return EXIT_USAGE


def _registered(names: list[str]) -> list[Any]:
    """The registrations of these commands, importing the modules that define them."""
    for module in dict.fromkeys(COMMANDS[name] for name in names):
        importlib.import_module(f"decodecalc.cli.{module}")
    by_name = {
        info.name or (info.callback.__name__ if info.callback else None): info
        for info in app.registered_commands
    }
    return [by_name[name] for name in names]


def full_command() -> Any:
    """The whole CLI as a Click group: every command, in COMMANDS order (help, completion)."""
    app.registered_commands = _registered(list(COMMANDS))
    return typer.main.get_command(app)


def _command(argv: list[str]) -> Any:
    """The Click command to run: only the command the first argument names, or none for
    --version; the whole CLI answers everything else (help, typos)."""
    wanted = argv[0] if argv else None
    if wanted not in COMMANDS and argv != ["--version"]:
        return full_command()
    return _lean(wanted if wanted in COMMANDS else None)


@functools.cache
def _lean(wanted: str | None) -> Any:
    """One command's Click group (none: --version's), built once per process: a process
    that runs several queries (the API's callers, the tests) parses each with it."""
    lean = typer.Typer(
        name=app.info.name,
        add_completion=False,
        rich_markup_mode=None,
        context_settings=app.info.context_settings,
    )
    lean.registered_callback = app.registered_callback
    lean.registered_commands = _registered([wanted]) if wanted is not None else []
    return typer.main.get_command(lean)


def _help_for(exc: Exception, args: list[str]) -> str:
    """The help that answers a usage error: the subcommand's, where one was named."""
    ctx = getattr(exc, "ctx", None)
    path = getattr(ctx, "command_path", "") or ""
    if path.startswith("decodecalc ") or not args or args[0] not in COMMANDS:
        return f"{path or 'decodecalc'} --help"
    return f"decodecalc {args[0]} --help"


def _no_such_option(exc: Exception) -> str | None:
    """An unknown option's message with the command's options that look like it, compared
    without their dashes: Click compares them with, so every '--' option shares two
    characters with the typo and --report drew --ep, --format and --power. None: not an
    unknown option (Click's own message stands). Typer carries its own copy of Click, so
    the error is known by its class's name."""
    import difflib

    ctx = getattr(exc, "ctx", None)
    if type(exc).__name__ != "NoSuchOption" or ctx is None:
        return None
    typed: str = getattr(exc, "option_name", "")
    names = [
        name
        for param in ctx.command.params
        if param.param_type_name == "option"
        for name in (*param.opts, *param.secondary_opts)
        if name.startswith("--")
    ]
    bare = {name.lstrip("-"): name for name in names}
    close = difflib.get_close_matches(typed.lstrip("-"), list(bare), n=3, cutoff=0.6)
    hint = f" (did you mean {', '.join(bare[c] for c in close)}?)" if close else ""
    return f"No such option: {typed}{hint}"


def main(argv: list[str] | None = None) -> int:
    """Run the CLI and return its exit code; usage errors become one line on stderr."""
    args = sys.argv[1:] if argv is None else argv
    if not args:
        args = ["--help"]  # a bare `decodecalc` is a request for help, not an error
    command = _command(args)
    try:
        # obj: the arguments as given, for the report page that names its command.
        result = command.main(
            args=args, prog_name="decodecalc", standalone_mode=False, obj=tuple(args)
        )
    except InputErrors as exc:
        return _errors(exc.problems)
    except InputError as exc:
        return _error(str(exc))
    except KeyboardInterrupt:
        result = EXIT_INTERRUPTED
    except Exception as exc:
        # Click's usage errors (unknown option, missing value, a word where a number
        # belongs) carry their own message; anything else is a bug and should say so.
        format_message = getattr(exc, "format_message", None)
        if format_message is None:
            raise
        message = _no_such_option(exc) or format_message()
        return _error(f"{message} (see '{_help_for(exc, args)}')")
    if result == EXIT_INTERRUPTED:  # Typer turns Ctrl-C into this exit code, in silence
        print("decodecalc: interrupted; a file being written is left as it was", file=sys.stderr)
    return result if isinstance(result, int) else EXIT_OK
