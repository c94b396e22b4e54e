"""Fitting the roofline to measurements: an effective bandwidth fraction and an overhead.

A measured step is modelled as  t = memory_time / efficiency + overhead + communication,
so with r = memory time at the roofline and m = measured time less communication,
m = a r + c is a straight line: least squares gives a = 1/efficiency and c = overhead.
"""

from __future__ import annotations

from collections.abc import Sequence

from decodecalc.errors import InputError
from decodecalc.record import record


@record
class Fit:
    efficiency: float
    overhead_s: float


def fit_line(roofline_s: Sequence[float], measured_s: Sequence[float]) -> Fit:
    """Least-squares a and c in measured = a x roofline + c; efficiency = 1/a."""
    n = len(roofline_s)
    if n < 2:
        raise InputError("calibration needs at least two measured points")
    mean_r = sum(roofline_s) / n
    mean_m = sum(measured_s) / n
    var = sum((r - mean_r) ** 2 for r in roofline_s)
    if var <= 0:
        raise InputError(
            "the points all predict the same time, so efficiency and overhead cannot be told "
            "apart: add points with other models, formats or batches"
        )
    slope = (
        sum((r - mean_r) * (m - mean_m) for r, m in zip(roofline_s, measured_s, strict=True)) / var
    )
    if slope <= 0:
        raise InputError("the measured times do not grow with the bytes per step: no fit")
    return Fit(efficiency=1 / slope, overhead_s=mean_m - slope * mean_r)
