"""The laws of docs/physics.md over shapes no preset has, at every TP a model allows.

tests/step/test_properties.py checks the laws on dense catalog models at TP 1. Here Hypothesis
also builds models directly: head_dim 85, 3 or 5 KV heads (so TP replicates heads), a
1,001-token window beside global layers, a recurrent layer, MoE blocks, a KV format of
10/3 bits (byte counts are fractions) and a GPU slow enough to be compute-bound. And the
sweep's fast path must give the estimator's rows exactly, for catalog models and these.
"""

from __future__ import annotations

import math
from fractions import Fraction
from itertools import pairwise

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from decodecalc.answers.estimate import estimate
from decodecalc.engine.profile import Engine, EngineParams
from decodecalc.model.dtypes import DType
from decodecalc.model.hardware import GpuSpec
from decodecalc.model.layers import Attention, DenseMLP, Layer
from decodecalc.model.linear_attention import LinearAttention
from decodecalc.model.model import Model
from decodecalc.model.moe import MoE
from decodecalc.record import replace
from decodecalc.scenarios.scenario import Scenario
from decodecalc.step.fast import ROW_FIELDS, FastStep
from decodecalc.step.passes import prefill
from decodecalc.step.step import StepModel, streamed_weight_bytes
from tests.conftest import shared_catalog

CATALOG = shared_catalog()
THIRD = DType(
    "third",
    "10/3 bits",
    Fraction(10, 3),
    kv_cache=True,
    compute=False,
    mixture=False,
    description="5 bytes per 12 values",
)
KV_DTYPES = [*(d for d in CATALOG.dtypes() if d.kv_cache), THIRD]
WEIGHT_DTYPES = [d for d in CATALOG.dtypes() if d.weights]  # (Scenario refuses the rest)
SLOW = GpuSpec(
    "slow",
    "1 TFLOP/s",
    "test",
    3_350_000_000_000,
    80 * 2**30,
    "HBM",
    flops_per_s=(("bf16", 10**12),),
)
GPUS = [None, SLOW, *(CATALOG.gpu(g) for g in ("h100-sxm", "b200", "m1-max", "mi300x"))]
SWEPT = [
    CATALOG.model(m)
    for m in (
        "gemma-2-9b",
        "gemma-3-27b",
        "mistral-7b-v0.1",
        "gpt-oss-20b",
        "gpt-oss-120b",
        "phi-3-mini",
        "deepseek-v3",
        "qwen3-next-80b-a3b",
        "mixtral-8x7b",
        "qwen3-30b-a3b",
        "llama-3.1-70b",
        "llama-2-13b",
    )
]
EDGES = [0, 1, 84, 85, 86, 127, 128, 129, 1000, 1001, 1002, 1023, 1024, 1025, 2047, 4096, 4097]
contexts = st.one_of(st.integers(0, 1_000_000), st.sampled_from(EDGES))


@st.composite
def odd_models(draw: st.DrawFn) -> Model:
    kv_heads = draw(st.sampled_from([1, 3, 5, 8]))
    heads = kv_heads * draw(st.sampled_from([1, 2, 4]))
    head_dim = draw(st.sampled_from([85, 64, 128]))
    ffn: DenseMLP | MoE = draw(
        st.one_of(
            st.builds(DenseMLP, st.integers(1, 8192), st.booleans()),
            st.builds(MoE, st.just(8), st.integers(1, 8), st.integers(1, 2048)),
        )
    )
    windows = draw(st.lists(st.sampled_from([None, 1001, 85, 4096]), min_size=1, max_size=5))
    layers = [Layer(Attention(heads, kv_heads, head_dim, sliding_window=w), ffn) for w in windows]
    if draw(st.booleans()):
        layers.append(Layer(LinearAttention(heads, 2 * heads, head_dim, head_dim, 4), ffn))
    return Model(
        id="odd",
        name="odd",
        family="test",
        hidden_size=draw(st.integers(64, 4096)),
        vocab_size=draw(st.integers(1, 200_000)),
        tie_word_embeddings=draw(st.booleans()),
        layers=tuple(layers),
        max_context_tokens=1_000_000,
        official_params=0,
    )


