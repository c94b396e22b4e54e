"""How wide the bands are and how many points they hold: per way of leaving out (left out,
as `decodecalc validate` predicts and bands them) and per GPU family with the shipped
profiles (each point with its own engine at its line, and with the typical band).

    .venv/bin/python validation/band_widths.py validation/points.yaml
    .venv/bin/python validation/band_widths.py --shipped validation/points-2026-thin-regimes.yaml
    .venv/bin/python validation/band_widths.py --reach validation/points-2026.yaml
    .venv/bin/python validation/band_widths.py --combine validation/points-2026.yaml

A band's width is high / low; the figures are medians over the points (docs/accuracy.md,
'Bands that hold'). --reach: per family, the most that any band of a given width around
the typical band's expected figure could hold, placed after seeing the points (an upper
bound on every way of making that band), and the narrowest that holds 80%. --combine: the
typical band's votes combined five ways (combined), inside and width per family."""

from __future__ import annotations

import argparse
import math
import statistics
import sys
from collections.abc import Sequence
from pathlib import Path

from decodecalc.calibration.points import read_points
from decodecalc.calibration.validation import (
    REPORTED,
    TYPICAL,
    Labelled,
    labelled,
    leave_out_all,
    predicted,
    stand_in,
    unit_of,
    widened_for,
)
from decodecalc.engine.profile import EngineParams
from decodecalc.engine.select import extrapolated, fitted_to, typical
from decodecalc.engine.transfer import for_kind
from decodecalc.loading.catalog import Catalog, presets_dir
from decodecalc.record import replace
from decodecalc.step.engine_terms import Expected


def width(e: Expected) -> float:
    return e.high_seconds / e.low_seconds


def holds(p: Labelled, e: Expected) -> bool:
    return e.low_seconds <= p.terms.measured_s <= e.high_seconds


def left_out(items: Sequence[Labelled]) -> None:
    """Each way of leaving out: points, share inside the band, median width."""
    found = leave_out_all(items)
    for unit in REPORTED:
        pairs = [
            (p, e)
            for key, held in found[unit].items()
            for p, e in zip(
                [p for p in items if unit_of(p, unit) == key], held.expected, strict=True
            )
        ]
        inside = 100 * sum(holds(p, e) for p, e in pairs) / len(pairs)
        median = statistics.median(width(e) for _, e in pairs)
        print(f"left out {unit:8} {len(pairs):4} points  inside {inside:5.1f}%  width {median:.2f}")


def shipped(items: Sequence[Labelled], catalog: Catalog) -> None:
    """Each GPU family: points, and for the point's own engine at its line and for the
    typical band, the share inside and the median width."""
    profiles = catalog.engines()
    for family in sorted({p.family for p in items}):
        mine = [p for p in items if p.family == family]
        cells = []
        for which in ("engine", TYPICAL):
            found = []
            for p in mine:
                if which == TYPICAL:
                    found.append((p, predicted(p, typical_band(p, catalog), TYPICAL)))
                    continue
                params, _ = stand_in(profiles, p.engine, family, p.release)
                found.append((p, predicted(p, widened_for(params, p.facts)[0], p.engine)))
            inside = 100 * sum(holds(p, e) for p, e in found) / len(found)
            median = statistics.median(width(e) for _, e in found)
            cells.append(f"{which} {inside:5.1f}% x{median:.2f}")
        print(f"{family:18} {len(mine):4} points  " + "  ".join(cells))


REACH_WIDTHS = (1.5, 2.0, 2.5, 3.0, 4.0)


def reach(items: Sequence[Labelled], catalog: Catalog) -> None:
    """Each GPU family: measured / expected of the typical band's expected figure at every
    point, and for each width in REACH_WIDTHS the largest share of points one band that
    wide (the same multiple of the expected figure at every point) holds, however placed;
    then the narrowest such band holding 80%. Any band whose edges are fixed multiples of
    the expected figure holds no more."""
    for family in sorted({p.family for p in items}):
        mine = [p for p in items if p.family == family]
        logs = sorted(
            math.log(p.terms.measured_s / predicted(p, typical_band(p, catalog), TYPICAL).seconds)
            for p in mine
        )
        cells = [f"x{w:g} {100 * _most(logs, math.log(w)) / len(logs):5.1f}%" for w in REACH_WIDTHS]
        need = math.ceil(0.8 * len(logs))
        narrowest = min(logs[i + need - 1] - logs[i] for i in range(len(logs) - need + 1))
        print(
            f"{family:18} {len(mine):4} points  "
            + "  ".join(cells)
            + f"  80%: x{math.exp(narrowest):.2f}"
        )


def _most(logs: Sequence[float], span: float) -> int:
    """The most sorted ``logs`` one interval ``span`` long holds."""
    best = end = 0
    for start, low in enumerate(logs):
        while end < len(logs) and logs[end] - low <= span:
            end += 1
        best = max(best, end - start)
    return best


