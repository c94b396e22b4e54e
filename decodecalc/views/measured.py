"""Points read from measured files, written back as a points file (--show-points): what a
user would have typed, with how each benchmark result was read in its notes."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from decodecalc.calibration.measured_files import ReadPoint


def _entry(r: ReadPoint) -> dict[str, Any]:
    p, s = r.point, r.point.scenario
    entry: dict[str, Any] = {
        "model": s.model.id,
        "gpu": s.gpu.id if s.gpu is not None else None,
        "weights": s.weights.id,
        "kv_dtype": s.kv_dtype.id,
        "batch": s.batch,
        "tp": s.tp,
        "context": p.context_tokens,
        "ms_per_token": round(p.measured_seconds * 1000, 4),
    }
    optional = {
        "measured": p.measured,
        "engine": p.engine,
        "engine_version": p.engine_version,
        "release": p.release,
    }
    entry.update({k: v for k, v in optional.items() if v is not None})
    if p.serving is not None:
        load = p.serving
        entry.update(
            input_len=load.input_len, output_len=load.output_len, concurrency=load.concurrency
        )
        if load.ttft_seconds is not None:
            entry["ttft_ms"] = round(load.ttft_seconds * 1000, 3)
    entry["source"] = p.source
    return entry


def points_yaml(read: Sequence[ReadPoint]) -> str:
    """The points as the YAML list calibrate reads back."""
    import yaml

    return yaml.safe_dump([_entry(r) for r in read], sort_keys=False, width=100)
