"""Reports for each command's result: which fields, in which order, written how."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from decodecalc.answers.cost import CostEnergy
from decodecalc.answers.cost import cost_factors as cost_factors  # re-exported: compare
from decodecalc.answers.estimate import Estimate
from decodecalc.answers.headline import Headline, basis
from decodecalc.answers.notes import cost_notes as cost_notes  # re-exported: compare
from decodecalc.engine.profile import EngineKind, gpu_family
from decodecalc.record import replace
from decodecalc.scenarios.scenario import Scenario
from decodecalc.step.step import Row
from decodecalc.views import humanize as h
from decodecalc.views.report import Column, Report, document, with_notes


def scenario_inputs(s: Scenario) -> dict[str, Any]:
    """The resolved inputs, as JSON carries them and CSV repeats them on every row."""
    return {
        "model": s.model.id,
        "gpu": s.gpu.id if s.gpu else None,
        "bandwidth_bytes_per_s": s.bandwidth_bytes_per_s,
        "efficiency": s.efficiency,
        "effective_bandwidth_bytes_per_s": s.effective_bandwidth_bytes_per_s,
        "weights_dtype": s.weights.id,
        "weights_recipe": s.weights_recipe,
        "weight_overrides": {group: dtype.id for group, dtype in s.weight_overrides},
        "kv_dtype": s.kv_dtype.id,
        "v_dtype": (s.v_dtype or s.kv_dtype).id,
        "weights_bits_per_value": float(s.weights.bits_per_value),
        "kv_bits_per_value": float(s.kv_dtype.bits_per_value),
        "batch": s.batch,
        "tp": s.tp,
        "memory_bytes": s.gpu.memory_bytes if s.gpu else None,
        "memory_utilization": s.memory_utilization,
        "peak_flops_per_s": None if (peak := s.peak_flops()) is None else peak[1],
        "link": s.link.id if s.link else None,
        "link_bandwidth_bytes_per_s": s.link.bandwidth_bytes_per_s if s.link else None,
        "overhead_ms": s.overhead_s * 1000,
        "engine": s.engine.id,
        "pp": s.pp,
        "ep": s.ep,
        "dp_attention": s.dp_attention,
        "gpus_per_node": s.gpus_per_node,
        "node_link": s.node_link.id if s.node_link else None,
        "engine_line": s.engine.line if s.engine else None,
    }


def weights_label(s: Scenario) -> str:
    """The weights in a word: the recipe's id, else the one dtype every tensor is in."""
    return s.weights_recipe or s.weights.id


def kv_label(s: Scenario) -> str:
    """The KV formats in a word: one dtype, or K's and V's as fp8+bf16 when they differ."""
    v = s.kv_dtype if s.v_dtype is None else s.v_dtype
    return s.kv_dtype.id if v.id == s.kv_dtype.id else f"{s.kv_dtype.id}+{v.id}"


def scenario_ids(s: Scenario) -> dict[str, Any]:
    """What names a scenario on a row of a sweep or a calibration: resolved preset ids, so
    an alias and its preset give the same rows. kv_dtype is K's (and V's unless v_dtype
    says otherwise), as in every other command's inputs."""
    return {
        "model": s.model.id,
        "gpu": s.gpu.id if s.gpu else None,
        "weights": weights_label(s),
        "kv_dtype": s.kv_dtype.id,
        "batch": s.batch,
        "tp": s.tp,
    }


def _row_record(row: Row, head: Headline, costs: CostEnergy | None) -> dict[str, Any]:
    return {
        "context": row.context_tokens,
        "weight_bytes": row.weight_bytes,
        "kv_bytes": row.kv_bytes,
        "state_bytes": row.state_bytes,
        "total_bytes": row.total_bytes,
        "kv_share": row.kv_share,
        **headline_figures(head),
        "crossover": row.is_crossover,
        "fits": row.fits,
        "bound": row.bound,
        "memory_ms": row.memory_seconds * 1000,
        "compute_ms": None if row.compute_seconds is None else row.compute_seconds * 1000,
        "comm_ms": row.comm_seconds * 1000,
        "allreduce_ms": row.allreduce_seconds * 1000,
        "all_to_all_ms": row.all_to_all_seconds * 1000,
        "handoff_ms": row.handoff_seconds * 1000,
        "overhead_ms": row.overhead_seconds * 1000,
        **expected_fields(head),
        **cost_fields(costs),
        **expected_rates(head),
        **roofline_figures(row),
    }


