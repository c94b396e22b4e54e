"""Models named by a Hugging Face Hub id (``-m org/name``) that no preset spells: their
config.json, and the hf_quant_config.json of a ModelOpt export where the repository has one,
fetched with huggingface_hub and read like a local config.json.

huggingface_hub (the optional ``decodecalc[hub]``) does the fetching, so HF_ENDPOINT,
HF_TOKEN, HF_HUB_OFFLINE and its cache under HF_HOME work as in every other Hugging Face
tool: a second run, or one with HF_HUB_OFFLINE=1, reads the cached files. The whole fetch
has one deadline (DECODECALC_HUB_TIMEOUT seconds, 30 by default): the client times each
request, not the fetch, and a proxy that takes the connection and never answers kept a run
silent for minutes. It takes about a
third of a second to import, so it is imported here, on this path alone: a query about a
preset never loads it.
"""

from __future__ import annotations

import logging
import os
import re
import time
from collections.abc import Callable
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING

from decodecalc.errors import InputError
from decodecalc.paths import expand_user

if TYPE_CHECKING:
    from decodecalc.model.model import Model

_REPO_ID = re.compile(
    r"[A-Za-z0-9](?:[A-Za-z0-9._-]{0,94}[A-Za-z0-9])?/[A-Za-z0-9](?:[A-Za-z0-9._-]{0,94}[A-Za-z0-9])?"
)
"""``org/name`` as the Hub spells repository ids (huggingface_hub's validate_repo_id): one
slash, each side at most 96 letters, digits, '.', '_' or '-', starting and ending with a
letter or digit, no '--' or '..' anywhere (checked apart)."""

_RATE = re.compile(r"(?i)[+-]?(nan|inf\w*|[0-9.]+(e[+-]?[0-9]*)?)\s*[a-z]*/(s|h)")
"""A quantity per second or per hour (3.35TB/s, nanTB/s, 2.49USD/h): an option's value in
the wrong place, never a model, so never a question for the Hub."""

CONFIG = "config.json"
QUANT_CONFIG = "hf_quant_config.json"
INSTALL = "pip install 'decodecalc[hub]'"


def is_repo_id(name: str) -> bool:
    """Whether a model name can only mean a Hub repository: ``org/name``, not a path here."""
    text = name.strip()
    if not _REPO_ID.fullmatch(text) or ".." in text or "--" in text or _RATE.fullmatch(text):
        return False
    try:
        return not expand_user(text).exists()
    except (OSError, ValueError):  # a name the OS refuses as a path (too long) is no path
        return True


def model_from_hub(repo_id: str, hint: str = "") -> Model:
    """The model a Hub repository's config.json describes; its id is the repository id.
    ``hint`` (presets spelt like it) ends the message when the Hub has no such repository."""
    from decodecalc.loading.presets import model_from_config
    from decodecalc.loading.quantization import read_config

    clock = _Clock.start()
    path = _download(repo_id, CONFIG, hint, True, clock)
    assert path is not None
    _download(repo_id, QUANT_CONFIG, hint, False, clock)  # beside config.json, if the repo has it
    doc = read_config(path, f"{repo_id}/{CONFIG} (Hugging Face Hub)")
    return model_from_config(doc, repo_id)


class _Clock:
    """When the fetch began and when it must end (DECODECALC_HUB_TIMEOUT)."""

    def __init__(self, started: float, limit_s: float) -> None:
        self.started, self.limit_s = started, limit_s

    @classmethod
    def start(cls) -> _Clock:
        text = os.environ.get(TIMEOUT_VAR, "").strip()
        limit = FETCH_S
        if text:
            try:
                limit = float(text)
            except ValueError:
                limit = -1.0
            if not 0 < limit <= 3600:
                raise InputError(f"{TIMEOUT_VAR}={text!r}: give seconds from 0 to 3600, e.g. 30")
        return cls(time.monotonic(), limit)

    def left(self) -> float:
        return max(0.0, self.started + self.limit_s - time.monotonic())

    def waited(self) -> str:
        return f"{time.monotonic() - self.started:.0f} s"


TIMEOUT_VAR = "DECODECALC_HUB_TIMEOUT"
FETCH_S = 30.0
"""The deadline of a whole Hub fetch (config.json and its side file), in seconds."""
SAY_AFTER_S = 1.0
"""How long a fetch runs before stderr says what it waits for: a cached or nearby file
takes a fraction of a second."""


class _Stalled(Exception):
    """The fetch ran past its deadline."""


def _in_time(call: Callable[[], str], clock: _Clock, waiting: str) -> str:
    """``call()``'s answer or exception, raised here, or _Stalled past the clock's deadline.
    The call runs in a thread left behind when it stalls: a socket read cannot be cut short
    from outside, and the process ends with the one error line."""
    import sys
    import threading

    box: list[tuple[bool, object]] = []

    def run() -> None:
        try:
            box.append((True, call()))
        except BaseException as exc:  # raised again in the caller's thread
            box.append((False, exc))

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    thread.join(min(SAY_AFTER_S, clock.left()))
    if thread.is_alive() and clock.left():
        print(f"decodecalc: note: {waiting} (at most {clock.limit_s:g} s)", file=sys.stderr)
        thread.join(clock.left())
    if not box:
        raise _Stalled
    answered, value = box[0]
    if not answered:
        raise value  # type: ignore[misc]
    return str(value)


