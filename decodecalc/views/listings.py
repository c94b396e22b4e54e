"""Reports for the catalog commands: models, gpus, dtypes, and one model in detail."""

from __future__ import annotations

from fractions import Fraction
from typing import Any

from decodecalc.engine.profile import EngineParams, EngineProfile, ReleaseLine, gpu_family
from decodecalc.engine.select import at_line, newest_line, widened
from decodecalc.model.dtypes import DType, ceil_bytes
from decodecalc.model.hardware import GpuSpec, Link
from decodecalc.model.kvcache import KVCurve, fixed_kv_bytes_per_token, read_pattern
from decodecalc.model.layer_kind import tp_cache_rule
from decodecalc.model.model import Model
from decodecalc.model.precision import Overrides, WeightRecipe, group_dtype, mix_text
from decodecalc.model.tensors import Sharding
from decodecalc.step.running import RUNNING_COSTS
from decodecalc.views import humanize as h
from decodecalc.views.report import Column, Report, document

_SHARDING_TEXT = {
    Sharding.SPLIT: "split",
    Sharding.KV_HEADS: "by KV head",
    Sharding.REPLICATED: "replicated",
}


def _kv_elements(m: Model) -> int:
    return KVCurve.for_layers(m.mixer_counts(), 1).elements_per_token


def _state_elements(m: Model) -> int:
    return sum(mixer.state_elements(1) for mixer in m.mixers())


def tp_kv_rule(m: Model) -> str:
    """How tensor parallelism treats this model's per-sequence cache, each kind's rule
    joined (model/layer_kind.py)."""
    return tp_cache_rule(m.mixers())


def model_record(m: Model, bf16: DType) -> dict[str, Any]:
    return {
        "id": m.id,
        "name": m.name,
        "family": m.family,
        "params": m.total_params(),
        "active_params": m.active_params(),
        "official_params": m.official_params,
        "layers": len(m.layers),
        "hidden_size": m.hidden_size,
        "layer_kinds": [f"{n} x {text}" for n, text in m.layer_summary()],
        # an indexer's keys (DeepSeek-V3.2) are held in their own format beside the KV
        "kv_bytes_per_token_bf16": ceil_bytes(bf16.bytes_for(_kv_elements(m)))
        + fixed_kv_bytes_per_token(m.mixers()),
        "max_context": m.max_context_tokens,
        "aliases": list(m.aliases),
        "source": m.source,
    }


def models_report(models: list[Model], bf16: DType) -> Report:
    records = tuple(model_record(m, bf16) for m in models)
    columns = (
        Column("id", "Model", numeric=False),
        Column("params", "Params", h.count, h.whole),
        Column("active_params", "Active", h.count, h.whole, drop=1),
        Column("layers", "Layers", drop=3),
        Column("hidden_size", "Hidden", drop=4),
        Column("kv_bytes_per_token_bf16", "KV/token (BF16)", h.size, h.whole),
        Column("max_context", "Max context", h.tokens),
        Column("family", "Family", numeric=False, drop=2),
        Column("aliases", "Aliases", _joined, numeric=False, drop=5),
    )
    return Report(document(models=list(records)), columns, records)


def _joined(names: list[str]) -> str:
    return ", ".join(names)


def gpu_record(g: GpuSpec) -> dict[str, Any]:
    return {
        "id": g.id,
        "name": g.name,
        "vendor": g.vendor,
        "bandwidth_bytes_per_s": g.bandwidth_bytes_per_s,
        "memory_bytes": g.memory_bytes,
        "memory_kind": g.memory_kind,
        "family": gpu_family(g),
        "aliases": list(g.aliases),
        "notes": g.notes,
        "source": g.source,
        "announced": g.announced or None,
    }


def gpus_report(gpus: list[GpuSpec]) -> Report:
    records = tuple(gpu_record(g) for g in gpus)
    columns = (
        Column("id", "GPU", numeric=False),
        Column("name", "Name", numeric=False, drop=1),
        Column("bandwidth_bytes_per_s", "Bandwidth", h.bandwidth, str),
        Column("memory_bytes", "Memory", h.binary_size, h.whole),
        Column("memory_kind", "Kind", numeric=False, drop=2),
        Column("announced", "Announced", lambda v: "yes", numeric=False, drop=3),
        Column("aliases", "Aliases", _joined, numeric=False, drop=4),
    )
    return Report(document(gpus=list(records)), columns, records)


