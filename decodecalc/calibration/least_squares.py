"""Least squares for calibration, in the standard library: a straight line (the roofline's
efficiency and overhead) and a small linear model with lower bounds (the engine step model).

A measured step is modelled as  t = memory_time / efficiency + overhead + communication,
so with r = memory time at the roofline and m = measured time less communication,
m = a r + c is a straight line: least squares gives a = 1/efficiency and c = overhead
(weighted by 1 / measured^2, the squared relative error: calibrate.roofline_fit).

The engine step model has at most five unknowns, each bounded below only (an efficiency
of at most 1 is an inverse of at least 1; a cost is at least 0). Its least-squares optimum
has some unknowns at their bounds and the rest at the unconstrained optimum of what is
left; with so few unknowns every choice of bound unknowns can be tried, and the best
feasible one is the exact optimum (no iteration, no tolerance on convergence, the same
answer on every machine).
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Sequence

from decodecalc.errors import InputError
from decodecalc.loading.saved import Fit


def fit_line(
    roofline_s: Sequence[float], measured_s: Sequence[float], weights: Sequence[float] = ()
) -> Fit:
    """Least-squares a and c in measured = a x roofline + c, each point's squared residual
    weighted (``weights``; none given: 1 each); efficiency = 1/a. Weighted means make it
    the textbook line: a = sum w (r - r_)(m - m_) / sum w (r - r_)^2, c = m_ - a r_, with
    r_ and m_ the weighted means."""
    n = len(roofline_s)
    if n < 2:
        raise InputError("calibration needs at least two measured points")
    w = list(weights) or [1.0] * n
    total = sum(w)
    mean_r = sum(wi * r for wi, r in zip(w, roofline_s, strict=True)) / total
    mean_m = sum(wi * m for wi, m in zip(w, measured_s, strict=True)) / total
    var = sum(wi * (r - mean_r) ** 2 for wi, r in zip(w, roofline_s, strict=True))
    if var <= 0:
        raise InputError(
            "the points all predict the same time, so efficiency and overhead cannot be told "
            "apart: add points with other models, formats or batches"
        )
    covariance = sum(
        wi * (r - mean_r) * (m - mean_m) for wi, r, m in zip(w, roofline_s, measured_s, strict=True)
    )
    slope = covariance / var
    if slope <= 0:
        raise InputError("the measured times do not grow with the bytes per step: no fit")
    return Fit(efficiency=1 / slope, overhead_s=mean_m - slope * mean_r)


Matrix = Sequence[Sequence[float]]


def _solve(a: list[list[float]], b: list[float]) -> list[float] | None:
    """Gaussian elimination with partial pivoting; None when the system is singular."""
    n = len(b)
    m = [[*row, rhs] for row, rhs in zip(a, b, strict=True)]
    for col in range(n):
        pivot = max(range(col, n), key=lambda r: abs(m[r][col]))
        if abs(m[pivot][col]) < 1e-12:
            return None
        m[col], m[pivot] = m[pivot], m[col]
        for r in range(col + 1, n):
            factor = m[r][col] / m[col][col]
            for c in range(col, n + 1):
                m[r][c] -= factor * m[col][c]
    x = [0.0] * n
    for r in reversed(range(n)):
        x[r] = (m[r][n] - sum(m[r][c] * x[c] for c in range(r + 1, n))) / m[r][r]
    return x


def _unconstrained(
    rows: Matrix, target: Sequence[float], free: Sequence[int]
) -> list[float] | None:
    """Least squares over the columns in ``free``, by normal equations on columns scaled
    to unit length (the columns' units differ by six orders of magnitude)."""
    scale = [math.sqrt(sum(r[j] ** 2 for r in rows)) or 1.0 for j in free]
    gram = [
        [sum(r[i] * r[j] for r in rows) / (si * sj) for j, sj in zip(free, scale, strict=True)]
        for i, si in zip(free, scale, strict=True)
    ]
    rhs = [
        sum(r[i] * t for r, t in zip(rows, target, strict=True)) / si
        for i, si in zip(free, scale, strict=True)
    ]
    solved = _solve(gram, rhs)
    return None if solved is None else [x / s for x, s in zip(solved, scale, strict=True)]


def bounded_least_squares(
    rows: Matrix, target: Sequence[float], lower: Sequence[float]
) -> list[float]:
    """x minimising |rows x - target|^2 subject to x >= lower, for a handful of unknowns
    (every set of unknowns held at their bounds is tried; see the module docstring)."""
    n = len(lower)
    best: tuple[float, list[float]] | None = None
    for held in range(n + 1):
        for at_bound in itertools.combinations(range(n), held):
            free = [j for j in range(n) if j not in at_bound]
            shifted = [
                t - sum(r[j] * lower[j] for j in at_bound)
                for r, t in zip(rows, target, strict=True)
            ]
            x = list(lower)
            if free:
                solved = _unconstrained(rows, shifted, free)
                if solved is None or any(v < lower[j] for j, v in zip(free, solved, strict=True)):
                    continue
                for j, v in zip(free, solved, strict=True):
                    x[j] = v
            loss = sum(
                (sum(rj * xj for rj, xj in zip(r, x, strict=True)) - t) ** 2
                for r, t in zip(rows, target, strict=True)
            )
            if best is None or loss < best[0]:
                best = (loss, x)
    assert best is not None  # holding every unknown at its bound is always feasible
    return best[1]
