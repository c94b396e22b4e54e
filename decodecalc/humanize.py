"""Readable figures for tables: decimal byte units, milliseconds, rates.

Only the human formats (table, Markdown) use these; JSON and CSV carry raw numbers.
"""

from __future__ import annotations

from fractions import Fraction

_BYTE_UNITS = ((10**12, "TB"), (10**9, "GB"), (10**6, "MB"), (10**3, "kB"))


def size(n_bytes: int | float) -> str:
    """Decimal units, as vendors quote them.

    >>> size(69_503_033_344), size(163_840), size(512)
    ('69.50 GB', '163.84 kB', '512 B')
    """
    for factor, unit in _BYTE_UNITS:
        if n_bytes >= factor:
            return f"{n_bytes / factor:.2f} {unit}"
    return f"{n_bytes:,.0f} B"


def exact_bytes(n_bytes: int) -> str:
    return f"{n_bytes:,}"


def bandwidth(bytes_per_s: int | float) -> str:
    """>>> bandwidth(3_350_000_000_000)
    '3.35 TB/s'"""
    for factor, unit in _BYTE_UNITS:
        if bytes_per_s >= factor:
            return f"{bytes_per_s / factor:.4g} {unit}/s"
    return f"{bytes_per_s:.4g} B/s"


def binary_size(n_bytes: int) -> str:
    """Memory capacity as it is sold: >>> binary_size(80 * 2**30)
    '80 GiB'"""
    for factor, unit in ((2**40, "TiB"), (2**30, "GiB"), (2**20, "MiB")):
        if n_bytes >= factor:
            return f"{n_bytes / factor:.4g} {unit}"
    return f"{n_bytes:,} B"


def tokens(n: int | float) -> str:
    return f"{round(n):,}"


def ms(seconds: float, digits: int = 3) -> str:
    return f"{seconds * 1000:.{digits}f}"


def rate(per_s: float) -> str:
    return f"{per_s:,.1f}" if per_s < 1000 else f"{per_s:,.0f}"


def share(fraction: float) -> str:
    return f"{fraction * 100:.1f}%"


def count(n: int) -> str:
    """Parameter counts: >>> count(70_553_706_496)
    '70.55B'"""
    for factor, unit in ((10**12, "T"), (10**9, "B"), (10**6, "M")):
        if n >= factor:
            return f"{n / factor:.2f}{unit}"
    return f"{n:,}"


def bits(value: Fraction) -> str:
    """>>> bits(Fraction(9, 2)), bits(Fraction(16))
    ('4.5', '16')"""
    return f"{float(value):g}"
