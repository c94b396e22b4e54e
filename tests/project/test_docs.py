"""The documentation shows what the code does now: README.md and every page under docs/.

- A fenced block whose first line is ``$ decodecalc ...`` is run, and must show what the
  command prints (stdout, then stderr).
- A ``python`` block is run; what it prints must be the ``text`` block right after it.
- A region between ``<!-- generated NAME ... -->`` and ``<!-- end generated NAME -->`` is
  exactly what ``GENERATED[NAME]`` writes: the CLI reference from every command's --help,
  the preset tables from the presets. Nothing in them is typed by hand, so nothing drifts.
- Every option the text names (``--tp``, ``decodecalc check FILE -t ...``, a ``sh`` block's
  command lines) is an option of that command, every ``DECODECALC_*`` variable is one the
  code reads, and every relative link leads to a file and a heading that exist.
- The limits table quotes the message each limit really gives.

``DECODECALC_UPDATE_DOCS=1`` rewrites the outputs and the generated regions after a
deliberate change (docs/development.md says how); review the diff, then run again.
"""

from __future__ import annotations

import json
import os
import re
import shlex
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import Run

ROOT = Path(__file__).resolve().parents[2]
PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
UPDATE = bool(os.environ.get("DECODECALC_UPDATE_DOCS"))

FENCE = re.compile(r"^```([\w-]*)\n(.*?)^```[ \t]*$", re.MULTILINE | re.DOTALL)
REGION = re.compile(
    r"<!-- generated (?P<name>[\w-]+)(?P<note>[^\n]*?)-->\n(?P<body>.*?)"
    r"<!-- end generated (?P=name) -->",
    re.DOTALL,
)


@dataclass(frozen=True)
class Block:
    """One fenced block of a page: its language, its body and where the fence starts/ends."""

    page: Path
    lang: str
    body: str
    start: int
    end: int

    @property
    def fenced(self) -> str:
        return f"```{self.lang}\n{self.body}```"

    @property
    def name(self) -> str:
        return f"{self.page.relative_to(ROOT)}: {self.body.splitlines()[0]}"


def blocks(page: Path) -> list[Block]:
    return [
        Block(page, m.group(1), m.group(2), m.start(), m.end())
        for m in FENCE.finditer(page.read_text())
    ]


def all_blocks() -> Iterator[Block]:
    for page in PAGES:
        yield from blocks(page)


def prose(page: Path) -> str:
    """The page without its fenced blocks and generated regions: the hand-written text."""
    return FENCE.sub("", REGION.sub("", page.read_text()))


def rewrite(page: Path, old: str, new: str) -> None:
    text = page.read_text()
    assert old in text
    page.write_text(text.replace(old, new, 1))


@pytest.fixture
def at_root(monkeypatch: pytest.MonkeyPatch) -> None:
    """Examples run from the repository root, at the width the pages show."""
    monkeypatch.setenv("COLUMNS", "150")
    monkeypatch.chdir(ROOT)


# -- examples ------------------------------------------------------------------------------

README_COLUMNS = 100
"""The width the README's examples are shown at: a landing page is read in a browser or a
narrow editor pane, not on a 150-column terminal."""

WHOLE_VALIDATION = "$ decodecalc validate validation/points.yaml"
"""An example that refits every profile (8 CPU-seconds): long end to end, it is the slow
set's; the fast set holds the same figures through tests/conftest.py's shipped_validation."""

SHELL_EXAMPLES = [
    pytest.param(b, marks=pytest.mark.slow) if b.body.split("\n")[0] == WHOLE_VALIDATION else b
    for b in all_blocks()
    if b.body.startswith("$ decodecalc ")
]
PYTHON_EXAMPLES = [b for b in all_blocks() if b.lang == "python"]


def printed(cli: Run, command: str) -> str:
    result = cli(*shlex.split(command)[2:])
    return "".join(line.rstrip() + "\n" for line in (result.out + result.err).splitlines())


