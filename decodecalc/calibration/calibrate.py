"""Calibrating against measured points: the engine step model fitted to them, each point's
roofline and fitted prediction, and the error that remains (docs/physics.md sections 5 and 7).

Two fits come out of the same points. The step model (engine_fit) is what calibrate
reports and what ``--save-engine`` keeps as an engine profile. ``--save`` keeps the older,
coarser one: a single efficiency and a per-step overhead for the roofline itself
(``--efficiency calibrated``), which has no separate KV efficiency or per-layer cost.
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


def roofline_fit(points: list[MeasuredPoint]) -> Fit:
    """One efficiency and a per-step overhead for the roofline (``--save``): measured less
    communication = memory time / efficiency + overhead, by least squares, kept physical
    (overhead >= 0, efficiency <= 1)."""
    memory, target = [], []
    for p in points:
        row = StepModel.of(p.scenario).row(p.context_tokens)
        memory.append(row.memory_seconds)  # at efficiency 1: the bytes at peak bandwidth
        target.append(p.measured_seconds - row.comm_seconds)
    fit = fit_line(memory, target)
    pairs = list(zip(memory, target, strict=True))
    if fit.overhead_s < 0:
        # A negative overhead is unphysical: fit the slope alone, through the origin.
        fit = Fit(sum(r * r for r, _ in pairs) / sum(r * m for r, m in pairs), 0.0)
    if fit.efficiency > 1:
        # Faster than the roofline cannot be: keep efficiency 1, let overhead absorb the rest.
        fit = Fit(1.0, max(0.0, sum(t - r for r, t in pairs) / len(pairs)))
    return fit


def profile_text(cal: Calibration, name: str, source: str) -> str:
    """The fit as an engine profile (one set of parameters for each GPU family among the
    points), its band from the points' own residuals (validation.band_of)."""
    params = replace(cal.fit.params, band=band_of([1 / (1 + c.error) for c in cal.points]))
    families = [FamilyProfile(f, params, cal.fit.describe()) for f in cal.families]
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
