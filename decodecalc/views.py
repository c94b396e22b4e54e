"""Reports for each command's result: which fields, in which order, written how."""

from __future__ import annotations

from typing import Any

from decodecalc import humanize as h
from decodecalc.dtypes import DType, ceil_bytes
from decodecalc.estimator import Estimate, Scenario
from decodecalc.hardware import GpuSpec
from decodecalc.model import Model, Sharding
from decodecalc.report import Column, Report, document


def scenario_inputs(s: Scenario) -> dict[str, Any]:
    """The resolved inputs, as JSON carries them and CSV repeats them on every row."""
    return {
        "model": s.model.id,
        "gpu": s.gpu.id if s.gpu else None,
        "bandwidth_bytes_per_s": s.bandwidth_bytes_per_s,
        "efficiency": s.efficiency,
        "effective_bandwidth_bytes_per_s": s.effective_bandwidth_bytes_per_s,
        "weights_dtype": s.weights.id,
        "kv_dtype": s.kv_dtype.id,
        "weights_bits_per_value": float(s.weights.bits_per_value),
        "kv_bits_per_value": float(s.kv_dtype.bits_per_value),
        "batch": s.batch,
        "tp": s.tp,
    }


def _row_record(row: Any) -> dict[str, Any]:
    return {
        "context": row.context_tokens,
        "weight_bytes": row.weight_bytes,
        "kv_bytes": row.kv_bytes,
        "total_bytes": row.total_bytes,
        "kv_share": row.kv_share,
        "ms_per_token": row.seconds_per_token * 1000,
        "tokens_per_s": row.tokens_per_s,
        "throughput_tokens_per_s": row.throughput_tokens_per_s,
        "crossover": row.is_crossover,
    }


def _ms(value: float) -> str:
    return f"{value:.3f}"


def _ms_exact(value: float) -> str:
    return f"{value:.6f}"


def _rate_exact(value: float) -> str:
    return f"{value:.4f}"


def _share_exact(value: float) -> str:
    return f"{value:.6f}"


def estimate_columns(batch: int | None = None) -> tuple[Column, ...]:
    """Per-context columns; the aggregate column only for a batch above 1 (None: always)."""
    columns = [
        Column("context", "Context (tokens)", h.tokens, str),
        Column("weight_bytes", "Weights", h.size, h.exact_bytes),
        Column("kv_bytes", "KV cache", h.size, h.exact_bytes),
        Column("total_bytes", "Total / step", h.size, h.exact_bytes),
        Column("kv_share", "KV share", h.share, _share_exact),
        Column("ms_per_token", "ms / token", _ms, _ms_exact),
        Column("tokens_per_s", "tok/s / seq", h.rate, _rate_exact),
    ]
    if batch is None or batch > 1:
        header = f"tok/s x{batch}" if batch else "tok/s, all sequences"
        columns.append(Column("throughput_tokens_per_s", header, h.rate, _rate_exact))
    columns.append(Column("crossover", "", lambda v: "<- crossover" if v else "", numeric=False))
    return tuple(columns)


def _crossover_text(est: Estimate) -> str:
    if est.crossover_context is None:
        return "crossover: none (the KV cache never reaches the weight bytes)"
    return f"crossover: {h.tokens(est.crossover_context)} tokens (KV bytes = weight bytes)"


def describe_scenario(s: Scenario) -> str:
    gpu = f"{s.gpu.name} " if s.gpu else ""
    bound = "bandwidth roofline" if s.efficiency == 1 else f"{s.efficiency:g} of peak bandwidth"
    return (
        f"{s.model.name} on {gpu}{h.bandwidth(s.bandwidth_bytes_per_s)} · weights {s.weights.id}"
        f" · KV {s.kv_dtype.id} · batch {s.batch} · TP {s.tp} · efficiency {s.efficiency:g}"
        f" ({bound})"
    )


