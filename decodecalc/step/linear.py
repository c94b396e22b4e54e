"""A step split into the terms an engine's parameters scale linearly, for fitting them to
measured points (calibration/engine_fit.py): weights and KV at peak bandwidth (the fit
solves for 1/e_w and 1/e_kv), the counts the fixed costs multiply, the all-reduce calls
and what the link's bytes and the compute add. linear_seconds prices the terms as the
engine's step is priced: a list of operations built by step/operations.py's constructors,
added up by its terms_of and bounded by engine_terms.within_band, so a fit and an estimate
agree (tests/calibration/test_engine_fit.py holds them equal)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from decodecalc.engine.profile import KV_READS, EngineParams
from decodecalc.record import record
from decodecalc.step.engine_terms import StepCounts, kv_read_factor, packed, within_band
from decodecalc.step.operations import (
    OPERATION_CLASSES,
    Operation,
    WeightOp,
    fixed_operations,
    gemm_operations,
    terms_of,
)
from decodecalc.step.step import StepModel

if TYPE_CHECKING:
    from decodecalc.model.kernels import AllReduceRates


@record
class LinearTerms:
    """One step's terms at one context, each in seconds at the GPU's peak or a count."""

    weight_s: float
    """Weight bytes at the GPU's peak bandwidth."""
    kv_s: tuple[float, float]
    """KV cache and state at peak bandwidth, read once and read per query head (KV_READS)."""
    counts: StepCounts
    calls: int
    """All-reduces per step (2 per layer at TP > 1, else 0)."""
    link_latency_s: float
    ring_s: float
    """Communication less its per-call latency: the bytes on the link."""
    compute_s: float
    measured_s: float | None = None
    """The all-reduces at the engine's measured rates (kernel tables,
    Communication.measured), latency and bytes, where they price them instead of
    ``calls`` x the latency plus ``ring_s``; None where no table holds the group's size."""
    ops: tuple[WeightOp, ...] = ()
    """Each GEMM, for the share of it that runs compute-bound (operations.gemm_operations)."""
    bandwidth: float = 0.0
    peak: int | None = None
    """The GPU's peak bandwidth and FLOP/s, the scales of ``ops``."""

    def op_seconds(self, tile_rows: int) -> tuple[tuple[float, float], ...]:
        """Each GEMM's (weight bytes at peak bandwidth, FLOPs at peak): what 1/e_w and
        1/e_mma multiply in the fit (nothing compute-bound where the peak is not known)."""
        if self.peak is None:
            return ()
        return tuple(
            (op.read_bytes / self.bandwidth, op.flops(tile_rows) / self.peak) for op in self.ops
        )


def linear_terms(
    step: StepModel, context_tokens: int, rates: tuple[AllReduceRates, ...] = ()
) -> LinearTerms:
    """The terms of ``step`` at a context, from the same bytes and FLOPs its rows give;
    ``rates``: the engine's all-reduce as its kernel tables measured it, if they do."""
    s = step.scenario
    row = step.row(context_tokens)
    bandwidth = s.bandwidth_bytes_per_s
    comm = step.comm
    latency = 0.0 if comm is None else comm.group_link.latency_s
    calls = 0 if comm is None else comm.calls
    ring = max(row.comm_seconds - calls * latency, 0.0)
    measured = None if comm is None else comm.measured(rates)
    tabled = None if measured is None or comm is None else comm.measured_seconds(measured, ring)
    kv = row.kv_bytes
    return LinearTerms(
        weight_s=step.weight_bytes / bandwidth,
        kv_s=(
            (kv + row.state_bytes) / bandwidth,
            (kv * kv_read_factor(s) + row.state_bytes) / bandwidth,
        ),
        counts=StepCounts.of(s.model, s.batch, s.sequences_per_gpu, s.expert_ranks),
        calls=calls,
        link_latency_s=latency,
        ring_s=ring,
        compute_s=row.compute_seconds or 0.0,
        measured_s=tabled,
        ops=step.weight_ops,
        bandwidth=bandwidth,
        peak=step.peak_flops_per_s,
    )


def allreduce_latency(t: LinearTerms, p: EngineParams) -> float:
    """Per all-reduce: the engine's, else the link's."""
    return t.link_latency_s if p.allreduce_latency_s is None else p.allreduce_latency_s


def transfer_seconds(t: LinearTerms, p: EngineParams) -> float:
    """The collectives: at the engine's measured rates where its tables hold them, else
    each call at the engine's latency (else the link's) plus the link's bytes."""
    if t.measured_s is not None:
        return t.measured_s
    return t.calls * allreduce_latency(t, p) + t.ring_s


def streaming_seconds(t: LinearTerms, p: EngineParams) -> float:
    """The GEMMs (weights at e_w, or their compute at e_mma where slower) and the cache
    (as p's kernel reads it) at e_kv."""
    return gemm_seconds(t, p) + t.kv_s[KV_READS.index(p.kv_read)] / p.kv_efficiency


def gemm_seconds(t: LinearTerms, p: EngineParams) -> float:
    """The GEMMs' operations added up: each the slower of its weights and its FLOPs."""
    return sum(o.seconds for o in _gemms(t, p))


def _gemms(t: LinearTerms, p: EngineParams) -> tuple[Operation, ...]:
    """Each GEMM as step_operations lists it (gemm_operations); terms without them (a
    hand-made point) stream their weights as one."""
    if t.ops:
        return gemm_operations(t.ops, t.bandwidth, t.peak, p)
    weights = t.weight_s / p.weight_efficiency
    return (Operation("GEMM", "the weights", OPERATION_CLASSES[0], 1, 0.0, 0.0, weights, 0.0),)


def linear_operations(t: LinearTerms, p: EngineParams) -> tuple[Operation, ...]:
    """The step's operations on these terms: the GEMMs, the cache and state as one
    attention operation (its bytes counted as seconds at peak bandwidth, so read at
    1 / e_kv a second), the fixed parts (StepCounts.fixed_parts) and the collectives at
    the engine's latency per call."""
    cache = Operation(
        "attention", "the cache and state", OPERATION_CLASSES[2], 1, 0.0, 0.0, 0.0, 0.0,
        per_kv_byte_s=1 / p.kv_efficiency,
    )  # fmt: skip
    transfers = transfer_seconds(t, p)
    comm = Operation(
        "all-reduce", "the collectives", OPERATION_CLASSES[4], t.calls, 0.0, 0.0, 0.0, 0.0,
        transfers,
    )  # fmt: skip
    return (*_gemms(t, p), cache, *fixed_operations(t.counts, p), comm)


def linear_seconds(t: LinearTerms, p: EngineParams) -> float:
    """The engine's step on these terms: step.step.expected_step on the same inputs."""
    terms = terms_of(linear_operations(t, p), (1.0, 1.0))
    kv = t.kv_s[KV_READS.index(p.kv_read)]
    return within_band(packed([terms]), kv, t.compute_s, 0.0)[0]
