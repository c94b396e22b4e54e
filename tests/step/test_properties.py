"""The laws of docs/physics.md, checked over generated scenarios with Hypothesis."""

from __future__ import annotations

import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st

from decodecalc.answers.estimate import estimate
from decodecalc.model.layers import Attention, DenseMLP
from decodecalc.model.model import Model
from decodecalc.scenarios.scenario import Scenario
from tests.conftest import shared_catalog

CATALOG = shared_catalog()
KV_DTYPES = [d for d in CATALOG.dtypes() if d.kv_cache]
WEIGHT_DTYPES = [d for d in CATALOG.dtypes() if d.weights]  # (Scenario refuses the rest)


def plain(m: Model) -> bool:
    """Dense, global GQA layers only: the two-term model in its simplest form."""
    return all(
        isinstance(layer.mixer, Attention)
        and layer.mixer.sliding_window is None
        and isinstance(layer.ffn, DenseMLP)
        for layer in m.layers
    )


MODELS = [m for m in CATALOG.models() if plain(m)]
MOE_MODELS = [m for m in CATALOG.models() if m.moe() is not None]


def scenarios_of(models: list[Model]) -> st.SearchStrategy[Scenario]:
    return st.builds(
        Scenario,
        model=st.sampled_from(models),
        weights=st.sampled_from(WEIGHT_DTYPES),
        kv_dtype=st.sampled_from(KV_DTYPES),
        bandwidth_bytes_per_s=st.integers(10**10, 10**13),
        efficiency=st.floats(0.05, 1.0),
        batch=st.integers(1, 256),
        tp=st.just(1),
    )


any_scenario = scenarios_of(CATALOG.models())
scenarios = st.builds(
    Scenario,
    model=st.sampled_from(MODELS),
    weights=st.sampled_from(WEIGHT_DTYPES),
    kv_dtype=st.sampled_from(KV_DTYPES),
    bandwidth_bytes_per_s=st.integers(10**10, 10**13),
    efficiency=st.floats(0.05, 1.0),
    batch=st.integers(1, 256),
    tp=st.just(1),
)
contexts = st.integers(0, 2_000_000)


@settings(max_examples=100, deadline=None)
@given(scenarios, contexts, contexts)
def test_latency_linear_and_increasing_in_context(s: Scenario, a: int, b: int) -> None:
    lo, hi = sorted((a, b))
    mid = (lo + hi) // 2 if (lo + hi) % 2 == 0 else lo
    rows = {r.context_tokens: r for r in estimate(s, [lo, mid, hi]).rows}
    assert rows[lo].seconds_per_token <= rows[hi].seconds_per_token
    if mid != lo:  # equal spacing: the two halves of the line climb the same
        left = rows[mid].kv_bytes - rows[lo].kv_bytes
        right = rows[hi].kv_bytes - rows[mid].kv_bytes
        assert abs(left - right) <= 2  # ceil-to-byte rounding only


@settings(max_examples=100, deadline=None)
@given(scenarios)
def test_crossover_row_has_half_kv_share(s: Scenario) -> None:
    est = estimate(s, [0, 1_073_741_824])
    assert est.crossover_context is not None
    row = next(r for r in est.rows if r.is_crossover)
    # KV share at T* is exactly 1/2; the row is at T* rounded to a whole token.
    slack = 1 / max(est.crossover_context, 1)
    assert row.kv_share == pytest.approx(0.5, abs=slack + 1e-9)
    before = [r for r in est.rows if r.context_tokens < row.context_tokens]
    after = [r for r in est.rows if r.context_tokens > row.context_tokens]
    assert all(r.kv_bytes <= r.weight_bytes for r in before)
    assert all(r.kv_bytes >= r.weight_bytes for r in after)


@settings(max_examples=100, deadline=None)
@given(scenarios, contexts, st.integers(2, 64))
def test_batch_multiplies_kv_and_divides_crossover(s: Scenario, t: int, b: int) -> None:
    one = estimate(_with(s, batch=1), [t])
    many = estimate(_with(s, batch=b), [t])
    assert many.weight_bytes_per_step == one.weight_bytes_per_step  # weights amortised
    assert abs(many.rows[0].kv_bytes - b * one.rows[0].kv_bytes) <= b
    assert one.crossover_context is not None and many.crossover_context is not None
    assert many.crossover_context == pytest.approx(one.crossover_context / b, rel=1e-9)
    assert many.rows[0].throughput_tokens_per_s == pytest.approx(b * many.rows[0].tokens_per_s)