def headline_figures(head: Headline) -> dict[str, float]:
    """The figures a pipeline reads first, at the headline step (answers/headline.py):
    what the engine is expected to measure, the roofline only under --engine roofline.
    Schema 2: in schema 1 these held the roofline, now roofline_figures'."""
    return {
        "ms_per_token": head.seconds * 1000,
        "tokens_per_s": head.tokens_per_s,
        "throughput_tokens_per_s": head.throughput_tokens_per_s,
    }


def roofline_figures(row: Row) -> dict[str, float]:
    """The roofline step (at the chosen efficiency, with overhead and communication) and
    its rates: the bound no engine beats, beside the headline (added in schema 2, after
    what earlier CSV readers expect by position)."""
    return {
        "roofline_ms_per_token": row.seconds_per_token * 1000,
        "roofline_tokens_per_s": row.tokens_per_s,
        "roofline_throughput_tokens_per_s": row.throughput_tokens_per_s,
    }


def expected_fields(head: Headline) -> dict[str, float]:
    """What the scenario's engine would measure, with its band (the roofline itself when
    the engine is 'roofline')."""
    return {
        "expected_ms_per_token": head.seconds * 1000,
        "expected_low_ms_per_token": head.low_seconds * 1000,
        "expected_high_ms_per_token": head.high_seconds * 1000,
    }


def expected_rates(head: Headline) -> dict[str, float]:
    """Tokens per second at the headline step (added after the fields earlier readers
    expect): per sequence and for the whole batch."""
    return {
        "expected_tokens_per_s": head.tokens_per_s,
        "expected_throughput_tokens_per_s": head.throughput_tokens_per_s,
    }


def cost_fields(factors: CostEnergy | None, scale: float = 1.0) -> dict[str, float]:
    """The cost and energy figures whose rate is known, each times ``scale`` (a row's
    expected ms, when the figures are cost_factors' per millisecond)."""
    if factors is None:
        return {}
    fields = {
        "cost_per_million_tokens": factors.cost_per_million_tokens,
        "joules_per_token": factors.joules_per_token,
        "kwh_per_million_tokens": factors.kwh_per_million_tokens,
    }
    return {k: v * scale for k, v in fields.items() if v is not None}


def cost_inputs(s: Scenario) -> dict[str, Any] | None:
    """The rates behind the cost and energy figures, and the step they divide."""
    r = s.rates
    if r.price_per_gpu_hour is None and r.power_w is None:
        return None
    return {
        "price_per_gpu_hour": r.price_per_gpu_hour,
        "price_source": r.price_source or None,
        "price_date": r.price_date or None,
        "power_w": r.power_w,
        "power_source": r.power_source or None,
        "gpus": s.gpus,
        "cost_basis": basis(s),
    }


def _rate_exact(value: float) -> str:
    return f"{value:.4f}"


def _share_exact(value: float) -> str:
    return f"{value:.6f}"


