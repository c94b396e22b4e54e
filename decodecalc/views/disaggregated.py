"""The report of `decodecalc serving --prefill-workers P --decode-workers D`: one row per
load, the two pools, the KV hand-over and which pool saturates first above it."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from decodecalc.answers.disaggregated import DisaggregatedResult
from decodecalc.answers.notes import cost_notes, serving_scenario_notes
from decodecalc.answers.serving import Saturated
from decodecalc.notes import unique
from decodecalc.record import replace
from decodecalc.scenarios.scenario import Scenario
from decodecalc.views import humanize as h
from decodecalc.views.estimate import cost_fields, cost_inputs, parallel_label, scenario_inputs
from decodecalc.views.report import Column, Report, document, with_notes
from decodecalc.views.serving import (
    deployment_title,
    load_notes,
    rows_with_inputs,
    saturated_clauses,
    saturated_document,
)


def _row(r: DisaggregatedResult) -> dict[str, Any]:
    return {
        "concurrency": r.concurrency,
        "request_rate_per_s": r.workload.request_rate,
        "prefill_workers": r.pools.prefill_workers,
        "decode_workers": r.pools.decode_workers,
        "decoding": r.decoding,
        "decode_batch": r.decode_batch,
        "tpot_ms": r.tpot_s * 1000,
        "tpot_low_ms": r.tpot_band_s[0] * 1000,
        "tpot_high_ms": r.tpot_band_s[1] * 1000,
        "ttft_ms": r.ttft_s * 1000,
        "ttft_low_ms": r.ttft_band_s[0] * 1000,
        "ttft_high_ms": r.ttft_band_s[1] * 1000,
        "prefill_wait_ms": r.prefill_wait_s * 1000,
        "prefill_ms": r.prefill_s * 1000,
        "kv_transfer_ms": r.kv_transfer_s * 1000,
        "decode_wait_ms": r.decode_wait_s * 1000,
        "first_step_ms": r.first_step_s * 1000,
        "per_request_ms": r.per_request_s * 1000,
        "e2e_latency_s": r.e2e_s,
        "output_throughput_tokens_per_s": r.output_throughput_tokens_per_s,
        "request_throughput_per_s": r.request_throughput_per_s,
        "output_tokens_per_s_per_gpu": r.output_per_gpu,
        "output_tokens_per_s_per_decode_gpu": r.output_per_decode_gpu,
        "input_tokens_per_s_per_prefill_gpu": r.input_per_prefill_gpu,
        "utilization": r.utilization,
        "max_concurrency_kv": r.max_concurrency_kv,
        "saturates_first": r.saturates,
        **cost_fields(r.costs),
    }


def _pool(s: Scenario, workers: int, gpus: int) -> dict[str, Any]:
    return {
        "workers": workers,
        "gpus_per_worker": s.gpus,
        # Added: the pool's GPUs, every worker's.
        "gpus": gpus,
        "tp": s.tp,
        "pp": s.pp,
        "ep": s.ep,
        "dp_attention": s.dp_attention,
        "eplb_redundant": s.eplb_redundant,
    }


def _ms(value: float) -> str:
    return f"{value:,.2f}"


COLUMNS = (
    Column("concurrency", "Concurrency", "{:,.0f}".format),
    Column("decode_batch", "Per decode worker", "{:,.1f}".format, drop=3),
    Column("tpot_ms", "TPOT ms", _ms),
    Column("ttft_ms", "TTFT ms", _ms),
    Column("prefill_wait_ms", "Prefill wait ms", _ms, drop=2),
    Column("kv_transfer_ms", "KV hand-over ms", _ms, drop=4),
    Column("output_throughput_tokens_per_s", "Output tok/s", h.rate),
    Column("output_tokens_per_s_per_gpu", "tok/s/GPU", h.rate, drop=1),
)


def disaggregated_report(
    results: Sequence[DisaggregatedResult], saturated: Sequence[Saturated] = ()
) -> Report:
    """Rows in the order given; CSV leads with the inputs, as the one-pool server's does.
    ``saturated``: the request rates asked for past the pools' saturation, each a note and
    an entry of the document's ``saturated``, as the one-pool server reports them."""
    first = results[0]
    pools, w = first.pools, first.workload
    rows = [_row(r) for r in results]
    inputs = scenario_inputs(pools.decode)
    link = pools.kv_link
    doc = document(
        inputs=inputs,
        workload={
            "input_len": w.input_len,
            "output_len": w.output_len,
            "request_rate_per_s": w.request_rate,
        },
        prefill=_pool(pools.prefill, pools.prefill_workers, pools.prefill_gpus),
        decode=_pool(pools.decode, pools.decode_workers, pools.decode_gpus),
        gpus=pools.gpus,
        kv_link=None
        if link is None
        else {
            "id": link.id,
            "bandwidth_bytes_per_s": link.bandwidth_bytes_per_s,
            "latency_s": link.latency_s,
        },
        kv_bytes_per_request=first.kv_bytes_per_request,
        kv_bytes_per_decode_gpu=first.kv_bytes_per_gpu,
        max_concurrency_kv=first.max_concurrency_kv,
        prefill_saturation_rate_per_s=first.prefill_saturation_per_s,
        decode_saturation_rate_per_s=first.decode_saturation_per_s,
        saturates_first=first.saturates,
        # Added: the lower of the two, the deployment's (the one-pool document's key).
        saturation_rate_per_s=first.saturation_rate_per_s,
        balanced_prefill_per_decode=first.balanced_prefill_per_decode,
        **(
            {}
            if (costs := cost_inputs(pools.decode)) is None
            else {"cost": {**costs, "gpus": pools.gpus}}
        ),
        rows=rows,
        **saturated_document(saturated),
    )
    s, p = pools.decode, pools.prefill
    title = (
        deployment_title(s, pools.gpus),
        f"prefill: {pools.prefill_workers} x (TP {p.tp}{parallel_label(p)}) · decode: "
        f"{pools.decode_workers} x (TP {s.tp}{parallel_label(s)}) · KV hand-over over "
        + ("nothing (free)" if link is None else link.name),
        f"workload: {w.input_len:,} input / {w.output_len:,} output tokens per request; "
        f"{first.kv_bytes_per_request / 1e6:,.1f} MB of prompt KV per request",
        f"saturation: prefill pool {first.prefill_saturation_per_s:.3f} requests/s, decode pool "
        f"{first.decode_saturation_per_s:.3f} ({first.saturates} saturates first; "
        f"{first.balanced_prefill_per_decode:.2f} prefill workers per decode worker balance "
        "them)" + saturated_clauses(saturated),
    )
    columns, records = rows_with_inputs(inputs, w, rows)
    report = Report(document=doc, columns=columns, records=records, title=title)
    found = [
        *serving_scenario_notes(s),
        *load_notes(results),
        *(x.note() for x in saturated),
        *cost_notes(s),
    ]
    return with_notes(report, unique(found))


def human_disaggregated(report: Report) -> Report:
    """The table's columns only."""
    return replace(report, columns=COLUMNS)