@pytest.mark.usefixtures("at_root")
@pytest.mark.parametrize("block", SHELL_EXAMPLES, ids=lambda b: b.name)
def test_shell_example_is_current(cli: Run, block: Block, monkeypatch: pytest.MonkeyPatch) -> None:
    if block.page == PAGES[0]:  # the README's examples fit a 100-column reader
        monkeypatch.setenv("COLUMNS", str(README_COLUMNS))
    command, _, shown = block.body.partition("\n")
    now = printed(cli, command)
    if UPDATE:
        rewrite(block.page, block.fenced, f"```{block.lang}\n{command}\n{now}```")
        return
    assert now == shown


def output_block(block: Block) -> Block | None:
    """The ``text`` block right after a python block: what the example prints. Found in
    the page as it is now, since an earlier test may have rewritten the page."""
    now = blocks(block.page)
    here = next(b for b in now if b.lang == block.lang and b.body == block.body)
    following = [b for b in now if b.start >= here.end]
    if not following or following[0].lang != "text":
        return None
    between = block.page.read_text()[here.end : following[0].start]
    return None if between.strip() else following[0]


@pytest.mark.usefixtures("at_root")
@pytest.mark.parametrize("block", PYTHON_EXAMPLES, ids=lambda b: b.name)
def test_python_example_runs_and_prints_what_is_shown(
    capsys: pytest.CaptureFixture[str], block: Block
) -> None:
    capsys.readouterr()
    exec(compile(block.body, str(block.page), "exec"), {"__name__": "__docs__"})
    now = capsys.readouterr().out
    shown = output_block(block)
    if UPDATE:
        if shown is not None:
            rewrite(block.page, shown.fenced, f"```text\n{now}```")
        elif now:
            rewrite(block.page, block.fenced, f"{block.fenced}\n\n```text\n{now}```")
        return
    assert now == (shown.body if shown else ""), "what a python example prints is shown"


# -- generated regions ---------------------------------------------------------------------


def ran(run: Run, *args: str) -> str:
    result = run(*args)
    assert result.code == 0, result.err
    return str(result.out)


def cli_reference(run: Run) -> str:
    """Every command's --help, in the order `decodecalc --help` lists them."""
    from decodecalc.cli import COMMANDS

    sections = [("decodecalc", ran(run, "--help"))]
    sections += [(f"decodecalc {name}", ran(run, name, "--help")) for name in COMMANDS]
    return "\n".join(f"## `{title}`\n\n```text\n{text}```\n" for title, text in sections)


def listing(kind: str) -> Callable[[Run], str]:
    """A preset listing as the CLI's own Markdown table."""
    return lambda run: ran(run, kind, "--format", "markdown")


LISTINGS = ("models", "gpus", "dtypes", "links")


def preset_sources(run: Run) -> str:
    """Where every shipped preset's numbers come from: its file's ``source:``."""
    lines = ["| kind | preset | source |", "|---|---|---|"]
    for kind in LISTINGS:
        for preset in json.loads(ran(run, kind, "--json"))[kind]:
            lines.append(f"| {kind} | `{preset['id']}` | <{preset['source']}> |")
    return "\n".join(lines) + "\n"


JSON_EXAMPLES = {
    "estimate": "estimate -m llama-3.1-8b -g h100-sxm -c 1K",
    "explain": "explain -m llama-3.1-8b -g h100-sxm -c 1K",
    "generate": "generate -m llama-3.1-8b -g h100-sxm -p 1K -n 100",
    "compare": "compare -m llama-3.1-8b -g h100-sxm,h200 -c 1K",
    "check": "check examples/chat-h100.yaml",
    "calibrate": "calibrate tests/data/measured-decode.yaml",
    "models": "models",
    "gpus": "gpus",
    "dtypes": "dtypes",
    "links": "links",
    "show": "show llama-3.1-8b",
}
"""A run of each command that writes a JSON document (sweep writes rows, schema a schema)."""


def json_keys(run: Run) -> str:
    """The keys of each command's JSON document, read from a real run of it."""
    lines = ["| command | keys | keys of each item of a list |", "|---|---|---|"]
    for name, command in JSON_EXAMPLES.items():
        doc = json.loads(ran(run, *command.split(), "--format", "json"))
        items = [
            f"`{key}[]`: {', '.join(value[0])}"
            for key, value in doc.items()
            if isinstance(value, list) and value and isinstance(value[0], dict)
        ]
        keys = ", ".join(f"`{key}`" for key in doc)
        lines.append(f"| `{name}` | {keys} | {'<br>'.join(items)} |")
    return "\n".join(lines) + "\n"


