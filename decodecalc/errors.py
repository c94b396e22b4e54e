"""The one exception family the CLI turns into a message and exit code 2."""

from __future__ import annotations


class InputError(ValueError):
    """Bad input from a user: a flag value, a preset name, a preset file.

    The message is a complete sentence for stderr: what was wrong and what would be valid.
    """