Vote = tuple[float, tuple[float, float], tuple[float, float], bool]
"""A typical vote at a point: its expected seconds, its band inside its fitted range, the
band it takes there (widened where the point lies outside that range), and whether it
does."""

WAYS = ("envelope", "once", "quadrature", "median's", "unwidened")
"""How combined() makes a band of the votes: the shipped envelope of each vote's band as
it takes it (step/engine_terms.py within_band); the votes' spread times one band, each
vote's widened only where every vote lies outside its range (once); the spread and the
widest band as independent errors (quadrature: their logs' root sum of squares); the
spread times the band of the median vote or votes as they take it (median's); the spread
times the votes' inside bands (unwidened)."""


def typical_votes(p: Labelled, catalog: Catalog) -> list[tuple[EngineParams, Vote]]:
    """Each vote of the typical band at a point as it prices it, with the Vote combined()
    takes: each is checked against its range at its own line, as ``--engine NAME@LINE``
    is (engine/select.py beyond), not at the point's."""
    engine = typical(catalog.engines(), p.family)
    assert p.facts is not None
    out = []
    for name, params in zip(engine.names, engine.params, strict=True):
        facts = replace(p.facts, line=name.partition("@")[2] or None)
        taken = fitted_to(params, facts)
        seconds = predicted(p, (taken,), TYPICAL).seconds
        outside = bool(extrapolated(taken.range, facts))
        out.append((taken, (seconds, for_kind(params, facts.kind).band, taken.band, outside)))
    return out


def typical_band(p: Labelled, catalog: Catalog) -> tuple[EngineParams, ...]:
    """The typical band's votes at a point as it prices them (typical_votes)."""
    return tuple(params for params, _ in typical_votes(p, catalog))


def combined(way: str, votes: Sequence[Vote], floor: float) -> tuple[float, float, float]:
    """(expected, low, high) of one way of combining the votes (WAYS), the expected figure
    their median and the low end never below the roofline, as within_band does."""
    centres = sorted(v[0] for v in votes)
    middle = statistics.median(centres)
    if way == "envelope":
        low = min(c * taken[0] for c, _, taken, _ in votes)
        high = max(c * taken[1] for c, _, taken, _ in votes)
        return middle, min(max(low, floor), middle), max(high, middle)
    if way == "median's":
        half = len(votes) // 2
        bands = [v[2] for v in sorted(votes)[half - (len(votes) % 2 == 0) : half + 1]]
    elif way == "once":
        bands = [v[2] if all(v[3] for v in votes) else v[1] for v in votes]
    else:
        bands = [v[2] if way == "quadrature" else v[1] for v in votes]
    down, up = min(b[0] for b in bands), max(b[1] for b in bands)
    if way == "quadrature":
        below = math.hypot(math.log(middle / centres[0]), math.log(down))
        above = math.hypot(math.log(centres[-1] / middle), math.log(up))
        low, high = middle * math.exp(-below), middle * math.exp(above)
    else:
        low, high = centres[0] * down, centres[-1] * up
    return middle, min(max(low, floor), middle), max(high, middle)


def combine(items: Sequence[Labelled], catalog: Catalog) -> None:
    """Each GPU family: the share of points inside the typical band and its median width,
    for each way of combining its votes (WAYS)."""
    for family in sorted({p.family for p in items}):
        mine = [p for p in items if p.family == family]
        found = [
            (p, [v for _, v in typical_votes(p, catalog)], predicted(p, (), TYPICAL).seconds)
            for p in mine
        ]
        cells = []
        for way in WAYS:
            bands = [Expected(*combined(way, v, floor)) for _, v, floor in found]
            inside = 100 * sum(holds(p, e) for (p, _, _), e in zip(found, bands, strict=True))
            median = statistics.median(width(e) for e in bands)
            cells.append(f"{way} {inside / len(mine):5.1f}% x{median:.2f}")
        print(f"{family:18} {len(mine):4} points  " + "  ".join(cells))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("files", type=Path, nargs="+")
    parser.add_argument("--shipped", action="store_true", help="the shipped profiles only")
    parser.add_argument("--reach", action="store_true", help="what a band of each width can hold")
    parser.add_argument("--combine", action="store_true", help="the votes combined five ways")
    args = parser.parse_args(argv)
    catalog = Catalog((presets_dir(),))
    items = labelled([m for f in args.files for m in read_points(f, catalog)], catalog)
    if args.reach or args.combine:
        (reach if args.reach else combine)(items, catalog)
        return 0
    if not args.shipped:
        left_out(items)
    shipped(items, catalog)
    return 0


if __name__ == "__main__":
    sys.exit(main())
