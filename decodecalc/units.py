"""Unit constants and the parsers for quantities users type.

Vendors quote decimal units (TB/s = 10^12 bytes/s) and so does decodecalc unless the user
writes a binary unit (TiB/s). Parsing works on exact decimals so `3.35TB/s` is exactly
3,350,000,000,000 bytes/s, never a float approximation of it.
"""

from __future__ import annotations

from fractions import Fraction

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
_BINARY_PREFIX = {"ki": KIB, "mi": MIB, "gi": GIB, "ti": TIB, "pi": 2**50}
_BYTE_PREFIXES = "kKmMgGtTpP"
_FLOPS_PREFIXES = "kKmMgGtTpP"
_TIME_UNIT = {"s": 1, "ms": 10**3, "us": 10**6, "µs": 10**6, "ns": 10**9}
"""Each time unit's count per second."""

MAX_EXPONENT = 400
"""Largest power of ten a number may carry: 1e999999999 is exact only as a billion-digit
integer, which takes minutes to build."""
MAX_DIGITS = 1000
"""Most digits a number may have: int() of a longer digit string is slow or refused."""

BANDWIDTH_EXAMPLES = "e.g. 3.35TB/s, 819GB/s, 1.5TiB/s"
SIZE_EXAMPLES = "e.g. 80GiB, 141GB, 512MiB"


def is_digits(text: str) -> bool:
    """ASCII digits only: str.isdigit alone also accepts superscripts and other scripts."""
    return text.isascii() and text.isdigit()


UNDERSCORES = "underscores are not read in numbers (Python's 1_000 is not a decodecalc number)"
"""The one rule for every number typed or written in a file: ``1_6`` is refused, not read
as 16 (Python's int() and YAML 1.1 would read it so; --batch refused it first)."""


def ascii_float(text: str) -> float:
    """float(text) for a number typed in ASCII: float() also reads other scripts' digits
    (full-width, Devanagari...) and underscores ('1_0'), which nobody types on purpose.
    Raises ValueError for those as for anything else that is no number.

    >>> ascii_float("0.5"), ascii_float("1e-3")
    (0.5, 0.001)
    """
    if not text.isascii() or "_" in text:
        raise ValueError(f"not a number: {text!r}")
    return float(text)


def exact_number(text: str) -> Fraction:
    """A decimal literal such as ``3.35``, ``-.5`` or ``1e-3``, exactly.

    Raises ValueError for anything else (hex, fractions, inf, underscores) and
    OverflowError past MAX_EXPONENT or MAX_DIGITS.

    >>> exact_number("3.35"), exact_number("2.5e3")
    (Fraction(67, 20), Fraction(2500, 1))
    """
    return Fraction(*_decimal(text))


def _decimal(text: str) -> tuple[int, int]:
    """exact_number as (numerator, denominator), the denominator a power of ten, not
    reduced: parse_duration's arithmetic needs no Fraction (a query reads dozens)."""
    mantissa, marker, exponent = text.strip().lower().partition("e")
    power = 0
    if marker:
        digits = exponent[1:] if exponent.startswith(("+", "-")) else exponent
        if not is_digits(digits):
            raise ValueError(f"not a number: {text!r}")
        if len(digits) > len(str(MAX_EXPONENT)) or abs(int(exponent)) > MAX_EXPONENT:
            raise OverflowError(f"exponent out of range: {text!r}")
        power = int(exponent)
    sign = -1 if mantissa.startswith("-") else 1
    unsigned = mantissa[1:] if mantissa.startswith(("+", "-")) else mantissa
    whole, _, fraction = unsigned.partition(".")
    digits = whole + fraction  # no digits at all, or a second point, is no number
    if not is_digits(digits):
        raise ValueError(f"not a number: {text!r}")
    if len(digits) > MAX_DIGITS:
        raise OverflowError(f"too many digits: {text!r}")
    scale = power - len(fraction)
    digits_value = sign * int(digits)
    if scale >= 0:
        return digits_value * 10**scale, 1
    return digits_value, 10**-scale


def _split(text: str, what: str, examples: str) -> tuple[Fraction, str]:
    """The number and the unit after it (letters and slashes, as in TB/s)."""
    numerator, denominator, unit = _split_parts(text, what, examples)
    return Fraction(numerator, denominator), unit


def _split_parts(text: str, what: str, examples: str) -> tuple[int, int, str]:
    body = text.strip()
    end = len(body)
    while end and (body[end - 1].isalpha() or body[end - 1] == "/"):
        end -= 1
    try:
        numerator, denominator = _decimal(body[:end])
    except OverflowError:
        raise InputError(f"{what} {text!r} is out of range ({examples})") from None
    except ValueError:
        raise InputError(f"{what} {text!r} is not a number with a unit ({examples})") from None
    return numerator, denominator, body[end:]


