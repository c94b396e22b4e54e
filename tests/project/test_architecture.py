"""The layering the design relies on: a pure core, lazy heavy imports."""

from __future__ import annotations

import ast
import functools
import json
import subprocess
import sys
from pathlib import Path

import pytest

CORE = [
    "decodecalc.units",
    "decodecalc.context",
    "decodecalc.model.dtypes",
    "decodecalc.model.hardware",
    "decodecalc.model.model",
    "decodecalc.model.kvcache",
    "decodecalc.scenarios.scenario",
    "decodecalc.scenarios.workload",
    "decodecalc.step.step",
    "decodecalc.answers.estimate",
    "decodecalc.answers.explain",
    "decodecalc.answers.serving",
    "decodecalc.version",
    "decodecalc.cache_folder",
]


def imported_after(statement: str) -> set[str]:
    code = f"import sys\n{statement}\nimport json\nprint(json.dumps(sorted(sys.modules)))"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    return set(json.loads(out.stdout))


def quietly(argv: str) -> str:
    return (
        "import contextlib, io\nfrom decodecalc.cli import main\n"
        f"with contextlib.redirect_stdout(io.StringIO()):\n    main({argv})"
    )


FRONT_END = {"typer", "rich", "yaml", "click"}


def test_core_imports_no_cli_rendering_or_yaml() -> None:
    """The core modules imported together in one process load none of the front end: what
    a process loads only grows, so none of them loads it alone either (one process, not
    one per module; where it fails, each is imported alone to name it)."""
    loaded = imported_after("\n".join(f"import {module}" for module in CORE))
    if FRONT_END & {m.split(".")[0] for m in loaded}:
        alone = {module: imported_after(f"import {module}") for module in CORE}
        guilty = [m for m, got in alone.items() if FRONT_END & {n.split(".")[0] for n in got}]
        pytest.fail(f"these core modules import the front end: {guilty}")


def test_json_query_never_imports_rich() -> None:
    loaded = imported_after(quietly("['estimate', '-m', 'llama-3.1-8b', '-g', 'h100', '--json']"))
    assert "rich" not in {m.split(".")[0] for m in loaded}


def test_warm_json_query_never_imports_yaml() -> None:
    query = quietly("['estimate', '-m', 'llama-3.1-8b', '-g', 'h100', '--json']")
    imported_after(query)  # fills the cache (the test run's own cache directory)
    assert "yaml" not in {m.split(".")[0] for m in imported_after(query)}


def test_version_does_not_load_presets_or_yaml() -> None:
    loaded = imported_after(quietly("['--version']"))
    assert "yaml" not in {m.split(".")[0] for m in loaded}


def test_a_query_loads_only_its_own_command_module() -> None:
    loaded = imported_after(quietly("['estimate', '-m', 'llama-3.1-8b', '-g', 'h100', '--json']"))
    commands = {m for m in loaded if m.startswith("decodecalc.cli.")}
    assert commands == {"decodecalc.cli.scenario", "decodecalc.cli.options"}


def test_every_command_is_listed_where_it_is_defined() -> None:
    from decodecalc.cli import COMMANDS, full_command

    group = full_command()
    assert list(group.commands) == list(COMMANDS)  # help lists them in this order
    for name, module in COMMANDS.items():
        assert group.commands[name].callback.__module__ == f"decodecalc.cli.{module}"


PACKAGE = Path(__file__).resolve().parents[2] / "decodecalc"


@functools.cache
def parsed() -> dict[Path, ast.Module]:
    """Every module of the package, parsed once for all the checks below (read only)."""
    return {path: ast.parse(path.read_text()) for path in sorted(PACKAGE.rglob("*.py"))}


@functools.cache
def module_imports() -> dict[str, frozenset[str]]:
    """Each module's decodecalc imports, every one it makes at any depth: a function-local
    import is still a dependency, and so is one only type checkers see (a circle through
    annotations is a circle in the design, whatever the interpreter tolerates)."""
    graph: dict[str, frozenset[str]] = {}
    for path, tree in parsed().items():
        parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
        name = ".".join(parts[:-1] if parts[-1] == "__init__" else parts)
        found = set()
        for node in ast.walk(tree):
            if isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
                found.add(node.module)
            elif isinstance(node, ast.Import):
                found.update(a.name for a in node.names)
        graph[name] = frozenset(m for m in found if in_package(m) and m != name)
    return graph


def in_package(module: str) -> bool:
    """decodecalc or one of its modules: ``from decodecalc import x`` imports the top
    package itself, which stands on the top floor like the API it re-exports."""
    return module == "decodecalc" or module.startswith("decodecalc.")