def estimate_columns(batch: int | None = None) -> tuple[Column, ...]:
    """Per-context columns; the aggregate column only for a batch above 1 (None: always).
    A narrow terminal drops them highest ``drop`` first: communication, state, the batch's
    throughput, weights, bound, KV, per-sequence rate, the crossover marker, the KV
    share, then Fits; context, total and the headline step always stay."""
    columns = [
        Column("context", "Context (tokens)", h.tokens, h.whole),
        Column("weight_bytes", "Weights", h.size, h.whole, drop=6),
        Column("kv_bytes", "KV cache", h.size, h.whole, drop=4),
        Column("state_bytes", "State", h.size, h.whole, drop=8),
        Column("total_bytes", "Total / step", h.size, h.whole),
        Column("kv_share", "KV share", h.share, _share_exact, drop=2),
        Column("ms_per_token", "ms / token", h.ms, h.ms_exact),
        Column("expected_band", "Expected ms (band)", _band, _band_exact),
        Column("tokens_per_s", "tok/s / seq", h.rate, _rate_exact, drop=3),
    ]
    if batch is None or batch > 1:
        header = f"tok/s x{batch:,}" if batch else "tok/s, all sequences"
        columns.append(Column("throughput_tokens_per_s", header, h.rate, _rate_exact, drop=7))
    columns.append(
        Column(
            "bound",
            "Bound",
            lambda v: "COMPUTE" if v == "compute" else v,
            numeric=False,
            drop=5,
        )
    )
    columns.append(Column("comm_ms", "Comm ms", h.ms, h.ms_exact, drop=9))
    columns.append(Column("fits", "Fits", lambda v: "yes" if v else "NO", numeric=False, drop=1))
    # The marker never wraps (as a number does not): split, it took a row of its own. A
    # narrow table gives it up before the KV cache (the row stays highlighted).
    columns.append(Column("crossover", "", lambda v: "<- crossover" if v else "", drop=5))
    return tuple(columns)


COST_COLUMNS = (
    Column("cost_per_million_tokens", "$ / M tok", lambda v: f"{v:,.2f}", drop=10),
    Column("joules_per_token", "J / tok", h.joules, drop=10),
)
"""Cost and energy per token, in the tables of estimate and compare when a price is known
(JSON and CSV carry energy whenever the board power is known; a table shows it with cost,
not in every query)."""


def priced(records: Sequence[dict[str, Any]]) -> bool:
    return any("cost_per_million_tokens" in r for r in records)


def _crossover_text(est: Estimate) -> str:
    if est.crossover_context is None:
        return "crossover: none (the KV cache never reaches the weight bytes)"
    return f"crossover: {h.tokens(est.crossover_context)} tokens (KV bytes = weight bytes)"


def parallel_label(s: Scenario) -> str:
    """Parallelism beyond one TP group, in a few letters: ' PP2 EP DPA' (empty without)."""
    return (
        (f" PP{s.pp}" if s.pp > 1 else "")
        + (" EP" if s.ep else "")
        + (" DPA" if s.dp_attention else "")
    )


def describe_scenario(s: Scenario) -> str:
    gpu = f"{s.gpu.name} " if s.gpu else ""
    bound = "bandwidth roofline" if s.efficiency == 1 else f"{s.efficiency:g} of peak bandwidth"
    return (
        f"{s.model.name} on {gpu}{h.bandwidth(s.bandwidth_bytes_per_s)}"
        f" · weights {weights_label(s)} · KV {kv_label(s)} · batch {s.batch:,} · TP {s.tp}"
        f"{parallel_label(s)} · efficiency {s.efficiency:g}"
        f" ({bound}){describe_engine(s)}"
    )


def describe_engine(s: Scenario) -> str:
    """Whose measurements the expected column predicts, so a reader never mistakes a
    typical band for one engine's figure."""
    engine = s.engine
    if engine.is_roofline:
        return ""
    if engine.kind is EngineKind.TYPICAL:
        profiles = h.things(len(engine.params), "engine profile")
        return f" · expected: typical of {profiles} on {engine.family}"
    if engine.kind is EngineKind.FALLBACK:  # no data on this family (engine/select.py engine_for)
        others = len(engine.params) - 1
        beside = (
            f"with {h.things(others, 'engine profile')} on {engine.family}"
            if others
            else f"no profile is measured on {engine.family}"
        )
        return f" · expected: {engine.names[0]} ({engine.params[0].points} points); {beside}"
    (params,) = engine.params
    line = f"@{engine.line}" if engine.line else ""  # the release line it stands for
    return f" · expected: {engine.id}{line} on {engine.family} ({params.points} points)"


