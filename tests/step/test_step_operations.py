"""The step as a list of operations (issue 28, step/operations.py): the operations add up to
the engine's step, none costs less than physics allows or more than the work it stands
for, a small case worked by hand, and docs/physics.md's DeepSeek-R1 list held to the tool."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from decodecalc.engine.profile import Engine, EngineParams
from decodecalc.loading.catalog import Catalog
from decodecalc.resolving.resolve import resolve
from decodecalc.scenarios.scenario import Scenario
from decodecalc.scenarios.spec import ScenarioSpec
from decodecalc.step.engine_terms import StepCounts, kv_read_factor, within_band
from decodecalc.step.operations import (
    MIN_TILE_ROWS,
    OPERATION_CLASSES,
    STREAMED,
    Operation,
    terms_of,
)
from decodecalc.step.step import StepModel, engine_step
from tests.conftest import Run, preset_scenario, shared_catalog

CATALOG = shared_catalog()
"""For Hypothesis, which cannot take a fixture per example."""

PHYSICS = Path(__file__).resolve().parents[2] / "docs" / "physics.md"

# One scenario per kind of layer and of parallelism the list has operations for.
SPECS = [
    dict(model="llama-3.1-70b", gpu="h100-sxm", weights="fp8", tp=4, batch=32),  # GQA, TP
    dict(model="deepseek-r1", gpu="h200", weights="fp8", tp=8, batch=64),  # MLA, experts
    dict(model="deepseek-v3", gpu="h200", weights="fp8", tp=8, batch=128, ep=True,
         dp_attention=True),  # all-to-all
    dict(model="deepseek-v3.2", gpu="h200", weights="fp8", tp=8, batch=4),  # top-k MLA
    dict(model="deepseek-v4-flash", gpu="b200", weights="fp8", tp=4, batch=8),  # compressed
    dict(model="gpt-oss-120b", gpu="h100-sxm", batch=16),  # windowed
    dict(model="qwen3-next-80b-a3b", gpu="h100-sxm", weights="fp8", tp=2, batch=8),  # linear
    dict(model="jamba-mini-1.5", gpu="h100-sxm", tp=2, batch=8),  # Mamba
    dict(model="llama-4-scout", gpu="h100-sxm", weights="fp8", tp=4, batch=4),  # chunked
    dict(model="llama-3.1-405b", gpu="h200", weights="fp8", tp=8, pp=2, batch=16),  # hand-off
    dict(model="qwen3-30b-a3b", gpu="mi300x", weights="fp8", batch=256),  # AMD, many rows
    dict(model="llama-3.1-8b", gpu="m4-max", weights="q4-k-m", batch=1),  # no peak known
]  # fmt: skip


def _scenario(catalog: Catalog, spec: dict[str, object], engine: str = "typical") -> Scenario:
    return resolve(ScenarioSpec(**spec, engine=engine), catalog)  # type: ignore[arg-type]


def _listed(s: Scenario, context: int) -> list[tuple[EngineParams, tuple[Operation, ...]]]:
    step = StepModel.of(s)
    row = step.row(context)
    return [(p, engine_step(step, row, p).operations) for p in s.engine.params]


@pytest.mark.parametrize("spec", SPECS, ids=[str(s["model"]) for s in SPECS])
@pytest.mark.parametrize("context", [1, 4_096, 131_072])
def test_the_operations_add_up_to_the_engine_step(
    catalog: Catalog, spec: dict[str, object], context: int
) -> None:
    """Before the compute floor, the step is the list's sum: the GEMMs and attention,
    then the fixed costs and transfers; with it, exactly what the row's expected figure
    is made of (the constants the sweep multiplies out, EngineTerms)."""
    s = _scenario(catalog, spec)
    step = StepModel.of(s)
    row = step.row(context)
    for params in s.engine.params:
        t = engine_step(step, row, params)
        streamed = sum(o.total_s for o in t.operations if o.group in STREAMED)
        rest = sum(o.total_s for o in t.operations if o.group not in STREAMED)
        compute = row.compute_seconds or 0.0
        assert t.seconds == pytest.approx(max(streamed, compute) + rest, rel=1e-12)
        # the constants of the same list, at the row's KV bytes
        terms = terms_of(t.operations, params.band)
        by_terms = terms.constant_s + row.kv_bytes * terms.per_kv_byte_s + terms.added_s
        assert streamed + rest == pytest.approx(by_terms, rel=1e-12)
        packed = (terms.constant_s, terms.per_kv_byte_s, terms.added_s, *terms.band)
        assert within_band((packed,), row.kv_bytes, compute, 0.0)[0] == t.seconds
        # the kinds' caches and states add up to the row's
        attention = [o for o in t.operations if o.group == OPERATION_CLASSES[2]]
        assert sum(o.kv_bytes for o in attention) == pytest.approx(row.kv_bytes, abs=1)
        assert sum(o.bytes for o in attention) == pytest.approx(row.state_bytes, abs=1)
        assert sum(o.bytes for o in t.operations if o.group in STREAMED[:2]) == row.weight_bytes
    # the expected figure of the row is the median of these steps, never below the floor
    assert row.expected is not None
    assert row.expected.seconds >= min(engine_step(step, row, p).seconds for p in s.engine.params)


@pytest.mark.parametrize("spec", SPECS, ids=[str(s["model"]) for s in SPECS])
def test_no_operation_is_faster_than_physics(catalog: Catalog, spec: dict[str, object]) -> None:
    """Each operation takes at least its bytes (cache included) at the GPU's full
    bandwidth and its FLOPs at the GPU's full peak: no profile prices past the datasheet."""
    s = _scenario(catalog, spec)
    peak = s.peak_flops()
    bandwidth = s.bandwidth_bytes_per_s
    for _, operations in _listed(s, 4_096):
        for o in operations:
            assert o.total_s >= (o.bytes + o.kv_bytes) / bandwidth * (1 - 1e-12), o
            if peak is not None:
                assert o.total_s >= o.flops / peak[1] * (1 - 1e-12), o
            assert o.total_s >= 0


