"""Hugging Face Hub ids (-m org/name): the real huggingface_hub client against a local HTTP
server standing in for the Hub (HF_ENDPOINT), never a mock of the client. Each test has its
own HF_HOME, and runs decodecalc as a process of its own: huggingface_hub reads HF_ENDPOINT,
HF_HOME and HF_HUB_OFFLINE when it is imported, as it does for a user's every run."""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
import sys
import threading
from collections.abc import Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import Run
from tests.loading.test_numbers import figures
from tests.model.test_recipes import HF_QUANT_NVFP4
from tests.project.test_architecture import imported_after, quietly

pytest.importorskip("huggingface_hub")

SLOW = pytest.mark.slow
"""Each test runs decodecalc in fresh processes against a local HTTP server: end to end,
a second or two each. The fast set keeps the fetch, the offline refusal and the lazy
import; the slow set (CI) every other answer of the Hub."""

CONFIGS = Path(__file__).parents[1] / "fixtures" / "configs"
LLAMA_8B = (CONFIGS / "llama-3.1-8b.json").read_bytes()
COMMIT = "0123456789abcdef0123456789abcdef01234567"
TOKEN = "hf_test_token"
ESTIMATE = ("-g", "h100-sxm", "-c", "1K,32K", "--batch", "4", "--json")


@dataclass
class FakeHub:
    """What the stand-in Hub serves: repositories of files, some gated (served only with
    the token), some forbidden (403 whatever the token); every request is counted."""

    repos: dict[str, dict[str, bytes]] = field(default_factory=dict)
    gated: set[str] = field(default_factory=set)
    forbidden: set[str] = field(default_factory=set)
    requests: list[str] = field(default_factory=list)
    endpoint: str = ""


def _handler(hub: FakeHub) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        """The Hub's ``/{org}/{name}/resolve/{revision}/{file}``: HEAD answers the metadata
        hf_hub_download needs (X-Repo-Commit, ETag, Content-Length), GET the file; errors
        carry the X-Error-Code the client maps to its exceptions."""

        def do_HEAD(self) -> None:
            self._answer(send_body=False)

        def do_GET(self) -> None:
            self._answer(send_body=True)

        def _answer(self, send_body: bool) -> None:
            hub.requests.append(f"{self.command} {self.path}")
            parts = self.path.split("?")[0].strip("/").split("/")
            if len(parts) < 5 or parts[2] != "resolve":
                return self._error(404, "RepoNotFound")
            repo, filename = "/".join(parts[:2]), "/".join(parts[4:])
            authorized = self.headers.get("authorization") == f"Bearer {TOKEN}"
            if repo in hub.forbidden:
                return self._error(403, None)
            if repo in hub.gated and not authorized:
                return self._error(401, "GatedRepo")
            files = hub.repos.get(repo)
            if files is None:
                return self._error(404, "RepoNotFound")
            if filename not in files:
                return self._error(404, "EntryNotFound")
            body = files[filename]
            self.send_response(200)
            self.send_header("X-Repo-Commit", COMMIT)
            self.send_header("ETag", f'"{hashlib.sha1(body).hexdigest()}"')
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            if send_body:
                self.wfile.write(body)

        def _error(self, status: int, code: str | None) -> None:
            self.send_response(status)
            if code is not None:
                self.send_header("X-Error-Code", code)
            self.send_header("X-Repo-Commit", COMMIT)
            self.send_header("Content-Length", "0")
            self.end_headers()

        def log_message(self, format: str, *args: Any) -> None:
            pass  # keep test output clean

    return Handler


@pytest.fixture
def hub() -> Iterator[FakeHub]:
    served = FakeHub()
    server = ThreadingHTTPServer(("127.0.0.1", 0), _handler(served))
    served.endpoint = f"http://127.0.0.1:{server.server_address[1]}"
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield served
    server.shutdown()
    server.server_close()


