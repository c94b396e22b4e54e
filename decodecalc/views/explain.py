"""`decodecalc explain`: one decode step worked through with the numbers substituted, for
people learning why long-context decode slows down."""

from __future__ import annotations

from fractions import Fraction
from typing import TYPE_CHECKING, Any

from decodecalc.answers.explain import EngineWorking, Explanation
from decodecalc.answers.headline import Headline
from decodecalc.engine.profile import EngineKind, EngineParams
from decodecalc.record import replace
from decodecalc.scenarios.scenario import Scenario
from decodecalc.step.engine_terms import StepCounts
from decodecalc.step.running import RUNNING_COSTS

if TYPE_CHECKING:
    from decodecalc.step.operations import Operation
from decodecalc.step.step import MIN_TILE_ROWS, EngineStep, GroupRead, Row
from decodecalc.views import humanize as h
from decodecalc.views.report import Report


def _n(value: int | float | Fraction) -> str:
    return f"{float(value):,.0f}" if float(value).is_integer() else f"{float(value):,.2f}"


def weight_groups(groups: tuple[GroupRead, ...]) -> list[dict[str, Any]]:
    """Each tensor group a step touches (step.StepModel.group_reads) as explain's JSON
    (``weight_groups``) and its text say it."""
    return [
        {
            "group": g.group,
            "params": g.params,
            "read_share": float(g.read_share),
            "experts": g.experts,
            "dtype": g.dtype.id,
            "bits_per_value": float(g.dtype.bits_per_value),
            "read_bytes": g.read_bytes,
        }
        for g in groups
    ]


def _weight_lines(x: Explanation) -> list[str]:
    """Each tensor group with the share a step reads, its format and its bytes."""
    step = x.step
    s = step.scenario
    if s.weight_overrides:
        heading = f"{s.weights_recipe}: {s.weights.id} unless a group says otherwise"
    else:
        heading = f"{s.weights.id} = {h_bits(s.weights.bits_per_value)} bits per value"
    per_gpu = f"the {s.pp} stages' GPUs added up" if s.pp > 1 else "per GPU"
    lines = [f"1. Weights read per step ({per_gpu}, {heading}):"]
    for g in weight_groups(x.weight_groups):
        name, per_gpu = g["group"], g["params"]
        if g["read_share"] == 0:
            lines.append(f"   {name:28s} {per_gpu:>17,} params  not read (a step gathers rows)")
            continue
        note = ""
        if g["experts"]:
            note = f"  x {g['read_share']:.4f} ({_experts_share(s)})"
        lines.append(
            f"   {name:28s} {per_gpu:>17,} params{note} x {h_bits(g['bits_per_value'])} bits"
            f" ({g['dtype']}) -> {g['read_bytes']:,} bytes"
        )
    lines.append(f"   total: {step.weight_bytes:,} bytes ({h.size(step.weight_bytes)})")
    return lines


def _experts_share(s: Scenario) -> str:
    """What the routed experts' read share is: under --ep over several GPUs the busiest
    GPU's expected share of the experts it holds (step/expert_balance.py), not the mean
    share of experts touched that every GPU reads under TP."""
    if s.ep and s.tp > 1:
        return (
            f"busiest of {s.tp} GPUs: its expected experts touched / experts it holds, "
            'E[max] / ((E+R)/N), docs/physics.md "Expert parallelism"'
        )
    return "experts touched: E(1-(1-k/E)^B) / E"


def h_bits(bits: Fraction | float) -> str:
    return f"{float(bits):g}"