def families(run: Run) -> str:
    """The config.json families (``model_type``) a model preset may name."""
    from decodecalc.loading.families import FAMILIES, WRAPPERS

    return ", ".join(f"`{name}`" for name in sorted({*FAMILIES, *WRAPPERS})) + ".\n"


def reader_counts(run: Run) -> str:
    """Each transformers-5 config of tests/fixtures/configs/transformers5: decodecalc's
    parameter count beside the one transformers builds from the same file on the meta
    device (validation/meta_params.py; the tests hold those counts)."""
    from decodecalc.loading.catalog import Catalog
    from tests.loading.test_readers_transformers5_forms import META_COUNTS, T5, THEIRS

    catalog = Catalog()
    rows = [
        "| config | model_type | decodecalc | transformers (meta device) |",
        "|---|---|---:|---:|",
    ]
    for name, theirs in sorted({**META_COUNTS, **THEIRS}.items()):
        config = json.loads((T5 / f"{name}.json").read_text())
        ours = catalog.model(str(T5 / f"{name}.json")).total_params()
        rows.append(f"| `{name}.json` | `{config['model_type']}` | {ours:,} | {theirs:,} |")
    return "\n".join(rows) + "\n"


def calibration_summary(run: Run) -> str:
    """What the fit to the published measurements gives, from a real run of it."""
    doc = json.loads(ran(run, *JSON_EXAMPLES["calibrate"].split(), "--json"))
    points = doc["points"]
    short = [100 * (1 - p["roofline_ms"] / p["measured_ms"]) for p in points]
    errors = [p["error_pct"] for p in points]
    close = sum(abs(e) <= 20 for e in errors)
    return (
        f"At efficiency 1 the roofline predicts steps {min(short):.0f} to {max(short):.0f}% "
        f"shorter than the {len(points)} measured ones. One fitted efficiency "
        f"({doc['efficiency']:.2f}) and overhead ({doc['overhead_ms']:.2f} ms per step) bring "
        f"{close} of the {len(points)} points within 20% (RMS error "
        f"{doc['rms_error_pct']:.0f}%; the extremes are {min(errors):+.0f}% and "
        f"{max(errors):+.0f}%):\n"
    )


class Annotation(str):
    """An annotation kept as the text it was written as (``from __future__ import
    annotations``), shown without the quotes inspect would put around a string."""

    def __repr__(self) -> str:
        return str(self)


def plain_signature(function: Callable[..., Any]) -> str:
    import inspect

    signature = inspect.signature(function)
    return str(
        signature.replace(
            parameters=[
                p.replace(annotation=Annotation(p.annotation))
                if isinstance(p.annotation, str)
                else p
                for p in signature.parameters.values()
            ],
            return_annotation=Annotation(signature.return_annotation)
            if isinstance(signature.return_annotation, str)
            else signature.return_annotation,
        )
    )


def api_reference(run: Run) -> str:
    """Each name ``decodecalc`` exports: a function's signature, a class's name, and the
    first line of its docstring."""
    import inspect

    import decodecalc

    lines = []
    for name in decodecalc.__all__:
        obj = getattr(decodecalc, name)
        if not callable(obj):
            continue
        signature = name if inspect.isclass(obj) else name + plain_signature(obj)
        summary = (inspect.getdoc(obj) or "").split("\n\n")[0].replace("\n", " ")
        lines.append(f"- `{signature}`" + (f": {summary}" if summary else ""))
    return "\n".join(lines) + "\n"


def layout(run: Run) -> str:
    """Each package and top-level module of decodecalc with its docstring's summary."""
    import ast

    def summary(path: Path) -> str:
        doc = ast.get_docstring(ast.parse(path.read_text())) or ""
        return " ".join(doc.split("\n\n")[0].split())

    package = ROOT / "decodecalc"
    lines = ["| module | what it holds |", "|---|---|"]
    for init in sorted(package.glob("*/__init__.py")):
        modules = sorted(p.stem for p in init.parent.glob("*.py") if p != init)
        lines.append(f"| `{init.parent.name}/` | {summary(init)} ({', '.join(modules)}) |")
    for module in sorted(package.glob("*.py")):
        lines.append(f"| `{module.name}` | {summary(module)} |")
    return "\n".join(lines) + "\n"


