"""The reports of `decodecalc calibrate` (the step-model fit and each point's error) and
`decodecalc validate` (each engine+GPU group's error with the shipped profiles and left out)."""

from __future__ import annotations

from typing import Any

from decodecalc.calibration.calibrate import Calibration, CheckedPoint, RooflineFit
from decodecalc.calibration.validation import LeftOut, Validation
from decodecalc.engine.profile import EngineParams
from decodecalc.step.running import RUNNING_COSTS
from decodecalc.views import humanize as h
from decodecalc.views.estimate import scenario_ids
from decodecalc.views.report import Column, Report, document


def _point_record(c: CheckedPoint) -> dict[str, Any]:
    return {
        **scenario_ids(c.point.scenario),
        "context": c.point.context_tokens,
        "measured_ms": c.point.measured_seconds * 1000,
        "prefill_ms": c.prefill_seconds * 1000,
        "roofline_ms": c.roofline_seconds * 1000,
        "predicted_ms": c.predicted_seconds * 1000,
        "error_pct": c.error * 100,
        "source": c.point.source,
    }


def _ms(value: float) -> str:
    return f"{value:.3f}"


def _pct(value: float) -> str:
    return f"{value:+.1f}%"


def calibration_report(
    cal: Calibration,
    saved_to: str | None,
    roofline: RooflineFit | None = None,
    engine_saved_to: str | None = None,
) -> Report:
    records = tuple(_point_record(c) for c in cal.points)
    p = cal.fit.params
    latency = p.allreduce_latency_s
    doc = document(
        efficiency=p.weight_efficiency,
        kv_efficiency=p.kv_efficiency,
        kv_read=p.kv_read,
        overhead_per_layer_ms=p.per_layer_s * 1000,
        overhead_ms=p.per_step_s * 1000,
        overhead_per_moe_layer_ms=p.per_moe_layer_s * 1000,
        overhead_per_sequence_us=p.per_sequence_s * 1e6,
        **{f"overhead_{c.name}_us": getattr(p, c.field) * 1e6 for c in RUNNING_COSTS},
        allreduce_latency_us=None if latency is None else latency * 1e6,
        mma_efficiency=p.mma_efficiency,
        tile_rows=p.tile_rows,
        fitted=list(cal.fit.fitted),
        held=list(cal.fit.held),
        compute_bound_points=cal.fit.compute_bound,
        rms_error_pct=cal.rms_error * 100,
        median_abs_error_pct=cal.median_error * 100,
        saved_to=saved_to,
        saved_fit=None
        if roofline is None
        else {
            "efficiency": roofline.fit.efficiency,
            "overhead_ms": roofline.fit.overhead_s * 1000,
            "rms_error_pct": roofline.rms_error * 100,
            "median_abs_error_pct": roofline.median_error * 100,
        },
        engine_saved_to=engine_saved_to,
        points=list(records),
    )
    columns = (
        Column("model", "Model", numeric=False),
        Column("gpu", "GPU", numeric=False),
        Column("weights", "Weights", numeric=False),
        Column("batch", "Batch", drop=2),
        Column("tp", "TP", drop=1),
        Column("context", "Context", h.tokens, drop=3),
        Column("measured_ms", "Measured ms", _ms),
        Column("roofline_ms", "Roofline ms", _ms, drop=4),
        Column("predicted_ms", "Fitted ms", _ms),
        Column("error_pct", "Error", _pct),
    )
    comm = "" if latency is None else f", all-reduce {latency * 1e6:.1f} us per call"
    title = (
        f"fit over {len(records)} points: weights at {p.weight_efficiency:.3f} of peak bandwidth, "
        f"KV at {p.kv_efficiency:.3f} (read {p.kv_read}), {p.per_layer_s * 1e6:.1f} us per "
        f"layer, {p.per_step_s * 1000:.3f} ms per step{comm}{_scaled(p)}; RMS error "
        f"{cal.rms_error:.1%}, "
        f"median {cal.median_error:.1%}",
        f"fitted: {cal.fit.describe()}",
    )
    footer: tuple[str, ...] = ()
    if saved_to and roofline:
        footer += (
            f"saved the roofline fit (efficiency {roofline.fit.efficiency:.3f}, overhead "
            f"{roofline.fit.overhead_s * 1000:.3f} ms per step; on these points RMS error "
            f"{roofline.rms_error:.1%}, median {roofline.median_error:.1%}) to {saved_to}: "
            "use --efficiency calibrated",
        )
    if engine_saved_to:
        footer += (f"saved the engine profile to {engine_saved_to}: use --engine with its name",)
    return Report(doc, columns, records, title=title, footer=footer)


