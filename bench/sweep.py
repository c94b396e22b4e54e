"""Stream a 1,000,000-row sweep to CSV and print rows per second and peak memory.

Target: at least 300,000 rows per second, and memory that does not grow with the grid
(the peak here is compared with a 100,000-row run of the same shape: ten times the rows may
add a few MiB of buffers, not ten times the memory).

    python bench/sweep.py
"""

from __future__ import annotations

import subprocess
import sys

TARGET_ROWS_PER_S = 300_000
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
start = time.perf_counter()
main({GRID!r} + ["-c", "0..{points - 1}:1", "-o", os.devnull])
elapsed = time.perf_counter() - start
print(elapsed, resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024)
"""
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    elapsed, peak = (float(v) for v in out.stdout.split())
    return 128 * points / elapsed, peak


def main() -> int:
    small_rate, small_peak = run(782)  # 128 scenarios x 782 contexts = 100,096 rows
    rate, peak = run(7813)  # 128 x 7,813 = 1,000,064 rows
    print("sweep to CSV, 128 scenarios")
    print(f"  100,096 rows:   {small_rate:>10,.0f} rows/s, peak memory {small_peak:6.1f} MiB")
    print(f"  1,000,064 rows: {rate:>10,.0f} rows/s, peak memory {peak:6.1f} MiB")
    verdict = "met" if rate >= TARGET_ROWS_PER_S else "MISSED"
    # Flat: ten times the rows may not cost more than a few MiB (one chunk of lines more).
    flat = "flat" if peak - small_peak < 8 else "GROWS"
    print(f"rows/s target >= {TARGET_ROWS_PER_S:,}: {verdict}; memory {flat}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
