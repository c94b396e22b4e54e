"""Calibrating against measured points: the engine step model fitted to them, each point's
roofline and fitted prediction, and the error that remains (docs/physics.md sections 5 and 7).

Two fits come out of the same points. The step model (engine_fit) is what calibrate
reports and what ``--save-engine`` keeps as an engine profile. ``--save`` keeps the older,
coarser one: a single efficiency and a per-step overhead for the roofline itself
(``--efficiency calibrated``), which has no separate KV efficiency or per-layer cost. Both
are fitted on the relative error, and each is reported with its own error on the points.
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Sequence

from decodecalc.calibration.engine_fit import (
    DEFAULT_PRIOR,
    StepFit,
    fit_step_model,
    step_terms,
)
from decodecalc.calibration.least_squares import fit_line
from decodecalc.calibration.points import MeasuredPoint
from decodecalc.calibration.validation import band_of
from decodecalc.engine.profile import Engine, EngineParams, gpu_family, release_order
from decodecalc.errors import InputError
from decodecalc.loading.saved import FamilyProfile, Fit, LineProfile, engine_profile_text
from decodecalc.record import record, replace
from decodecalc.scenarios.fields import MIN_FRACTION
from decodecalc.step.step import StepModel, expected_for


@record
class CheckedPoint:
    point: MeasuredPoint
    roofline_seconds: float
    """The prediction at efficiency 1 with no overhead."""
    predicted_seconds: float
    """The fitted step model's prediction."""
    prefill_seconds: float = 0.0
    """Other requests' prefills in a serving figure (validation.prefill_share): the step
    model predicts the figure less them."""

    @property
    def error(self) -> float:
        return self.predicted_seconds / (self.point.measured_seconds - self.prefill_seconds) - 1


@record
class Calibration:
    fit: StepFit
    points: tuple[CheckedPoint, ...]

    @property
    def rms_error(self) -> float:
        return math.sqrt(sum(p.error**2 for p in self.points) / len(self.points))

    @property
    def median_error(self) -> float:
        """Median absolute relative error."""
        return statistics.median(abs(p.error) for p in self.points)

    @property
    def families(self) -> tuple[str, ...]:
        """The GPU families of the points, in the order they first appear."""
        return tuple(dict.fromkeys(gpu_family(p.point.scenario.gpu) for p in self.points))


def calibrate(
    points: list[MeasuredPoint],
    prior: EngineParams = DEFAULT_PRIOR,
    prefills: Sequence[float] = (),
) -> Calibration:
    """Fit the step model with relative error as the loss; what the points cannot identify
    keeps the prior's value (engine_fit explains which and why). ``prefills``: per point,
    what other requests' prefills add to a serving figure (validation.prefill_share; none
    given: 0), taken off before the fit as validate takes them off."""
    if len(points) < 2:
        raise InputError("calibration needs at least two measured points")
    shares = list(prefills) or [0.0] * len(points)
    steps = [StepModel.of(p.scenario) for p in points]
    fit = fit_step_model(
        [step_terms(p, s, x) for p, s, x in zip(points, steps, shares, strict=True)], prior
    )
    params = fit.params
    if min(params.weight_efficiency, params.kv_efficiency) < MIN_FRACTION:
        raise InputError(
            f"the points imply an efficiency below {MIN_FRACTION} of peak bandwidth: check "
            "their units (ms_per_token is milliseconds per token of one sequence) and GPUs"
        )
    checked = []
    for p, step, share in zip(points, steps, shares, strict=True):
        row = step.row(p.context_tokens)
        engine = Engine("calibrated", (params,), gpu_family(p.scenario.gpu))
        # Points are read at efficiency 1 with no overhead: the row's own step is the roofline.
        predicted = expected_for(step, row, engine).seconds
        checked.append(CheckedPoint(p, row.seconds_per_token, predicted, share))
    return Calibration(fit, tuple(checked))


@record
class RooflineFit:
    """The fit ``--save`` keeps, and each point's relative error under it: what
    ``--efficiency calibrated`` predicts for the point against what was measured."""

    fit: Fit
    errors: tuple[float, ...]

    @property
    def rms_error(self) -> float:
        return math.sqrt(sum(e**2 for e in self.errors) / len(self.errors))

    @property
    def median_error(self) -> float:
        """Median absolute relative error."""
        return statistics.median(abs(e) for e in self.errors)