def scenario_fields(run: Run) -> str:
    """The one table of scenario fields (scenarios/fields.py) as every door spells it."""
    from decodecalc.scenarios.fields import SCENARIO_FIELDS

    lines = [
        "| field | command line | deployment files | measured points | kind |",
        "|---|---|---|---|---|",
    ]
    for f in SCENARIO_FIELDS:
        points = (
            ("`" + f.name + "`" + (" (required)" if f.required_in_points else ""))
            if (f.in_points)
            else ""
        )
        lines.append(
            f"| `{f.name}` | {', '.join(f'`{flag}`' for flag in f.flags)} | "
            f"{'`' + f.name + '`' if f.in_files else ''} | {points} | {f.kind} |"
        )
    return "\n".join(lines) + "\n"


GENERATED: dict[str, Callable[[Run], str]] = {
    "cli-reference": cli_reference,
    **{kind: listing(kind) for kind in LISTINGS},
    "preset-sources": preset_sources,
    "families": families,
    "reader-counts": reader_counts,
    "json-keys": json_keys,
    "calibration-summary": calibration_summary,
    "api-reference": api_reference,
    "layout": layout,
    "scenario-fields": scenario_fields,
}
"""What each generated region holds, by the name its markers give."""

REGIONS = [
    (page, match.group("name")) for page in PAGES for match in REGION.finditer(page.read_text())
]


@pytest.mark.usefixtures("at_root")
@pytest.mark.parametrize(
    ("page", "name"), REGIONS, ids=[f"{p.relative_to(ROOT)}: {n}" for p, n in REGIONS]
)
def test_generated_region_is_current(cli: Run, page: Path, name: str) -> None:
    assert name in GENERATED, f"no generator named {name!r}"
    text = page.read_text()
    match = next(m for m in REGION.finditer(text) if m.group("name") == name)
    now = GENERATED[name](cli)
    if UPDATE:
        page.write_text(text[: match.start("body")] + now + text[match.end("body") :])
        return
    assert match.group("body") == now, f"run DECODECALC_UPDATE_DOCS=1 to regenerate {name}"


def test_every_generator_has_a_region() -> None:
    """The CLI reference and the preset tables are on a page (a region deleted by mistake
    would otherwise leave nothing to compare)."""
    assert {name for _, name in REGIONS} == set(GENERATED)


DEPLOYMENT_EXAMPLES = [
    b for b in all_blocks() if b.lang == "yaml" and "\ndeployments:" in f"\n{b.body}"
]


@pytest.mark.parametrize("block", DEPLOYMENT_EXAMPLES, ids=lambda b: b.name)
def test_deployment_example_is_a_valid_file(cli: Run, tmp_path: Path, block: Block) -> None:
    """A deployment file shown in the docs is one `decodecalc check` reads (0: every target
    met, 1: one missed; never 2, invalid)."""
    path = tmp_path / "deployment.yaml"
    path.write_text(block.body)
    result = cli("check", str(path))
    assert result.code in (0, 1), result.err


# -- names the text uses -------------------------------------------------------------------


def cli_options() -> dict[str, set[str]]:
    """Each command's options, and the root's under ''."""
    from decodecalc.cli import full_command

    group = full_command()
    commands = {"": group, **group.commands}
    return {
        name: {o for p in command.params for o in (*p.opts, *p.secondary_opts) if o[0] == "-"}
        | {"--help"}
        for name, command in commands.items()
    }


COMMAND_LINE = re.compile(r"(?:^|(?<=[\s/]))decodecalc[ \t]+([a-z-][^|&;#`\n]*)", re.MULTILINE)
"""A decodecalc command line in a shell or YAML block, up to a pipe, a chain or a comment."""


def named_commands(page: Path) -> Iterator[str]:
    """The decodecalc command lines a page shows without running them: in sh and yaml
    blocks (continued lines joined) and in inline code."""
    for block in blocks(page):
        if block.lang in ("sh", "yaml"):
            yield from COMMAND_LINE.findall(block.body.replace("\\\n", " "))
    for span in re.findall(r"`([^`\n]+)`", prose(page)):
        if span.startswith(("decodecalc ", "-")):
            yield span.removeprefix("decodecalc ")


