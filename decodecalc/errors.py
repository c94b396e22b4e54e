"""The one exception family the CLI turns into a message and exit code 2."""

from __future__ import annotations


class InputError(ValueError):
    """Bad input from a user: a flag value, a preset name, a preset file.

    The message is a complete sentence for stderr: what was wrong and what would be valid.
    """


class Conflict(InputError):
    """Values each valid alone that cannot go together: TP 3 for a model of 32 heads,
    more pipeline stages than the model has layers. A grid (sweep, plan) skips such a
    combination and says so; any other InputError is a bad value, refused outright."""


class InputErrors(InputError):
    """Several problems found in one pass over a file, each a line of its own: a user
    fixing a deployment file should see every mistake at once, not one per run."""

    def __init__(self, problems: list[str]) -> None:
        super().__init__("\n".join(problems))
        self.problems = problems


class PresetError(InputErrors):
    """A broken preset or engine profile, found while reading another file (measured
    points, a deployment): its problems name the preset file and line already, and the
    reader of the other file passes them on as they are, so the blame falls on the preset."""
