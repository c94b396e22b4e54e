"""Parsing what users type: bandwidths, sizes, token counts and context specs."""

from __future__ import annotations

from fractions import Fraction

import pytest
from hypothesis import given
from hypothesis import strategies as st

from decodecalc.context import MAX_CONTEXT_POINTS, parse_context, parse_tokens
from decodecalc.errors import InputError
from decodecalc.units import (
    MAX_EXPONENT,
    exact_number,
    parse_bandwidth,
    parse_duration,
    parse_flops,
    parse_size,
)


@pytest.mark.parametrize(
    ("text", "bytes_per_s"),
    [
        ("3.35TB/s", 3_350_000_000_000),
        ("3.35 TB/s", 3_350_000_000_000),
        ("819GB/s", 819_000_000_000),
        ("1.5TiB/s", 1_649_267_441_664),  # 1.5 x 2^40
        ("900 GiB/s", 966_367_641_600),  # 900 x 2^30
        ("4800GBps", 4_800_000_000_000),
        ("3.35e12B/s", 3_350_000_000_000),
        ("500MB/s", 500_000_000),
    ],
)
def test_bandwidth(text: str, bytes_per_s: int) -> None:
    assert parse_bandwidth(text) == bytes_per_s


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("3.35", "needs a unit"),
        ("3.35TB", "needs a unit per second"),
        ("100Gb/s", "bits per second"),
        ("-3TB/s", "greater than zero"),
        ("0GB/s", "greater than zero"),
        ("fast", "not a number"),
        ("", "not a number"),
        ("1e400TB/s", "implausibly large"),
        ("1e401TB/s", "out of range"),
        ("1e999999999TB/s", "out of range"),  # exact, this would be a billion-digit integer
        ("1" * 5000 + "B/s", "out of range"),
        ("0x10GB/s", "not a number"),
        ("1/3TB/s", "not a number"),
        ("inf TB/s", "not a number"),
        ("1_000GB/s", "not a number"),
        ("1e3.5GB/s", "not a number"),
        ("+-3TB/s", "not a number"),
        ("３TB/s", "not a number"),  # a full-width digit: isdigit() says yes, int() would too
        ("3TB/h", "needs a unit per second"),
        ("3KIB/s", "needs a unit per second"),
    ],
)
def test_bad_bandwidth(text: str, message: str) -> None:
    with pytest.raises(InputError, match=message):
        parse_bandwidth(text)


@pytest.mark.parametrize(
    ("text", "n_bytes"), [("80GiB", 80 * 2**30), ("141GB", 141 * 10**9), ("512 MiB", 512 * 2**20)]
)
def test_size(text: str, n_bytes: int) -> None:
    assert parse_size(text) == n_bytes


@pytest.mark.parametrize(
    ("text", "value"),
    [
        ("989.4TFLOP/s", 989_400_000_000_000),
        ("2.25 PFLOP/s", 2_250_000_000_000_000),
        ("5e14FLOPs", 500_000_000_000_000),
    ],
)
def test_flops(text: str, value: int) -> None:
    assert parse_flops(text) == value


@pytest.mark.parametrize(
    ("text", "seconds"),
    [("0.5ms", 0.0005), ("10us", 1e-5), ("10µs", 1e-5), ("2 s", 2.0), ("0ns", 0.0)],
)
def test_duration(text: str, seconds: float) -> None:
    assert parse_duration(text) == seconds


@pytest.mark.parametrize(
    ("text", "message"),
    [("1e400s", "implausibly long"), ("-1ms", "must not be negative"), ("5", "needs a unit")],
)
def test_bad_duration(text: str, message: str) -> None:
    with pytest.raises(InputError, match=message):
        parse_duration(text)


@given(
    st.integers(min_value=-(10**30), max_value=10**30),
    st.integers(min_value=0, max_value=12),
    st.integers(min_value=-MAX_EXPONENT, max_value=MAX_EXPONENT),
)
def test_exact_number_reads_decimal_literals_exactly(digits: int, places: int, power: int) -> None:
    sign = "-" if digits < 0 else ""
    body = str(abs(digits)).rjust(places + 1, "0")
    literal = f"{sign}{body[: len(body) - places]}.{body[len(body) - places :]}e{power}"
    # Independently: the digits over 10^places, times 10^power.
    assert exact_number(literal) == Fraction(digits, 10**places) * Fraction(10) ** power


