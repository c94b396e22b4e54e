"""The layering the design relies on: a pure core, lazy heavy imports."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

CORE = [
    "decodecalc.units",
    "decodecalc.context",
    "decodecalc.physics.dtypes",
    "decodecalc.physics.hardware",
    "decodecalc.physics.model",
    "decodecalc.physics.kvcache",
    "decodecalc.physics.estimator",
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


@pytest.mark.parametrize("module", CORE)
def test_core_imports_no_cli_rendering_or_yaml(module: str) -> None:
    loaded = imported_after(f"import {module}")
    assert not {"typer", "rich", "yaml", "click"} & {m.split(".")[0] for m in loaded}


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
