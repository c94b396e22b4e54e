"""Paths the user typed: ``~`` expanded the way a shell does, without ever failing.

``Path.expanduser`` raises RuntimeError when it cannot find the home directory: for a user
name that does not exist (``~0/x.yaml``, ``~nosuchuser``), or for ``~`` when $HOME is unset
and the account has no password entry. A name the user typed is input, not a bug, so it is
left as it is instead, as a shell leaves ``~nosuchuser``, and whoever opens it then reports
"no such file" or "unknown preset" like for any other wrong name.
"""

from __future__ import annotations

import os
from pathlib import Path


def expand_user(path_text: str | os.PathLike[str]) -> Path:
    """The path with a leading ``~`` or ``~user`` expanded, or as given when that user's
    home is unknown (or the text cannot be a user name at all, e.g. a NUL byte)."""
    text = os.fspath(path_text)
    try:
        return Path(os.path.expanduser(text))
    except ValueError:  # os.path.expanduser looks up "~a\0b" as a user and is refused
        return Path(text)


def xdg_dir(variable: str, default: str) -> Path | None:
    """An XDG base directory: $XDG_CACHE_HOME (say), else its ``default`` under the home
    directory; None where there is no home to find (no $HOME and no password entry, as in
    some containers), rather than a relative ``~/.cache`` in whatever directory this runs."""
    configured = os.environ.get(variable)
    if configured:
        return Path(configured)
    user_home = os.path.expanduser("~")
    return None if user_home.startswith("~") else Path(user_home) / default
