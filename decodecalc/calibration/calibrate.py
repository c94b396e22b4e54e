"""Calibrating against measured points: the roofline prediction of each, the fit, and the
error that remains (docs/physics.md section 5: how far the roofline is from a real GPU)."""

from __future__ import annotations

import math

from decodecalc.calibration.least_squares import Fit, fit_line
from decodecalc.calibration.points import MeasuredPoint
from decodecalc.physics.estimator import StepModel
from decodecalc.record import record, replace


@record
class CheckedPoint:
    point: MeasuredPoint
    roofline_seconds: float
    """The prediction at efficiency 1 with no overhead."""
    predicted_seconds: float
    """The prediction with the fitted efficiency and overhead."""

    @property
    def error(self) -> float:
        return self.predicted_seconds / self.point.measured_seconds - 1


@record
class Calibration:
    fit: Fit
    points: tuple[CheckedPoint, ...]

    @property
    def rms_error(self) -> float:
        return math.sqrt(sum(p.error**2 for p in self.points) / len(self.points))


def _row(point: MeasuredPoint, efficiency: float, overhead_s: float) -> float:
    scenario = replace(point.scenario, efficiency=efficiency, overhead_s=overhead_s)
    return StepModel.of(scenario).row(point.context_tokens).seconds_per_token


def calibrate(points: list[MeasuredPoint]) -> Calibration:
    """Fit measured - communication = memory time / efficiency + overhead by least squares."""
    memory, target = [], []
    for p in points:
        row = StepModel.of(p.scenario).row(p.context_tokens)
        memory.append(row.memory_seconds)
        target.append(p.measured_seconds - row.comm_seconds)
    fit = fit_line(memory, target)
    if fit.overhead_s < 0:
        # A negative overhead is unphysical: fit the slope alone, through the origin.
        slope = sum(r * m for r, m in zip(memory, target, strict=True)) / sum(r * r for r in memory)
        fit = Fit(1 / slope, 0.0)
    if fit.efficiency > 1:
        # Faster than the roofline cannot be: keep efficiency 1, let overhead absorb the rest.
        fit = Fit(
            1.0, max(0.0, sum(t - r for r, t in zip(memory, target, strict=True)) / len(memory))
        )
    efficiency, overhead = fit.efficiency, fit.overhead_s
    return Calibration(
        fit,
        tuple(CheckedPoint(p, _row(p, 1.0, 0.0), _row(p, efficiency, overhead)) for p in points),
    )
