"""Each GPU vendor left out, point by point: what `decodecalc validate` sums up in
``summary.left_out.vendor``, split by vendor and by group, model and GPU, so a miss can be
traced to the setups that make it (issue 28: which costs do not transfer across vendors).

    .venv/bin/python validation/vendor_left_out.py [validation/points.yaml ...]

A development check, never run by the tests: it refits every profile without each vendor
(calibration/validation.py leave_out, the same fits validate makes) and prints, per vendor
and then per group, model, GPU and batch, the count, the median absolute error and the
median, smallest and largest expected / measured. The ``above`` column counts the points
more than 15% off (the issue's goal for the median).
"""

from __future__ import annotations

import argparse
import statistics
from collections.abc import Sequence
from pathlib import Path

from decodecalc.calibration.points import read_points
from decodecalc.calibration.validation import Labelled, labelled, leave_out, unit_of
from decodecalc.loading.catalog import Catalog, presets_dir

ROOT = Path(__file__).resolve().parents[1]
GOAL = 0.15


def ratios(points: Sequence[Labelled]) -> list[tuple[str, Labelled, float]]:
    """Each point's vendor and expected / measured with its vendor left out."""
    out = []
    for vendor, held in leave_out(points, "vendor").items():
        members = [p for p in points if unit_of(p, "vendor") == vendor]
        for p, e in zip(members, held.expected, strict=True):
            out.append((vendor, p, e.seconds / p.terms.measured_s))
    return out


def line(label: str, found: Sequence[float]) -> str:
    errors = [abs(r - 1) * 100 for r in found]
    above = sum(e > GOAL * 100 for e in errors)
    return (
        f"{label:<72} {len(found):4d} {statistics.median(errors):6.1f}% {above:4d} "
        f"{statistics.median(found):6.2f} {min(found):6.2f} {max(found):6.2f}"
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
    print(f"{'left out':<72} {'n':>4} {'median':>7} {'above':>4} {'e/m':>6} {'min':>6} {'max':>6}")
    print(line("every vendor", [r for _, _, r in found]))
    for vendor in sorted({v for v, _, _ in found}):
        print(line(vendor, [r for v, _, r in found if v == vendor]))
    by_setup: dict[tuple[str, str], list[float]] = {}
    for vendor, p, r in found:
        by_setup.setdefault((vendor, setup(p)), []).append(r)
    for (vendor, label), rs in sorted(by_setup.items()):
        print(line(f"  {vendor} {label}", rs))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