def _room_fields(est: Estimate) -> dict[str, int | None]:
    """The room a server leaves per GPU and what it takes first (null without a GPU)."""
    room = None if est.memory is None else est.memory.room
    return {
        "memory_usable_bytes": None if room is None else room.usable_bytes,
        "activation_peak_bytes": None if room is None else room.activation_bytes,
        "runtime_reserve_bytes": None if room is None else room.reserve_bytes,
    }


def _memory_line(est: Estimate) -> str:
    m, s = est.memory, est.scenario
    assert m is not None
    longest = est.rows[-1].context_tokens
    context = (
        "any context fits"
        if m.max_context is None
        else f"up to {m.max_context:,} tokens fit"
        if m.max_context
        else "the activation peak and reserve alone overflow"
        if m.room.overhead_overflows
        else "the weights alone overflow"
        if m.stored_weight_bytes > m.room.usable_bytes
        else "not one token of cache fits beside the weights"
    )
    sequences = (
        "any batch fits"
        if m.max_batch is None
        else f"{m.max_batch:,} sequence{'s fit' if m.max_batch != 1 else ' fits'}"
    )
    assert s.gpu is not None
    usable = "none" if m.room.overhead_overflows else h.size(m.room.usable_bytes)
    # no Metal server's rule is modelled: vLLM's (a CUDA one) stands in on a Mac
    rule = "vLLM's deductions standing in" if gpu_family(s.gpu) == "apple" else "sized as vLLM does"
    return (
        f"memory per GPU: {usable} usable ({h.binary_size(s.gpu.memory_bytes)}, {rule}), "
        f"{h.size(m.stored_weight_bytes)} of weights; "
        f"{sequences} at {longest:,} tokens; at batch {s.batch:,} {context}"
    )


def _compute_lines(est: Estimate) -> list[str]:
    s = est.scenario
    lines = []
    peak = s.peak_flops()
    longest = est.rows[-1].context_tokens
    if peak is not None:
        ridge = (
            f"compute-bound from batch {est.ridge_batch:,} at {longest:,} tokens"
            if est.ridge_batch
            else f"memory-bound at any batch at {longest:,} tokens"
        )
        lines.append(f"compute: {peak[0].upper()} peak {peak[1] / 1e12:,.1f} TFLOP/s; {ridge}")
    comm = est.communication
    if comm is not None and s.tp > 1 and not s.dp_attention:
        link = comm.group_link  # the network when the group spans nodes
        lines.append(
            f"TP communication: {comm.allreduce_calls:,} all-reduces per step over {link.name} "
            f"({h.bandwidth(link.bandwidth_bytes_per_s)}, {link.latency_s * 1e6:g} us each)"
        )
    if s.link is not None and s.dp_attention:
        each = "a dispatch and a combine (all-to-all)" if s.ep else "an all-gather and a scatter"
        lines.append(f"communication: {each} per MoE layer over {s.link.name}")
    if s.pp > 1:
        layers = ", ".join(str(st.layers) for st in est.stages)
        lines.append(
            f"pipeline: {s.pp} stages of {layers} layers, one after another; "
            f"{s.pp - 1} hand-off{'s' if s.pp > 2 else ''} of the hidden state and residual; "
            "the Weights, KV cache and Total columns are the stages' added up"
        )
    return lines


def _weights_read_text(est: Estimate) -> str:
    """The weights a step reads. With pipeline stages the figure is the stages' added up
    (what one GPU holding every layer would read): no GPU reads it, so each stage's GPU's
    own share is named beside it."""
    s = est.scenario
    total = h.size(est.weight_bytes_per_step)
    if s.pp == 1:
        per_gpu = f" per GPU (TP {s.tp})" if s.tp > 1 else ""
        return f"weights read per step{per_gpu}: {total}"
    each = ", ".join(h.size(st.weight_bytes) for st in est.stages)
    return f"weights read per step{_summed(s)}: {total} (each GPU reads its own stage's: {each})"


def _summed(s: Scenario) -> str:
    return f", summed over the {s.pp} stages" if s.pp > 1 else ""