def estimate_report(est: Estimate) -> Report:
    s = est.scenario
    inputs = scenario_inputs(s)
    rows = [_row_record(r) for r in est.rows]
    doc = document(
        inputs=inputs,
        weight_bytes_per_step=est.weight_bytes_per_step,
        kv_bytes_per_token=est.kv_bytes_per_token,
        crossover_context=est.crossover_context,
        rows=rows,
    )
    per_gpu = f" per GPU (TP {s.tp})" if s.tp > 1 else ""
    title = (
        describe_scenario(s),
        f"weights read per step{per_gpu}: {h.size(est.weight_bytes_per_step)}"
        f" · KV per token per sequence: {h.size(est.kv_bytes_per_token)}"
        f" · {_crossover_text(est)}",
    )
    columns = (
        *(Column(k, k) for k in inputs if k != "effective_bandwidth_bytes_per_s"),
        *estimate_columns(),
    )
    # CSV repeats the inputs on every row so a file stands alone; tables show them once.
    flat = tuple({**inputs, **r} for r in rows)
    return Report(
        document=doc,
        columns=columns,
        records=flat,
        title=title,
        highlight=frozenset(i for i, r in enumerate(rows) if r["crossover"]),
    )


def human_view(report: Report, batch: int) -> Report:
    """The same report with only the per-context columns, for table and Markdown."""
    columns = {c.key: c for c in estimate_columns(batch)}
    if not report.highlight:
        del columns["crossover"]
    return Report(
        document=report.document,
        columns=tuple(columns.values()),
        records=report.records,
        title=report.title,
        footer=report.footer,
        highlight=report.highlight,
    )


def model_record(m: Model, kv_dtype: DType) -> dict[str, Any]:
    attn = m.layers[0].attention
    return {
        "id": m.id,
        "name": m.name,
        "family": m.family,
        "params": m.total_params(),
        "official_params": m.official_params,
        "layers": len(m.layers),
        "hidden_size": m.hidden_size,
        "attention_heads": attn.num_heads,
        "kv_heads": attn.num_kv_heads,
        "head_dim": attn.head_dim,
        "kv_bytes_per_token_bf16": ceil_bytes(
            kv_dtype.bytes_for(sum(a.kv_elements_per_token(1) for a in m.attention_layers()))
        ),
        "max_context": m.max_context_tokens,
        "aliases": list(m.aliases),
        "source": m.source,
    }


def models_report(models: list[Model], bf16: DType) -> Report:
    records = tuple(model_record(m, bf16) for m in models)
    columns = (
        Column("id", "Model", numeric=False),
        Column("params", "Params", h.count, h.exact_bytes),
        Column("layers", "Layers"),
        Column("hidden_size", "Hidden"),
        Column("attention_heads", "Heads"),
        Column("kv_heads", "KV heads"),
        Column("head_dim", "Head dim"),
        Column("kv_bytes_per_token_bf16", "KV/token (BF16)", h.size, h.exact_bytes),
        Column("max_context", "Max context", h.tokens),
    )
    return Report(document(models=list(records)), columns, records)


def gpu_record(g: GpuSpec) -> dict[str, Any]:
    return {
        "id": g.id,
        "name": g.name,
        "vendor": g.vendor,
        "bandwidth_bytes_per_s": g.bandwidth_bytes_per_s,
        "memory_bytes": g.memory_bytes,
        "memory_kind": g.memory_kind,
        "aliases": list(g.aliases),
        "notes": g.notes,
        "source": g.source,
    }


def gpus_report(gpus: list[GpuSpec]) -> Report:
    records = tuple(gpu_record(g) for g in gpus)
    columns = (
        Column("id", "GPU", numeric=False),
        Column("name", "Name", numeric=False),
        Column("bandwidth_bytes_per_s", "Bandwidth", h.bandwidth, str),
        Column("memory_bytes", "Memory", h.binary_size, h.exact_bytes),
        Column("memory_kind", "Kind", numeric=False),
    )
    return Report(document(gpus=list(records)), columns, records)


