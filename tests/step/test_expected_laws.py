"""The laws of the expected figure (issue 19's acceptance), over every model preset, every GPU
preset whose family some engine profile covers, every engine, batch 1-512 and context 1-1M:
the expected step is never below the roofline at peak, never falls as the batch or the
context grows (chunked attention aside: its read falls at chunk edges, model/kvcache.py), and
its band holds it."""

from __future__ import annotations

from hypothesis import assume, given, settings
from hypothesis import strategies as st

from decodecalc.record import replace
from decodecalc.resolving.resolve import resolve
from decodecalc.scenarios.scenario import Scenario
from decodecalc.scenarios.spec import ScenarioSpec
from decodecalc.step.step import StepModel, engine_step, gemm_excess_s
from tests.conftest import shared_catalog

CATALOG = shared_catalog()
MODELS = [m.id for m in CATALOG.models()]
GPUS = [g.id for g in CATALOG.gpus() if not g.announced]
ENGINES = ["typical", *(e.id for e in CATALOG.engines())]


def _chunked(s: Scenario) -> bool:
    return any(getattr(m, "attention_chunk", None) for m in s.model.mixers())


@st.composite
def deployments(draw: st.DrawFn) -> Scenario:
    spec = ScenarioSpec(
        model=draw(st.sampled_from(MODELS)),
        gpu=draw(st.sampled_from(GPUS)),
        weights=draw(st.sampled_from(["bf16", "fp8"])),
        kv_dtype="fp8",
        batch=draw(st.integers(1, 512)),
        engine=draw(st.sampled_from(ENGINES)),
    )
    return resolve(spec, CATALOG)


def _expected(s: Scenario, context: int) -> tuple[float, float, float, float]:
    """(roofline at peak bandwidth, expected, band low, band high) of one step."""
    row = StepModel.of(s).row(context)
    e = row.expected
    assert e is not None
    peak = max(row.total_bytes / s.bandwidth_bytes_per_s, row.compute_seconds or 0.0)
    return peak + row.comm_seconds, e.seconds, e.low_seconds, e.high_seconds


@settings(max_examples=75, deadline=None)
@given(deployments(), st.integers(1, 1_000_000))
def test_expected_is_never_below_the_roofline_and_inside_its_band(s: Scenario, t: int) -> None:
    roofline, expected, low, high = _expected(s, t)
    assert roofline <= low * (1 + 1e-12) and low <= expected <= high


@settings(max_examples=75, deadline=None)
@given(deployments(), st.integers(1, 1_000_000), st.integers(1, 1_000_000))
def test_expected_never_falls_as_the_context_grows(s: Scenario, a: int, b: int) -> None:
    assume(not _chunked(s))
    lo, hi = sorted((a, b))
    assert _expected(s, lo)[1] <= _expected(s, hi)[1] * (1 + 1e-12)


@settings(max_examples=75, deadline=None)
@given(deployments(), st.integers(1, 512), st.integers(1, 100_000))
def test_expected_never_falls_as_the_batch_grows(s: Scenario, other: int, t: int) -> None:
    small, large = sorted((s.batch, other))
    at = [_expected(replace(s, batch=b), t)[1] for b in (small, large)]
    assert at[0] <= at[1] * (1 + 1e-12)


@settings(max_examples=75, deadline=None)
@given(deployments(), st.integers(1, 1_000_000))
def test_no_operation_costs_more_than_the_work_it_stands_for(s: Scenario, t: int) -> None:
    """Each GEMM computes its rows and at most a tile's padding more per expert; what it
    adds beyond streaming is at most its FLOPs at e_mma; the classes explain lists add up
    to the engine's step before the compute floor."""
    step = StepModel.of(s)
    row = step.row(t)
    engine = s.engine
    assert engine is not None
    for params in engine.params:
        tile = params.tile_rows
        for op in step.weight_ops:
            work = 2 * op.params * op.rows
            assert work * (1 - 1e-12) <= op.flops(tile) <= 2 * op.params * (op.rows + tile)
        peak = step.peak_flops_per_s
        excess = gemm_excess_s(step.weight_ops, s.bandwidth_bytes_per_s, peak, params)
        grouped = params.grouped_mma_efficiency or params.mma_efficiency
        compute = sum(
            op.flops(tile) / (grouped if op.grouped else params.mma_efficiency)
            for op in step.weight_ops
        )
        assert excess <= (compute / peak if peak else 0.0) + 1e-15
        terms = engine_step(step, row, params)
        total = sum(seconds for _, seconds in terms.by_class())
        assert min(seconds for _, seconds in terms.by_class()) >= 0
        assert terms.seconds >= total * (1 - 1e-9)