def _busiest_text(est: Estimate) -> str:
    """Under --ep: the busiest GPU's expected experts, which the step streams."""
    busiest, mean = est.experts_read_busiest_gpu, est.experts_touched_per_gpu
    if busiest is None or mean is None:
        return ""
    s = est.scenario
    held = (s.model.moe().num_experts + s.eplb_redundant) // s.tp  # type: ignore[union-attr]
    return (
        f"; with EP the busiest of {s.tp} GPUs reads {busiest:.2f} of its {held} "
        f"(the mean {mean:.2f}), and the step waits for it"
    )


def _architecture_lines(est: Estimate) -> tuple[str, ...]:
    """What only some models have: experts, windows, recurrent state, TP replication."""
    s = est.scenario
    lines = []
    moe = s.model.moe()
    if moe is not None and est.experts_touched is not None:
        lines.append(
            f"MoE: {moe.experts_per_token} of {moe.num_experts} experts per token; a step of "
            f"{s.batch:,} sequence{'s' if s.batch > 1 else ''} reads {est.experts_touched:.2f} "
            f"experts per layer (expected, uniform routing)" + _busiest_text(est)
        )
    windows = sorted({m.sliding_window for m in s.model.mixers() if m.sliding_window})
    if windows:
        lines.append(
            "sliding-window layers read at most "
            + ", ".join(f"{w:,}" for w in windows)
            + " tokens: the KV term grows more slowly past that"
        )
    if est.state_bytes_per_step:
        lines.append(
            f"recurrent state: {h.size(est.state_bytes_per_step)} per step, constant in the context"
        )
    if est.memory is not None:
        lines.append(_memory_line(est))
    lines.extend(_compute_lines(est))
    if s.tp > 1 and not s.dp_attention:
        from decodecalc.views.listings import tp_kv_rule

        share = (
            f"; each GPU reads 1/{est.kv_split_ways:g} of a sequence's KV"
            if est.kv_split_ways > 1
            else ""
        )
        lines.append(f"TP {s.tp}: {tp_kv_rule(s.model)}{share}")
    return tuple(lines)


def _parallel_fields(est: Estimate) -> dict[str, Any]:
    """Per-stage bytes with pipeline stages, experts per GPU with expert parallelism."""
    fields: dict[str, Any] = {}
    if est.scenario.pp > 1:
        fields["stages"] = [
            {
                "layers": st.layers,
                "weight_bytes": st.weight_bytes,
                "stored_weight_bytes": st.stored_weight_bytes,
                "state_bytes": st.state_bytes,
            }
            for st in est.stages
        ]
    if est.experts_touched_per_gpu is not None:
        fields["experts_touched_per_gpu"] = est.experts_touched_per_gpu
    if est.experts_read_busiest_gpu is not None:
        fields["experts_read_busiest_gpu"] = est.experts_read_busiest_gpu
    return fields