@pytest.mark.parametrize("page", PAGES, ids=lambda p: str(p.relative_to(ROOT)))
def test_every_option_named_exists(page: Path) -> None:
    options = cli_options()
    everywhere = set().union(*options.values())
    wrong = []
    for line in named_commands(page):
        words = line.split()
        command = words[0] if words[0] in options else ""
        if not command and not words[0].startswith("-"):
            wrong.append(f"decodecalc {line}: no command {words[0]!r}")
            continue
        known = options[command] if command or not line.startswith("-") else everywhere
        if command == "report":  # its own options and those of the command it draws
            drawn = words[1] if len(words) > 1 and words[1] in options else "estimate"
            known = known | options[drawn]
        for word in words[1 if command else 0 :]:
            option = word.split("=", 1)[0]
            if re.fullmatch(r"--?[a-zA-Z][\w-]*", option) and option not in known:
                wrong.append(f"{line}: {option}")
    assert not wrong


def test_every_environment_variable_named_is_read_by_the_code() -> None:
    code = "".join(p.read_text() for p in [*ROOT.glob("decodecalc/**/*.py"), Path(__file__)])
    named = {v for page in PAGES for v in re.findall(r"\bDECODECALC_[A-Z_]+\b", page.read_text())}
    assert {v for v in named if v not in code} == set()


def anchors(page: Path) -> set[str]:
    """GitHub's heading anchors: lowercase, punctuation dropped, spaces to hyphens."""
    headings = re.findall(r"^#+ (.+)$", FENCE.sub("", page.read_text()), re.MULTILINE)
    return {re.sub(r"[^\w\- ]", "", h.lower()).replace(" ", "-") for h in headings}


@pytest.mark.parametrize("page", PAGES, ids=lambda p: str(p.relative_to(ROOT)))
def test_relative_links_lead_somewhere(page: Path) -> None:
    broken = []
    for link in re.findall(r"\]\(([^)\s]+)\)", prose(page)):
        if re.match(r"[a-z]+:", link):
            continue
        path, _, anchor = link.partition("#")
        target = (page.parent / path).resolve() if path else page
        if not target.exists() or (anchor and anchor not in anchors(target)):
            broken.append(link)
    assert not broken


# -- the JSON field table and the limits table ---------------------------------------------


def flat_keys(doc: dict[str, Any], prefix: str = "") -> set[str]:
    """Keys as the field table writes them: ``inputs.model``, ``rows[].context``."""
    keys = set()
    for key, value in doc.items():
        keys.add(prefix + key)
        if isinstance(value, dict):
            keys |= flat_keys(value, f"{prefix}{key}.")
        elif isinstance(value, list) and value and isinstance(value[0], dict):
            keys |= flat_keys(value[0], f"{prefix}{key}[].")
    return keys


def test_estimate_field_table_names_every_field(cli: Run) -> None:
    """docs/json.md explains each field of estimate's document by hand: a field added or
    renamed in the code must be explained there too, and nothing explained may be gone."""
    text = (ROOT / "docs/json.md").read_text()
    table = text.split("<!-- fields of: decodecalc estimate --json -->", 1)[1].split("\n\n", 1)[0]
    fields = [row.split("|")[1] for row in table.splitlines()[3:]]  # after the header rows
    documented = {key for cell in fields for key in re.findall(r"`([\w.\[\]]+)`", cell)}
    doc = json.loads(ran(cli, *JSON_EXAMPLES["estimate"].split(), "--json"))
    keys = flat_keys(doc)
    leaves = {k for k in keys if not any(o.startswith((f"{k}.", f"{k}[].")) for o in keys)}
    assert documented == leaves


def test_documented_schema_version_is_the_codes() -> None:
    """Every place the docs state the current schema version states the one the code
    writes (a page naming an old one misleads a reader pinning a parser to it)."""
    from decodecalc.views.report import SCHEMA_VERSION

    json_md = (ROOT / "docs/json.md").read_text()
    stated = [
        *re.findall(r'Each document starts with `"schema_version": (\d+)`', json_md),
        *re.findall(r"\| `schema_version` \| int \| (\d+) \(see above\) \|", json_md),
        *re.findall(r"`to_dict` writes JSON schema (\d+)", (ROOT / "docs/api.md").read_text()),
    ]
    assert stated == [str(SCHEMA_VERSION)] * 3


