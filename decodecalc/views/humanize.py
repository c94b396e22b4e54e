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

    >>> size(69_503_033_344), size(163_840), size(512), size(4_605_350_000_000_000)
    ('69.50 GB', '163.84 kB', '512 B', '4,605.35 TB')
    """
    value, prefix = _scaled(n_bytes, _DECIMAL)
    return f"{value:,.2f} {prefix}B" if prefix else f"{value:,.0f} B"


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


def whole(n: int) -> str:
    """An exact whole number (bytes, parameters, tokens), its thousands separated.

    >>> whole(17_376_747_520)
    '17,376,747,520'
    """
    return f"{n:,}"


def joules(per_token: float) -> str:
    """Energy per token, to the millijoule: fixed decimals, so a column reads evenly
    ("2.000", not "2" under "1.99").

    >>> joules(1.99), joules(2.0037), joules(0.0244)
    ('1.990', '2.004', '0.024')
    """
    return f"{per_token:,.3f}"


def ms(value: float) -> str:
    """Milliseconds of a bound (the roofline, communication) to the microsecond.

    >>> ms(8.6687), ms(57_306.0651)
    ('8.669', '57,306.065')
    """
    return f"{value:,.3f}"


def ms_exact(value: float) -> str:
    """Milliseconds with --exact: to the nanosecond.

    >>> ms_exact(30.5286671), ms_exact(42_015.6712)
    ('30.528667', '42,015.671200')
    """
    return f"{value:,.6f}"


def ms_band(low: float, value: float, high: float, exact: bool = False) -> str:
    """An expected figure with its band, one cell: one decimal, as a forecast is worth
    (three with --exact).

    >>> ms_band(21.66, 24.12, 27.61), ms_band(42_015.67, 57_306.06, 114_686.3)
    ('24.1 (21.7-27.6)', '57,306.1 (42,015.7-114,686.3)')
    >>> ms_band(21.66, 24.12, 27.61, exact=True)
    '24.120 (21.660-27.610)'
    """
    digits = 3 if exact else 1
    return f"{value:,.{digits}f} ({low:,.{digits}f}-{high:,.{digits}f})"


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
