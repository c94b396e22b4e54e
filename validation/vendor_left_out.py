"""Each GPU vendor left out, point by point: what `decodecalc validate` sums up in
``summary.left_out.vendor``, split by vendor and by group, model and GPU, so a miss can be
traced to the setups that make it (issue 28: which costs do not transfer across vendors).

    .venv/bin/python validation/vendor_left_out.py [validation/points.yaml ...]

A development check, never run by the tests: it makes validate's left-out predictions
(calibration/validation.py leave_out_all, bands included: a minute of CPU) and prints for
the vendor left out, per vendor and then per group, model, GPU and batch, the count, the
median and 90th percentile of the absolute error, how many points lie more than 15% off
(the issue's goal for the median), the share inside their band, and the median, smallest
and largest expected / measured.
"""

from __future__ import annotations

import argparse
import statistics
from collections.abc import Sequence
from pathlib import Path

from decodecalc.calibration.points import read_points
from decodecalc.calibration.validation import (
    Labelled,
    labelled,
    leave_out_all,
    percentile,
    unit_of,
)
from decodecalc.loading.catalog import Catalog, presets_dir

ROOT = Path(__file__).resolve().parents[1]
GOAL = 0.15


Found = tuple[str, Labelled, float, bool]
"""A point's vendor, itself, expected / measured with its vendor left out, and whether the
measured figure lies inside the predicted band."""


def ratios(points: Sequence[Labelled]) -> list[Found]:
    """Each point predicted with its vendor left out, as validate predicts it."""
    out = []
    for vendor, held in leave_out_all(points)["vendor"].items():
        members = [p for p in points if unit_of(p, "vendor") == vendor]
        for p, e in zip(members, held.expected, strict=True):
            measured = p.terms.measured_s
            inside = e.low_seconds <= measured <= e.high_seconds
            out.append((vendor, p, e.seconds / measured, inside))
    return out


def line(label: str, found: Sequence[Found]) -> str:
    ratio = [r for _, _, r, _ in found]
    errors = [abs(r - 1) * 100 for r in ratio]
    above = sum(e > GOAL * 100 for e in errors)
    inside = 100 * sum(x for *_, x in found) / len(found)
    return (
        f"{label:<60} {len(found):4d} {statistics.median(errors):6.1f}% "
        f"{percentile(errors, 90):6.1f}% {above:4d} "
        f"{inside:5.0f}% {statistics.median(ratio):6.2f} {min(ratio):6.2f} {max(ratio):6.2f}"
    )


def setup(p: Labelled) -> str:
    s = p.point.scenario
    gpu = s.gpu.id if s.gpu else "?"
    return f"{p.group} {s.model.id} {gpu} tp{s.tp} b{s.batch}"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("points", type=Path, nargs="*", default=[ROOT / "validation/points.yaml"])
    args = parser.parse_args(argv)
    catalog = Catalog((presets_dir(),))
    items = labelled([m for path in args.points for m in read_points(path, catalog)], catalog)
    found = ratios(items)
    head = f"{'left out':<60} {'n':>4} {'median':>7} {'p90':>7} {'above':>4} {'band':>6} {'e/m':>6}"
    print(f"{head} {'min':>6} {'max':>6}")
    print(line("every vendor", found))
    for vendor in sorted({f[0] for f in found}):
        print(line(vendor, [f for f in found if f[0] == vendor]))
    by_setup: dict[tuple[str, str], list[Found]] = {}
    for f in found:
        by_setup.setdefault((f[0], setup(f[1])), []).append(f)
    for (vendor, label), held in sorted(by_setup.items()):
        print(line(f"  {vendor} {label}", held))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