def _byte_prefix(unit: str) -> tuple[str, str] | None:
    """Split a byte unit (GB, GiB, Gb, B) into its prefix and B or b; None if it is not one."""
    prefix, byte = unit[:-1], unit[-1:]
    if byte not in ("B", "b"):
        return None
    if prefix and (prefix[0] not in _BYTE_PREFIXES or prefix[1:] not in ("", "i")):
        return None
    return prefix, byte


def _multiplier(prefix: str | None) -> int:
    key = (prefix or "").lower()
    return _BINARY_PREFIX.get(key) or _DECIMAL_PREFIX[key]


def _to_positive_int(value: Fraction, text: str, what: str, limit: int, unit: str) -> int:
    if value <= 0:
        raise InputError(f"{what} {text!r} must be greater than zero")
    if value > limit:
        raise InputError(f"{what} {text!r} is implausibly large (at most {limit:.0e} {unit})")
    if round(value) < 1:  # what divides by it must not meet a rounded zero
        raise InputError(f"{what} {text!r} rounds to 0 {unit}; it must be at least 1")
    return round(value)


def parse_bandwidth(text: str, what: str = "bandwidth") -> int:
    """Parse a memory bandwidth such as ``3.35TB/s`` into integer bytes per second.

    >>> parse_bandwidth("3.35TB/s")
    3350000000000
    >>> parse_bandwidth("1.5 TiB/s")
    1649267441664
    """
    value, unit = _split(text, what, BANDWIDTH_EXAMPLES)
    per_second = unit.endswith(("/s", "ps"))
    parts = _byte_prefix(unit[:-2]) if per_second else None
    if parts is None:
        raise InputError(f"{what} {text!r} needs a unit per second ({BANDWIDTH_EXAMPLES})")
    prefix, byte = parts
    if byte == "b":
        raise InputError(
            f"{what} {text!r} is in bits per second; give bytes per second "
            f"with a capital B ({BANDWIDTH_EXAMPLES})"
        )
    return _to_positive_int(value * _multiplier(prefix), text, what, 10**18, "bytes/s")


def parse_size(text: str, what: str = "memory") -> int:
    """Parse a memory size such as ``80GiB`` into integer bytes.

    >>> parse_size("80GiB")
    85899345920
    """
    value, unit = _split(text, what, SIZE_EXAMPLES)
    parts = _byte_prefix(unit)
    if parts is None or parts[1] == "b":
        raise InputError(
            f"{what} {text!r} needs a byte unit: B, kB, MB, GB, TB, PB or KiB, MiB, GiB, TiB, "
            f"PiB ({SIZE_EXAMPLES})"
        )
    return _to_positive_int(value * _multiplier(parts[0]), text, what, 10**18, "bytes")


def parse_flops(text: str) -> int:
    """Parse a compute rate such as ``989.4TFLOP/s`` into integer FLOP per second;
    ``TFLOPS``, as datasheets write it, is the same unit.

    >>> parse_flops("989.4TFLOP/s"), parse_flops("2.25 PFLOP/s"), parse_flops("989TFLOPS")
    (989400000000000, 2250000000000000, 989000000000000)
    """
    what, examples = "compute rate", "e.g. 989.4TFLOP/s, 989.4TFLOPS, 2.25PFLOP/s"
    value, unit = _split(text, what, examples)
    prefix, _, rest = unit.partition("FLOP")
    if (
        rest not in ("/s", "s", "S")
        or len(prefix) > 1
        or (prefix and prefix not in _FLOPS_PREFIXES)
    ):
        raise InputError(f"{what} {text!r} needs a unit ({examples})")
    limit, scale = 10**21, _DECIMAL_PREFIX[prefix.lower()]
    return _to_positive_int(value * scale, text, what, limit, "FLOP/s")


def parse_duration(text: str, what: str = "duration") -> float:
    """Parse a time such as ``0.5ms`` or ``10us`` into seconds; zero is allowed.

    >>> parse_duration("0.5ms"), parse_duration("10us")
    (0.0005, 1e-05)
    """
    examples = "e.g. 0.5ms, 10us"
    numerator, denominator, unit = _split_parts(text, what, examples)
    if unit not in _TIME_UNIT:
        raise InputError(f"{what} {text!r} needs a unit: s, ms, us or ns ({examples})")
    if numerator < 0:
        raise InputError(f"{what} {text!r} must not be negative")
    denominator *= _TIME_UNIT[unit]
    if numerator > 3600 * denominator:
        raise InputError(f"{what} {text!r} is implausibly long (at most an hour)")
    return numerator / denominator  # int / int rounds once, as float(Fraction) does