def _scaled(p: EngineParams) -> str:
    """The MoE-layer and running costs, where the fit has them."""
    text = f", {p.per_moe_layer_s * 1e6:.1f} us per MoE layer" if p.per_moe_layer_s else ""
    if p.per_sequence_s:
        text += f", {p.per_sequence_s * 1e6:.2f} us per sequence pass"
    for cost in RUNNING_COSTS:  # (step/running.py)
        if rate := getattr(p, cost.field):
            text += f", {rate * 1e6:.2f} us {cost.label}"
    return text


LEFT_OUT_WORDS = {
    "group": "each engine+GPU-family group",
    "model": "each model",
    "gpu": "each GPU",
    "release": "each release line (from its engine's older lines)",
    "vendor": "each GPU vendor (from the other vendors' fits)",
}


def _left_out_line(o: LeftOut) -> str:
    return (
        f"left out {LEFT_OUT_WORDS[o.unit]}, {h.things(o.errors.n, 'point')}: median "
        f"{o.errors.mdape:.1f}%, p90 {o.errors.p90:.1f}%, inside the band {o.band_coverage:.0f}%"
    )


def validation_report(v: Validation) -> Report:
    """One row per engine+GPU group; the summary above; the points in JSON only."""
    groups = tuple(
        {
            "group": g.group,
            "engine": g.engine,
            "family": g.family,
            "n": g.shipped.n,
            "mdape": g.shipped.mdape,
            "p90": g.shipped.p90,
            "logo_mdape": g.held_out.mdape,
            "logo_p90": g.held_out.p90,
            "profile": g.profile,
            "stand_in": g.stand_in,
        }
        for g in v.groups
    )
    summary = {
        "n": v.shipped.n,
        "mdape": v.shipped.mdape,
        "p90": v.shipped.p90,
        "logo_mdape": v.held_out.mdape,
        "logo_p90": v.held_out.p90,
        "band_coverage": v.band_coverage,
        "left_out": {
            o.unit: {
                "units": o.units,
                "n": o.errors.n,
                "mdape": o.errors.mdape,
                "p90": o.errors.p90,
                "band_coverage": o.band_coverage,
            }
            for o in v.left_out
        },
    }
    points = [
        {
            **scenario_ids(r.item.point.scenario),
            "context": r.item.point.context_tokens,
            "engine": r.item.engine,
            "group": r.item.group,
            "measured_ms": r.item.point.measured_seconds * 1000,
            "prefill_ms": (r.item.point.measured_seconds - r.item.terms.measured_s) * 1000,
            "expected_ms": r.expected_s * 1000,
            "expected_low_ms": r.low_s * 1000,
            "expected_high_ms": r.high_s * 1000,
            "error_pct": r.error * 100,
            "logo_ms": r.held_out_s * 1000,
            "logo_error_pct": r.held_out_error * 100,
            "source": r.item.point.source,
        }
        for r in v.points
    ]
    doc = document(summary=summary, groups=list(groups), points=points)
    pct = "{:.1f}%".format
    columns = (
        Column("group", "Group", numeric=False),
        Column("n", "Points"),
        Column("mdape", "Median", pct),
        Column("p90", "p90", pct, drop=2),
        Column("logo_mdape", "Left out", pct),
        Column("logo_p90", "p90", pct, drop=1),
        Column("stand_in", "Left out: predicted by", numeric=False, drop=3),
    )
    title = (
        f"{h.things(v.shipped.n, 'point')}: median absolute error {summary['mdape']:.1f}% "
        f"with the shipped profiles (p90 {summary['p90']:.1f}%, {v.band_coverage:.0f}% inside "
        "their band); each group left out and predicted by profiles fitted without it: median "
        f"{summary['logo_mdape']:.1f}% (p90 {summary['logo_p90']:.1f}%)",
        *(_left_out_line(o) for o in v.left_out),
        "Median and p90 of |expected / measured - 1| per engine+GPU-family group; 'Left out': "
        "the group predicted by profiles refitted without it.",
    )
    return Report(doc, columns, groups, title=title)