def links_report(links: list[Link]) -> Report:
    records = tuple(
        {
            "id": link.id,
            "name": link.name,
            "bandwidth_bytes_per_s": link.bandwidth_bytes_per_s,
            "latency_s": link.latency_s,
            "gpus": link.gpus,
            "source": link.source,
        }
        for link in links
    )
    columns = (
        Column("id", "Link", numeric=False),
        Column("name", "Name", numeric=False, drop=2),
        Column("bandwidth_bytes_per_s", "Bandwidth (one way)", h.bandwidth, str),
        Column("latency_s", "Latency", lambda v: f"{v * 1e6:g} us", drop=1),
        Column("gpus", "GPUs joined", lambda v: "-" if v is None else f"{v:,}", drop=3),
    )
    return Report(document(links=list(records)), columns, records)


def _line(line: ReleaseLine, family: str) -> dict[str, object]:
    """A release line as the engines listing shows it beside a family's row: its versions,
    dates and points, and its own parameters on the family (None: another line's, or the
    pooled fit's, stand in there)."""
    own = line.family(family)
    return {
        "release": line.release,
        "versions": list(line.versions),
        "dates": list(line.dates),
        "points": line.points,
        "fitted_here": own is not None,
        "weight_efficiency": None if own is None else own.weight_efficiency,
        "points_here": None if own is None else own.points,
    }


def _engine_params(p: EngineParams) -> dict[str, object]:
    """One parameter set's figures, as the engines listing shows them."""
    return {
        "weight_efficiency": p.weight_efficiency,
        "kv_efficiency": p.kv_efficiency,
        "kv_read": p.kv_read,
        "per_layer_us": p.per_layer_s * 1e6,
        "per_step_ms": p.per_step_s * 1000,
        "per_moe_layer_us": p.per_moe_layer_s * 1e6,
        "per_sequence_us": p.per_sequence_s * 1e6,
        **{f"{c.name}_us": getattr(p, c.field) * 1e6 for c in RUNNING_COSTS},
        "prefill_efficiency": p.prefill_efficiency,
        "per_request_ms": p.per_request_s * 1000,
        "allreduce_latency_us": None
        if p.allreduce_latency_s is None
        else p.allreduce_latency_s * 1e6,
        "band_low": p.band[0],
        "band_high": p.band[1],
        # The band a scenario outside the fitted range takes: one band served both before
        # 2026-12-02, so this pair is what band_* held then.
        "outside_band_low": widened(p).band[0],
        "outside_band_high": widened(p).band[1],
        "points": p.points,
    }


def _taken(profile: EngineProfile, family: str) -> dict[str, object] | None:
    """What --engine NAME takes on the family (engine/select.py: at_line, the newest line
    there), with that line's name; None for a profile without release lines (its row is
    what it takes)."""
    if not profile.release_lines():
        return None
    at = at_line(profile, None, family)
    params = at.family(family)
    return None if params is None else {"line": at.line, **_engine_params(params)}


def _as_dict(taken: object) -> dict[str, object]:
    return taken if isinstance(taken, dict) else {}


