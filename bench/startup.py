"""Whole-process start-up of a typical JSON query against the floor every Typer CLI pays.

decodecalc runs as one process per query in shell loops and CI jobs, so what counts is the
time from exec to exit. The floor is ``python -c "import typer"``; the target is a median
ratio of at most 1.5 (printed, never asserted in tests: timings are noisy).

    python bench/startup.py [--runs 30]
"""

from __future__ import annotations

import argparse
import shutil
import statistics
import subprocess
import sys
import time
from pathlib import Path

TARGET_RATIO = 1.5


def cli_command() -> list[str]:
    script = Path(sys.executable).parent / "decodecalc"
    if script.exists():
        return [str(script)]
    found = shutil.which("decodecalc")
    return [found] if found else [sys.executable, "-m", "decodecalc"]


def median_seconds(command: list[str], runs: int) -> float:
    times = []
    for _ in range(runs):
        start = time.perf_counter()
        subprocess.run(command, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=30)
    args = parser.parse_args()
    cli = cli_command()
    cases = {
        "python -c 'import typer' (floor)": [sys.executable, "-c", "import typer"],
        "estimate --json": [
            *cli,
            "estimate",
            "-m",
            "llama-3.1-70b",
            "-g",
            "h100-sxm",
            "-w",
            "fp8",
            "-k",
            "fp8",
            "-c",
            "1K..128K",
            "--json",
        ],
        "--version": [*cli, "--version"],
        "estimate --help": [*cli, "estimate", "--help"],
    }
    for command in cases.values():  # warm the OS file cache and .pyc files
        subprocess.run(command, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    medians = {name: median_seconds(command, args.runs) for name, command in cases.items()}
    floor = next(iter(medians.values()))
    print(f"start-up, median of {args.runs} runs each")
    for name, seconds in medians.items():
        print(f"  {name:34s} {seconds * 1000:7.1f} ms   ratio {seconds / floor:.2f}")
    ratio = medians["estimate --json"] / floor
    verdict = "met" if ratio <= TARGET_RATIO else "MISSED"
    print(f"estimate --json / import typer = {ratio:.2f} (target <= {TARGET_RATIO}: {verdict})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
