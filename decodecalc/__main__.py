"""``python -m decodecalc``: the same CLI as the console script."""

from decodecalc.cli import run

run()