def run(hub: FakeHub, home: Path, *args: str, **env: str) -> subprocess.CompletedProcess[str]:
    """decodecalc in a process of its own, against the stand-in Hub, with a fresh HF_HOME."""
    clean = {k: v for k, v in os.environ.items() if not k.startswith(("HF_", "HUGGING"))}
    clean.update(HF_ENDPOINT=hub.endpoint, HF_HOME=str(home), NO_COLOR="1", **env)
    command = [sys.executable, "-m", "decodecalc", *args]
    return subprocess.run(command, capture_output=True, text=True, env=clean, timeout=120)


def one_error_line(result: subprocess.CompletedProcess[str]) -> str:
    """The one error line, past the note a fetch slower than a second prints (a loaded
    machine's local stand-in can take that long: loading/hub.py SAY_AFTER_S)."""
    assert result.returncode == 2, result.stderr
    lines = [
        line
        for line in result.stderr.splitlines(keepends=True)
        if not line.startswith("decodecalc: note: waiting for the Hugging Face Hub")
    ]
    assert len(lines) == 1 and lines[0].startswith("decodecalc: error: "), result.stderr
    return lines[0]


def test_a_fetched_config_gives_the_local_config_figures(
    hub: FakeHub, tmp_path: Path, cli: Run
) -> None:
    hub.repos["test-org/Tiny-Llama"] = {"config.json": LLAMA_8B}
    fetched = run(hub, tmp_path, "estimate", "-m", "test-org/Tiny-Llama", *ESTIMATE)
    assert fetched.returncode == 0, fetched.stderr
    local = cli("estimate", "-m", str(CONFIGS / "llama-3.1-8b.json"), *ESTIMATE)  # no Hub
    assert json.loads(fetched.stdout)["inputs"]["model"] == "test-org/Tiny-Llama"
    assert figures(json.loads(fetched.stdout)) == figures(json.loads(local.out))
    assert any(
        r.startswith("GET /test-org/Tiny-Llama/resolve/main/config.json") for r in hub.requests
    )


@SLOW
def test_the_cache_serves_offline(hub: FakeHub, tmp_path: Path) -> None:
    hub.repos["test-org/Tiny-Llama"] = {"config.json": LLAMA_8B}
    online = run(hub, tmp_path, "estimate", "-m", "test-org/Tiny-Llama", *ESTIMATE)
    assert online.returncode == 0, online.stderr
    hub.requests.clear()
    offline = run(
        hub, tmp_path, "estimate", "-m", "test-org/Tiny-Llama", *ESTIMATE, HF_HUB_OFFLINE="1"
    )
    assert offline.returncode == 0, offline.stderr
    assert hub.requests == []  # nothing asked of the Hub
    assert json.loads(offline.stdout) == json.loads(online.stdout)


def test_offline_and_not_cached(hub: FakeHub, tmp_path: Path) -> None:
    hub.repos["test-org/Tiny-Llama"] = {"config.json": LLAMA_8B}
    result = run(
        hub, tmp_path, "estimate", "-m", "test-org/Tiny-Llama", *ESTIMATE, HF_HUB_OFFLINE="1"
    )
    message = one_error_line(result)
    assert "not in the Hugging Face cache" in message and "HF_HUB_OFFLINE" in message
    assert hub.requests == []


@SLOW
def test_a_missing_repository(hub: FakeHub, tmp_path: Path) -> None:
    message = one_error_line(run(hub, tmp_path, "estimate", "-m", "test-org/Nothing", *ESTIMATE))
    assert "neither a preset" in message and "test-org/Nothing" in message


@SLOW
def test_a_gated_repository_needs_the_token(hub: FakeHub, tmp_path: Path) -> None:
    hub.repos["test-org/Gated"] = {"config.json": LLAMA_8B}
    hub.gated.add("test-org/Gated")
    message = one_error_line(run(hub, tmp_path, "estimate", "-m", "test-org/Gated", *ESTIMATE))
    assert "is gated" in message and "HF_TOKEN" in message
    with_token = run(hub, tmp_path, "estimate", "-m", "test-org/Gated", *ESTIMATE, HF_TOKEN=TOKEN)
    assert with_token.returncode == 0, with_token.stderr


