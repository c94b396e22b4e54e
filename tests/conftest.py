from __future__ import annotations

import functools
import os
import tempfile
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import pytest

from decodecalc.cli import full_command, main
from decodecalc.loading.catalog import Catalog
from decodecalc.scenarios.scenario import Scenario


@dataclass(frozen=True)
class Result:
    code: int
    out: str
    err: str


Run = Callable[..., Result]


def pytest_configure(config: pytest.Config) -> None:
    """Tests never write the user's preset cache (a fresh one per run, set before any
    module-level catalog loads presets) and never reach the network."""
    os.environ["DECODECALC_CACHE"] = tempfile.mkdtemp(prefix="decodecalc-cache-")
    # huggingface_hub reads HF_HUB_OFFLINE once, when first imported: set before any test.
    os.environ["HF_HUB_OFFLINE"] = "1"


@pytest.fixture(autouse=True)
def _deterministic_terminal(monkeypatch: pytest.MonkeyPatch) -> None:
    """Fixed width, no colour, no user presets: output is the same on every machine."""
    monkeypatch.setenv("NO_COLOR", "1")
    monkeypatch.setenv("COLUMNS", "200")
    monkeypatch.delenv("DECODECALC_PRESETS", raising=False)
    # Offline: a name that could be a Hub id never reaches the network (tests/loading/test_hub.py
    # runs the client against a local server with its own environment).
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")


@functools.cache
def shared_catalog() -> Catalog:
    """One catalog of the shipped presets for every test that only looks names up: the
    session fixture and the modules that list presets at import share it (loading every
    model takes a third of a CPU-second, and each worker collects every module)."""
    return Catalog()


@pytest.fixture(scope="session")
def catalog() -> Catalog:
    return shared_catalog()


@pytest.fixture
def cli(capsys: pytest.CaptureFixture[str]) -> Run:
    """Run the real entry point in-process; stdout and stderr kept apart."""

    def run(*args: str) -> Result:
        code = main(list(args))
        captured = capsys.readouterr()
        return Result(code, captured.out, captured.err)

    return run


@functools.cache
def cli_group() -> Any:
    """The whole CLI as a Click group, built once: tests read its options and never change
    them (a build takes 25 ms, and some tests look at six commands per parameter)."""
    return full_command()


def preset_scenario(
    catalog: Catalog,
    model: str,
    weights: str = "bf16",
    kv: str = "bf16",
    gpu: str = "h100-sxm",
    **kw: object,
) -> Scenario:
    """A core Scenario straight from presets, every input stated: tests of the physics
    do not lean on resolve()'s defaults (the one-scenario tests cover those)."""
    g = catalog.gpu(gpu)
    return Scenario(
        catalog.model(model),
        catalog.dtype(weights),
        catalog.dtype(kv),
        g.bandwidth_bytes_per_s,
        gpu=g,
        **kw,  # type: ignore[arg-type]
    )


def once_per_run(factory: pytest.TempPathFactory, name: str, compute: Callable[[], str]) -> str:
    """``compute()`` once for the whole test run, however many xdist workers ask: the first
    to claim ``name`` computes and leaves the text in the run's temporary folder, the others
    wait for it (a whole validation is 8 CPU-seconds; two workers need not pay it twice).
    A claimant that fails leaves a mark, and the others then compute for themselves."""
    import time

    folder = factory.getbasetemp()
    if os.environ.get("PYTEST_XDIST_WORKER"):
        folder = folder.parent  # the run's folder, above each worker's own
    done, failed = folder / f"{name}.txt", folder / f"{name}.failed"
    try:
        os.close(os.open(folder / f"{name}.claim", os.O_CREAT | os.O_EXCL | os.O_WRONLY))
    except FileExistsError:
        deadline = time.monotonic() + 600
        while time.monotonic() < deadline and not failed.exists():
            if done.exists():
                return done.read_text()
            time.sleep(0.05)
        return compute()
    try:
        text = compute()
    except BaseException:
        failed.touch()
        raise
    partial = folder / f"{name}.{os.getpid()}.tmp"
    partial.write_text(text)
    os.replace(partial, done)
    return text


SHIPPED_POINTS = ("validate", "validation/points.yaml", "--json")
"""The command whose JSON shipped_validation holds (the golden grid runs it too)."""


@pytest.fixture(scope="session")
def shipped_validation(tmp_path_factory: pytest.TempPathFactory) -> dict[str, object]:
    """`decodecalc validate validation/points.yaml --json`, run once for every test that
    reads its figures (a whole validation refits every profile: seconds, not milliseconds)."""
    import contextlib
    import io
    import json
    from pathlib import Path

    def validate() -> str:
        out = io.StringIO()
        root = Path(__file__).resolve().parents[1]
        points = root / SHIPPED_POINTS[1]
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(io.StringIO()):
            code = main([SHIPPED_POINTS[0], str(points), *SHIPPED_POINTS[2:]])
        assert code == 0
        return out.getvalue()

    text = once_per_run(tmp_path_factory, "shipped-validation", validate)
    doc: dict[str, object] = json.loads(text)
    return doc
