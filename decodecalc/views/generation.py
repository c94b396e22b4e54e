"""The report of `decodecalc generate`: prefill and the decode of a whole answer."""

from __future__ import annotations

from decodecalc.physics.generation import Generation
from decodecalc.views.estimate import describe_scenario, scenario_inputs
from decodecalc.views.report import Column, Report, document

_QUANTITY = (Column("quantity", "Quantity", numeric=False), Column("value", "Value", numeric=False))


def generation_report(g: Generation) -> Report:
    prefill = g.prefill_seconds
    doc = document(
        inputs=scenario_inputs(g.scenario),
        prompt_tokens=g.prompt_tokens,
        new_tokens=g.new_tokens,
        decode_s=g.decode_seconds,
        mean_ms_per_token=g.mean_step_seconds * 1000,
        first_ms_per_token=g.first_step_seconds * 1000,
        last_ms_per_token=g.last_step_seconds * 1000,
        prefill_flops=g.prefill_flops,
        prefill_s=prefill,
        total_s=None if prefill is None else prefill + g.decode_seconds,
    )
    rows: list[tuple[str, str]] = [
        ("prompt / new tokens", f"{g.prompt_tokens:,} / {g.new_tokens:,}"),
        (
            "prefill (time to first token)",
            "unknown (no FLOP/s for this GPU)"
            if prefill is None
            else f"{prefill * 1000:,.1f} ms  (compute-bound: {g.prefill_flops:.3e} FLOPs / peak)",
        ),
        ("decode, all tokens", f"{g.decode_seconds:,.3f} s"),
        (
            "first / mean / last step",
            f"{g.first_step_seconds * 1000:.3f} / "
            f"{g.mean_step_seconds * 1000:.3f} / {g.last_step_seconds * 1000:.3f} ms",
        ),
        ("total", "unknown" if prefill is None else f"{prefill + g.decode_seconds:,.3f} s"),
    ]
    records = tuple({"quantity": q, "value": v} for q, v in rows)
    return Report(doc, _QUANTITY, records, title=(describe_scenario(g.scenario),))