@SLOW
def test_a_forbidden_repository(hub: FakeHub, tmp_path: Path) -> None:
    hub.repos["test-org/Private"] = {"config.json": LLAMA_8B}
    hub.forbidden.add("test-org/Private")
    message = one_error_line(run(hub, tmp_path, "estimate", "-m", "test-org/Private", *ESTIMATE))
    assert "refused" in message and "(403)" in message


@SLOW
def test_a_repository_without_config_json(hub: FakeHub, tmp_path: Path) -> None:
    hub.repos["test-org/Gguf-Only"] = {"model.gguf": b"GGUF"}
    message = one_error_line(run(hub, tmp_path, "estimate", "-m", "test-org/Gguf-Only", *ESTIMATE))
    assert "has no config.json" in message


@SLOW
def test_hf_quant_config_json_is_fetched_beside_it(hub: FakeHub, tmp_path: Path, cli: Run) -> None:
    side = json.dumps(HF_QUANT_NVFP4).encode()
    hub.repos["test-org/Llama-NVFP4"] = {"config.json": LLAMA_8B, "hf_quant_config.json": side}
    fetched = run(hub, tmp_path, "estimate", "-m", "test-org/Llama-NVFP4", *ESTIMATE)
    assert fetched.returncode == 0, fetched.stderr
    folder = tmp_path / "local"
    folder.mkdir()
    (folder / "config.json").write_bytes(LLAMA_8B)
    (folder / "hf_quant_config.json").write_bytes(side)
    local = cli("estimate", "-m", str(folder / "config.json"), *ESTIMATE)  # no Hub: in-process
    doc = json.loads(fetched.stdout)
    assert doc["inputs"]["weights_dtype"] == "nvfp4"
    assert figures(doc) == figures(json.loads(local.out))


def test_presets_never_import_the_hub_client() -> None:
    loaded = imported_after(quietly("['estimate', '-m', 'llama-3.1-8b', '-g', 'h100', '--json']"))
    assert "huggingface_hub" not in {m.split(".")[0] for m in loaded}


def closed_endpoint() -> str:
    """An endpoint on a port nothing listens on: the connection is refused, as when the
    machine is offline (an unroutable address would do, were it not that sandboxes answer
    for every address)."""
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return f"http://127.0.0.1:{s.getsockname()[1]}"


NO_PROXY = {name: "" for name in ("HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY")} | {
    name.lower(): "" for name in ("HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY")
}
"""No proxy between the client and the (unreachable) Hub: the machine is offline."""


@SLOW
def test_no_network_fails_in_seconds_and_names_hf_hub_offline(hub: FakeHub, tmp_path: Path) -> None:
    """The client alone retries for about 25 s in silence; decodecalc gives the host 3 s."""
    import time

    hub.endpoint = closed_endpoint()
    start = time.monotonic()
    result = run(hub, tmp_path, "estimate", "-m", "test-org/Tiny", *ESTIMATE, **NO_PROXY)
    message = one_error_line(result)
    assert time.monotonic() - start < 15  # 3 s for the host, the rest is start-up
    assert "did not answer (waited " in message and "HF_HUB_OFFLINE=1" in message


@SLOW
def test_no_network_still_reads_the_cache(hub: FakeHub, tmp_path: Path) -> None:
    hub.repos["test-org/Tiny-Llama"] = {"config.json": LLAMA_8B}
    online = run(hub, tmp_path, "estimate", "-m", "test-org/Tiny-Llama", *ESTIMATE)
    assert online.returncode == 0, online.stderr
    hub.endpoint = closed_endpoint()
    cut_off = run(hub, tmp_path, "estimate", "-m", "test-org/Tiny-Llama", *ESTIMATE, **NO_PROXY)
    assert cut_off.returncode == 0, cut_off.stderr
    assert json.loads(cut_off.stdout) == json.loads(online.stdout)
    assert "fetching" not in cut_off.stderr  # said on a terminal only
