"""Stream a 1,000,000-row sweep to CSV and print rows per second and peak memory.

Targets: at least 300,000 rows per second; at least 1.5 times the rate of the CSV-writing
floor, Python's csv module writing the same number of rows of the same columns, already
computed (the sweep's own rows, cycled), in a fresh process run in turn with the sweep's,
so that the machine's speed cancels out of the ratio; and memory that does not grow with
the grid (the peak here is compared with a 100,000-row run of the same shape: ten times
the rows may add a few MiB of buffers, not ten times the memory).

Rates are rows per second of the process's own CPU time (time.process_time), which is its
wall time on an idle machine and leaves out the waits for a core on a shared one.

    python bench/sweep.py [--runs 3]
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import tempfile

TARGET_ROWS_PER_S = 300_000
TARGET_FLOOR_RATIO = 1.5
GRID = [
    "sweep",
    "-m",
    "llama-3.1-8b,llama-3.1-70b,qwen3-30b-a3b,gemma-3-27b",
    "-g",
    "h100,h200",
    "-w",
    "bf16,fp8",
    "-k",
    "bf16,fp8",
    "--batch",
    "1,8,32,128",
]


def run(points: int) -> tuple[float, float]:
    """Rows per second and peak RSS (MiB) of one sweep, in a fresh process."""
    code = f"""
import resource, sys, time, os
from decodecalc.cli import main
start = time.process_time()
main({GRID!r} + ["-c", "0..{points - 1}:1", "-o", os.devnull])
elapsed = time.process_time() - start
print(elapsed, resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024)
"""
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    elapsed, peak = (float(v) for v in out.stdout.split())
    return 128 * points / elapsed, peak


def floor(points: int, sample: str) -> float:
    """Rows per second of the csv module writing 128 x points rows cycled from ``sample``
    (a CSV file of the sweep's own rows, its numbers read back as numbers)."""
    code = f"""
import csv, itertools, os, time
def value(text):
    for kind in (int, float):
        try:
            return kind(text)
        except ValueError:
            pass
    return text
with open({sample!r}) as f:
    rows = [tuple(value(v) for v in row) for row in itertools.islice(csv.reader(f), 1, None)]
with open(os.devnull, "w", newline="") as out:
    start = time.process_time()
    csv.writer(out).writerows(itertools.islice(itertools.cycle(rows), 128 * {points}))
print(time.process_time() - start)
"""
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    return 128 * points / float(out.stdout)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=3)
    args = parser.parse_args()
    with tempfile.NamedTemporaryFile(suffix=".csv") as sample:
        subprocess.run(
            [
                sys.executable,
                "-m",
                "decodecalc",
                *GRID,
                "-c",
                "1K..128K",
                "-o",
                sample.name,
                "--force",
            ],
            check=True,
            capture_output=True,
        )
        small_rate, small_peak = run(782)  # 128 scenarios x 782 contexts = 100,096 rows
        rates, peaks, ratios = [], [], []
        for _ in range(args.runs):  # in turn, so a busy moment slows both alike
            rate, peak = run(7813)  # 128 x 7,813 = 1,000,064 rows
            rates.append(rate)
            peaks.append(peak)
            ratios.append(rate / floor(7813, sample.name))
    rate, peak, ratio = statistics.median(rates), max(peaks), statistics.median(ratios)
    print(f"sweep to CSV, 128 scenarios (1,000,064 rows: median of {args.runs} runs)")
    print(f"  100,096 rows:   {small_rate:>10,.0f} rows/s, peak memory {small_peak:6.1f} MiB")
    print(f"  1,000,064 rows: {rate:>10,.0f} rows/s, peak memory {peak:6.1f} MiB")
    print(f"  ratio to the CSV-writing floor (csv module, rows already computed): {ratio:.2f}")
    verdict = "met" if rate >= TARGET_ROWS_PER_S else "MISSED"
    floor_verdict = "met" if ratio >= TARGET_FLOOR_RATIO else "MISSED"
    # Flat: ten times the rows may not cost more than a few MiB (one chunk of lines more).
    flat = "flat" if peak - small_peak < 8 else "GROWS"
    print(
        f"rows/s target >= {TARGET_ROWS_PER_S:,}: {verdict}; "
        f"floor ratio target >= {TARGET_FLOOR_RATIO}: {floor_verdict}; memory {flat}"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