def estimate_report(est: Estimate) -> Report:
    s = est.scenario
    inputs = scenario_inputs(s)
    rows = [
        _row_record(r, head, c)
        for r, head, c in zip(est.rows, est.headlines, est.costs, strict=True)
    ]
    costs = cost_inputs(s)
    doc = document(
        inputs=inputs,
        weight_bytes_per_step=est.weight_bytes_per_step,
        kv_bytes_per_token=est.kv_bytes_per_token,
        kv_bytes_per_token_past_windows=est.kv_bytes_per_token_past_windows,
        crossover_context=est.crossover_context,
        state_bytes_per_step=est.state_bytes_per_step,
        experts_touched=est.experts_touched,
        kv_split_ways=est.kv_split_ways,
        memory_budget_bytes=est.memory.budget_bytes if est.memory else None,
        stored_weight_bytes=est.memory.stored_weight_bytes if est.memory else None,
        max_batch_that_fits=est.memory.max_batch if est.memory else None,
        max_context_that_fits=est.memory.max_context if est.memory else None,
        # Added: the room the fits above are solved in (a server's, as serving sizes its pool).
        **_room_fields(est),
        ridge_batch=est.ridge_batch,
        flops_class=est.flops_class,
        **({} if costs is None else {"cost": costs}),
        # Added: which step the rates, cost and energy take (answers/headline.py).
        basis=basis(s),
        **_parallel_fields(est),
        rows=rows,
    )
    title = (
        describe_scenario(s),
        f"{_weights_read_text(est)}"
        f" · KV per token per sequence{_summed(s)}: {h.size(est.kv_bytes_per_token)}"
        + (
            f" ({h.size(est.kv_bytes_per_token_past_windows)} past the windows)"
            if est.kv_bytes_per_token_past_windows != est.kv_bytes_per_token
            else ""
        )
        + f" · {_crossover_text(est)}",
        *_architecture_lines(est),
    )
    row_columns = [c for c in estimate_columns() if c.key != "expected_band"]
    columns = (
        # weight_overrides is a mapping: CSV names the recipe (weights_recipe) instead;
        # overhead_ms is each row's (the same per-step overhead), so it is written once.
        *(
            Column(k, k)
            for k in inputs
            if k not in ("effective_bandwidth_bytes_per_s", "weight_overrides", "overhead_ms")
        ),
        *row_columns,
        Column("crossover_context", "crossover_context"),
        # Added later, so after what earlier CSV readers expect by position.
        *(Column(k, k) for k in rows[0] if k not in {c.key for c in row_columns}),
    )
    # CSV repeats the inputs (and the crossover) on every row so a file stands alone;
    # tables show them once.
    flat = tuple({**inputs, **r, "crossover_context": est.crossover_context} for r in rows)
    report = Report(
        document=doc,
        columns=columns,
        records=flat,
        title=title,
        highlight=frozenset(i for i, r in enumerate(rows) if r["crossover"]),
    )
    return with_notes(report, est.notes)


def _expected_first(columns: dict[str, Column]) -> dict[str, Column]:
    """The expected step and its band before the roofline, labelled the bound; the rates
    per sequence and for the batch are the expected step's (the records' own)."""
    ordered: dict[str, Column] = {}
    for key, column in columns.items():
        if key == "expected_band":
            continue
        if key == "ms_per_token":
            ordered["expected_band"] = columns["expected_band"]
            key, column = ROOFLINE_MS, replace(column, key=ROOFLINE_MS, header="Roofline bound ms")
        ordered[key] = column
    return ordered


ROOFLINE_MS = "roofline_ms_per_token"
"""The bound's key in every record that carries a headline (roofline_figures)."""


def expected_band(record: dict[str, Any]) -> tuple[float, float, float]:
    """Expected ms with its band, low first, for one cell: 24.1 (21.7-27.6)."""
    keys = ("expected_low_ms_per_token", "expected_ms_per_token", "expected_high_ms_per_token")
    low, value, high = (record[k] for k in keys)
    return low, value, high


def _band(band: tuple[float, float, float]) -> str:
    return h.ms_band(*band)


def _band_exact(band: tuple[float, float, float]) -> str:
    return h.ms_band(*band, exact=True)


def human_view(report: Report, batch: int) -> Report:
    """The same report with only the per-context columns, for table and Markdown. Where
    the engine expects a step, that step leads with its band, the rates are its, and the
    roofline stands beside it as the bound."""
    columns = {c.key: c for c in estimate_columns(batch)}
    if not report.highlight:
        del columns["crossover"]
    if not any(r["state_bytes"] for r in report.records):
        del columns["state_bytes"]
    if report.records and report.records[0]["fits"] is None:
        del columns["fits"]
    if not any(r["comm_ms"] for r in report.records):
        del columns["comm_ms"]
    if report.records and report.records[0]["compute_ms"] is None:
        del columns["bound"]
    if priced(report.records):
        columns.update({c.key: c for c in COST_COLUMNS})
    records = report.records
    if report.document["basis"] == "roofline":
        del columns["expected_band"]
    else:
        columns = _expected_first(columns)
        records = tuple({**r, "expected_band": expected_band(r)} for r in records)
    return replace(report, columns=tuple(columns.values()), records=records)