def _kv_lines(x: Explanation) -> list[str]:
    s, c, context = x.step.scenario, x.cache, x.context
    k_bytes = s.kv_dtype.bytes_for(1)
    formats = f"{s.kv_dtype.id} = {h_bits(k_bytes * 8)} bits per element"
    if s.v_dtype is not None:
        formats = f"K {formats}, V {s.v_dtype.id} = {h_bits(s.v_dtype.bits_per_value)} bits"
    lines = [f"2. KV cache read per step ({formats}):"]
    for terms, count in c.layers:
        lines.append(f"   {count} layers of {terms.kind}: {terms.shape}")
    reads = "min(T, window)" if x.step.kv_curve.regular else "the tokens it reads"
    lines.append(
        f"   at T = {context:,}: sum over layers of {reads} x elements = {_n(c.elements)} "
        f"elements per sequence"
    )
    if c.pattern:
        lines.append(f"   ({c.pattern})")
    kv = c.kv_bytes
    if s.v_dtype is None or c.split is None:
        product = f"x batch {s.sequences_per_gpu} x {h_bits(k_bytes)} bytes"
    else:
        keys, values = c.split
        product = (
            f"= {_n(keys)} K x {h_bits(k_bytes)} + {_n(values)} V x "
            f"{h_bits(s.v_dtype.bytes_for(1))} bytes, x batch {s.sequences_per_gpu}"
        )
    lines.append(f"   {product} = {kv:,} bytes ({h.size(kv)})")
    if c.fixed_bytes:
        lines.append(
            f"   + indexer keys: {c.fixed_bytes_per_token:,} bytes per token "
            f"x {context:,} x batch {s.sequences_per_gpu} = {c.fixed_bytes:,}; in all "
            f"{c.cache_bytes:,} bytes"
        )
    if c.state_bytes:
        lines.append(f"   recurrent state: {c.state_bytes:,} bytes, the same at every context")
    return lines


def explain_report(x: Explanation) -> Report:
    """The estimate at one context, with the worked text as the title (so text and JSON
    carry the same lines) and the notes, as every estimate has them, under it."""
    from decodecalc.views.estimate import estimate_report

    est = x.estimate
    report = estimate_report(est)
    first, *rest = explain_text(x)
    lines = [first, *_headline_lines(est.scenario, est.headlines[0], est.rows[0]), *rest]
    groups = weight_groups(x.weight_groups)
    return replace(
        report,
        document={**report.document, "explanation": lines, "weight_groups": groups},
        title=tuple(lines),
    )


def _headline_lines(scenario: Scenario, head: Headline, row: Row) -> list[str]:
    """The answer first, where an engine expects a step: its figure with its band and
    rate (section 7 works it), and the roofline of section 5 as the bound beside it."""
    engine = scenario.engine
    if head.basis != "expected":
        return []
    who = "a typical engine" if engine.kind is EngineKind.TYPICAL else engine.id
    return [
        f"Expected: {head.seconds * 1000:.3f} ms per token (band {head.low_seconds * 1000:.3f} "
        f"to {head.high_seconds * 1000:.3f}), {head.tokens_per_s:,.1f} tokens/s per sequence, "
        f"on {who} (section 7); the roofline, a bound no engine beats: "
        f"{row.seconds_per_token * 1000:.3f} ms (section 5)"
    ]


def explain_text(x: Explanation) -> list[str]:
    step, row, context = x.step, x.row, x.context
    s = step.scenario
    crossover = x.crossover
    bandwidth = s.effective_bandwidth_bytes_per_s
    lines = [
        f"One decode step of {s.model.name}, context T = {context:,} tokens, batch B = {s.batch}, "
        f"TP {s.tp}"
        + (f" x PP {s.pp} (the stages' bytes added up)" if s.pp > 1 else "")
        + (" with expert parallelism" if s.ep else "")
        + (" and data-parallel attention" if s.dp_attention else ""),
        "",
        *_weight_lines(x),
        "",
        *_kv_lines(x),
        "",
        "3. Time to stream them:",
        f"   bandwidth {h.bandwidth(s.bandwidth_bytes_per_s)} x efficiency {s.efficiency:g} = "
        f"{h.bandwidth(bandwidth)}"
        + (" (the roofline: no real GPU reaches it)" if s.efficiency == 1 else ""),
        f"   ({row.weight_bytes:,} + {row.kv_bytes:,}"
        + (f" + {row.state_bytes:,}" if row.state_bytes else "")
        + f") bytes / {bandwidth:,.0f} bytes/s = {row.memory_seconds * 1000:.3f} ms",
    ]
    peak = x.peak
    lines += ["", "4. Compute, the other roofline:"]
    lines.append(
        f"   {s.batch} x (2 x {x.multiplied_params:,} multiplied params + attention) = "
        f"{x.flops:.4e} FLOPs, / {s.tp} GPUs"
    )
    if peak is None or row.compute_seconds is None:
        lines.append("   no peak FLOP/s known for this GPU and format: memory time only")
    else:
        lines.append(
            f"   / {peak[0].upper()} peak {peak[1] / 1e12:,.1f} TFLOP/s = "
            f"{row.compute_seconds * 1000:.3f} ms -> the step is {row.bound}-bound"
        )
    if row.comm_seconds or row.overhead_seconds:
        lines.append(
            f"   + communication {row.comm_seconds * 1000:.3f} ms + overhead "
            f"{row.overhead_seconds * 1000:.3f} ms"
        )
    lines += [
        "",
        f"5. Per-token latency: {row.seconds_per_token * 1000:.3f} ms; "
        f"{row.tokens_per_s:,.1f} tokens/s per sequence"
        + (f", {row.throughput_tokens_per_s:,.1f} in all" if s.batch > 1 else ""),
        f"   the KV cache is {row.kv_share:.1%} of the bytes",
        "",
        "6. Crossover: the context where KV bytes equal weight bytes",
    ]
    if crossover is None:
        lines.append(
            "   none: every layer caps or keeps a constant state, so KV never reaches "
            f"{step.weight_bytes:,} bytes"
        )
    elif x.crossover_closed_form:
        lines.append(
            f"   T* = weight bytes / (B x KV bytes per token) = {step.weight_bytes:,} / "
            f"({s.sequences_per_gpu} x {_n(x.kv_bytes_per_token)})"
            f" = {float(crossover):,.1f} tokens"
        )
    else:
        lines.append(
            f"   the first context whose KV read reaches the weights, solved on the piecewise-"
            f"linear KV curve (windows, chunks or top-k cap some layers): "
            f"T* = {float(crossover):,.1f} tokens"
        )
    lines += _engine_lines(x)
    lines += ["", "Assumptions:", *[f" - {a}" for a in x.assumptions]]
    return lines


