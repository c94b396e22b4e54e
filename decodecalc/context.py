"""Context specs: the token counts a table is computed at.

Token counts take suffixes the way vLLM's ``--max-model-len`` does: lowercase k/m/g are
decimal (32k = 32,000), uppercase K/M/G are binary (32K = 32,768), and a decimal point
is allowed only with a decimal suffix (1.5k = 1,500).
"""

from __future__ import annotations

from decodecalc.errors import InputError
from decodecalc.units import UNDERSCORES, is_digits

MAX_CONTEXT_TOKENS = 2**30
"""Largest context accepted (1,073,741,824 tokens): 100x the longest context any model claims."""

MAX_CONTEXT_POINTS = 10_000
"""Most contexts one query may compute: keeps a typo like 1..1M:1 from printing a million rows."""

_SUFFIX = {"k": 10**3, "m": 10**6, "g": 10**9, "K": 2**10, "M": 2**20, "G": 2**30}

SPEC_HELP = "e.g. 4096, 32K, 1K,8K,32K, 1K..256K (doubling), 0..128K:16K (step), 1K..1M:x4 (factor)"


def parse_tokens(text: str, what: str = "context") -> int:
    """Parse one token count; ``what`` names it in errors (context, --tokens, --prompt).

    >>> parse_tokens("32k"), parse_tokens("32K"), parse_tokens("1.5k")
    (32000, 32768, 1500)
    """
    cleaned = text.strip()
    if "_" in cleaned:
        raise InputError(f"{what} {text!r}: {UNDERSCORES}")
    suffix = cleaned[-1:] if cleaned[-1:] in _SUFFIX else ""
    whole, point, decimals = cleaned[: len(cleaned) - len(suffix)].partition(".")
    if not is_digits(whole) or (point and not is_digits(decimals)):
        raise InputError(f"{what} {text!r} is not a token count ({SPEC_HELP})")
    if point and suffix.isupper():
        raise InputError(
            f"{what} {text!r}: decimals work only with decimal suffixes "
            f"(1.5k = 1,500); binary ones (K, M, G) need a whole number"
        )
    # Bound the digits before any arithmetic: 10,000 of them would be a slow integer.
    whole, decimals = whole.lstrip("0"), decimals.rstrip("0")
    if len(whole) > len(str(MAX_CONTEXT_TOKENS)):
        raise InputError(f"{what} {text!r} is above the limit of {MAX_CONTEXT_TOKENS:,} tokens")
    if len(decimals) > 9:  # more places than the largest suffix (g = 10^9) can make whole
        raise InputError(f"{what} {text!r} is not a whole number of tokens")
    scaled = int(whole + decimals or "0") * _SUFFIX.get(suffix, 1)
    scale: int = 10 ** len(decimals)
    tokens, remainder = divmod(scaled, scale)
    if remainder:
        raise InputError(f"{what} {text!r} is not a whole number of tokens")
    if tokens > MAX_CONTEXT_TOKENS:
        raise InputError(f"{what} {text!r} is above the limit of {MAX_CONTEXT_TOKENS:,} tokens")
    return tokens


def _check_points(count: int, spec: str) -> None:
    if count > MAX_CONTEXT_POINTS:
        raise InputError(
            f"context {spec!r} expands to {count:,} points; at most {MAX_CONTEXT_POINTS:,} "
            "are allowed (use a larger step)"
        )


def _geometric(start: int, stop: int, factor: int, spec: str) -> list[int]:
    if start == 0:
        raise InputError(
            f"context {spec!r}: a multiplying range must start above 0; "
            "use a step instead, e.g. 0..128K:16K"
        )
    values = []
    value = start
    while value < stop:
        values.append(value)
        value *= factor
    values.append(stop)
    return values


def _linear(start: int, stop: int, step: int, spec: str) -> list[int]:
    if step <= 0:
        raise InputError(f"context {spec!r}: the step must be greater than zero")
    _check_points(len(range(start, stop, step)) + 1, spec)  # the end is always included
    values = list(range(start, stop, step))
    values.append(stop)
    return values


def _parse_range(item: str, spec: str) -> list[int]:
    bounds, _, step_text = item.partition(":")
    start_text, _, stop_text = bounds.partition("..")
    start, stop = parse_tokens(start_text), parse_tokens(stop_text)
    if start > stop:
        raise InputError(
            f"context range {item!r} is inverted: its start is above its end "
            f"(did you mean {stop_text.strip()}..{start_text.strip()}?)"
        )
    step_text = step_text.strip()
    if not step_text:
        return _geometric(start, stop, 2, spec)
    if step_text[0] in "xX*":
        digits = step_text[1:].strip()
        factor = int(digits) if is_digits(digits) and len(digits) < 4 else 0
        if factor < 2:
            raise InputError(f"context {spec!r}: a factor is a whole number of 2 or more, e.g. x4")
        return _geometric(start, stop, factor, spec)
    return _linear(start, stop, parse_tokens(step_text), spec)


def parse_context(spec: str) -> tuple[int, ...]:
    """Expand a context spec into sorted, distinct token counts.

    >>> parse_context("1K..8K")
    (1024, 2048, 4096, 8192)
    >>> parse_context("0..100k:25k")
    (0, 25000, 50000, 75000, 100000)
    """
    if not spec.strip():
        raise InputError(f"context is empty ({SPEC_HELP})")
    values: set[int] = set()
    for raw in spec.split(","):
        item = raw.strip()
        if not item:
            raise InputError(f"context {spec!r} has an empty item between commas")
        if ".." in item:
            values.update(_parse_range(item, spec))
        else:
            values.add(parse_tokens(item))
        _check_points(len(values), spec)
    return tuple(sorted(values))
