"""Forward passes other than a plain decode step, priced by the same step: the prompts of a
batch (prefill, the time to first token) and a server's mixed step (decoding sequences,
their speculative queries and a prompt chunk in one pass).

Prefill is one forward pass over B prompts of P tokens. Like a decode step it streams every
weight once and pays its TP all-reduces; unlike one, it multiplies B x P tokens by them,
so a long prompt is compute-bound and a short one is not: its time is
max(compute, memory) + communication (+ the per-step overhead, once).
"""

from __future__ import annotations

from collections.abc import Sequence
from fractions import Fraction

from decodecalc.model.dtypes import ceil_bytes
from decodecalc.record import record
from decodecalc.scenarios.scenario import Scenario
from decodecalc.step.engine_terms import within_band
from decodecalc.step.flops import pass_flops
from decodecalc.step.step import StepModel, packed_terms, roofline_seconds, streamed_weight_bytes


def median(values: Sequence[float]) -> float:
    """statistics.median, as it computes it (the middle value, or the mean of the two
    middle ones), without importing statistics: that brings random and hashlib, 2 ms of a
    serving query's start-up."""
    ordered = sorted(values)
    if not ordered:
        raise ValueError("no median for empty data")
    middle = len(ordered) // 2
    if len(ordered) % 2 == 1:
        return ordered[middle]
    return (ordered[middle - 1] + ordered[middle]) / 2


@record
class Prefill:
    """The prompt pass, per GPU, split into the terms that set its time."""

    tokens: int
    """B x P: every prompt token of the batch."""
    flops: int
    """All GPUs together."""
    bytes: int
    """Weights streamed once (the experts B x P tokens touch), plus the prompts' KV cache
    and recurrent state written."""
    memory_seconds: float
    compute_seconds: float | None
    """FLOPs per GPU / peak FLOP/s (None: the GPU's rate is not known)."""
    comm_seconds: float
    overhead_seconds: float

    @property
    def seconds(self) -> float:
        """max(compute, memory) + communication + overhead: the time to first token."""
        return roofline_seconds(
            self.memory_seconds, self.compute_seconds, self.comm_seconds, self.overhead_seconds
        )

    @property
    def bound(self) -> str:
        """Which term sets the pass: "memory" or "compute" (memory when compute is unknown)."""
        return "compute" if (self.compute_seconds or 0.0) > self.memory_seconds else "memory"


def prefill_flops(scenario: Scenario, prompt_tokens: int) -> int:
    """All B prompts: 2 x (matmul params - LM head) x B x P, the LM head only at each
    prompt's last position (2 x LM head x B: pass_flops), plus causal attention over each
    prompt."""
    model, batch = scenario.model, scenario.batch
    attention = sum(m.prefill_attention_flops(prompt_tokens) for m in model.mixers())
    return pass_flops(model, batch * prompt_tokens, batch) + batch * attention


def prefill(step: StepModel, prompt_tokens: int) -> Prefill:
    """The prompt pass of the scenario behind ``step``. A batch of short prompts reads the
    weights for a few dozen tokens of arithmetic, as a decode step does: pricing it as
    compute alone would put it below one weight read. No prompt, no pass: all zero."""
    s = step.scenario
    tokens = s.batch * prompt_tokens
    peak = step.peak_flops_per_s
    if tokens == 0:
        return Prefill(0, 0, 0, 0.0, None if peak is None else 0.0, 0.0, 0.0)
    flops = prefill_flops(s, prompt_tokens)
    written = step.kv_bytes(prompt_tokens, held=True) + step.state_bytes
    read = streamed_weight_bytes(s, tokens)
    return Prefill(
        tokens=tokens,
        flops=flops,
        bytes=read + written,
        memory_seconds=step.streaming_seconds(read + written),
        compute_seconds=step.computing_seconds(flops),
        comm_seconds=0.0 if step.comm is None else step.comm.seconds(tokens),
        overhead_seconds=s.overhead_s,
    )


def mixed_pass_seconds(
    step: StepModel, tokens: int, kv_units: Fraction, decode_flops: float, chunk_flops: float
) -> float:
    """One pass of ``tokens`` tokens (decode queries and a prompt chunk) on the GPUs of
    ``step``'s scenario, reading ``kv_units`` of cache (in step.kv_unit_bytes) and computing
    ``decode_flops`` for the decoding queries and ``chunk_flops`` for the chunk (all GPUs).
    Weights are streamed once for all its tokens (the experts they touch). At the roofline
    the chunk computes at peak; each engine profile computes it at its own prefill
    efficiency (decode tokens at peak, as in a decode step), and the centre is their median,
    as within_band takes it."""
    scenario = step.scenario
    kv = ceil_bytes(kv_units * step.kv_unit_bytes)
    decode = step.computing_seconds(decode_flops) or 0.0
    chunk = step.computing_seconds(chunk_flops) or 0.0
    weights = streamed_weight_bytes(scenario, tokens)
    comm = 0.0 if step.comm is None else step.comm.seconds(tokens)
    total = weights + kv + step.state_bytes
    engine = scenario.engine
    if engine.is_roofline:
        memory = step.streaming_seconds(total)
        return roofline_seconds(memory, decode + chunk, comm, scenario.overhead_s)
    floor = max(total / scenario.bandwidth_bytes_per_s, decode + chunk) + comm
    terms = packed_terms(step, engine.params, tokens, weights)
    return median(
        [
            within_band((t,), kv, decode + chunk / p.prefill_efficiency, floor)[0]
            for t, p in zip(terms, engine.params, strict=True)
        ]
    )
