"""Where a calibration is kept between runs, so `--efficiency calibrated` can use it.

$DECODECALC_CALIBRATION names the file; otherwise $XDG_CONFIG_HOME/decodecalc/calibration.json
(default ~/.config/decodecalc/calibration.json).
"""

from __future__ import annotations

import json
import os
from pathlib import Path

from decodecalc.calibration.least_squares import Fit
from decodecalc.errors import InputError
from decodecalc.paths import expand_user, xdg_dir
from decodecalc.record import record

ENV_VAR = "DECODECALC_CALIBRATION"


def calibration_path() -> Path:
    configured = os.environ.get(ENV_VAR)
    if configured:
        return expand_user(configured)
    base = xdg_dir("XDG_CONFIG_HOME", ".config")
    if base is None:
        raise InputError(f"no home directory to keep the calibration in: set ${ENV_VAR}")
    return base / "decodecalc" / "calibration.json"


@record
class SavedFit:
    fit: Fit
    gpus: tuple[str, ...] = ()
    """The GPU presets of the points it was fitted on (empty: a file from before they were
    kept), so applying it to another GPU can say so."""


def save_calibration(
    fit: Fit, source: str, path: Path | None = None, gpus: tuple[str, ...] = ()
) -> Path:
    target = path or calibration_path()
    try:
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(
            json.dumps(
                {
                    "schema_version": 1,
                    "efficiency": fit.efficiency,
                    "overhead_ms": fit.overhead_s * 1000,
                    "fitted_from": source,
                    "gpus": list(gpus),
                },
                indent=2,
            )
            + "\n",
            encoding="utf-8",
        )
    except OSError as exc:
        raise InputError(
            f"cannot save the calibration to {target}: {exc.strerror or exc}"
        ) from None
    return target


def load_calibration(path: Path | None = None) -> SavedFit:
    source = path or calibration_path()
    try:
        data = json.loads(source.read_text(encoding="utf-8"))
        fit = Fit(float(data["efficiency"]), float(data["overhead_ms"]) / 1000)
        gpus = tuple(str(g) for g in data.get("gpus", ()))
    except FileNotFoundError:
        raise InputError(
            f"no calibration at {source}: run 'decodecalc calibrate POINTS.yaml --save' first"
        ) from None
    except (OSError, ValueError, KeyError, TypeError):
        raise InputError(f"{source}: not a calibration saved by decodecalc") from None
    if not 0 < fit.efficiency <= 1 or fit.overhead_s < 0:
        raise InputError(
            f"{source}: the saved fit (efficiency {fit.efficiency:.3f}, overhead "
            f"{fit.overhead_s * 1000:.3f} ms) is outside what decodecalc can apply"
        )
    return SavedFit(fit, gpus)
