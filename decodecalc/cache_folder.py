"""Where decodecalc keeps what it may throw away: validated presets and notes on written files.

On the ground floor, so that loading/cache.py (the presets) and writing.py (the notes)
both find it without one importing the other.

Location: $DECODECALC_CACHE, else $XDG_CACHE_HOME/decodecalc, else ~/.cache/decodecalc;
DECODECALC_CACHE=off disables it, and so does having no home directory to find.
"""

from __future__ import annotations

import os
from pathlib import Path

from decodecalc.paths import expand_user, xdg_dir

ENV_VAR = "DECODECALC_CACHE"


def cache_dir() -> Path | None:
    configured = os.environ.get(ENV_VAR)
    if configured:
        off = configured.lower() in ("off", "0", "no", "false")
        return None if off else expand_user(configured)
    base = xdg_dir("XDG_CACHE_HOME", ".cache")
    # No home to cache under: reading the YAML every time is only slower.
    return None if base is None else base / "decodecalc"
