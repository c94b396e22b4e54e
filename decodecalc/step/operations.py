"""The engine's step as a list of operations, each priced by one rate model; the step is
their sum (docs/physics.md, "The step as a list of operations").

An operation is what a step does once or once per layer, per GPU: a tensor group's GEMM
(a grouped expert GEMM computing each expert's rows in whole tiles), the attention of one
kind of layer (its cache read and its recurrent state), a collective, or a fixed cost the
engine pays per layer, per step, per MoE layer or per sequence pass. Each is priced as

    seconds = max(bytes / (BW x e), FLOPs / (peak x e_mma)) + fixed

with the engine profile's efficiency for what it reads (e_w for weights, e_kv for caches
and state) and for what it multiplies (e_mma, a grouped GEMM's own where the profile has
one); a transfer's ``fixed`` is its time on the link (step/parallelism.py) with the
engine's own latency per call. The part that grows with the context, the cache, is kept
apart as seconds per cached byte, so the whole step reduces to the three constants of
EngineTerms (terms_of) that a million-row sweep multiplies out.

Attention's FLOPs are not priced per operation: the step's compute at the GPU's peak is a
floor under the whole step (engine_terms.within_band), as it was before the list."""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from fractions import Fraction
from typing import TYPE_CHECKING, NamedTuple

from decodecalc.engine.profile import EngineParams
from decodecalc.model.model import counted
from decodecalc.model.precision import weight_bytes
from decodecalc.record import record
from decodecalc.step.engine_terms import EngineTerms, StepCounts
from decodecalc.step.parallelism import (
    CommSplit,
    Communication,
    gpu_params,
    read_share,
    stage_groups,
    stage_layer_counts,
)

if TYPE_CHECKING:
    from decodecalc.model.layers import Layer
    from decodecalc.scenarios.scenario import Scenario


OPERATION_CLASSES = ("dense GEMMs", "expert GEMMs", "attention", "fixed costs", "communication")
"""What explain groups the operations into (Operation.group)."""

STREAMED = OPERATION_CLASSES[:3]
"""Classes whose time is bytes and FLOPs on the GPU: max(their sum, compute) in the step."""


@record
class WeightOp:
    """One tensor group's matrix multiply in a step, on one GPU: the bytes it streams and
    the rows it multiplies them by. Its time is the slower of the two (gemm_operation)."""

    group: str
    read_bytes: int
    params: float
    """Parameters multiplied: those the GPU holds, at the share the step reads."""
    rows: float
    """Rows each multiplied weight meets: the GPU's tokens for a dense GEMM; for routed
    experts, the tokens one expert that is touched receives on average (B x k over the
    experts touched)."""
    grouped: bool
    """A grouped expert GEMM, whose kernel computes each expert's rows in whole tiles."""
    layers: int = 1
    """Layers of its stage that hold the group (1: the LM head, a vision tower)."""

    def flops(self, tile_rows: int) -> float:
        """2 x parameters x rows, a grouped GEMM's rows rounded up to the tile its kernel
        takes at that many rows (kernel_tile): an expert sent 3 tokens costs a 16-row
        tile's compute, not 3 rows' (dense decode GEMMs run split-K or GEMV kernels that
        do not pad a small batch)."""
        if not self.grouped:
            return 2 * self.params * self.rows
        tile = kernel_tile(self.rows, tile_rows)
        return 2 * self.params * math.ceil(self.rows / tile) * tile


MIN_TILE_ROWS = 16
"""The smallest block M of the grouped MoE kernels: Triton's tl.dot multiplies at least 16
rows, and vLLM's and SGLang's fused_moe take BLOCK_SIZE_M 16 while the tokens number no
more than the experts (get_default_config, ``M <= E``)."""