@pytest.mark.parametrize("text", ["1e999999999", "1e" + "9" * 5000, "1" * 2000])
def test_huge_numbers_are_refused_before_any_arithmetic(text: str) -> None:
    with pytest.raises(OverflowError):  # exact, 1e999999999 takes minutes to build
        exact_number(text)


@pytest.mark.parametrize(
    ("text", "tokens"),
    [
        ("4096", 4096),
        ("32k", 32_000),  # vLLM: lowercase is decimal
        ("32K", 32_768),  # uppercase is binary
        ("1m", 1_000_000),
        ("1M", 1_048_576),
        ("1.5k", 1_500),
        ("0", 0),
        ("0000000000000000001", 1),  # leading zeros are not digits of size
        ("1." + "0" * 10_000 + "k", 1_000),  # trailing zeros are not places
        ("1.0", 1),
    ],
)
def test_tokens(text: str, tokens: int) -> None:
    assert parse_tokens(text) == tokens


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("1.5K", "binary ones"),
        ("128_000", "underscores are not read"),  # one rule with --batch (issue 32)
        ("1.0005k", "whole number"),
        ("-5", "not a token count"),
        ("32KB", "not a token count"),
        ("2G", "above the limit"),
        ("9" * 5000, "above the limit"),
        ("1.0000000001g", "whole number"),
        ("1." + "0" * 5000 + "1k", "whole number"),
        ("１K", "not a token count"),
        ("1.k", "not a token count"),
        ("", "not a token count"),
    ],
)
def test_bad_tokens(text: str, message: str) -> None:
    with pytest.raises(InputError, match=message):
        parse_tokens(text)


@pytest.mark.parametrize(
    ("spec", "contexts"),
    [
        ("8K", (8192,)),
        ("1K,8K,32K", (1024, 8192, 32768)),
        ("32K, 1K ,1K", (1024, 32768)),
        ("1K..8K", (1024, 2048, 4096, 8192)),
        ("1000..5000", (1000, 2000, 4000, 5000)),  # the end is always included
        ("0..100k:25k", (0, 25_000, 50_000, 75_000, 100_000)),
        ("0..10:4", (0, 4, 8, 10)),
        ("1K..64K:x4", (1024, 4096, 16384, 65536)),
        ("4K..4K", (4096,)),
        ("1K..4K,100k", (1024, 2048, 4096, 100_000)),
    ],
)
def test_context_specs(spec: str, contexts: tuple[int, ...]) -> None:
    assert parse_context(spec) == contexts


@pytest.mark.parametrize(
    ("spec", "message"),
    [
        ("8K..1K", "inverted"),
        ("0..8K", "must start above 0"),
        ("0..8K:0", "greater than zero"),
        ("1..1M:1", f"at most {MAX_CONTEXT_POINTS:,}"),
        ("1K..8K:x1", "factor"),
        ("1K..8K:xx", "factor"),
        ("", "empty"),
        ("1K,,2K", "empty item"),
        ("banana", "not a token count"),
    ],
)
def test_bad_context_specs(spec: str, message: str) -> None:
    with pytest.raises(InputError, match=message):
        parse_context(spec)


def test_exactly_the_point_limit_is_allowed() -> None:
    assert len(parse_context(f"1..{MAX_CONTEXT_POINTS}:1")) == MAX_CONTEXT_POINTS
    with pytest.raises(InputError, match="10,001 points"):
        parse_context(f"0..{MAX_CONTEXT_POINTS}:1")


@given(
    whole=st.integers(0, 10**6),
    fraction=st.integers(0, 10**12),
    exponent=st.integers(-20, 3),
    unit=st.sampled_from(["s", "ms", "us", "ns"]),
)
def test_duration_is_the_exact_decimal_rounded_once(
    whole: int, fraction: int, exponent: int, unit: str
) -> None:
    """parse_duration works on integers (no Fraction) and must give float(exact seconds)."""
    text = f"{whole}.{fraction}e{exponent}"
    seconds = Fraction(exact_number(text), {"s": 1, "ms": 10**3, "us": 10**6, "ns": 10**9}[unit])
    if seconds > 3600:
        with pytest.raises(InputError, match="implausibly long"):
            parse_duration(text + unit)
    else:
        assert parse_duration(text + unit) == float(seconds)
