"""Parsing what users type: bandwidths, sizes, token counts and context specs."""

from __future__ import annotations

import pytest

from decodecalc.context import MAX_CONTEXT_POINTS, parse_context, parse_tokens
from decodecalc.errors import InputError
from decodecalc.units import parse_bandwidth, parse_size


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
    ("text", "tokens"),
    [
        ("4096", 4096),
        ("32k", 32_000),  # vLLM: lowercase is decimal
        ("32K", 32_768),  # uppercase is binary
        ("1m", 1_000_000),
        ("1M", 1_048_576),
        ("1.5k", 1_500),
        ("128_000", 128_000),
        ("0", 0),
    ],
)
def test_tokens(text: str, tokens: int) -> None:
    assert parse_tokens(text) == tokens


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("1.5K", "binary ones"),
        ("1.0005k", "whole number"),
        ("-5", "not a token count"),
        ("32KB", "not a token count"),
        ("2G", "above the limit"),
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