def kernel_tile(rows: float, tile_rows: int) -> int:
    """The block M a grouped GEMM's kernel takes for experts of ``rows`` rows each: the
    smallest power of two from MIN_TILE_ROWS that holds them, up to ``tile_rows``, the
    tile the engine's kernel was measured with at the batches its tables span. Grouped-MoE
    kernels choose their block M by the tokens per expert (vLLM's tuned fused_moe configs
    grow BLOCK_SIZE_M with M; TensorRT-LLM's autotuner picks among 16-256-row tiles), so
    an expert's rows are never padded past max(MIN_TILE_ROWS, 2 x rows): a table fitted
    at 256 rows does not make 2 rows cost 256 (issue 28)."""
    fitted = max(1, tile_rows)
    if fitted <= MIN_TILE_ROWS or rows <= 0:
        return fitted
    holds = 1 << max(0, math.ceil(math.log2(rows)))
    return min(fitted, max(MIN_TILE_ROWS, holds))


def weight_ops(scenario: Scenario, count_layers: bool = False) -> tuple[WeightOp, ...]:
    """Every tensor group a step multiplies, per GPU, stages added up (a token's pass goes
    through each). A dense group meets the GPU's own sequences (all of them under TP, its
    share under data-parallel attention); routed experts meet every token (B x k of them
    over the experts touched, with or without EP: a GPU holding E/N whole experts gets a
    share N times smaller of both). ``count_layers``: each op's layers counted too (what
    explain lists; the price does not depend on it, and a sweep's scenarios skip it)."""
    s = scenario
    model = s.model
    ops = []
    start = 0
    counts = stage_layer_counts(len(model.layers), s.pp)
    for groups, count in zip(stage_groups(model, s.pp), counts, strict=True):
        holding = {}
        if count_layers:
            holding = _layers_holding(model.layers[start : start + count], model.hidden_size)
        start += count
        for g in groups:
            share = read_share(s, g, s.batch)
            if not share:
                continue
            params = gpu_params(s, g) * share
            read = weight_bytes([(g.name, params)], s.weights, s.weight_overrides)
            if g.experts:
                # the tokens a touched expert receives, on every GPU alike
                rows = s.batch * g.experts_per_token / (g.experts * g.read_fraction(s.batch))
            else:
                rows = Fraction(s.sequences_per_gpu)
            layers = holding.get(g.name, 1)
            ops.append(WeightOp(g.name, read, float(params), float(rows), bool(g.experts), layers))
    return tuple(ops)


def _layers_holding(layers: Sequence[Layer], hidden: int) -> dict[str, int]:
    """Layers holding each tensor group, by name (distinct layer objects counted once)."""
    holding: dict[str, int] = {}
    for layer, n in counted(layers):
        for name in {g.name for g in layer.tensor_groups(hidden)}:
            holding[name] = holding.get(name, 0) + n
    return holding


@record
class MixerWork:
    """One kind of layer's attention in a step, per GPU: its recurrent state and, at the
    context the step is listed at, the cache it reads."""

    stands_for: str
    """The kind as the model describes it ("MLA 128 heads, ...", "GQA 64/8 heads ...")."""
    layers: int
    state_bytes: float
    """The recurrent state of the GPU's sequences, read and written once a step."""
    kv_bytes: float = 0.0
    """Its cache at the context listed, the GPU's sequences together (0: listed without
    one, for the constants)."""
    reads_cache: bool = True
    """Whether it keeps a cache that grows with the context (not a constant state only)."""


@record
class StepWork:
    """What one step of a scenario does on one GPU, before any engine prices it
    (step.StepModel.work builds it)."""

    weight_ops: tuple[WeightOp, ...]
    mixers: tuple[MixerWork, ...]
    counts: StepCounts
    bandwidth: float
    """The GPU's datasheet bandwidth, bytes/s."""
    peak: int | None
    """The matmuls' peak FLOP/s (None: not known for this GPU and format)."""
    kv_read_factor: float
    """KV elements a GQA-unaware kernel reads per element cached (engine_terms.py)."""
    comm: Communication | None = None
    split: CommSplit = CommSplit()
    """The transfers' seconds at the link's own latency, for the pass's tokens."""


