"""plan's report: the deployments that meet the targets, cheapest first, then the others
with the targets they miss."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from decodecalc.answers.headline import basis
from decodecalc.answers.notes import cost_notes, engine_choice_notes
from decodecalc.answers.plan import (
    Option,
    Shortfall,
    Targets,
    layout_label,
    shortfalls,
    why_first,
)
from decodecalc.notes import Note, unique
from decodecalc.record import record
from decodecalc.views import humanize as h
from decodecalc.views.estimate import cost_fields, kv_label, weights_label
from decodecalc.views.report import KEPT, Column, Report, document, with_notes


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
        # Added: data-parallel attention over the TP ranks (--dp-attention).
        "dp_attention": s.dp_attention,
        "replicas": o.replicas,
        "weights": weights_label(s),
        "kv_dtype": kv_label(s),
        "batch": s.batch,
        "ms_per_token": None if o.seconds_per_token is None else o.seconds_per_token * 1000,
        "throughput_tokens_per_s": None if o.seconds_per_token is None else o.throughput,
        "fits": o.fits,
        "max_batch": o.max_batch,
        "max_context": o.max_context,
        "price_per_gpu_hour": s.rates.price_per_gpu_hour,
        "price_source": s.rates.price_source or None,
        **cost_fields(o.costs),
        "cost_basis": basis(s),
        # Added: which step ranked and gated the deployment (the same step cost divides).
        "basis": basis(s),
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
        **({} if o.served is None else {"ttft_ms": o.served.ttft_s * 1000}),
        # Added: a disaggregated option's pools (null for one pool).
        "prefill_workers": None if o.pools is None else o.pools.prefill_workers,
        "decode_workers": None if o.pools is None else o.pools.decode_workers,
        # Added: the prefill workers' own layout (null for one pool); the row's tp, pp,
        # ep and dp_attention are the decode workers'.
        "prefill_layout": None if o.pools is None else layout_label(o.pools.prefill),
    }


def _targets_text(t: Targets) -> str:
    w = t.workload
    parts = [f"at {t.context:,} tokens of context"]
    if w is not None:
        load = (
            f"concurrency {w.concurrency:,}"
            if w.concurrency is not None
            else f"{w.request_rate:g} requests/s"
        )
        parts = [f"{w.input_len:,} input / {w.output_len:,} output tokens per request at {load}"]
    if t.max_seconds_per_token is not None:
        unit = "TPOT" if w is not None else "per token"
        parts.append(f"<= {t.max_seconds_per_token * 1000:g} ms {unit}")
    if t.max_ttft_seconds is not None:
        parts.append(f"<= {t.max_ttft_seconds * 1000:g} ms TTFT")
    if t.min_throughput is not None:
        parts.append(f">= {t.min_throughput:,g} tok/s in all")
    parts.append("fits in memory")
    if t.batch is not None:
        parts.append(f"batch {t.batch:,}")
    return ", ".join(parts)


@record
class Shown:
    """What a human table of the plan holds (a planner reads the best few answers, not
    hundreds); JSON and CSV always hold every option."""

    top: int | None
    """The best answers shown (None: every one)."""
    why: bool = False
    """Every failing option too, with its reason (else a summary by target)."""


def plan_report(
    options: Sequence[Option],
    targets: Targets,
    shown: Shown | None = None,
    extra_notes: Sequence[Note] = (),
) -> Report:
    """Ranked deployments: rank 1 is the cheapest that meets every target. The JSON
    document holds every option; the records (table, Markdown, CSV) hold those ``shown``
    asks for (None: every one, as CSV needs), and the failing options not listed are
    summarised by the target they miss, with the closest of each kind."""
    # plan() puts every option that meets the targets first, so its rank is its place.
    records = [option_record(i + 1 if o.meets else None, o) for i, o in enumerate(options)]
    answers = sum(o.meets for o in options)
    missed = shortfalls(options)
    listed = _listed(records, answers, shown)
    shown_answers = sum(r["meets"] for r in listed)
    which = ""
    if shown_answers < answers:
        which = f"; the best {shown_answers} shown (--top N, --all for every one)"
    elif not answers and len(listed) < len(options):
        which = f"; the {len(listed)} nearest shown, with what they miss"
    title: tuple[str, ...] = (
        f"{options[0].scenario.model.name}: {_targets_text(targets)}",
        f"{answers} of {len(options)} deployments meet every target{which}; "
        + _basis_text(options[0], targets),
    )
    if answers:
        title = (*title, f"why the first: {why_first(options[0])}")
    unlisted = len(options) - answers - (len(listed) - shown_answers)
    footer = _summary(missed, len(options), answers, targets, unlisted > 0)
    return with_notes(
        Report(
            _document(options, targets, records, missed),
            _columns(records, listed, shown, targets),
            tuple(listed),
            title=title,
            footer=footer,
            highlight=frozenset({0} if answers else ()),
        ),
        [*_notes(options), *extra_notes],
    )


def _document(
    options: Sequence[Option],
    targets: Targets,
    records: Sequence[dict[str, Any]],
    missed: Sequence[Shortfall],
) -> dict[str, Any]:
    """The JSON document: the targets, how many options meet them, each missed target's
    closest option (by its row), and every option."""
    row_of = {id(o): i for i, o in enumerate(options)}
    w = targets.workload
    return document(
        model=options[0].scenario.model.id,
        targets={
            "context": targets.context,
            "max_ms_per_token": None
            if targets.max_seconds_per_token is None
            else targets.max_seconds_per_token * 1000,
            "min_throughput_tokens_per_s": targets.min_throughput,
            # Added: the TTFT target and whether disaggregated pools were tried.
            "max_ttft_ms": None
            if targets.max_ttft_seconds is None
            else targets.max_ttft_seconds * 1000,
            "disaggregated": targets.disaggregated,
            "batch": targets.batch,
            "max_batch": targets.max_batch,
            "max_gpus": targets.max_gpus,
            "workload": None
            if w is None
            else {
                "input_len": w.input_len,
                "output_len": w.output_len,
                "concurrency": w.concurrency,
                "request_rate": w.request_rate,
            },
        },
        answers=sum(o.meets for o in options),
        why_first=why_first(options[0]) if options and options[0].meets else None,
        missed=[
            {
                "target": f.target,
                "count": f.count,
                "closest_row": row_of[id(f.closest)],
                "closest_message": f.miss.message,
            }
            for f in missed
        ],
        rows=list(records),
    )


def _basis_text(first: Option, targets: Targets) -> str:
    """What the figures are: the engine's expected step (or the roofline), and under a
    workload the server serving prices."""
    s = first.scenario
    engine = s.engine
    figure = "the roofline" if basis(s) == "roofline" else f"the {engine.id} engine's expected step"
    if targets.workload is not None:
        return (
            f"TPOT, TTFT and cost per million output tokens of the server under the workload "
            f"as serving prices it (prefill included), from {figure}"
        )
    return (
        f"ms per token and cost per million output tokens from {figure}; largest batch at "
        "this context and largest context at this batch within the latency target"
    )


def _columns(
    records: Sequence[dict[str, Any]],
    listed: Sequence[dict[str, Any]],
    shown: Shown | None,
    targets: Targets,
) -> tuple[Column, ...]:
    """The table's columns (CSV's: every field); PP and EP only where an option uses
    them, Why not only where a listed row misses, the largest batch and context only
    without a workload (whose load sets them)."""
    served = targets.workload is not None
    # The deployment's shape (GPUs, TP, PP, EP, DPA, replicas) is plan's answer: a narrow table
    # gives up every other column first ("mi300x, 4 GPUs" is no answer without it).
    columns: tuple[Column, ...] = (
        Column("rank", "#", str),
        Column("gpu", "GPU", numeric=False),
        Column("gpus", "GPUs", str, drop=KEPT),
        Column("tp", "TP", str, drop=KEPT),
        Column("pp", "PP", str, drop=KEPT),
        Column("ep", "EP", lambda v: "yes" if v else "", numeric=False, drop=KEPT),
        Column("dp_attention", "DPA", lambda v: "yes" if v else "", numeric=False, drop=KEPT),
        Column("replicas", "Replicas", str, drop=KEPT),
        Column("prefill_workers", "Prefill", lambda v: "" if v is None else str(v), drop=KEPT),
        Column("decode_workers", "Decode", lambda v: "" if v is None else str(v), drop=KEPT),
        Column("prefill_layout", "Prefill layout", lambda v: v or "", numeric=False, drop=3),
        Column("weights", "Weights", numeric=False),
        Column("kv_dtype", "KV", numeric=False),
        Column("batch", "Batch", lambda v: f"{v:,}", drop=1),
        Column(
            "ms_per_token", "TPOT ms" if served else "ms / token", lambda v: f"{v:,.1f}", drop=KEPT
        ),
        Column("ttft_ms", "TTFT ms", lambda v: f"{v:,.0f}", drop=2),
        Column("throughput_tokens_per_s", "tok/s all", h.rate, drop=2),
        Column("cost_per_million_tokens", "$ / M tok", lambda v: f"{v:,.3f}"),
        Column("joules_per_token", "J / tok", h.joules, drop=4),
        Column("max_batch", "Max batch", lambda v: f"{v:,}", drop=5),
        Column("max_context", "Max context", lambda v: f"{v:,}", drop=5),
        Column("price_source", "Priced at", numeric=False, drop=6),
        Column("why_not", "Why not", numeric=False),
    )
    if shown is None:
        return _every_field(columns, records)
    plain_values = (
        ("pp", 1),
        ("ep", False),
        ("dp_attention", False),
        ("prefill_workers", None),
        ("decode_workers", None),
        ("prefill_layout", None),
    )
    unused = {k for k, plain in plain_values if all(r[k] == plain for r in records)}
    unused |= {"max_batch", "max_context"} if served else {"ttft_ms"}
    if all(r["meets"] for r in listed):
        unused.add("why_not")
    return tuple(c for c in columns if c.key not in unused)


def _notes(options: Sequence[Option]) -> tuple[Note, ...]:
    """The engine, price and power notes, once per GPU (its options share them), and the
    weight-only formats."""
    by_gpu = {o.scenario.gpu.id if o.scenario.gpu else "": o.scenario for o in options}
    per_gpu = (n for s in by_gpu.values() for n in (*engine_choice_notes(s), *cost_notes(s)))
    return unique([*per_gpu, *weight_only_notes(options)])


def _every_field(
    columns: Sequence[Column], records: Sequence[dict[str, Any]]
) -> tuple[Column, ...]:
    """CSV's columns: every field of the JSON rows but the nested ``misses``, in their
    order (a cost field where any row has it), each as the table writes it if it has it."""
    known = {c.key: c for c in columns}
    keys = dict.fromkeys(k for r in records for k in r if k != "misses")
    return tuple(known.get(k, Column(k, k)) for k in keys)


def _listed(
    records: Sequence[dict[str, Any]], answers: int, shown: Shown | None
) -> list[dict[str, Any]]:
    """The records a table lists: the best ``top`` answers, then every miss with --why;
    with no answer at all, the ``top`` nearest misses (what comes closest)."""
    if shown is None:
        return list(records)
    top = len(records) if shown.top is None else shown.top
    if shown.why:
        return [*records[: min(top, answers)], *records[answers:]]
    return list(records[: min(top, answers)] if answers else records[:top])


def _summary(
    missed: Sequence[Shortfall], options: int, answers: int, targets: Targets, unlisted: bool
) -> tuple[str, ...]:
    """One line per missed target: how many options miss it and the closest of them (the
    best any option reaches, where every one misses it); nothing when none misses."""
    if not missed:
        return ()
    failing = options - answers
    where = (
        "--why lists each with its reason, and --format json or csv holds every one"
        if unlisted
        else "each is listed above"
    )
    head = (
        "No deployment meets every target"
        if not answers
        else f"{failing:,} deployment{'s miss' if failing > 1 else ' misses'} a target"
    )
    lines = [f"{head} (one may miss several; {where}):"]
    for f in missed:
        every = f.count == options
        count = f"all {f.count:,}" if every else f"{f.count:,}"
        closest = "the best any reaches" if every else "the closest"
        lines.append(
            f"  {count} {_missing(f.target, targets, f.count == 1)}; {closest}: "
            f"{_describe(f.closest)}: {f.miss.message}"
        )
    return tuple(lines)


def _missing(target: str, t: Targets, one: bool) -> str:
    if target == "fit":
        return f"{'does' if one else 'do'} not fit in memory"
    miss = "misses" if one else "miss"
    if target == "latency" and t.max_seconds_per_token is not None:
        unit = "TPOT" if t.workload is not None else "per token"
        return f"{miss} <= {t.max_seconds_per_token * 1000:g} ms {unit}"
    if target == "ttft" and t.max_ttft_seconds is not None:
        return f"{miss} <= {t.max_ttft_seconds * 1000:g} ms TTFT"
    if target == "load" and t.workload is not None:
        rate = t.workload.request_rate or 0
        return f"{'saturates' if one else 'saturate'} below {rate:g} requests/s"
    return f"{miss} >= {t.min_throughput or 0:,g} tok/s within {t.max_gpus:,} GPUs"


def _describe(o: Option) -> str:
    """An option in a few words: GPU, layout, formats and batch."""
    s = o.scenario
    layout = layout_label(s)
    if o.pools is not None:
        p = o.pools
        own = layout_label(p.prefill) == layout_label(p.decode)
        prefill = "" if own else f" ({layout_label(p.prefill)})"
        layout = f"{p.prefill_workers}P{prefill}{p.decode_workers}D of {layout}"
    gpu = s.gpu.id if s.gpu else "GPU"
    return f"{gpu} {layout}, {weights_label(s)} weights, {kv_label(s)} KV"


def weight_only_notes(options: Sequence[Option]) -> list[Note]:
    """Weights whose matmul class a GPU lacks (FP8 on an A100, FP4 on an H100) run
    weight-only, dequantized to a class it has: say so, and at which rate compute runs."""
    found: dict[tuple[str, str, str], list[str]] = {}
    for o in options:
        s = o.scenario
        peak = s.peak_flops()
        wanted = s.weights.matmul
        if s.gpu is None or peak is None or peak[0] == wanted:
            continue
        gpus = found.setdefault((weights_label(s), wanted, peak[0]), [])
        if s.gpu.id not in gpus:
            gpus.append(s.gpu.id)
    notes = []
    for (label, wanted, used), gpus in found.items():
        kernel = " (vLLM's FP8 Marlin kernels)" if (wanted, used) == ("fp8", "bf16") else ""
        notes.append(
            Note(
                "plan-weight-only",
                f"{label} weights on {', '.join(gpus)} are weight-only{kernel}: "
                f"{'these GPUs have' if len(gpus) > 1 else 'this GPU has'} no "
                f"{wanted.upper()} tensor cores, so the weights are stored in "
                f"{label} and dequantized to {used.upper()} for the matrix multiplies, "
                f"whose compute runs at the {used.upper()} rate",
            )
        )
    return notes