def dtype_record(d: DType) -> dict[str, Any]:
    return {
        "id": d.id,
        "name": d.name,
        "bits_per_value": float(d.bits_per_value),
        "kv_cache": d.kv_cache,
        "mixture": d.mixture,
        "aliases": list(d.aliases),
        "description": d.description,
        "source": d.source,
    }


def dtypes_report(dtypes: list[DType]) -> Report:
    records = tuple(dtype_record(d) for d in dtypes)
    columns = (
        Column("id", "Dtype", numeric=False),
        Column("bits_per_value", "Bits/value", lambda v: f"{v:g}"),
        Column("kv_cache", "KV cache", lambda v: "yes" if v else "no", numeric=False),
        Column("aliases", "Aliases", lambda v: ", ".join(v), numeric=False),
        Column("description", "What it is", numeric=False),
    )
    return Report(document(dtypes=list(records)), columns, records)


def show_report(m: Model, kv_dtypes: list[DType]) -> Report:
    """A model's architecture, parameter count check, and KV per token per format."""
    attn = m.layers[0].attention
    derived = m.total_params()
    groups = [
        {
            "group": g.name,
            "params": g.params,
            "read_per_step": g.streamed,
            "tp_split": {
                Sharding.SPLIT: "split",
                Sharding.KV_HEADS: "by KV head",
                Sharding.REPLICATED: "replicated",
            }[g.sharding],
        }
        for g in m.tensor_groups()
    ]
    elements = sum(a.kv_elements_per_token(1) for a in m.attention_layers())
    kv = [
        {"kv_dtype": d.id, "kv_bytes_per_token": ceil_bytes(d.bytes_for(elements))}
        for d in kv_dtypes
        if d.kv_cache
    ]
    window = attn.sliding_window
    doc = document(
        model=m.id,
        name=m.name,
        family=m.family,
        architecture={
            "layers": len(m.layers),
            "hidden_size": m.hidden_size,
            "attention_heads": attn.num_heads,
            "kv_heads": attn.num_kv_heads,
            "head_dim": attn.head_dim,
            "intermediate_size": m.layers[0].mlp.intermediate_size,
            "vocab_size": m.vocab_size,
            "tie_word_embeddings": m.tie_word_embeddings,
            "sliding_window": window,
            "max_context": m.max_context_tokens,
        },
        params=derived,
        official_params=m.official_params,
        params_difference=(derived - m.official_params) / m.official_params,
        params_read_per_step=m.streamed_params_per_gpu(1),
        kv_elements_per_token=elements,
        kv_bytes_per_token=kv,
        tensor_groups=groups,
        source=m.source,
        official_params_source=m.official_params_source,
    )
    kind = (
        "MHA"
        if attn.num_kv_heads == attn.num_heads
        else (
            "MQA"
            if attn.num_kv_heads == 1
            else f"GQA, {attn.num_heads // attn.num_kv_heads} query heads per KV head"
        )
    )
    title = (
        f"{m.name} ({m.id}, {m.family}): {len(m.layers)} layers, hidden {m.hidden_size:,}, "
        f"{attn.num_heads} heads, {attn.num_kv_heads} KV heads x {attn.head_dim} ({kind}), "
        f"MLP {m.layers[0].mlp.intermediate_size:,}, vocab {m.vocab_size:,}"
        + (", tied embeddings" if m.tie_word_embeddings else ""),
        f"parameters: {derived:,} derived vs {m.official_params:,} official "
        f"({(derived - m.official_params) / m.official_params:+.3%}); "
        f"{m.streamed_params_per_gpu(1):,} read per decode step (the input embedding is not)",
        f"KV cache: 2 x {len(m.layers)} layers x {attn.num_kv_heads} KV heads x {attn.head_dim} "
        f"= {elements:,} elements per token"
        + (f"; every layer keeps only the last {window:,} tokens" if window else ""),
    )
    columns = (
        Column("kv_dtype", "KV dtype", numeric=False),
        Column("kv_bytes_per_token", "KV bytes / token", h.exact_bytes),
    )
    footer = (f"source: {m.source}",)
    return Report(doc, columns, tuple(kv), title, footer)