def _operation(op: Operation) -> str:
    """One priced operation of the step as a line: what it is, how often a step runs it,
    what it reads and computes on the GPU, and its time (step/operations.py)."""
    work = []
    if op.bytes:
        work.append(f"{op.bytes / 1e6:,.1f} MB")
    if op.kv_bytes:
        work.append(f"{op.kv_bytes / 1e6:,.1f} MB of cache")
    if op.flops:
        work.append(f"{op.flops / 1e9:,.1f} GFLOP")
    if op.tile:
        work.append(f"{op.rows:,.1f} rows an expert in tiles of {op.tile}")
    done = f": {', '.join(work)}" if work else ""
    return f"{op.name} ({op.stands_for}) x {op.times:,}{done} -> {op.total_s * 1000:.3f} ms"


def _engine_lines(x: Explanation) -> list[str]:
    """Section 7: the same step as the engine's profile says it would measure."""
    engine, row = x.step.scenario.engine, x.row
    if engine.is_roofline or not x.engines or row.expected is None:
        return []
    who = "a typical engine" if engine.id == "typical" else engine.id
    lines = ["", f"7. What {who} would measure (profiles for {engine.family} GPUs):"]
    experts = x.grouped_experts
    for working in x.engines:
        name, params, t = working.name, working.params, working.step
        factor = t.kv_read_factor
        read = f" x {factor:.0f} (each query head reads its KV head)" if factor != 1 else ""
        lines.append(
            f"   {name}: weights / (BW x e_w {params.weight_efficiency:.2f}) = "
            f"{t.weights_s * 1000:.3f} ms"
            + _gemm_compute(t, params, experts)
            + f"; KV{read} / (BW x e_kv {params.kv_efficiency:.2f}) = "
            f"{t.kv_s * 1000:.3f} ms; {t.counts.layers} layers x "
            f"{params.per_layer_s * 1e6:.0f} us + {params.per_step_s * 1000:.3f} ms per step"
            + _scaled_costs(t.counts, params)
            + (f" + communication {t.comm_s * 1000:.3f} ms" if t.comm_s > 1e-12 else "")
            + f" -> {t.seconds * 1000:.3f} ms"
        )
        lines.append(
            f"   {name} by operation: "
            + ", ".join(f"{label} {seconds * 1000:.3f} ms" for label, seconds in t.by_class())
        )
        if len(x.engines) == 1:  # a typical engine's profiles keep to their classes
            lines += _operation_lines(working)
        if params.kernel_source:
            lines.append(
                f"   {name} compute where GEMMs are compute-bound: e_mma "
                f"{params.mma_efficiency:.2f}"
                + (_grouped_rates(params) if experts else "")
                + f", from {params.kernel_source}"
            )
        if params.prefill_efficiency != 1 or params.per_request_s:
            lines.append(
                f"   {name} serving (not in this step): prefill chunks at e_p "
                f"{params.prefill_efficiency:.2f} of peak FLOP/s, "
                f"{params.per_request_s * 1000:.1f} ms per request in TTFT"
            )
    e = row.expected
    how = "median of the profiles" if len(engine.params) > 1 else "the profile's fit"
    lines.append(
        f"   expected {e.seconds * 1000:.3f} ms ({how}); band {e.low_seconds * 1000:.3f} to "
        f"{e.high_seconds * 1000:.3f} ms"
    )
    low = min(p.band[0] for p in engine.params)
    high = max(p.band[1] for p in engine.params)
    lines.append(
        f"   the band is wider than the steps above: it runs from the fastest times its fit's "
        f"low spread (down to x{low:.2f}) to the slowest times its high spread (up to "
        f"x{high:.2f}), how far the points each was fitted on fell from it; never below the "
        "roofline"
    )
    if any(p.weight_efficiency >= 1 and not p.transferred for p in engine.params):
        lines.append(
            "   e_w 1.00 is where a fit stopped (an efficiency cannot pass 1): past the "
            "fixed costs those points streamed weights at the datasheet's bandwidth, and the "
            "fixed costs keep the step above the roofline of section 3"
        )
    return lines


