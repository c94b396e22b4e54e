"""How wide the bands are and how many points they hold: per way of leaving out (left out,
as `decodecalc validate` predicts and bands them) and per GPU family with the shipped
profiles (each point with its own engine at its line, and with the typical band).

    .venv/bin/python validation/band_widths.py validation/points.yaml
    .venv/bin/python validation/band_widths.py --shipped validation/points-2026-thin-regimes.yaml
    .venv/bin/python validation/band_widths.py --reach validation/points-2026.yaml

A band's width is high / low; the figures are medians over the points (docs/accuracy.md,
'Bands that hold'). --reach: per family, the most that any band of a given width around
the typical band's expected figure could hold, placed after seeing the points (an upper
bound on every way of making that band), and the narrowest that holds 80%."""

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
from decodecalc.loading.catalog import Catalog, presets_dir
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
                engine = TYPICAL if which == TYPICAL else p.engine
                line = None if engine == TYPICAL else p.release
                params, _ = stand_in(profiles, engine, family, line)
                found.append((p, predicted(p, widened_for(params, p.facts)[0], engine)))
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
    profiles = catalog.engines()
    for family in sorted({p.family for p in items}):
        mine = [p for p in items if p.family == family]
        params, _ = stand_in(profiles, TYPICAL, family)
        logs = sorted(
            math.log(
                p.terms.measured_s / predicted(p, widened_for(params, p.facts)[0], TYPICAL).seconds
            )
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


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("files", type=Path, nargs="+")
    parser.add_argument("--shipped", action="store_true", help="the shipped profiles only")
    parser.add_argument("--reach", action="store_true", help="what a band of each width can hold")
    args = parser.parse_args(argv)
    catalog = Catalog((presets_dir(),))
    items = labelled([m for f in args.files for m in read_points(f, catalog)], catalog)
    if args.reach:
        reach(items, catalog)
        return 0
    if not args.shipped:
        left_out(items)
    shipped(items, catalog)
    return 0


if __name__ == "__main__":
    sys.exit(main())
