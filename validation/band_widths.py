"""How wide the bands are and how many points they hold: per way of leaving out (left out,
as `decodecalc validate` predicts and bands them) and per GPU family with the shipped
profiles (each point with its own engine at its line, and with the typical band).

    .venv/bin/python validation/band_widths.py validation/points.yaml
    .venv/bin/python validation/band_widths.py --shipped validation/points-2026-thin-regimes.yaml

A band's width is high / low; the figures are medians over the points (docs/accuracy.md,
'Bands that hold')."""

from __future__ import annotations

import argparse
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


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("files", type=Path, nargs="+")
    parser.add_argument("--shipped", action="store_true", help="the shipped profiles only")
    args = parser.parse_args(argv)
    catalog = Catalog((presets_dir(),))
    items = labelled([m for f in args.files for m in read_points(f, catalog)], catalog)
    if not args.shipped:
        left_out(items)
    shipped(items, catalog)
    return 0


if __name__ == "__main__":
    sys.exit(main())
