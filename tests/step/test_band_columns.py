"""One engine step formula: band_columns, the sweep's column-at-a-time form that computes
only the profiles that decide a block of rows, gives exactly (not approximately) what
within_band gives row by row, and within_band is the median-and-band definition below."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from decodecalc.loading.catalog import Catalog
from decodecalc.resolving.resolve import resolve
from decodecalc.scenarios.spec import ScenarioSpec
from decodecalc.step.engine_terms import Packed, within_band
from decodecalc.step.fast import FastStep, band_columns


def definition(
    terms: Packed, kv: float, compute: float, floor: float
) -> tuple[float, float, float]:
    """docs/physics.md section 7 written out plainly: each profile's step is
    max(constant + KV bytes x per byte, compute) + added, at least the floor; the centre
    is the median over profiles, the band spans each profile's band, clamped so that
    floor <= low <= centre <= high."""
    steps = [max(max(c + kv * p, compute) + a, floor) for c, p, a, _, _ in terms]
    ordered = sorted(steps)
    n = len(ordered)
    middle = ordered[n // 2] if n % 2 else (ordered[n // 2 - 1] + ordered[n // 2]) / 2
    low = max(min(s * t[3] for s, t in zip(steps, terms, strict=True)), floor)
    high = max(s * t[4] for s, t in zip(steps, terms, strict=True))
    return middle, min(low, middle), max(high, middle)


seconds = st.floats(0, 0.05, allow_subnormal=False)
profile = st.tuples(
    seconds,  # constant
    st.floats(0, 1e-11, allow_subnormal=False),  # per KV byte
    seconds,  # added
    st.floats(0.5, 1.0),
    st.floats(1.0, 2.5),
)


@st.composite
def engines(draw: st.DrawFn) -> Packed:
    """1 to 7 profiles, some repeated or sharing a part, as a typical engine's lines do
    (the same efficiencies with another added cost; the same step in another family)."""
    terms = draw(st.lists(profile, min_size=1, max_size=7))
    for i in range(1, len(terms)):
        c, p, a, lo, hi = terms[i]
        like = terms[draw(st.integers(0, i - 1))]
        match draw(st.sampled_from(["own", "same", "same memory side", "same added"])):
            case "same":
                terms[i] = like
            case "same memory side":
                terms[i] = (like[0], like[1], a, lo, hi)
            case "same added":
                terms[i] = (c, p, like[2], lo, hi)
    return tuple(terms)


@st.composite
def blocks(draw: st.DrawFn) -> tuple[list[int], list[float], list[float]]:
    """Rows as a sweep makes them (KV bytes, compute and floor growing with the
    context), or in any order with any values."""
    n = draw(st.integers(1, 300))
    if draw(st.booleans()):
        per_token = draw(st.integers(0, 10**6))
        start, step = draw(st.integers(0, 10**6)), draw(st.integers(1, 10**4))
        kv = [per_token * (start + step * i) for i in range(n)]
        c0, slope = draw(seconds), draw(st.floats(0, 1e-8))
        compute = [c0 + slope * (start + step * i) for i in range(n)]
        weights, peak = draw(st.integers(0, 10**12)), draw(st.floats(1e11, 1e13))
        comm = draw(st.sampled_from([0.0, 1e-5]))
        floor = [max((weights + k) / peak, c) + comm for k, c in zip(kv, compute, strict=True)]
        return kv, compute, floor
    rows = draw(st.lists(st.tuples(st.integers(0, 10**10), seconds, seconds), min_size=n))
    return [r[0] for r in rows], [r[1] for r in rows], [r[2] for r in rows]


@settings(max_examples=200, deadline=None)
@given(engines(), st.integers(0, 10**10), seconds, seconds)
def test_within_band_is_the_definition(terms: Packed, kv: int, compute: float, floor: float):
    assert within_band(terms, kv, compute, floor) == definition(terms, kv, compute, floor)


def columns_are_within_band(
    terms: Packed, rows: tuple[list[int], list[float], list[float]]
) -> None:
    kv, compute, floor = rows
    got = list(zip(*band_columns(terms, kv, compute, floor), strict=True))
    assert got == [within_band(terms, *r) for r in zip(kv, compute, floor, strict=True)]


@settings(max_examples=20, deadline=None)  # blocks of up to 300 rows: half a CPU-second
@given(engines(), blocks())
def test_columns_are_within_band_at_every_row(
    terms: Packed, rows: tuple[list[int], list[float], list[float]]
) -> None:
    columns_are_within_band(terms, rows)


@pytest.mark.slow
@settings(max_examples=400, deadline=None)  # the long search: 8 CPU-s
@given(engines(), blocks())
def test_columns_are_within_band_at_every_row_in_a_long_search(
    terms: Packed, rows: tuple[list[int], list[float], list[float]]
) -> None:
    columns_are_within_band(terms, rows)


@pytest.mark.parametrize(
    ("model", "batch"),
    [
        ("llama-3.1-8b", 8),
        ("llama-3.1-70b", 128),
        ("qwen3-30b-a3b", 32),  # MoE: lines that cross and lines that nearly coincide
        ("gemma-3-27b", 32),  # sliding-window layers
    ],
)
def test_a_sweeps_rows_are_its_rows_one_by_one(catalog: Catalog, model: str, batch: int) -> None:
    """The typical engine's seven profiles over 3,000 contexts, computed in blocks, are
    the rows FastStep.row computes alone (every profile, sorted)."""
    spec = ScenarioSpec(model=model, gpu="h100", weights="fp8", kv_dtype="bf16", batch=batch)
    fast = FastStep.of(resolve(spec, catalog))
    assert len(fast.engine_terms) > 1
    contexts = range(0, 300_000, 100)
    assert list(fast.rows(contexts)) == [fast.row(t) for t in contexts]