@st.composite
def scenarios(draw: st.DrawFn, models: st.SearchStrategy[Model]) -> Scenario:
    model = draw(models)
    gpu = draw(st.sampled_from(GPUS))
    tp = draw(st.sampled_from(model.valid_tp()))
    link = CATALOG.link("nvlink4") if tp > 1 and draw(st.booleans()) else None
    return Scenario(
        model,
        draw(st.sampled_from(WEIGHT_DTYPES)),
        draw(st.sampled_from(KV_DTYPES)),
        gpu.bandwidth_bytes_per_s if gpu else draw(st.integers(10**10, 10**13)),
        efficiency=draw(st.floats(0.05, 1.0)),
        batch=draw(st.integers(1, 512)),
        tp=tp,
        gpu=gpu,
        link=link,
        overhead_s=draw(st.sampled_from([0.0, 0.0003])),
        v_dtype=draw(st.sampled_from([None, *KV_DTYPES])),
    )


odd = scenarios(odd_models())
every = scenarios(st.one_of(st.sampled_from(SWEPT), odd_models()))


@pytest.mark.slow
@settings(max_examples=300, deadline=None)
@given(every, st.lists(contexts, min_size=1, max_size=6))
def test_sweep_rows_are_the_estimator_rows(s: Scenario, points: list[int]) -> None:
    """One step-time formula: FastStep is a faster form of StepModel.row, never another,
    the engine's expected step included (two profiles: a median and a band)."""
    s = replace(s, engine=TWO_ENGINES)
    step, fast = StepModel.of(s), FastStep.of(s)
    memory = step.memory(0)
    for t in points:
        row = step.row(t, memory=memory)
        got = dict(zip(ROW_FIELDS, fast.row(t), strict=True))
        exact = ("context", "weight_bytes", "kv_bytes", "state_bytes", "total_bytes", "fits")
        assert {k: got[k] for k in exact} == {
            "context": t,
            "weight_bytes": row.weight_bytes,
            "kv_bytes": row.kv_bytes,
            "state_bytes": row.state_bytes,
            "total_bytes": row.total_bytes,
            "fits": row.fits,
        }
        assert got["kv_share"] == pytest.approx(row.kv_share, rel=1e-12, abs=0)
        assert got["ms_per_token"] == pytest.approx(row.seconds_per_token * 1000, rel=1e-12)
        assert got["tokens_per_s"] == pytest.approx(row.tokens_per_s, rel=1e-12)
        assert got["throughput_tokens_per_s"] == pytest.approx(
            row.throughput_tokens_per_s, rel=1e-12
        )
        compute = row.compute_seconds or 0.0
        if abs(compute - row.memory_seconds) > 1e-12 * row.memory_seconds:  # not a float tie
            assert got["bound"] == row.bound
        assert row.expected is not None
        for key, seconds in (
            ("expected_ms_per_token", row.expected.seconds),
            ("expected_low_ms_per_token", row.expected.low_seconds),
            ("expected_high_ms_per_token", row.expected.high_seconds),
        ):
            assert got[key] == pytest.approx(seconds * 1000, rel=1e-12), key


TWO_ENGINES = Engine(
    "test",
    (
        EngineParams(0.8, 0.6, 50e-6, 3e-4, 25e-6, "per-query-head", (0.9, 1.2), 10),
        # ... and 200 us per MoE layer, 1 us per sequence pass (step/engine_terms.py).
        EngineParams(0.7, 0.65, 20e-6, 1e-4, None, "once", (0.95, 1.1), 10, 2e-4, 1e-6),
    ),
    "nvidia-datacenter",
)