def roofline_fit(points: list[MeasuredPoint]) -> RooflineFit:
    """One efficiency and a per-step overhead for the roofline (``--save``), fitted on the
    relative error, the error calibrate reports, and kept physical (overhead >= 0,
    efficiency <= 1).

    Each point i has r_i, its memory time at the roofline (efficiency 1), k_i its
    communication and m_i its measured step; the fit predicts a r_i + c + k_i, a = 1/e.
    Its relative error is (a r_i + c + k_i) / m_i - 1 = (a r_i + c - t_i) / m_i with
    t_i = m_i - k_i, so the loss sum ((a r_i + c - t_i) / m_i)^2 is least squares of
    t = a r + c with weights w_i = 1 / m_i^2 (least_squares.fit_line). A least-squares
    fit in milliseconds instead lets the slowest points outweigh the rest: a 28 ms point
    pulls the fit 4 times as hard as a 7 ms one (review s39 #4).

    Through the origin (c = 0, where the line's overhead comes out negative):
    d/da sum w_i (a r_i - t_i)^2 = 2 sum w_i r_i (a r_i - t_i) = 0 gives
    a = sum w_i r_i t_i / sum w_i r_i^2, so e = sum (r_i / m_i)^2 / sum r_i t_i / m_i^2;
    without communication (t_i = m_i) and with x_i = r_i / m_i, the roofline's share of
    each point, e = sum x_i^2 / sum x_i. At e = 1 (a faster fit cannot be) the overhead
    alone: d/dc sum w_i (r_i + c - t_i)^2 = 0 gives c = sum w_i (t_i - r_i) / sum w_i."""
    memory, target, weights, steps = [], [], [], []
    for p in points:
        step = StepModel.of(p.scenario)
        row = step.row(p.context_tokens)
        steps.append(step)
        memory.append(row.memory_seconds)  # at efficiency 1: the bytes at peak bandwidth
        target.append(p.measured_seconds - row.comm_seconds)
        weights.append(1 / p.measured_seconds**2)
    fit = fit_line(memory, target, weights)
    pairs = list(zip(memory, target, weights, strict=True))
    if fit.overhead_s < 0:
        # A negative overhead is unphysical: fit the slope alone, through the origin.
        fit = Fit(sum(w * r * r for r, _, w in pairs) / sum(w * r * t for r, t, w in pairs), 0.0)
    if fit.efficiency > 1:
        # Faster than the roofline cannot be: keep efficiency 1, let overhead absorb the rest.
        overhead = sum(w * (t - r) for r, t, w in pairs) / sum(weights)
        fit = Fit(1.0, max(0.0, overhead))
    errors = tuple(
        _applied(step, p, fit) / p.measured_seconds - 1
        for step, p in zip(steps, points, strict=True)
    )
    return RooflineFit(fit, errors)


def _applied(step: StepModel, point: MeasuredPoint, fit: Fit) -> float:
    """The point's step as ``--efficiency calibrated`` prices it under ``fit``."""
    s = replace(step.scenario, efficiency=fit.efficiency, overhead_s=fit.overhead_s)
    return StepModel.of(s).row(point.context_tokens).seconds_per_token


def profile_text(cal: Calibration, name: str, source: str) -> str:
    """The fit as an engine profile (one set of parameters for each GPU family among the
    points), its band from the points' own residuals (validation.band_of)."""
    params = replace(cal.fit.params, band=band_of([1 / (1 + c.error) for c in cal.points]))
    fitted = f"{cal.fit.describe()}; {_prefill_held(params)}"
    families = [FamilyProfile(f, params, fitted) for f in cal.families]
    versions = sorted({p.point.engine_version for p in cal.points if p.point.engine_version})
    releases = {p.point.release for p in cal.points}
    # Points of one release line (--engine NAME@LINE) make that line of the profile too, so
    # that --engine NAME@LINE finds the fit under the line it was measured on.
    lines = (
        [LineProfile(release, tuple(versions), len(cal.points), tuple(families))]
        if len(releases) == 1 and (release := releases.pop()) is not None
        else []
    )
    return engine_profile_text(
        name,
        families,
        source=source,
        versions=versions,
        notes=f"Fitted by decodecalc calibrate on {len(cal.points)} points.",
        lines=lines,
    )


def _prefill_held(params: EngineParams) -> str:
    """What the profile's prefill is, which calibrate never fits (its points are decode
    steps): --engine's e_p and c_req, else peak FLOP/s and none, said at use too
    (answers/serving.py prefill_unmeasured)."""
    if params.prefill_efficiency == 1 and not params.per_request_s:
        return (
            "prefill_efficiency 1, per_request 0 us (no prefill measured: prompts at peak "
            "FLOP/s; --engine NAME carries a profile's)"
        )
    return (
        f"prefill_efficiency {params.prefill_efficiency:.4g}, per_request "
        f"{params.per_request_s * 1e6:.0f} us (--engine's: calibrate fits decode steps only)"
    )


def with_lines_of(text: str, old: object) -> str:
    """A new profile's text with the release lines of the profile it replaces kept: a
    user's engine gains the line just fitted beside the lines fitted before (a refit of a
    line replaces it). Its families are the newest line's, what --engine NAME without a
    line uses; its versions and sources are both profiles'. A new profile without a
    line, or an earlier file (``old``, as read) that is not a profile with lines, replaces
    it whole."""
    import yaml

    new = yaml.safe_load(text)
    if not isinstance(old, dict) or not isinstance(old.get("lines"), dict) or "lines" not in new:
        return text
    lines = {**old["lines"], **new["lines"]}
    ordered = dict(sorted(lines.items(), key=lambda item: release_order(str(item[0]))))
    newest = list(ordered.values())[-1]
    sources = str(old.get("source", "")).split("; ")
    merged = {
        **new,
        "versions": sorted({*old.get("versions", ()), *new["versions"]}),
        "source": "; ".join(s for s in dict.fromkeys([*sources, new["source"]]) if s),
        "families": newest.get("families", new["families"]),
        "lines": ordered,
    }
    return yaml.safe_dump(merged, sort_keys=False, width=100, allow_unicode=False)