class Operation(NamedTuple):
    """One operation of an engine's step on one GPU, priced:
    max(memory_s + cached bytes x per_kv_byte_s, compute_s) + fixed_s. A named tuple,
    not a record: a server's replay lists a step's operations for every pass it prices,
    and a tuple is built in a fraction of a record's time."""

    name: str
    """What it is: "GEMM", "grouped expert GEMM", "attention", "state update",
    "all-reduce", "all-to-all", "hand-off" or a fixed cost ("per layer", ...)."""
    stands_for: str
    """The tensor group, the kind of layer, the collective or the step item."""
    group: str
    """Its class in OPERATION_CLASSES."""
    times: int
    """Times a step runs it: the layers holding a group or of a kind, the collectives'
    calls, the fixed cost's count."""
    bytes: float
    """Bytes it reads from the GPU's memory besides the cache: weights, recurrent state."""
    flops: float
    """FLOPs it is priced by: a GEMM's 2 x params x rows, a grouped GEMM's rows padded to
    its kernel's tile (0 for the rest)."""
    memory_s: float
    """``bytes`` over the bandwidth at the engine's efficiency for them."""
    compute_s: float
    """``flops`` over the peak at the engine's e_mma (0: the peak is not known)."""
    fixed_s: float = 0.0
    """Time no byte or FLOP count on the GPU gives: a fixed cost, a transfer on its link."""
    per_kv_byte_s: float = 0.0
    """Seconds per byte of its cache: the kernel's read factor over BW x e_kv."""
    kv_bytes: float = 0.0
    """Its cache at the context it was listed at."""
    rows: float = 0.0
    """A GEMM's rows (a grouped GEMM's per expert touched)."""
    tile: int = 0
    """A grouped GEMM's block M at those rows (kernel_tile)."""

    @property
    def seconds(self) -> float:
        """The part no context changes: the slower of its bytes and its FLOPs, plus its
        fixed time."""
        compute = self.compute_s
        return (compute if compute > self.memory_s else self.memory_s) + self.fixed_s

    @property
    def total_s(self) -> float:
        """Its time at the context it was listed at, its cache read included."""
        memory = self.memory_s + self.kv_bytes * self.per_kv_byte_s
        return (self.compute_s if self.compute_s > memory else memory) + self.fixed_s


def step_operations(work: StepWork, params: EngineParams) -> tuple[Operation, ...]:
    """The step's operations under one engine's parameters: GEMMs by tensor group,
    attention by kind of layer, fixed costs (StepCounts.fixed_parts), collectives."""
    return (
        *gemm_operations(work.weight_ops, work.bandwidth, work.peak, params),
        *_attention_operations(work, params),
        *fixed_operations(work.counts, params),
        *_transfers(work, params),
    )


def gemm_operations(
    ops: Iterable[WeightOp], bandwidth: float, peak: int | None, params: EngineParams
) -> tuple[Operation, ...]:
    """Each tensor group's GEMM: its weights at BW x e_w, its FLOPs (a grouped GEMM's rows
    padded to its tile) at peak x e_mma (the grouped kernels' own efficiency where the
    profile has one); no compute time where the peak is not known."""
    stream = bandwidth * params.weight_efficiency
    dense = grouped = None
    if peak is not None:
        dense = peak * params.mma_efficiency
        grouped = peak * (params.grouped_mma_efficiency or params.mma_efficiency)
    tile_rows = params.tile_rows
    listed = []
    for op in ops:
        flops = op.flops(tile_rows)
        if op.grouped:
            tile, group, rate = kernel_tile(op.rows, tile_rows), OPERATION_CLASSES[1], grouped
        else:
            tile, group, rate = 0, OPERATION_CLASSES[0], dense
        compute = 0.0 if rate is None else flops / rate
        name = "grouped expert GEMM" if op.grouped else "GEMM"
        # positional: a sweep lists every profile's GEMMs for each of its scenarios
        fields = (op.group, group, op.layers, op.read_bytes, flops, op.read_bytes / stream)
        listed.append(Operation(name, *fields, compute, 0.0, 0.0, 0.0, op.rows, tile))
    return tuple(listed)


