"""Whole-process start-up of decodecalc queries against the floor every Typer CLI pays.

decodecalc runs as one process per query in shell loops and CI jobs, so what counts is the
time from exec to exit. The floor is ``python -c "import typer"``; the target is a median
ratio of at most 1.5 for the first version, 1.2 for the hardening issue, for a JSON query,
``--version`` and ``--help`` alike (printed, never asserted in tests: timings on a shared
machine are noisy).

The console script runs with the cyclic garbage collector off and ends without the
interpreter's teardown (see decodecalc/__main__.py), which the plain floor does not. A
second, informative floor runs ``import typer`` the same way: a query's time minus that one
is decodecalc's own work.

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

TARGETS = {"first version": 1.5, "hardening": 1.2}


def cli_command() -> list[str]:
    script = Path(sys.executable).parent / "decodecalc"
    if script.exists():
        return [str(script)]
    found = shutil.which("decodecalc")
    return [found] if found else [sys.executable, "-m", "decodecalc"]


def seconds(command: list[str]) -> float:
    start = time.perf_counter()
    subprocess.run(command, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    return time.perf_counter() - start


def timings(cases: dict[str, list[str]], runs: int) -> dict[str, list[float]]:
    """Round-robin over the cases, so a busy moment on the machine slows all of them alike."""
    times: dict[str, list[float]] = {name: [] for name in cases}
    for _ in range(runs):
        for name, command in cases.items():
            times[name].append(seconds(command))
    return times


def compile_package() -> None:
    """Write the package's .pyc files, as installing a wheel does: an editable install (or
    PYTHONDONTWRITEBYTECODE) would otherwise make every run compile from source."""
    import compileall

    import decodecalc

    compileall.compile_dir(str(Path(decodecalc.__file__).parent), quiet=1)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=30)
    args = parser.parse_args()
    compile_package()
    cli = cli_command()
    query = "estimate -m llama-3.1-70b -g h100-sxm -w fp8 -k fp8 -c 1K..128K --json"
    floor = "python -c 'import typer' (floor)"
    cases = {
        floor: [sys.executable, "-c", "import typer"],
        "same, run as decodecalc runs": [
            sys.executable,
            "-c",
            "import gc, os; gc.disable(); import typer; os._exit(0)",
        ],
        "estimate --json": [*cli, *query.split()],
        "estimate --engine vllm --json": [*cli, *query.split(), "--engine", "vllm"],
        "--version": [*cli, "--version"],
        "estimate --help": [*cli, "estimate", "--help"],
    }
    targeted = ("estimate --json", "estimate --engine vllm --json", "--version", "estimate --help")
    hardening = TARGETS["hardening"]
    for command in cases.values():  # warm the OS file cache and .pyc files
        subprocess.run(command, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    times = timings(cases, args.runs)
    print(f"start-up, median of {args.runs} runs each; ratio = median of each run / the floor")
    print(f"run just before it (drift in the machine's speed cancels out); query: {query}")
    worst = 0.0
    for name, values in times.items():
        ratio = statistics.median(q / f for q, f in zip(values, times[floor], strict=True))
        line = f"  {name:36s} {statistics.median(values) * 1000:7.1f} ms   ratio {ratio:.2f}"
        if name in targeted:
            worst = max(worst, ratio)
            line += f"   target <= {hardening}: {'met' if ratio <= hardening else 'MISSED'}"
        print(line)
    verdicts = ", ".join(
        f"{name} target <= {target}: {'met' if worst <= target else 'MISSED'}"
        for name, target in TARGETS.items()
    )
    print(f"worst ratio to import typer = {worst:.2f} ({verdicts})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