def _download(repo_id: str, filename: str, hint: str, required: bool, clock: _Clock) -> Path | None:
    """One file of a repository, from the cache or the Hub, within the clock's deadline;
    every failure a one-line InputError (None for a missing optional file)."""
    try:
        from huggingface_hub import constants, hf_hub_download
        from huggingface_hub.errors import (
            EntryNotFoundError,
            GatedRepoError,
            HfHubHTTPError,
            LocalEntryNotFoundError,
            RepositoryNotFoundError,
        )
        from huggingface_hub.utils.tqdm import disable_progress_bars
    except ImportError:
        raise InputError(
            f"model {repo_id!r} is not a preset, alias or file; to fetch it from the Hugging "
            f"Face Hub, install huggingface_hub ({INSTALL})"
        ) from None
    # stderr carries decodecalc's notes and its one error line: no progress bars, and no
    # warning per retry (the client retries a failed connection five times, ~25 s, first)
    disable_progress_bars()
    logging.getLogger("huggingface_hub").setLevel(logging.ERROR)
    where = f"{repo_id}'s {filename}"
    offline = bool(constants.HF_HUB_OFFLINE)
    if not offline:
        _say(f"fetching {where} from {constants.ENDPOINT} (HF_HUB_OFFLINE=1 reads the cache only)")
        offline = not _reachable(constants.ENDPOINT)
    waiting = f"waiting for the Hugging Face Hub at {constants.ENDPOINT} for {where}"

    def stalled() -> str:
        return (
            f"the Hugging Face Hub at {constants.ENDPOINT} did not answer (waited "
            f"{clock.waited()}) for {where} (nor is it cached): check the connection or "
            "HF_ENDPOINT, or set HF_HUB_OFFLINE=1 to work from the cache alone"
        )

    try:
        fetch = partial(hf_hub_download, repo_id, filename, local_files_only=offline)
        return Path(_in_time(fetch, clock, waiting))
    except _Stalled:
        raise InputError(stalled()) from None
    except GatedRepoError:
        raise InputError(
            f"model {repo_id!r} is gated on the Hugging Face Hub: accept its terms on its "
            "page, then set HF_TOKEN to a token of that account (or run 'hf auth login')"
        ) from None
    except RepositoryNotFoundError:
        raise InputError(
            f"model {repo_id!r} is neither a preset ('decodecalc models' lists them) nor a "
            f"repository on the Hugging Face Hub at {constants.ENDPOINT} (if it is private, "
            f"set HF_TOKEN){hint}"
        ) from None
    except LocalEntryNotFoundError as exc:
        if not required:
            return None
        status = _status(exc)
        if status is not None:
            raise _refused(where, status) from None
        # The name may be a typo of a preset as much as a Hub id: say both, hint last.
        unknown = f"unknown model {repo_id!r}: not a preset, alias or file, and "
        if constants.HF_HUB_OFFLINE:
            raise InputError(
                f"{unknown}{where} is not in the Hugging Face cache ({constants.HF_HUB_CACHE}) "
                f"while HF_HUB_OFFLINE is set: run once online, or unset HF_HUB_OFFLINE{hint}"
            ) from None
        raise InputError(f"{unknown}{stalled()}{hint}") from None
    except EntryNotFoundError:
        if not required:
            return None
        raise InputError(
            f"the Hugging Face repository {repo_id!r} has no {filename}: decodecalc reads a "
            "transformers config.json"
        ) from None
    except HfHubHTTPError as exc:
        raise _refused(where, _status(exc) or 0) from None
    except (OSError, ValueError) as exc:
        said = " ".join(str(exc).split())  # the client's messages run over several lines
        raise InputError(f"cannot fetch {where} from the Hugging Face Hub: {said}") from None


REACH_S = 3.0
"""How long the Hub's host is given to accept a connection: the client's own retries
would wait about 25 s in silence before failing."""


def _reachable(endpoint: str) -> bool:
    """Whether the endpoint's host (or the proxy the environment routes it through) accepts
    a TCP connection within REACH_S seconds, name lookup included, which has no timeout of
    its own: it runs in a thread that is left behind."""
    import socket
    import threading
    from urllib.parse import urlsplit
    from urllib.request import getproxies, proxy_bypass

    parts = urlsplit(endpoint)
    proxy = getproxies().get(parts.scheme)
    if proxy and not proxy_bypass(parts.hostname or ""):
        parts = urlsplit(proxy if "://" in proxy else f"http://{proxy}")
    port = parts.port or (443 if parts.scheme == "https" else 80)
    answered: list[bool] = []

    def probe() -> None:
        try:
            socket.create_connection((parts.hostname or "", port), timeout=REACH_S).close()
            answered.append(True)
        except (OSError, ValueError):
            answered.append(False)

    thread = threading.Thread(target=probe, daemon=True)
    thread.start()
    thread.join(REACH_S)
    return bool(answered and answered[0])


def _say(message: str) -> None:
    """What is being fetched, on a terminal only: a script's stderr keeps its one line."""
    import sys

    if sys.stderr.isatty():
        print(f"decodecalc: {message}", file=sys.stderr)


def _status(error: BaseException) -> int | None:
    """The HTTP status behind an error, looking through the causes huggingface_hub chains
    (a 403 surfaces as "not found locally", caused by the refused request)."""
    seen: BaseException | None = error
    while seen is not None:
        response = getattr(seen, "response", None)
        status = getattr(response, "status_code", None)
        if isinstance(status, int):
            return status
        seen = seen.__cause__
    return None


def _refused(where: str, status: int) -> InputError:
    if status in (401, 403):
        return InputError(
            f"the Hugging Face Hub refused {where} ({status}): the repository is private or "
            "gated, or HF_TOKEN is not a token with access to it"
        )
    return InputError(f"the Hugging Face Hub answered {status} for {where}")