def engines_report(profiles: list[EngineProfile]) -> Report:
    """One row per engine and GPU family it has parameters for: what each was fitted on.
    The JSON record holds the fit over every line's points and, as ``taken``, what
    --engine NAME takes there; the table shows the latter, with its line."""
    records = tuple(
        {
            "id": profile.id,
            "name": profile.name,
            "family": family,
            **_engine_params(p),
            "versions": list(profile.versions),
            "source": profile.source,
            "lines": [_line(x, family) for x in profile.release_lines()],
            "newest_line": newest_line(profile, family) if profile.release_lines() else None,
            "lines_shown": ", ".join(
                x.release + "*" * (family in x.family_names) for x in profile.release_lines()
            ),
            "taken": _taken(profile, family),
        }
        for profile in profiles
        for family, p in profile.families
    )
    rows = tuple({**r, "line": "-", **_as_dict(r["taken"])} for r in records)
    columns = (
        Column("id", "Engine", numeric=False),
        Column("family", "GPU family", numeric=False),
        Column("line", "Line", numeric=False, drop=3),
        Column("weight_efficiency", "e_w", lambda v: f"{v:.2f}"),
        Column("kv_efficiency", "e_kv", lambda v: f"{v:.2f}"),
        Column("kv_read", "KV read", numeric=False, drop=3),
        Column("per_layer_us", "us / layer", lambda v: f"{v:.0f}"),
        Column("per_step_ms", "ms / step", lambda v: f"{v:.2f}", drop=2),
        Column("per_moe_layer_us", "us / MoE layer", lambda v: f"{v:.0f}", drop=6),
        Column("per_ffn_pass_us", "us / FFN pass", lambda v: f"{v:.2f}", drop=6),
        Column("per_mixer_sequence_us", "us / mixer seq", lambda v: f"{v:.2f}", drop=6),
        Column("prefill_efficiency", "e_p", lambda v: f"{v:.2f}", drop=6),
        Column("per_request_ms", "ms / request", lambda v: f"{v:.1f}", drop=6),
        Column("allreduce_latency_us", "all-reduce us", lambda v: f"{v:.0f}", drop=4),
        Column(
            "band_low",
            "Band",
            lambda v: f"x{v:.2f}",
            drop=5,
        ),
        Column("band_high", "", lambda v: f"x{v:.2f}", drop=5),
        Column("points", "Points", str, drop=1),
        Column("lines_shown", "Lines (* fitted here)", numeric=False, drop=7),
    )
    bound = sorted({str(r["id"]) for r in rows if r["weight_efficiency"] == 1.0})
    footer = (
        (
            f"e_w 1.00 ({', '.join(bound)}): the fit stopped at the bound, as an efficiency "
            "cannot pass 1; past the fixed costs (us / layer, ms / step, ...) those points "
            "streamed weights at the datasheet's bandwidth, and the fixed costs keep every "
            "step above the roofline (decodecalc explain --engine NAME works one through)",
        )
        if bound
        else ()
    )
    selections = [{"id": name, "meaning": meaning} for name, meaning in ENGINE_SELECTIONS]
    footer = (*footer, *(f"--engine {name}: {meaning}" for name, meaning in ENGINE_SELECTIONS))
    footer = (
        "each row: what --engine NAME takes on the family, the newest release line fitted "
        "there (Line; NAME@LINE takes another); --format json also holds the fit over every "
        "line's points",
        *footer,
    )
    return Report(
        document(engines=list(records), selections=selections), columns, rows, footer=footer
    )


ENGINE_SELECTIONS = (
    (
        "typical",
        "the default: the median of the profiles measured on the GPU's family, the band "
        "spanning them",
    ),
    (
        "roofline",
        "physics alone: every figure (tok/s, cost, plan, check) the roofline, with no "
        "engine's costs",
    ),
)
"""What --engine takes besides a profile, for the listing to name (resolving/resolve.py)."""


def dtype_record(d: DType) -> dict[str, Any]:
    return {
        "id": d.id,
        "name": d.name,
        "bits_per_value": float(d.bits_per_value),
        "kv_cache": d.kv_cache,
        "weights": d.weights,
        "layer_kind": d.layer_kind,
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
        Column("weights", "Weights", lambda v: "yes" if v else "no", numeric=False, drop=1),
        Column("kv_cache", "KV cache", lambda v: "yes" if v else "no", numeric=False, drop=1),
        Column("aliases", "Aliases", lambda v: ", ".join(v), numeric=False, drop=2),
        Column("description", "What it is", numeric=False),
    )
    return Report(document(dtypes=list(records)), columns, records)


def recipe_record(r: WeightRecipe) -> dict[str, Any]:
    return {
        "id": r.id,
        "name": r.name,
        "default": r.default,
        "groups": {group: mix_text(mix) for group, mix in r.overrides},
        "aliases": list(r.aliases),
        "description": r.description,
        "source": r.source,
    }