def gemm_excess_s(
    ops: Sequence[WeightOp], bandwidth: float, peak: int | None, params: EngineParams
) -> float:
    """What the GEMMs add beyond streaming their weights at e_w: each takes the slower of
    its bytes and its FLOPs (gemm_operations), so a compute-bound one adds the difference.
    Zero where the GPU's peak is not known."""
    return sum(o.seconds - o.memory_s for o in gemm_operations(ops, bandwidth, peak, params))


def _attention_operations(work: StepWork, params: EngineParams) -> tuple[Operation, ...]:
    """Each kind of layer's cache and state, read at BW x e_kv; the cache as the engine's
    kernel reads it (each query head its KV head again, for a GQA-unaware kernel)."""
    rate = work.bandwidth * params.kv_efficiency
    factor = work.kv_read_factor if params.kv_read == "per-query-head" else 1.0
    return tuple(
        Operation(
            name="attention" if m.reads_cache else "state update",
            stands_for=m.stands_for,
            group=OPERATION_CLASSES[2],
            times=m.layers,
            bytes=m.state_bytes,
            flops=0.0,
            memory_s=m.state_bytes / rate,
            compute_s=0.0,
            per_kv_byte_s=factor / rate,
            kv_bytes=m.kv_bytes,
        )
        for m in work.mixers
    )


def fixed_operations(counts: StepCounts, params: EngineParams) -> tuple[Operation, ...]:
    """The costs no byte count scales, as StepCounts.fixed_parts names them."""
    group = OPERATION_CLASSES[3]
    return tuple(
        Operation(name, "the engine's fixed cost", group, counts.count(name), 0.0, 0.0, 0.0, 0.0, s)
        for name, s in counts.fixed_parts(params)
    )


def _transfers(work: StepWork, params: EngineParams) -> tuple[Operation, ...]:
    """The collectives at the link's time (step/parallelism.py), each call at the engine's
    own all-reduce latency where the profile has one instead of the link's; tensor
    parallelism's all-reduces at the engine's measured rates where its kernel tables hold
    them (Communication.measured)."""
    comm, split = work.comm, work.split
    if comm is None:
        return ()
    delta = 0.0
    if params.allreduce_latency_s is not None:
        delta = params.allreduce_latency_s - comm.group_link.latency_s
    reduces = comm.allreduce_calls + comm.gather_calls
    reduced = split.allreduce_s + reduces * delta
    if (measured := comm.measured(params.allreduce_rates)) is not None:
        ring = split.allreduce_s - reduces * comm.link.latency_s
        reduced = comm.measured_seconds(measured, ring)
    parts = (
        ("all-reduce", "tensor parallelism's all-reduces and gathers", reduces, reduced),
        ("all-to-all", "expert parallelism's dispatch and combine", 2 * comm.all_to_all_layers,
         split.all_to_all_s + 2 * comm.all_to_all_layers * delta),
        ("hand-off", "activations from one pipeline stage to the next", len(comm.handoffs),
         split.handoff_s),
    )  # fmt: skip
    return tuple(
        Operation(name, what, OPERATION_CLASSES[4], calls, 0.0, 0.0, 0.0, 0.0, max(seconds, 0.0))
        for name, what, calls, seconds in parts
        if calls
    )


def terms_of(operations: Sequence[Operation], band: tuple[float, float]) -> EngineTerms:
    """The step the operations add up to, as the constants a row multiplies out: the
    GEMMs and attention (their seconds, and the cache's per byte: every cache is read at
    the one rate of the profile's kernel), then the fixed costs and transfers, which
    overlap nothing."""
    constant = added = per_kv = 0.0
    for o in operations:
        if o.group in STREAMED:
            constant += o.seconds
            per_kv = per_kv or o.per_kv_byte_s
        else:
            added += o.seconds
    return EngineTerms(constant_s=constant, per_kv_byte_s=per_kv, added_s=added, band=band)


def by_class(operations: Iterable[Operation]) -> tuple[tuple[str, float], ...]:
    """Seconds per OPERATION_CLASSES entry, each operation at its listed context."""
    totals = dict.fromkeys(OPERATION_CLASSES, 0.0)
    for o in operations:
        totals[o.group] += o.total_s
    return tuple(totals.items())
