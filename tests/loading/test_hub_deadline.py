"""A Hub fetch has one deadline for the whole of it, says on stderr what it waits for, and
its message names the time really waited and HF_HUB_OFFLINE: a proxy that accepted the
connection and never answered kept a run silent for 397 s, then blamed a 3 s limit. The
stand-in here is a socket on 127.0.0.1 that listens (the kernel accepts the connection)
and never reads or answers; it closes when the test ends."""

from __future__ import annotations

import socket
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.loading.test_hub import FakeHub, run

pytest.importorskip("huggingface_hub")


@pytest.fixture
def stalled() -> Iterator[FakeHub]:
    listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    listener.bind(("127.0.0.1", 0))
    listener.listen(16)
    try:
        yield FakeHub(endpoint=f"http://127.0.0.1:{listener.getsockname()[1]}")
    finally:
        listener.close()


def test_a_stalled_hub_stops_at_the_deadline_and_says_why(stalled: FakeHub, tmp_path: Path) -> None:
    began = time.monotonic()
    result = run(
        stalled, tmp_path, "estimate", "-m", "test-org/Stalled", "-g", "h100-sxm",
        DECODECALC_HUB_TIMEOUT="2",
    )  # fmt: skip
    took = time.monotonic() - began
    assert result.returncode == 2, result.stderr
    assert took < 15, took  # 2 s of fetch, plus start-up; the client alone waited minutes
    waiting, error = result.stderr.splitlines()
    assert waiting.startswith("decodecalc: note: waiting for the Hugging Face Hub at")
    assert "test-org/Stalled's config.json (at most 2 s)" in waiting
    assert error.startswith("decodecalc: error: ")
    assert "did not answer (waited 2 s)" in error and "HF_HUB_OFFLINE=1" in error


@pytest.mark.parametrize("value", ["0", "soon", "-5", "1e9"])
def test_a_bad_deadline_is_refused(stalled: FakeHub, tmp_path: Path, value: str) -> None:
    result = run(
        stalled, tmp_path, "estimate", "-m", "test-org/Stalled", "-g", "h100-sxm",
        DECODECALC_HUB_TIMEOUT=value,
    )  # fmt: skip
    assert result.returncode == 2
    assert "DECODECALC_HUB_TIMEOUT" in result.stderr and result.stderr.count("\n") == 1
