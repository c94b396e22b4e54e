"""plan's report: the deployments that meet the targets, cheapest first, then the others
with the targets they miss."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from decodecalc.notes import unique
from decodecalc.physics.plan import Option, Targets
from decodecalc.views import humanize as h
from decodecalc.views.estimate import (
    cost_basis,
    cost_fields,
    cost_notes,
    kv_label,
    weights_label,
)
from decodecalc.views.report import Column, Report, document, with_notes


def option_record(rank: int | None, o: Option) -> dict[str, Any]:
    """One deployment as JSON and CSV carry it; cost and energy only where a rate is known."""
    s = o.scenario
    return {
        "rank": rank,
        "meets": o.meets,
        "gpu": s.gpu.id if s.gpu else None,
        "gpus": o.gpus,
        "tp": s.tp,
        "pp": s.pp,
        "ep": s.ep,
        "replicas": o.replicas,
        "weights": weights_label(s),
        "kv_dtype": kv_label(s),
        "batch": s.batch,
        "ms_per_token": o.seconds_per_token * 1000,
        "throughput_tokens_per_s": o.throughput,
        "fits": o.fits,
        "max_batch": o.max_batch,
        "max_context": o.max_context,
        "price_per_gpu_hour": s.rates.price_per_gpu_hour,
        "price_source": s.rates.price_source or None,
        **cost_fields(o.costs),
        "cost_basis": cost_basis(s),
        "why_not": "; ".join(m.message for m in o.misses),
        "misses": [
            {
                "target": m.target,
                "value": m.value,
                "limit": m.limit,
                "by": m.by,
                "message": m.message,
            }
            for m in o.misses
        ],
    }


def _targets_text(t: Targets) -> str:
    parts = [f"at {t.context:,} tokens of context"]
    if t.max_seconds_per_token is not None:
        parts.append(f"<= {t.max_seconds_per_token * 1000:g} ms per token")
    if t.min_throughput is not None:
        parts.append(f">= {t.min_throughput:,g} tok/s in all")
    parts.append("fits in memory")
    if t.batch is not None:
        parts.append(f"batch {t.batch:,}")
    return ", ".join(parts)


def plan_report(options: Sequence[Option], targets: Targets) -> Report:
    """Ranked deployments: rank 1 is the cheapest that meets every target."""
    # plan() puts every option that meets the targets first, so its rank is its place.
    records = [option_record(i + 1 if o.meets else None, o) for i, o in enumerate(options)]
    answers = sum(o.meets for o in options)
    model = options[0].scenario.model
    doc = document(
        model=model.id,
        targets={
            "context": targets.context,
            "max_ms_per_token": None
            if targets.max_seconds_per_token is None
            else targets.max_seconds_per_token * 1000,
            "min_throughput_tokens_per_s": targets.min_throughput,
            "batch": targets.batch,
            "max_batch": targets.max_batch,
            "max_gpus": targets.max_gpus,
        },
        answers=answers,
        rows=records,
    )
    engine = options[0].scenario.engine
    basis = (
        "the roofline"
        if cost_basis(options[0].scenario) == "roofline"
        else f"the {'typical' if engine is None else engine.id} engine's expected step"
    )
    title = (
        f"{model.name}: {_targets_text(targets)}",
        f"{answers} of {len(options)} deployments meet every target; ms per token and cost "
        f"per million output tokens from {basis}; largest batch at this context and largest "
        "context at this batch within the latency target",
    )
    columns: tuple[Column, ...] = (
        Column("rank", "#", str),
        Column("gpu", "GPU", numeric=False),
        Column("gpus", "GPUs", str),
        Column("tp", "TP", str, drop=3),
        Column("pp", "PP", str, drop=3),
        Column("ep", "EP", lambda v: "yes" if v else "", numeric=False, drop=3),
        Column("replicas", "Replicas", str, drop=3),
        Column("weights", "Weights", numeric=False),
        Column("kv_dtype", "KV", numeric=False),
        Column("batch", "Batch", lambda v: f"{v:,}"),
        Column("ms_per_token", "ms / token", lambda v: f"{v:,.1f}"),
        Column("throughput_tokens_per_s", "tok/s all", h.rate, drop=2),
        Column("cost_per_million_tokens", "$ / M tok", lambda v: f"{v:,.3f}"),
        Column("joules_per_token", "J / tok", lambda v: f"{v:,.3g}", drop=4),
        Column("max_batch", "Max batch", lambda v: f"{v:,}", drop=5),
        Column("max_context", "Max context", lambda v: f"{v:,}", drop=5),
        Column("price_source", "Priced at", numeric=False, drop=6),
        Column("why_not", "Why not", numeric=False),
    )
    # PP and EP only where some option uses them.
    unused = {k for k, plain in (("pp", 1), ("ep", False)) if all(r[k] == plain for r in records)}
    columns = tuple(c for c in columns if c.key not in unused)
    # The options of one GPU share its notes: say them once per GPU.
    by_gpu = {o.scenario.gpu.id if o.scenario.gpu else "": o.scenario for o in options}
    notes = unique([n for s in by_gpu.values() for n in cost_notes(s)])
    return with_notes(
        Report(
            doc, columns, tuple(records), title=title, highlight=frozenset({0} if answers else ())
        ),
        notes,
    )