def recipes_report(recipes: list[WeightRecipe]) -> Report:
    records = tuple(recipe_record(r) for r in recipes)
    columns = (
        Column("id", "Recipe", numeric=False),
        Column("default", "Default", numeric=False),
        Column(
            "groups",
            "Groups stored otherwise",
            lambda v: "; ".join(f"{g}: {d}" for g, d in v.items()),
            numeric=False,
        ),
        Column("name", "What it is", numeric=False, drop=1),
    )
    return Report(document(recipes=list(records)), columns, records)


def _params_line(m: Model) -> str:
    derived = m.total_params()
    read = m.streamed_params_per_gpu(1, 1)
    if m.official_params:
        difference = (derived - m.official_params) / m.official_params
        official = f" vs {m.official_params:,} official ({difference:+.3%})"
    else:
        official = " (no official count: read from a config.json)"
    line = f"parameters: {derived:,} derived{official}"
    if m.moe() is not None:
        line += f"; {m.active_params():,} active per token"
        if m.official_active_params:
            line += f" vs {m.official_active_params:,} official"
    return f"{line}; {int(read):,} read per decode step at batch 1"


def _pattern_line(m: Model) -> tuple[str, ...]:
    period = m.layer_period()
    if period in (1, len(m.layers)):
        return ()
    kinds = [layer.describe() for layer in m.layers[:period]]
    short = " : ".join(str(kinds.count(k)) for k in dict.fromkeys(kinds))
    return (f"  interleaved every {period} layers ({short}) through all {len(m.layers)}",)


TOUCHED_BATCHES = (1, 8, 32, 256)


def _experts_touched(m: Model) -> dict[str, float] | None:
    """Expected distinct routed experts per MoE layer at a few batch sizes."""
    moe = m.moe()
    if moe is None:
        return None
    return {str(b): float(moe.touched(b)) for b in TOUCHED_BATCHES}


def _experts_line(m: Model) -> tuple[str, ...]:
    touched = _experts_touched(m)
    moe = m.moe()
    if touched is None or moe is None:
        return ()
    figures = ", ".join(f"{v:.1f} at B={b}" for b, v in touched.items())
    if moe.zero_experts:  # zero-compute experts are choices that read nothing
        z = moe.zero_experts
        formula = f"(E+Z)(1-(1-k/(E+Z))^B) x E/(E+Z) with Z={z} zero-compute,"
    else:
        formula = "E(1-(1-k/E)^B) with"
    return (
        f"experts read per MoE layer, {formula} k={moe.experts_per_token}, "
        f"E={moe.num_experts}: {figures}",
    )


def _stored_lines(groups: list[dict[str, Any]], label: str) -> list[str]:
    """The weights as stored, group by group with its format (a checkpoint's recipe
    names one per group; --weights on estimate overrides it)."""
    total = sum(g["bytes"] for g in groups)
    lines = [f"weights stored ({label}): {h.size(total)}, {total:,} bytes"]
    for g in groups:
        lines.append(
            f"  {g['group']:28s} {g['params']:>17,} params x {g['bits_per_value']:g} bits "
            f"({g['dtype']}) = {h.size(g['bytes'])}"
        )
    return lines


def _at_heads(d: DType, width: Fraction | None) -> DType:
    return d if width is None else d.at_head_width(width)