@settings(max_examples=100, deadline=None)
@given(scenarios, contexts)
def test_halving_bandwidth_doubles_time(s: Scenario, t: int) -> None:
    full = estimate(s, [t]).rows[0]
    half = estimate(_with(s, efficiency=s.efficiency / 2), [t]).rows[0]
    assert half.seconds_per_token == pytest.approx(2 * full.seconds_per_token)


@settings(max_examples=100, deadline=None)
@given(scenarios, contexts, st.sampled_from([2, 4, 8]))
def test_tp_divides_weights_and_kv_up_to_kv_heads(s: Scenario, t: int, tp: int) -> None:
    attention = s.model.layers[0].mixer
    assert isinstance(attention, Attention)
    if not s.model.supports_tp(tp):
        return
    one = estimate(s, [t])
    split = estimate(_with(s, tp=tp), [t])
    assert split.weight_bytes_per_step < one.weight_bytes_per_step
    # Never better than a perfect 1/tp split (norms stay whole on every GPU).
    assert split.weight_bytes_per_step * tp >= one.weight_bytes_per_step - tp
    kv_ways = min(tp, attention.num_kv_heads)
    assert abs(split.rows[0].kv_bytes * kv_ways - one.rows[0].kv_bytes) <= kv_ways


@settings(max_examples=100, deadline=None)
@given(any_scenario, contexts, contexts)
def test_every_model_is_monotone_in_context(s: Scenario, a: int, b: int) -> None:
    """Windows and recurrent states flatten the curve; only chunked attention makes it fall
    (Llama 4's chunked layers read from the start of the newest token's chunk, so the read
    drops at every chunk boundary: model/kvcache.py), so those models are left out."""
    assume(not any(getattr(m, "attention_chunk", None) for m in s.model.mixers()))
    lo, hi = sorted((a, b))
    rows = {r.context_tokens: r for r in estimate(s, [lo, hi]).rows}
    assert rows[lo].kv_bytes <= rows[hi].kv_bytes
    assert rows[lo].seconds_per_token <= rows[hi].seconds_per_token


@settings(max_examples=100, deadline=None)
@given(any_scenario)
def test_crossover_is_where_kv_meets_weights_on_every_model(s: Scenario) -> None:
    est = estimate(s, [0, 1_073_741_824])
    if est.crossover_context is None:
        # No crossover: even the longest context keeps KV below the weights.
        assert est.rows[-1].kv_bytes < est.weight_bytes_per_step
        return
    row = next(r for r in est.rows if r.is_crossover)
    # The row is T* rounded to a whole token, so KV there is off by at most one token's
    # growth: the local slope, not the average W/T*, since chunked attention (Llama 4) grows
    # faster than average inside a chunk.
    t = row.context_tokens
    kv = {r.context_tokens: r.kv_bytes for r in estimate(s, [max(t - 1, 0), t, t + 1]).rows}
    step = max(kv[t + 1] - kv[t], kv[t] - kv[max(t - 1, 0)])
    assert abs(row.kv_bytes - row.weight_bytes) <= step + 2


@settings(max_examples=100, deadline=None)
@given(scenarios_of(MOE_MODELS), st.integers(1, 4096))
def test_moe_weights_grow_with_batch_up_to_all_experts(s: Scenario, b: int) -> None:
    """docs/physics.md: E(1 - (1 - k/E)^B) distinct experts, k at B=1, all E for large B."""
    one = estimate(_with(s, batch=1), [0]).weight_bytes_per_step
    many = estimate(_with(s, batch=b), [0]).weight_bytes_per_step
    more = estimate(_with(s, batch=b + 1), [0]).weight_bytes_per_step
    everything = s.weights.bytes_for(s.model.streamed_params_per_gpu(1, 10**6))
    groups = len(s.model.tensor_groups())  # each group's bytes are rounded up on their own
    assert one <= many <= more <= everything + groups


def _with(s: Scenario, **changes: object) -> Scenario:
    from decodecalc.record import replace

    return replace(s, **changes)  # type: ignore[arg-type]
