"""Does it fit? Weights, KV cache and state against a GPU's memory (docs/physics.md section 5).

Memory holds every weight (the input embedding and any vision tower included), the KV
cache of every live sequence at its full context and the recurrent state, all per GPU,
within the share of capacity the runtime leaves to them (vLLM's gpu_memory_utilization).
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from fractions import Fraction

from decodecalc.model.dtypes import DType
from decodecalc.model.kvcache import KVCurve
from decodecalc.model.precision import Overrides, weight_bytes
from decodecalc.model.tensors import TensorGroup
from decodecalc.record import record


def stored_weight_bytes(
    groups: Iterable[TensorGroup], weights: DType, tp: int, overrides: Overrides = ()
) -> int:
    """Every parameter of ``groups`` (a model's, or one pipeline stage's) one GPU holds,
    read each step or not, each group in its format."""
    parts = ((g.name, g.params_per_gpu(tp)) for g in groups)
    return weight_bytes(parts, weights, overrides)


@record
class MemoryFit:
    """A GPU's memory budget and what fits in it, per GPU."""

    budget_bytes: int
    """Capacity x utilization."""
    stored_weight_bytes: int
    max_batch: int | None
    """Sequences that fit at the largest context asked for (0: not even one; None: any
    number, because a sequence there holds no bytes: no KV yet and no recurrent state)."""
    max_context: int | None
    """Longest context that fits at the scenario's batch (0: the weights alone do not fit;
    None: memory never limits it, because every layer is windowed or keeps a constant state)."""


def memory_fit(
    budget_bytes: int,
    stored_bytes: int,
    curve: KVCurve,
    bytes_per_unit: Fraction,
    state_bytes_per_sequence: Fraction,
    batch: int,
    context_tokens: int,
) -> MemoryFit:
    """Solve both limits exactly: B_max = floor(free / per-sequence bytes at the context)
    (unbounded when a sequence holds nothing there), T_max = the largest T with
    B x KV(T) <= free - B x state. ``curve`` counts the cache in units of ``bytes_per_unit``
    (elements, or finer units when K and V are stored in different formats); memory holds
    its held() part, which is non-decreasing."""
    curve = curve.held()
    free = budget_bytes - stored_bytes
    max_batch: int | None
    per_sequence = curve.elements(context_tokens) * bytes_per_unit + state_bytes_per_sequence
    if free < 0:
        max_batch = 0
    elif per_sequence == 0:
        max_batch = None
    else:
        max_batch = math.floor(free / per_sequence)
    room = free - batch * state_bytes_per_sequence
    if room < 0:
        max_context: int | None = 0
    else:
        solved = curve.solve(Fraction(room) / (batch * bytes_per_unit))
        max_context = None if solved is None else math.floor(solved)
    return MemoryFit(budget_bytes, stored_bytes, max_batch, max_context)
