"""Measured points faster than their roofline: no engine beats the bytes over bandwidth
(and the FLOPs over peak) of its step, so a point below it was read wrong, most often with
the requests of several replicas (or GPUs) counted as one batch. check --measured,
calibrate and validate say so rather than hold, fit or score such a point silently."""

from __future__ import annotations

from collections.abc import Sequence

from decodecalc.calibration.points import MeasuredPoint
from decodecalc.notes import Note
from decodecalc.step.step import StepModel


def roofline_seconds(point: MeasuredPoint) -> float:
    """The point's step at its context and batch on the roofline (a point's scenario is at
    efficiency 1 with no overhead: calibration/points.py)."""
    return StepModel.of(point.scenario).row(point.context_tokens).seconds_per_token


def below_roofline(point: MeasuredPoint, where: str) -> Note | None:
    """The note for a point measured faster than its roofline; None for any other."""
    roofline = roofline_seconds(point)
    if point.measured_seconds >= roofline:
        return None
    return Note(
        "below-roofline",
        f"{where}: measured {point.measured_seconds * 1000:.2f} ms is below the roofline "
        f"{roofline * 1000:.2f} ms at batch {point.scenario.batch:,}: as read the point is "
        "impossible (replicas, batch or GPU count?)",
    )


def below_roofline_notes(points: Sequence[tuple[MeasuredPoint, str]]) -> tuple[Note, ...]:
    """Each (point, where it was read) below its roofline, one note each."""
    found = (below_roofline(p, where) for p, where in points)
    return tuple(n for n in found if n is not None)
