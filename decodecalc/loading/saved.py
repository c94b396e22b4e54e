"""Where a calibration is kept between runs: the roofline fit `--efficiency calibrated`
uses, and engine profiles `--engine NAME` uses.

$DECODECALC_CALIBRATION names the file; otherwise $XDG_CONFIG_HOME/decodecalc/calibration.json
(default ~/.config/decodecalc/calibration.json).
"""

from __future__ import annotations

import json
import os
from collections.abc import Sequence
from pathlib import Path

from decodecalc.engine.profile import EngineParams
from decodecalc.errors import InputError
from decodecalc.paths import expand_user, xdg_dir
from decodecalc.record import record
from decodecalc.step.running import RUNNING_COSTS
from decodecalc.writing import write_file


@record
class Fit:
    """A roofline calibration: t = memory time / efficiency + overhead per step, the line
    calibrate fits (calibration/least_squares.py) and --efficiency calibrated applies."""

    efficiency: float
    overhead_s: float


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
    fit: Fit,
    source: str,
    path: Path | None = None,
    gpus: tuple[str, ...] = (),
    *,
    force: bool = False,
    inputs: Sequence[Path] = (),
) -> Path:
    """Keep a fit where --efficiency calibrated finds it (or at ``path``), replacing a
    file there only as decodecalc/writing.py allows (``force``, never one of ``inputs``)."""
    target = path or calibration_path()
    text = json.dumps(
        {
            "schema_version": 1,
            "efficiency": fit.efficiency,
            "overhead_ms": fit.overhead_s * 1000,
            "fitted_from": source,
            "gpus": list(gpus),
        },
        indent=2,
    )
    _save(target, text + "\n", "the calibration", force, inputs)
    return target


def _save(target: Path, text: str, what: str, force: bool, inputs: Sequence[Path]) -> None:
    try:
        target.parent.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise InputError(f"cannot save {what} to {target}: {exc.strerror or exc}") from None
    with write_file(target, force=force, inputs=inputs) as out:
        out.write(text)


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


@record
class FamilyProfile:
    """An engine's parameters on one GPU family, as a profile file holds them."""

    family: str
    params: EngineParams
    fitted: str
    """What the points identified, and what was held and why (StepFit.describe)."""


@record
class LineProfile:
    """An engine's release line as a profile file holds it: its versions, points, and
    parameters on the families where it was fitted on its own."""

    release: str
    versions: tuple[str, ...]
    points: int
    families: tuple[FamilyProfile, ...] = ()
    dates: tuple[str, ...] = ()


def engine_profile_text(
    name: str,
    families: Sequence[FamilyProfile],
    *,
    source: str,
    versions: Sequence[str] = (),
    notes: str = "",
    aliases: Sequence[str] = (),
    header: str = "",
    lines: Sequence[LineProfile] = (),
) -> str:
    """An engine profile in the presets' YAML (loading.presets.load_engine reads it back),
    rounded so that a refit of the same points writes the same bytes."""
    import yaml

    doc: dict[str, object] = {"name": name}
    if aliases:
        doc["aliases"] = list(aliases)
    doc.update(versions=list(versions), source=source)
    if notes:
        doc["notes"] = notes
    doc["families"] = _families(families)
    if lines:
        doc["lines"] = {
            x.release: {
                "versions": list(x.versions),
                **({"dates": list(x.dates)} if x.dates else {}),
                "points": x.points,
                **({"families": _families(x.families)} if x.families else {}),
            }
            for x in lines
        }
    body = yaml.safe_dump(doc, sort_keys=False, width=100, allow_unicode=False)
    return "".join(f"# {line}\n" if line else "#\n" for line in header.splitlines()) + body


def _families(families: Sequence[FamilyProfile]) -> dict[str, object]:
    table: dict[str, object] = {}
    for f in families:
        p = f.params
        entry: dict[str, object] = {
            "weight_efficiency": round(p.weight_efficiency, 4),
            "kv_efficiency": round(p.kv_efficiency, 4),
            "kv_read": p.kv_read,
            "per_layer": _microseconds(p.per_layer_s),
            "per_step": _microseconds(p.per_step_s),
            "per_moe_layer": _microseconds(p.per_moe_layer_s),
            "per_sequence": _microseconds(p.per_sequence_s, 3),
            "mma_efficiency": round(p.mma_efficiency, 4),
            "tile_rows": p.tile_rows,
        }
        for cost in RUNNING_COSTS:  # (step/running.py: only those fitted or lent)
            if getattr(p, cost.field):
                entry[cost.key] = _microseconds(getattr(p, cost.field), 3)
        if p.mma_fitted:
            entry["mma_fitted"] = True
        if p.lent:
            entry["lent"] = list(p.lent)
        if p.allreduce_latency_s is not None:
            entry["allreduce_latency"] = _microseconds(p.allreduce_latency_s)
        if p.prefill_efficiency != 1 or p.per_request_s:
            entry["prefill_efficiency"] = round(p.prefill_efficiency, 4)
            entry["per_request"] = _microseconds(p.per_request_s)
        entry.update(
            band_low=round(p.band[0], 3),
            band_high=round(p.band[1], 3),
            points=p.points,
        )
        if p.range is not None:
            r = p.range
            entry["range"] = {
                "params": [r.params_min, r.params_max],
                "kinds": list(r.kinds),
                "batch": [r.batch_min, r.batch_max],
                "context": [r.context_min, r.context_max],
                "gpus": list(r.gpus),
                "lines": list(r.lines),
                **({"sizes": list(r.sizes)} if r.sizes else {}),
                "band_low": round(r.outside_band[0], 3),
                "band_high": round(r.outside_band[1], 3),
            }
        if p.transferred:
            entry["transferred"] = p.transferred
        if p.moe_factor != 1:
            entry["moe_factor"] = round(p.moe_factor, 4)
        entry["fitted"] = f.fitted
        table[f.family] = entry
    return table


def _microseconds(seconds: float, digits: int = 2) -> str:
    return f"{seconds * 1e6:.{digits}f}us"


def save_engine_profile(
    directory: Path,
    engine_id: str,
    text: str,
    *,
    force: bool = False,
    inputs: Sequence[Path] = (),
) -> Path:
    """Write a profile as DIRECTORY/engines/ENGINE_ID.yaml, where the catalog finds it; a
    profile there is replaced only as decodecalc/writing.py allows (one edited by hand
    needs ``force``)."""
    target = directory / "engines" / f"{engine_id}.yaml"
    _save(target, text, "the engine profile", force, inputs)
    return target
