"""Replay validation/points-disaggregated.yaml through the two-pool serving model with each
point's real split and print predicted against measured (docs/accuracy.md,
"Disaggregated serving", quotes its output). Nothing is fitted.

    .venv/bin/python validation/replay_disaggregated.py [validation/points-disaggregated.yaml]
"""

import sys
from pathlib import Path

from decodecalc.calibration.disaggregated_points import FIGURES, replay_file
from decodecalc.cli import load_catalog


def main(path: Path) -> None:
    checks = replay_file(path, load_catalog(None))
    print("| measured | pools | input / output | figure | measured | predicted | error |")
    print("|---|---|---|---|---|---|---|")
    for check in checks:
        p = check.point
        pools = (
            f"{p.pools.prefill_workers} x TP {p.pools.prefill.tp} : "
            f"{p.pools.decode_workers} x TP {p.pools.decode.tp}"
        )
        for key, value in p.figures.items():
            said = (
                (f"{check.predicted[key]:,.2f}", f"{check.errors[key]:+.1%}")
                if key in check.predicted
                else (f"refused: {check.problem}", "-")
            )
            print(
                f"| {p.measured} | {pools} | {p.input_len:,} / {p.output_len:,} | {FIGURES[key]} "
                f"| {value:,.2f} | {said[0]} | {said[1]} |"
            )


if __name__ == "__main__":
    main(Path(sys.argv[1] if len(sys.argv) > 1 else "validation/points-disaggregated.yaml"))
