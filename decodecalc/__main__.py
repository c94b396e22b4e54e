"""The console script and ``python -m decodecalc``: one query, one short-lived process.

A query's process lives for a tenth of a second, and most of that is importing Typer and
then tearing the interpreter down again. Cyclic garbage collection buys nothing in such a
process: collections during start-up walk every module object just created (about 7% of
``import typer``), and the collections at exit walk them all again (about 15%). So the
collector is off while the command runs, except for sweeps, which stream without bound
and turn it back on; at exit every surviving object is frozen out of the final collections.
Finalization still runs (atexit handlers, file flushing), so nothing is skipped that could
lose output.
"""

import gc
import sys


def run() -> None:
    """Console-script entry point."""
    gc.disable()
    from decodecalc.cli import main

    code = main()
    gc.freeze()
    sys.exit(code)


if __name__ == "__main__":
    run()