def _operation_lines(working: EngineWorking) -> list[str]:
    """Section 7's step operation by operation, the collectives with the engine's own
    all-reduce latency where it has one."""
    return [
        f"     {_operation(op)}{_own_latency(op, working)}"
        for op in working.step.operations
        if op.total_s > 0
    ]


def _own_latency(op: Operation, working: EngineWorking) -> str:
    """Where the engine's own all-reduce prices the collectives instead of the link's:
    the calls times its latency, so it is seen beside the step it adds to; measured by
    the kernel tables (latency and bus bandwidth) or fitted on the profile's points."""
    measured, name = working.allreduce, working.name
    if op.name == "all-reduce" and measured is not None:  # (a stand-in's tables too)
        return (
            f" ({op.times:,} x {measured.latency_s * 1e6:.2f} us + the bytes at "
            f"{measured.bus_bandwidth_bytes_per_s / 1e9:,.0f} GB/s: the all-reduce on "
            f"{measured.gpus} GPUs as the kernel tables named below measured it)"
        )
    latency = working.params.allreduce_latency_s
    if op.name not in ("all-reduce", "all-to-all") or latency is None:
        return ""
    return f" ({op.times:,} x {latency * 1e6:.0f} us, {name}'s own latency, + the bytes)"


def _grouped_rates(params: EngineParams) -> str:
    grouped = params.grouped_mma_efficiency or params.mma_efficiency
    return (
        f" (dense), {grouped:.2f} (experts), expert rows in tiles of up to {params.tile_rows}"
        f" ({MIN_TILE_ROWS} or the next power of two above an expert's rows, if fewer)"
    )


def _gemm_compute(t: EngineStep, params: EngineParams, grouped: bool) -> str:
    """What compute-bound GEMMs add, where any is: their FLOPs (a grouped GEMM's rows
    padded to whole tiles) at e_mma of peak take longer than their weights at e_w."""
    if t.gemm_compute_s <= 0:
        return ""
    tiles = f", expert rows in tiles of up to {params.tile_rows}" if grouped else ""
    experts = params.grouped_mma_efficiency
    of_experts = f", experts {experts:.2f}" if grouped and experts else ""
    return (
        f" + {t.gemm_compute_s * 1000:.3f} ms where GEMMs are compute-bound (FLOPs{tiles}, "
        f"/ (peak x e_mma {params.mma_efficiency:.2f}{of_experts}))"
    )


def _scaled_costs(counts: StepCounts, params: EngineParams) -> str:
    """The MoE-layer, per-sequence and running costs, where the profile has them."""
    text = ""
    if counts.moe_layers and params.per_moe_layer_s:
        text += f" + {counts.moe_layers} MoE layers x {params.per_moe_layer_s * 1e6:.0f} us"
    if params.per_sequence_s:
        text += (
            f" + {counts.passes:,} sequence passes (batch x layers, an MoE layer once per "
            f"routed expert) x {params.per_sequence_s * 1e6:.2f} us"
        )
    running = counts.running  # (step/running.py)
    if running is None:
        return text
    for cost in RUNNING_COSTS:
        if rate := getattr(params, cost.field):
            text += f" + {running.count(cost):,} x {rate * 1e6:.3g} us {cost.label}"
    return text
