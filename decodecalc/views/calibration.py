"""The report of `decodecalc calibrate`: the fit and each point's error."""

from __future__ import annotations

from typing import Any

from decodecalc.calibration.calibrate import Calibration
from decodecalc.views import humanize as h
from decodecalc.views.estimate import scenario_ids
from decodecalc.views.report import Column, Report, document


def _point_record(c: Any) -> dict[str, Any]:
    return {
        **scenario_ids(c.point.scenario),
        "context": c.point.context_tokens,
        "measured_ms": c.point.measured_seconds * 1000,
        "roofline_ms": c.roofline_seconds * 1000,
        "predicted_ms": c.predicted_seconds * 1000,
        "error_pct": c.error * 100,
        "source": c.point.source,
    }


def calibration_report(cal: Calibration, saved_to: str | None) -> Report:
    records = tuple(_point_record(c) for c in cal.points)
    doc = document(
        efficiency=cal.fit.efficiency,
        overhead_ms=cal.fit.overhead_s * 1000,
        rms_error_pct=cal.rms_error * 100,
        saved_to=saved_to,
        points=list(records),
    )
    columns = (
        Column("model", "Model", numeric=False),
        Column("gpu", "GPU", numeric=False),
        Column("weights", "Weights", numeric=False),
        Column("batch", "Batch", drop=2),
        Column("tp", "TP", drop=1),
        Column("context", "Context", h.tokens, drop=3),
        Column("measured_ms", "Measured ms", lambda v: f"{v:.3f}"),
        Column("roofline_ms", "Roofline ms", lambda v: f"{v:.3f}", drop=4),
        Column("predicted_ms", "Fitted ms", lambda v: f"{v:.3f}"),
        Column("error_pct", "Error", lambda v: f"{v:+.1f}%"),
    )
    title = (
        f"fit over {len(records)} points: efficiency {cal.fit.efficiency:.3f} of peak bandwidth, "
        f"overhead {cal.fit.overhead_s * 1000:.3f} ms per step; RMS error {cal.rms_error:.1%}",
    )
    footer = (f"saved to {saved_to}: use --efficiency calibrated",) if saved_to else ()
    return Report(doc, columns, records, title=title, footer=footer)