def _segments(model: Model) -> list[tuple[int, int]]:
    """Context ranges on which every term is a straight line: between window sizes."""
    windows = sorted({w for m in model.mixers() if (w := m.sliding_window)})
    edges = [0, *windows, 2_000_000]
    return list(pairwise(edges))


@pytest.mark.slow
@settings(max_examples=100, deadline=None)
@given(odd, st.data())
def test_linear_in_context_within_a_straight_segment(s: Scenario, data: st.DataObject) -> None:
    low, high = data.draw(st.sampled_from(_segments(s.model)))
    lo = data.draw(st.integers(low, high))
    hi = data.draw(st.integers(lo, high))
    mid, hi = lo + (hi - lo) // 2, lo + 2 * ((hi - lo) // 2)
    step = StepModel.of(s)
    kv = [step.kv_bytes(t) for t in (lo, mid, hi)]
    assert abs((kv[1] - kv[0]) - (kv[2] - kv[1])) <= 2  # ceil-to-byte rounding only
    memory = [step.memory_seconds(t) for t in (lo, mid, hi)]
    bandwidth = s.effective_bandwidth_bytes_per_s
    assert (
        abs((memory[1] - memory[0]) - (memory[2] - memory[1])) <= 3 / bandwidth + 1e-12 * memory[2]
    )
    compute = [step.compute_seconds(t) for t in (lo, mid, hi)]
    if compute[0] is not None and compute[1] is not None and compute[2] is not None:
        slack = 1e-12 * compute[2]
        assert abs((compute[1] - compute[0]) - (compute[2] - compute[1])) <= slack


@pytest.mark.slow
@settings(max_examples=100, deadline=None)
@given(odd, st.lists(contexts, min_size=2, max_size=8))
def test_monotone_non_decreasing_in_context(s: Scenario, points: list[int]) -> None:
    rows = estimate(s, points).rows
    for a, b in pairwise(rows):
        assert a.kv_bytes <= b.kv_bytes
        assert a.seconds_per_token <= b.seconds_per_token
        assert (a.compute_seconds or 0.0) <= (b.compute_seconds or 0.0)


@pytest.mark.slow
@settings(max_examples=100, deadline=None)
@given(odd)
def test_crossover_row_kv_equals_weights_within_one_token(s: Scenario) -> None:
    est = estimate(s, [0, 2**30])
    step = StepModel.of(s)
    weights = est.weight_bytes_per_step
    if est.crossover_context is None:
        assert est.rows[-1].kv_bytes < weights  # windows cap the KV below the weights
        return
    row = next(r for r in est.rows if r.is_crossover)
    assert row.context_tokens == math.floor(est.crossover_context + 0.5)
    assert step.kv_bytes(max(row.context_tokens - 1, 0)) <= weights
    assert weights <= step.kv_bytes(row.context_tokens + 1)


@pytest.mark.slow
@settings(max_examples=100, deadline=None)
@given(odd, st.floats(0.05, 0.999), st.sampled_from([0.0, 0.0003]), contexts)
def test_roofline_is_a_lower_bound(s: Scenario, efficiency: float, overhead: float, t: int) -> None:
    roof = replace(s, efficiency=1.0, overhead_s=0.0)
    real = replace(s, efficiency=efficiency, overhead_s=overhead)
    assert (
        estimate(roof, [t]).rows[0].seconds_per_token
        <= estimate(real, [t]).rows[0].seconds_per_token
    )
    # the prefill pass itself: generate refuses an empty prompt, the pass prices it as 0
    fast, slow = prefill(StepModel.of(roof), t), prefill(StepModel.of(real), t)
    assert fast.seconds <= slow.seconds