def _padded(o: Operation) -> float:
    """The rows a GEMM computes: a grouped one's rounded up to whole tiles."""
    return -(-o.rows // o.tile) * o.tile if o.tile else o.rows


def _bound_of(o: Operation, params: EngineParams, s: Scenario) -> float:
    """The most an operation may cost: its work at the profile's own rates. A GEMM's
    FLOPs, a grouped GEMM's rows padded to at most max(16, 2 x rows) (kernel_tile), over
    e_mma x peak, plus its bytes over e_w x BW; attention its state and its cache as the
    kernel reads it (heads / KV heads times, for a GQA-unaware kernel) over e_kv x BW; a
    fixed cost or a transfer its own time."""
    bandwidth = s.bandwidth_bytes_per_s
    if o.group in STREAMED[:2]:
        peak = s.peak_flops()
        grouped = o.name == "grouped expert GEMM"
        params_multiplied = o.flops / (2 * _padded(o)) if o.rows else 0.0
        rows = max(MIN_TILE_ROWS, 2 * o.rows) if grouped else o.rows
        mma = (params.grouped_mma_efficiency if grouped else None) or params.mma_efficiency
        compute = 0.0 if peak is None else 2 * params_multiplied * rows / (peak[1] * mma)
        return compute + o.bytes / (bandwidth * params.weight_efficiency)
    if o.group == OPERATION_CLASSES[2]:
        return (o.bytes + o.kv_bytes * kv_read_factor(s)) / (bandwidth * params.kv_efficiency)
    return o.fixed_s


@pytest.mark.parametrize("spec", SPECS, ids=[str(s["model"]) for s in SPECS])
@pytest.mark.parametrize("engine", ["typical", "vllm", "sglang", "tensorrt-llm"])
def test_no_operation_costs_more_than_the_work_it_stands_for(
    catalog: Catalog, spec: dict[str, object], engine: str
) -> None:
    s = _scenario(catalog, spec, engine)
    for params, operations in _listed(s, 4_096):
        for o in operations:
            assert o.total_s <= _bound_of(o, params, s) * (1 + 1e-12), o
            if o.tile:
                assert o.tile <= max(MIN_TILE_ROWS, params.tile_rows)


@settings(max_examples=60, deadline=None)
@given(
    batch=st.integers(1, 1024),
    context=st.integers(1, 200_000),
    spec=st.sampled_from(SPECS[:3] + SPECS[10:11]),
)
def test_expert_gemms_never_pad_past_twice_their_rows(
    batch: int, context: int, spec: dict[str, object]
) -> None:
    """At any batch, a grouped expert GEMM computes at most max(16, 2 x rows) rows per
    expert touched (a 256-row table does not make 2 rows cost 256)."""
    s = _scenario(CATALOG, {**spec, "batch": batch}, "vllm")
    for _, operations in _listed(s, context):
        for o in operations:
            if o.name == "grouped expert GEMM" and o.rows:
                assert o.rows <= _padded(o) <= max(MIN_TILE_ROWS, 2 * o.rows)


# Mixtral-8x7B in BF16 on an H100 SXM (3.35 TB/s, 989.4 TFLOP/s dense BF16), batch 1, TP 1,
# context 1,000, under a profile made up for the test. 32 layers, hidden 4,096, 32 query
# and 8 KV heads of 128, 8 experts of 3 x 4,096 x 14,336 (top 2), vocabulary 32,000.
HAND = EngineParams(
    0.8,  # e_w
    0.5,  # e_kv
    10e-6,  # per layer
    100e-6,  # per step
    mma_efficiency=0.5,
    tile_rows=64,
    per_moe_layer_s=5e-6,
    per_sequence_s=1e-6,
)
STREAM = 3.35e12 * 0.8  # 2.68e12 bytes/s of weights
CACHE = 3.35e12 * 0.5  # 1.675e12 bytes/s of cache
BY_HAND_MS = {
    # 32,000 x 4,096 = 131,072,000 params x 2 bytes / 2.68e12
    "LM head": 262_144_000 / STREAM * 1e3,  # 0.097815
    # 32 x 2 x 4,096 x 4,096 = 1,073,741,824 params x 2 bytes
    "attention q, o": 2_147_483_648 / STREAM * 1e3,  # 0.801300
    # 32 x 2 x 4,096 x (8 x 128) = 268,435,456 params x 2 bytes
    "attention k, v": 536_870_912 / STREAM * 1e3,  # 0.200325
    # one token touches 2 of 8 experts: 32 x 8 x 3 x 4,096 x 14,336 / 4 = 11,274,289,152
    # params x 2 bytes = 8.4136 ms; their 1 row a 16-row tile: 2 x 16 x 11,274,289,152 =
    # 3.608e11 FLOPs at 494.7 TFLOP/s = 0.729 ms, below the bytes
    "routed experts": 22_548_578_304 / STREAM * 1e3,  # 8.413649
    # 32 x 4,096 x 8 = 1,048,576 params x 2 bytes
    "router": 2_097_152 / STREAM * 1e3,  # 0.000783
    # (32 x 2 + 1) x 4,096 = 266,240 params x 2 bytes
    "norms and biases": 532_480 / STREAM * 1e3,  # 0.000199
    # 32 layers x 2 x 8 x 128 elements x 2 bytes x 1,000 tokens = 131,072,000 bytes
    "GQA 32/8 heads x 128": 131_072_000 / CACHE * 1e3,  # 0.078251
    "per layer": 32 * 10e-3,  # 0.32
    "per step": 0.1,
    "per MoE layer": 32 * 5e-3,  # 0.16
    # 1 sequence x 32 layers x 2 experts = 64 passes x 1 us
    "per sequence pass": 64 * 1e-3,  # 0.064
}


def test_a_small_step_by_hand(catalog: Catalog) -> None:
    s = preset_scenario(catalog, "mixtral-8x7b", batch=1, engine=Engine("test", (HAND,)))
    step = StepModel.of(s)
    t = engine_step(step, step.row(1_000), HAND)
    listed = {o.stands_for if o.group != OPERATION_CLASSES[3] else o.name: o for o in t.operations}
    assert sorted(listed) == sorted(BY_HAND_MS)
    for name, ms in BY_HAND_MS.items():
        assert listed[name].total_s * 1e3 == pytest.approx(ms, rel=1e-9), name
    experts = listed["routed experts"]
    assert (experts.rows, experts.tile, experts.times) == (1.0, 16, 32)
    assert experts.flops == 2 * 16 * 11_274_289_152
    assert listed["per sequence pass"].times == 64
    # no link, TP 1: no transfer; 10.2363 ms in all, memory-bound
    assert t.seconds * 1e3 == pytest.approx(sum(BY_HAND_MS.values()), rel=1e-9)
    assert t.seconds * 1e3 == pytest.approx(10.23632, abs=1e-5)


def test_fixed_parts_add_up_to_the_fixed_seconds() -> None:
    """The named parts another change splits further: their sum is the fixed cost."""
    counts = StepCounts(layers=61, moe_layers=58, passes=29_888)
    parts = counts.fixed_parts(HAND)
    assert [n for n, _ in parts] == ["per layer", "per step", "per MoE layer", "per sequence pass"]
    # 61 x 10 us + 100 us + 58 x 5 us + 29,888 x 1 us = 30,888 us
    assert counts.fixed_seconds(HAND) == pytest.approx(30_888e-6, rel=1e-12)
    assert sum(seconds for _, seconds in parts) == counts.fixed_seconds(HAND)


def _doc_table() -> tuple[list[tuple[str, str, float]], float]:
    """docs/physics.md's worked list: (operation, stands for, ms) per row, and the step."""
    text = PHYSICS.read_text()
    start = text.index("<!-- operations worked by hand")
    rows, total = [], None
    for line in text[start:].splitlines()[3:]:
        if not line.startswith("|"):
            break
        cells = [c.strip() for c in line.strip("|").split("|")]
        if cells[0] == "**the step**":
            total = float(cells[-1].strip("*"))
        else:
            rows.append((cells[0], cells[1], float(cells[-1])))
    assert total is not None
    return rows, total


def test_the_docs_list_is_the_tools(catalog: Catalog, cli: Run) -> None:
    """Each row of docs/physics.md's DeepSeek-R1 list is the tool's operation to the
    table's 4 decimals, the classes add up to explain's line, and the doc's step is what
    explain prints."""
    rows, total = _doc_table()
    spec = dict(model="deepseek-r1", gpu="h200", weights="fp8", tp=8, batch=64)
    ((params, operations),) = _listed(_scenario(catalog, spec, "sglang"), 4_096)
    tool: dict[str, float] = {}
    for o in operations:
        key = o.name if o.group == OPERATION_CLASSES[3] else o.stands_for
        tool[key] = tool.get(key, 0.0) + o.total_s * 1e3
    for name, stands_for, ms in rows:
        names = [n.strip() for n in name.split(",")]
        keys = (
            names if names[0].startswith("per ") else [k for k in tool if k.startswith(stands_for)]
        )
        assert keys, stands_for
        assert sum(tool[k] for k in keys) == pytest.approx(ms, abs=6e-5), stands_for
    out = cli(
        "explain", "-m", "deepseek-r1", "-g", "h200", "-w", "fp8", "--tp", "8", "--batch", "64",
        "-c", "4K", "--engine", "sglang",
    ).out  # fmt: skip
    assert f"Expected: {total:.3f} ms per token" in out
    (line,) = [x for x in out.splitlines() if "by operation:" in x]
    for label, seconds in re.findall(r"([a-zA-Z ]+?) (\d+\.\d+) ms", line.split(":", 1)[1]):
        group = [o.total_s for o in operations if o.group == label.strip(", ")]
        assert f"{sum(group) * 1e3:.3f}" == seconds
    assert params.tile_rows == 64 and params.kv_read == "once"
    assert sum(ms for _, _, ms in rows) == pytest.approx(total, abs=1e-3)