def test_no_import_cycles() -> None:
    """No module needs another that needs it back, not even for an annotation: the layers
    of the design can be read, tested and replaced one at a time."""
    graph = module_imports()
    done: set[str] = set()

    def visit(name: str, path: tuple[str, ...]) -> None:
        assert name not in path, " -> ".join((*path[path.index(name) :], name))
        if name in done:
            return
        for target in graph.get(name, ()):
            visit(target, (*path, name))
        done.add(name)

    for module in graph:
        visit(module, ())


FLOORS = (
    (
        "decodecalc.units",
        "decodecalc.record",
        "decodecalc.errors",
        "decodecalc.paths",
        "decodecalc.version",
        "decodecalc.cache_folder",
    ),
    ("decodecalc.context", "decodecalc.notes"),
    ("decodecalc.model",),
    ("decodecalc.engine",),
    ("decodecalc.scenarios",),
    ("decodecalc.step",),
    ("decodecalc.loading", "decodecalc.writing"),
    ("decodecalc.resolving",),
    ("decodecalc.answers",),
    ("decodecalc.calibration", "decodecalc.checks"),
    ("decodecalc.views",),
    ("decodecalc.cli", "decodecalc.api", "decodecalc.__main__", "decodecalc"),
)
"""The house from the ground up (docs/development.md draws it): what is deployed (model,
engine, scenarios), the forward model (step), names and files to records (loading), a
spec and the catalog to a Scenario (resolving: it looks names up, so it stands above
loading, not in scenarios), the questions a user asks (answers: a sweep's grid or a plan's
candidates are named deployments to resolve), measured points and deployment files
(calibration, checks), rendering (views) and the glue (cli, api, and the top package that
re-exports the API). A module imports from its own floor or below."""


def floor_of(module: str) -> int:
    for number, floor in enumerate(FLOORS):
        if any(module == f or (f != "decodecalc" and module.startswith(f"{f}.")) for f in floor):
            return number
    raise AssertionError(f"{module} stands on no floor: add it to FLOORS")


def test_every_module_stands_on_a_floor() -> None:
    for module in module_imports():
        floor_of(module)


def test_floors_import_only_downwards() -> None:
    """The model knows no step, the step no answer, no answer a file, a view or the CLI."""
    upward = [
        f"{module} (floor {floor_of(module)}) imports {target} (floor {floor_of(target)})"
        for module, targets in module_imports().items()
        for target in targets
        if floor_of(target) > floor_of(module)
    ]
    assert not upward, "\n".join(upward)


def _words(node: ast.AST) -> set[str]:
    return {n.id for n in ast.walk(node) if isinstance(n, ast.Name)} | {
        n.attr for n in ast.walk(node) if isinstance(n, ast.Attribute)
    }


def _step_time_formulas(tree: ast.AST) -> list[str]:
    """Where code turns bytes or FLOPs into seconds (a count over a bandwidth or a FLOP
    rate), or takes the slower of memory and compute: the step formula's own moves."""
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Div):
            over = {w.lower() for w in _words(node.right)}
            counted = {w.lower() for w in _words(node.left)}
            rate = any("bandwidth" in w or "peak" in w or "flops_per_s" in w for w in over)
            amount = any(("bytes" in w or "flops" in w) and "per_s" not in w for w in counted)
            if rate and (amount or not counted):
                found.append(f"line {node.lineno}: {ast.unparse(node)}")
        if isinstance(node, ast.Call) and getattr(node.func, "id", None) == "max":
            words = " ".join(sorted(_words(node))).lower()
            if "memory" in words and "compute" in words:
                found.append(f"line {node.lineno}: {ast.unparse(node)}")
    return found


def test_only_the_step_computes_a_step_time() -> None:
    """One step formula: bytes over bandwidth, FLOPs over peak and the max of the two are
    written in step/ alone; an answer, a fit or a view asks step/ for a time."""
    elsewhere = {}
    for path, tree in parsed().items():
        if path.relative_to(PACKAGE).parts[0] == "step":
            continue
        found = _step_time_formulas(tree)
        if found:
            elsewhere[str(path.relative_to(PACKAGE))] = found
    assert not elsewhere, elsewhere


def test_the_step_formula_check_sees_a_step_time() -> None:
    """The check above finds the formula when it is written (it would pass on anything if
    it found nothing)."""
    written = "t = total_bytes / scenario.effective_bandwidth_bytes_per_s\n" + (
        "s = max(memory_s, compute_s or 0.0) + comm_s\n"
    )
    assert len(_step_time_formulas(ast.parse(written))) == 2


def test_no_function_is_more_complex_than_c() -> None:
    """Radon's grade C (complexity 20) at most: a function past it does several things and
    should be several functions (the house style: small pieces)."""
    from radon.complexity import cc_visit_ast

    over = [
        f"{path.relative_to(PACKAGE)}: {block.fullname} ({block.complexity})"
        for path, tree in parsed().items()
        for block in cc_visit_ast(tree)
        if block.complexity > 20
    ]
    assert not over, "\n".join(over)
