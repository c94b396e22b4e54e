"""The wheel carries the presets and works from any directory, without network access."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


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


@pytest.mark.slow
def test_wheel_contains_every_preset(wheel: Path) -> None:
    names = set(zipfile.ZipFile(wheel).namelist())
    assert "decodecalc/checks/deployment.schema.json" in names
    for preset in ROOT.glob("presets/*/*.yaml"):
        assert f"decodecalc/presets/{preset.parent.name}/{preset.name}" in names


@pytest.mark.slow
def test_wheel_in_a_fresh_environment_runs_from_another_directory(
    wheel: Path, tmp_path: Path
) -> None:
    """A new virtual environment gets the wheel; its dependencies come from this test
    environment's site-packages (appended through a .pth file), so nothing is downloaded."""
    import site
    import venv

    fresh = tmp_path / "fresh"
    venv.create(fresh, with_pip=False)
    python = fresh / "bin" / "python"
    fresh_site = Path(
        subprocess.run(
            [str(python), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
            check=True,
            capture_output=True,
            text=True,
        ).stdout.strip()
    )
    (fresh_site / "deps.pth").write_text("\n".join(site.getsitepackages()) + "\n")
    subprocess.run(
        [
            sys.executable,
            "-m",
            "pip",
            "--python",
            str(python),
            "install",
            "--quiet",
            "--no-deps",
            "--no-index",
            str(wheel),
        ],
        check=True,
        capture_output=True,
    )
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    env = {k: v for k, v in os.environ.items() if k not in ("DECODECALC_PRESETS", "PYTHONPATH")}
    where = subprocess.run(
        [str(python), "-c", "import decodecalc.loading.catalog as c; print(c.presets_dir())"],
        cwd=elsewhere,
        env=env,
        capture_output=True,
        text=True,
        check=True,
    )
    assert where.stdout.strip() == str(fresh_site / "decodecalc" / "presets")
    result = subprocess.run(
        [
            str(fresh / "bin" / "decodecalc"),
            "estimate",
            "-m",
            "llama-3.1-70b",
            "-g",
            "h100-sxm",
            "-w",
            "fp8",
            "-k",
            "fp8",
            "-c",
            "100000",
            "--json",
        ],
        cwd=elsewhere,
        env=env,
        capture_output=True,
        text=True,
    )
    assert result.returncode == 0, result.stderr
    doc = json.loads(result.stdout)
    assert doc["rows"][0]["kv_bytes"] == 16_384_000_000  # 100,000 x 163,840


def test_editable_checkout_uses_top_level_presets() -> None:
    from decodecalc.loading.catalog import presets_dir

    assert presets_dir() == ROOT / "presets"
