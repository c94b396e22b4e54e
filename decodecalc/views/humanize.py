"""Readable figures for tables: decimal byte units, binary capacities, counts, rates.

Only the human formats (table, Markdown) use these; JSON and CSV carry raw numbers.
"""

from __future__ import annotations

_DECIMAL = ((10**12, "T"), (10**9, "G"), (10**6, "M"), (10**3, "k"))
_BINARY = ((2**40, "Ti"), (2**30, "Gi"), (2**20, "Mi"))


def _scaled(value: float, units: tuple[tuple[int, str], ...]) -> tuple[float, str]:
    """The value in the largest unit it reaches, and that unit's prefix ("" for none)."""
    for factor, prefix in units:
        if value >= factor:
            return value / factor, prefix
    return value, ""


def size(n_bytes: float) -> str:
    """Bytes in decimal units, as vendors quote them.

    >>> size(69_503_033_344), size(163_840), size(512)
    ('69.50 GB', '163.84 kB', '512 B')
    """
    value, prefix = _scaled(n_bytes, _DECIMAL)
    return f"{value:.2f} {prefix}B" if prefix else f"{value:,.0f} B"


def bandwidth(bytes_per_s: float) -> str:
    """Bandwidth in decimal units.

    >>> bandwidth(3_350_000_000_000), bandwidth(1_008_000_000_000)
    ('3.35 TB/s', '1.008 TB/s')
    """
    value, prefix = _scaled(bytes_per_s, _DECIMAL)
    return f"{value:.4g} {prefix}B/s"


def binary_size(n_bytes: int) -> str:
    """Memory capacity in binary units, as it is sold.

    >>> binary_size(80 * 2**30)
    '80 GiB'
    """
    value, prefix = _scaled(n_bytes, _BINARY)
    return f"{value:.4g} {prefix}B"


def count(n: int) -> str:
    """Parameter counts.

    >>> count(70_553_706_496), count(1_235_814_400)
    ('70.55B', '1.24B')
    """
    value, prefix = _scaled(n, _DECIMAL)
    return f"{value:.2f}{prefix.replace('G', 'B')}" if prefix else f"{n:,}"


def things(n: int, noun: str) -> str:
    """A count and its noun, plural unless one.

    >>> things(1, "engine profile"), things(7, "engine profile")
    ('1 engine profile', '7 engine profiles')
    """
    return f"{n:,} {noun}{'' if n == 1 else 's'}"


def exact_bytes(n_bytes: int) -> str:
    return f"{n_bytes:,}"


def tokens(n: float) -> str:
    """A token count, rounded to the nearest token; a count between 0 and 1 (a crossover
    the KV cache passes within the first token) is under one, not 0.

    >>> tokens(424_212.85), tokens(0.42)
    ('424,213', 'under 1')
    """
    return "under 1" if 0 < n < 0.5 else f"{round(n):,}"


def rate(per_s: float) -> str:
    """Tokens per second: one decimal below 1,000.

    >>> rate(48.199), rate(1178.4)
    ('48.2', '1,178')
    """
    return f"{per_s:,.1f}" if per_s < 1000 else f"{per_s:,.0f}"


def share(fraction: float) -> str:
    """A fraction as a percentage.

    >>> share(0.3204)
    '32.0%'
    """
    return f"{fraction * 100:.1f}%"
