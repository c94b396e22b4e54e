"""The wheel carries the presets and works from any directory, without network access."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture(scope="module")
def wheel(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("dist")
    # hatchling is a test dependency, so no isolated build (and no download) is needed.
    subprocess.run(
        [sys.executable, "-m", "hatchling", "build", "-t", "wheel", "-d", str(out)],
        cwd=ROOT,
        check=True,
        capture_output=True,
    )
    (built,) = out.glob("*.whl")
    return built


def test_wheel_contains_every_preset(wheel: Path) -> None:
    names = set(zipfile.ZipFile(wheel).namelist())
    for preset in ROOT.glob("presets/*/*.yaml"):
        assert f"decodecalc/presets/{preset.parent.name}/{preset.name}" in names


@pytest.mark.slow
def test_installed_wheel_runs_a_query_from_another_directory(wheel: Path, tmp_path: Path) -> None:
    target = tmp_path / "site"
    subprocess.run(
        [
            sys.executable,
            "-m",
            "pip",
            "install",
            "--quiet",
            "--no-deps",
            "--no-index",
            "--target",
            str(target),
            str(wheel),
        ],
        check=True,
        capture_output=True,
    )
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    env = {**os.environ, "PYTHONPATH": str(target)}
    env.pop("DECODECALC_PRESETS", None)
    code = (
        "import decodecalc.catalog as c, decodecalc.cli as cli, sys; "
        "print(c.presets_dir(), file=sys.stderr); "
        "sys.exit(cli.main(['estimate', '-m', 'llama-3.1-70b', '-g', 'h100-sxm', "
        "'-w', 'fp8', '-k', 'fp8', '-c', '100000', '--json']))"
    )
    result = subprocess.run(
        [sys.executable, "-c", code], cwd=elsewhere, env=env, capture_output=True, text=True
    )
    assert result.returncode == 0, result.stderr
    assert result.stderr.splitlines()[0] == str(target / "decodecalc" / "presets")
    doc = json.loads(result.stdout)
    assert doc["rows"][0]["kv_bytes"] == 16_384_000_000


def test_editable_checkout_uses_top_level_presets() -> None:
    from decodecalc.catalog import presets_dir

    assert presets_dir() == ROOT / "presets"