@pytest.mark.slow
@settings(max_examples=100, deadline=None)
@given(odd, contexts, st.integers(2, 64))
def test_batch_multiplies_kv_and_state(s: Scenario, t: int, b: int) -> None:
    s = replace(s, batch=max(1, s.batch // b))
    one = StepModel.of(s)
    many = StepModel.of(replace(s, batch=s.batch * b))
    assert abs(many.kv_bytes(t) - b * one.kv_bytes(t)) <= b  # each rounds up by under a byte
    assert abs(many.state_bytes - b * one.state_bytes) <= b
    if s.model.moe() is None:
        assert many.weight_bytes == one.weight_bytes  # weights amortised
    else:
        assert many.weight_bytes >= one.weight_bytes  # more tokens touch more experts


@pytest.mark.slow
@settings(max_examples=100, deadline=None)
@given(odd, st.integers(0, 200_000))
def test_prefill_is_at_least_one_weight_read_and_its_compute(s: Scenario, prompt: int) -> None:
    p = prefill(StepModel.of(s), prompt)
    if prompt == 0:
        assert p.seconds == 0
        return
    weights = streamed_weight_bytes(s, s.batch * prompt)
    assert p.seconds >= weights / s.effective_bandwidth_bytes_per_s
    assert p.seconds >= (p.compute_seconds or 0.0) + p.comm_seconds


@pytest.mark.slow
@settings(max_examples=100, deadline=None)
@given(odd, contexts)
def test_tp_splits_weights_state_and_kv_up_to_the_kv_heads(s: Scenario, t: int) -> None:
    one = StepModel.of(replace(s, tp=1, link=None))
    split = StepModel.of(s)
    tp = s.tp
    kv_heads = next(m.num_kv_heads for m in s.model.mixers() if isinstance(m, Attention))
    ways = min(tp, kv_heads)  # past the KV heads each GPU keeps one whole head
    assert abs(split.kv_bytes(t) * ways - one.kv_bytes(t)) <= ways
    assert abs(split.state_bytes * tp - one.state_bytes) <= tp  # heads and channels split
    assert split.weight_bytes <= one.weight_bytes
    assert split.weight_bytes * tp >= one.weight_bytes - tp  # never better than 1/tp


@settings(max_examples=100, deadline=None)
@given(every, contexts)
def test_roofline_low_expected_high_are_in_order(s: Scenario, t: int) -> None:
    """Whatever an engine's parameters, its band never dips below the physics: at
    efficiency 1 and no overhead, ms_per_token <= expected_low <= expected <= expected_high."""
    s = replace(s, engine=TWO_ENGINES, efficiency=1.0, overhead_s=0.0)
    row = StepModel.of(s).row(t)
    assert row.expected is not None
    e = row.expected
    assert row.seconds_per_token <= e.low_seconds * (1 + 1e-12)
    assert e.low_seconds <= e.seconds <= e.high_seconds


def test_expected_decode_is_the_sum_of_expected_steps() -> None:
    """generate's expected decode (summed per straight piece of the roofline) against a
    brute-force sum of every step's expected figures: within 1% where the engine's own
    bends fall inside a piece (the typical band, whose median changes hands between
    profiles; an MoE on MI300X), exact where they do not (one profile, memory-bound)."""
    import decodecalc
    from decodecalc.answers.generate import expected_decode

    for model, gpu, engine, batch, prompt, tokens, tolerance in (
        ("llama-3.1-8b", "h100", "vllm", 64, 1000, 5000, 1e-9),
        ("llama-3.1-8b", "h100", None, 64, 1000, 5000, 1e-3),
        ("qwen3-30b-a3b", "mi300x", None, 128, 100, 8000, 0.01),
    ):
        step = StepModel.of(decodecalc.scenario(model, gpu, batch=batch, engine=engine))
        rows = [step.row(t).expected for t in range(prompt, prompt + tokens)]
        brute = [
            sum(getattr(e, f) for e in rows if e)
            for f in ("seconds", "low_seconds", "high_seconds")
        ]
        for summed, exact in zip(expected_decode(step, prompt, tokens), brute, strict=True):
            assert summed == pytest.approx(exact, rel=tolerance)