def show_report(
    m: Model, dtypes: list[DType], weights: tuple[DType, Overrides, str | None]
) -> Report:
    """A model's architecture, parameter count check, its weights by tensor group in the
    formats ``weights`` gives (default, overrides, recipe: the model's own recipe), and KV
    per token per format."""
    default, overrides, recipe = weights
    curve = KVCurve.for_layers(m.mixer_counts(), 1)
    elements = curve.elements_per_token
    state = _state_elements(m)
    state_bytes = m.state_bytes_per_sequence()
    windows = sorted({w for x in m.mixers() if (w := x.sliding_window) is not None})
    fixed, reads = fixed_kv_bytes_per_token(m.mixers()), read_pattern(m.mixers())
    width = m.kv_head_width()  # a per-head scale's width (LMDeploy's formats)
    # A layout of one layer kind's cache (FlashMLA's, DeepSeek-V4's): listed only where
    # estimate takes it.
    kv = [
        {
            "kv_dtype": d.id,
            "kv_bytes_per_token": ceil_bytes(_at_heads(d, width).bytes_for(elements)) + fixed,
            "state_bytes_per_sequence": state_bytes,  # its own format, whatever the KV's
        }
        for d in dtypes
        if d.kv_cache and m.takes_cache_layout(d.layer_kind)
    ]
    groups = [
        {
            "group": g.name,
            "params": g.params,
            "read_per_step": g.streamed,
            "experts": g.experts or None,
            "tp_split": _SHARDING_TEXT[g.sharding],
            "dtype": (dtype := group_dtype(g.name, default, overrides)).id,
            "bits_per_value": float(dtype.bits_per_value),
            "bytes": ceil_bytes(dtype.bytes_for(g.params)),
        }
        for g in m.tensor_groups()
    ]
    derived = m.total_params()
    doc = document(
        model=m.id,
        name=m.name,
        family=m.family,
        architecture={
            "layers": len(m.layers),
            "hidden_size": m.hidden_size,
            "vocab_size": m.vocab_size,
            "tie_word_embeddings": m.tie_word_embeddings,
            "max_context": m.max_context_tokens,
            "layer_kinds": [{"count": n, "kind": text} for n, text in m.layer_summary()],
            "sliding_windows": windows,
        },
        params=derived,
        official_params=m.official_params or None,
        params_difference=_difference(derived, m.official_params),
        active_params=m.active_params(),
        official_active_params=m.official_active_params,
        params_read_per_step=int(m.streamed_params_per_gpu(1, 1)),
        kv_elements_per_token=elements,
        kv_elements_per_token_past_windows=curve.growing_elements_per_token,
        state_elements_per_sequence=state,
        tp_kv_rule=tp_kv_rule(m),
        experts_touched=_experts_touched(m),
        kv_bytes_per_token=kv,
        weights_recipe=recipe,
        weights_dtype=default.id,
        weight_bytes=sum(g["bytes"] for g in groups),
        tensor_groups=groups,
        source=m.source,
        official_params_source=m.official_params_source,
        official_active_params_source=m.official_active_params_source,
        notes=m.notes,
    )
    title = [
        f"{m.name} ({m.id}, {m.family}): {len(m.layers)} layers, hidden {m.hidden_size:,}, "
        f"vocab {m.vocab_size:,}" + (", tied embeddings" if m.tie_word_embeddings else ""),
        *(f"  {n} x {text}" for n, text in m.layer_summary()),
        *_pattern_line(m),
        _params_line(m),
        _kv_line(elements, windows, curve.growing_elements_per_token, reads, state),
        f"tensor parallelism: {tp_kv_rule(m)}",
        *_experts_line(m),
        *_stored_lines(groups, recipe or default.id),
    ]
    columns = (
        Column("kv_dtype", "KV dtype", numeric=False),
        Column("kv_bytes_per_token", "KV bytes / token", h.whole),
        *((Column("state_bytes_per_sequence", "State / sequence", h.whole),) if state else ()),
    )
    sources = (
        f"source: {m.source}",
        f"official count: {m.official_params_source}",
        f"official active: {m.official_active_params_source}",
    )
    footer = tuple(line for line in (m.notes, *sources) if not line.endswith(": ") and line)
    return Report(doc, columns, tuple(kv), tuple(title), footer)


def _difference(derived: int, official: int) -> float | None:
    """How far the count from the architecture is from the published one (None: none)."""
    return (derived - official) / official if official else None


def _kv_line(elements: int, windows: list[int], past: int, reads: str, state: int) -> str:
    """What the cache holds per token: within the sliding windows, past them, and the
    constant state of recurrent layers."""
    shown = ", ".join(f"{w:,}" for w in windows)
    return (
        f"KV cache: {elements:,} elements per token"
        + (
            f" while the context is within the {shown}-token window(s), then {past:,}"
            if windows
            else ""
        )
        + (f"; {reads}" if reads else "")
        + (f"; constant state of {state:,} elements per sequence" if state else "")
    )