LIMITS_PAGE = ROOT / "docs/development.md"
LIMIT_CASES = [
    ("estimate -m llama-3.1-8b -g h100 -c 2G", "context '2G' is above the limit"),
    ("estimate -m llama-3.1-8b -g h100 -c 1..1M:1", "expands to 1,048,576 points; at most 10,000"),
    ("estimate -m llama-3.1-8b -g h100 --batch 2000000", "from 1 to 1,000,000"),
    ("plan -m llama-3.1-8b --gpus h100 -c 1K --batch 2000000", "from 1 to 1,000,000"),
    (
        "plan -m llama-3.1-8b --gpus h100 -c 1K --max-batch 2000000",
        "--max-batch 2000000 must be a whole number from 1 to 1,000,000",
    ),
    ("estimate -m llama-3.1-8b -g h100 --tp 3", "valid: 1, 2, 4, 8, 16, 32"),
    (
        "estimate -m llama-3.1-8b -g h100 --pp 2000",
        "pp 2000 must be a whole number from 1 to 1,024",
    ),
    (
        f"check {Path(__file__).parents[1] / 'fuzz_corpus' / 'huge-integer.yaml'}",
        "a number of 5,000 digits; no decodecalc value has more than a few dozen",
    ),
    (
        "estimate -m deepseek-v3 -g h200 --tp 8 --ep --eplb-redundant 2000",
        "eplb redundant 2000 must be a whole number from 0 to 1,024",
    ),
    (
        "estimate -m llama-3.1-8b -g h100 --tp 2 --link-bandwidth 0.1B/s",
        "link bandwidth '0.1B/s' rounds to 0 bytes/s; it must be at least 1",
    ),
    ("estimate -m llama-3.1-8b -g h100 -e 0.0001", "must be from 0.001 to 1 (1 is the roofline)"),
    ("generate -m llama-3.1-8b -g h100 -p 1K -n 2G", "--tokens '2G' is above the limit"),
    ("generate -m llama-3.1-8b -g h100 -p 1G -n 1", "reach a context of 1,073,741,825 tokens"),
    (
        "compare -m llama-3.1-8b -g h100,h200,b200,a100 -w bf16,fp8,int8 --batch 1,2,4,8,16,32",
        "72 scenarios; compare shows at most 64 (try sweep)",
    ),
    (
        "compare -m llama-3.1-8b,qwen3-8b -g h100,h200 -c 1..10000:1",
        "4 scenarios x 10,000 contexts = 40,000 rows; compare shows at most 10,000",
    ),
    (
        "sweep -m llama-3.1-8b,llama-3.1-70b -g h100,h200,b200 -w bf16,fp8 -k bf16,fp8"
        # 2 x 3 x 2 x 2 x 5 x 100 = 12,000 combinations x 10,000 contexts
        f" --tp 1,2,4,8,16 --batch {','.join(map(str, range(1, 101)))} -c 1..10000:1",
        "the grid has 120,000,000 rows; at most 100,000,000 are allowed (fewer values)",
    ),
    ("estimate -m llama-3.1-8b -b 2e6TB/s", "is implausibly large (at most 1e+18 bytes/s)"),
    ("estimate -m llama-3.1-8b -g h100 --overhead 5000s", "is implausibly long (at most an hour)"),
    ("estimate -m llama-3.1-8b -b 1e999999999TB/s", "'1e999999999TB/s' is out of range"),
    (
        "estimate -g h100 -m layers=2,hidden=64,heads=4,vocab=9,intermediate=8,max_context=0",
        "max_context=0 must be at least 1 token",
    ),
]


@pytest.mark.parametrize(("command", "message"), LIMIT_CASES)
def test_limits_table_shows_the_real_messages(cli: Run, command: str, message: str) -> None:
    assert message in LIMITS_PAGE.read_text()
    result = cli(*shlex.split(command))
    assert result.code == 2 and message in result.err, result.err
