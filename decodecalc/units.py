"""Unit constants and the parsers for quantities users type.

Vendors quote decimal units (TB/s = 10^12 bytes/s) and so does decodecalc unless the user
writes a binary unit (TiB/s). Parsing works on exact decimals so `3.35TB/s` is exactly
3,350,000,000,000 bytes/s, never a float approximation of it.
"""

from __future__ import annotations

import re
from decimal import Decimal, InvalidOperation

from decodecalc.errors import InputError

KB = 10**3
MB = 10**6
GB = 10**9
TB = 10**12
KIB = 2**10
MIB = 2**20
GIB = 2**30
TIB = 2**40

_DECIMAL_PREFIX = {"": 1, "k": KB, "m": MB, "g": GB, "t": TB, "p": 10**15}
_BINARY_PREFIX = {"ki": KIB, "mi": MIB, "gi": GIB, "ti": TIB}

_QUANTITY = re.compile(
    r"^\s*([-+]?(?:[0-9]+(?:\.[0-9]*)?|\.[0-9]+))(?:[eE]([+-]?[0-9]+))?\s*([A-Za-z/]*)\s*$"
)
_RATE_UNIT = re.compile(r"^(?P<prefix>[kKmMgGtT]i?)?(?P<byte>[Bb])(?:/s|ps)$")
_FLOPS_UNIT = re.compile(r"^(?P<prefix>[kKmMgGtTpP])?FLOP/?s$")
_TIME_UNIT = {"s": 0, "ms": -3, "us": -6, "µs": -6, "ns": -9}
"""Powers of ten of each time unit."""
_SIZE_UNIT = re.compile(r"^(?P<prefix>[kKmMgGtT]i?)?(?P<byte>[Bb])$")

BANDWIDTH_EXAMPLES = "e.g. 3.35TB/s, 819GB/s, 1.5TiB/s"
SIZE_EXAMPLES = "e.g. 80GiB, 141GB, 512MiB"


def _split(text: str, what: str, examples: str) -> tuple[Decimal, str]:
    match = _QUANTITY.match(text)
    if match is None:
        raise InputError(f"{what} {text!r} is not a number with a unit ({examples})")
    mantissa, exponent, unit = match.groups()
    try:
        value = Decimal(mantissa) * (Decimal(10) ** int(exponent or 0))
    except (InvalidOperation, OverflowError, ValueError):
        raise InputError(f"{what} {text!r} is out of range ({examples})") from None
    return value, unit


def _multiplier(prefix: str | None) -> int:
    key = (prefix or "").lower()
    return _BINARY_PREFIX.get(key) or _DECIMAL_PREFIX[key]


def _to_positive_int(value: Decimal, text: str, what: str, limit: int) -> int:
    if value <= 0:
        raise InputError(f"{what} {text!r} must be greater than zero")
    if value > limit:
        raise InputError(f"{what} {text!r} is implausibly large (at most {limit:.3g} bytes)")
    return int(value.to_integral_value())


def parse_bandwidth(text: str) -> int:
    """Parse a memory bandwidth such as ``3.35TB/s`` into integer bytes per second.

    >>> parse_bandwidth("3.35TB/s")
    3350000000000
    >>> parse_bandwidth("1.5 TiB/s")
    1649267441664
    """
    what = "bandwidth"
    value, unit = _split(text, what, BANDWIDTH_EXAMPLES)
    match = _RATE_UNIT.match(unit)
    if match is None:
        raise InputError(f"{what} {text!r} needs a unit per second ({BANDWIDTH_EXAMPLES})")
    if match["byte"] == "b":
        raise InputError(
            f"{what} {text!r} is in bits per second; give bytes per second "
            f"with a capital B ({BANDWIDTH_EXAMPLES})"
        )
    return _to_positive_int(value * _multiplier(match["prefix"]), text, what, 10**18)


def parse_size(text: str, what: str = "memory") -> int:
    """Parse a memory size such as ``80GiB`` into integer bytes.

    >>> parse_size("80GiB")
    85899345920
    """
    value, unit = _split(text, what, SIZE_EXAMPLES)
    match = _SIZE_UNIT.match(unit)
    if match is None or match["byte"] == "b":
        raise InputError(f"{what} {text!r} needs a byte unit ({SIZE_EXAMPLES})")
    return _to_positive_int(value * _multiplier(match["prefix"]), text, what, 10**18)


def parse_flops(text: str) -> int:
    """Parse a compute rate such as ``989.4TFLOP/s`` into integer FLOP per second.

    >>> parse_flops("989.4TFLOP/s"), parse_flops("2.25 PFLOP/s")
    (989400000000000, 2250000000000000)
    """
    what, examples = "compute rate", "e.g. 989.4TFLOP/s, 2.25PFLOP/s"
    value, unit = _split(text, what, examples)
    match = _FLOPS_UNIT.match(unit)
    if match is None:
        raise InputError(f"{what} {text!r} needs a unit ({examples})")
    return _to_positive_int(
        value * _DECIMAL_PREFIX[(match["prefix"] or "").lower()], text, what, 10**21
    )


def parse_duration(text: str, what: str = "duration") -> float:
    """Parse a time such as ``0.5ms`` or ``10us`` into seconds; zero is allowed.

    >>> parse_duration("0.5ms"), parse_duration("10us")
    (0.0005, 1e-05)
    """
    examples = "e.g. 0.5ms, 10us"
    value, unit = _split(text, what, examples)
    if unit not in _TIME_UNIT:
        raise InputError(f"{what} {text!r} needs a unit: s, ms, us or ns ({examples})")
    if value < 0:
        raise InputError(f"{what} {text!r} must not be negative")
    seconds = float(value.scaleb(_TIME_UNIT[unit]))
    if seconds > 3600:
        raise InputError(f"{what} {text!r} is implausibly long (at most an hour)")
    return seconds
