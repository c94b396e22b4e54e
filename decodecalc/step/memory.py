"""Does it fit? Weights, KV cache and state against a GPU's memory (docs/physics.md section 5).

Memory holds every weight (the input embedding and any vision tower included), the KV
cache of every live sequence at its full context and the recurrent state, all per GPU,
within the room a server leaves to them: its share of the memory CUDA reports (vLLM's
gpu_memory_utilization) less its activation peak and runtime reserve. That one room
(``server_room``) sizes both the fit estimate, plan and check report and the KV pool
serving allocates (step/kv_pool.py), so no answer promises a batch another cannot run.
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from fractions import Fraction
from typing import TYPE_CHECKING, Protocol

from decodecalc.engine.profile import CUDA_HIDDEN_BYTES
from decodecalc.model.kvcache import KVCurve
from decodecalc.model.layers import DenseMLP
from decodecalc.model.precision import weight_bytes
from decodecalc.model.tensors import TensorGroup
from decodecalc.record import record
from decodecalc.step.flops import ACTIVATION_BYTES
from decodecalc.step.parallelism import gpu_params

if TYPE_CHECKING:
    from decodecalc.engine.scheduler import SchedulerLimits
    from decodecalc.model.layers import FFN
    from decodecalc.model.model import Model
    from decodecalc.scenarios.scenario import Scenario

SAMPLER_BYTES_PER_LOGIT = 15
"""The sampler pass's peak per logit of its dummy batch, one row per sequence over the
whole vocabulary. Measured on vLLM 0.19.0 (H100, 1,024 rows): a torch peak of 1.89 GiB
for Llama-3.1-8B's 128,256 logits a row and 2.87 GiB for gpt-oss-20b's 201,088, 15.4 and
15.0 bytes; the float32 logits, their probabilities and the exponential draw (4 + 4 + 4)
beside the bfloat16 logits (2) make 14."""


def stored_weight_bytes(scenario: Scenario, groups: Iterable[TensorGroup]) -> int:
    """Every parameter of ``groups`` (a model's, or one pipeline stage's) one of the
    scenario's GPUs holds, read each step or not, each group in its format: its TP shard,
    under data-parallel attention a whole copy of all but the routed experts, under --ep
    the redundant experts' replicas too (step/parallelism.py gpu_params)."""
    parts = ((g.name, gpu_params(scenario, g)) for g in groups)
    return weight_bytes(parts, scenario.weights, scenario.weight_overrides)


@record
class ServerRoom:
    """What a server's start-up leaves per GPU to weights, KV cache and state, as vLLM
    sizes it (v1/worker/gpu_worker.py ``determine_available_memory``; docs/serving.md,
    "The KV pool")."""

    visible_bytes: int
    """The memory CUDA reports: the preset's less CUDA_HIDDEN_BYTES."""
    budget_bytes: int
    """visible_bytes x utilization."""
    activation_bytes: int
    """The profile's activation peak (activation_peak_bytes)."""
    reserve_bytes: int
    """Memory allocated outside PyTorch, and all-reduce buffers under TP."""
    block_size: int
    """Tokens per KV block: a sequence holds whole blocks."""

    def held_tokens(self, context_tokens: int) -> int:
        """The tokens a sequence of ``context_tokens`` holds room for: whole blocks."""
        return whole_blocks(context_tokens, self.block_size)

    @property
    def usable_bytes(self) -> int:
        """What weights, KV cache and state may hold: the budget less the other two, or
        none (0) where those two alone take it: no byte count below zero is room."""
        return max(0, self.budget_bytes - self.activation_bytes - self.reserve_bytes)

    @property
    def overhead_overflows(self) -> bool:
        """The activation peak and the reserve alone take the whole budget: nothing is
        left even for the weights (serving refuses such a server)."""
        return self.activation_bytes + self.reserve_bytes >= self.budget_bytes


def whole_blocks(tokens: int, block_size: int) -> int:
    """``tokens`` rounded up to whole blocks of ``block_size``: the room a sequence holds."""
    return -(-tokens // block_size) * block_size


def server_room(memory_bytes: int, model: Model, tp: int, limits: SchedulerLimits) -> ServerRoom:
    """The room on a GPU of ``memory_bytes`` (its preset's capacity) that a server with
    ``limits`` leaves to the weights and cache of ``model`` split ``tp`` ways."""
    visible = memory_bytes - CUDA_HIDDEN_BYTES
    return ServerRoom(
        visible_bytes=visible,
        budget_bytes=math.floor(visible * Fraction(str(limits.memory_utilization))),
        activation_bytes=activation_peak_bytes(model, tp, limits),
        reserve_bytes=limits.reserve_bytes + (limits.tp_reserve_bytes if tp > 1 else 0),
        block_size=limits.block_size,
    )


def activation_peak_bytes(model: Model, tp: int, limits: SchedulerLimits) -> int:
    """The profile's activation peak per GPU, the larger of its two passes.

    The forward pass over ``max_num_batched_tokens`` tokens peaks in the widest feed-forward
    block: its gate-and-up output and the activated half (3 x intermediate / TP per token
    for a gated MLP; a fused MoE keeps as much for each routed expert) beside three
    hidden-size buffers (residual, normed input, the block's output). The sampler pass then
    draws one row per sequence, min(max_num_seqs, budget), over the whole vocabulary, which
    TP does not split: on large-vocabulary models it is the larger pass.

    A model of stand-in widths (the short numbers form) has no real width or vocabulary:
    its peak is left out (0, and its note says so). Counted from the stand-in, one layer
    holding every parameter in its MLP, 8B parameters would peak at 131 TB.
    """
    if model.stand_in_widths:
        return 0
    tokens = limits.max_num_batched_tokens
    # Over the distinct layer objects (model/model.py counted): the widest is among them.
    widths = (_ffn_width(layer.ffn, model.hidden_size, tp) for layer, _ in model.layer_counts())
    widest = max(widths, default=0)
    forward = tokens * (3 * model.hidden_size + widest) * ACTIVATION_BYTES
    rows = min(limits.max_num_seqs, tokens)
    sampler = rows * model.vocab_size * SAMPLER_BYTES_PER_LOGIT
    return max(forward, sampler)


def _ffn_width(ffn: FFN, hidden: int, tp: int) -> int:
    """Elements per token a feed-forward block holds at its peak on one GPU."""
    if isinstance(ffn, DenseMLP):  # (not MoE: a dense model's query never imports it)
        return (3 if ffn.gated else 2) * ffn.intermediate_size // tp
    width = ffn.matrices
    routed = ffn.experts_per_token * (width * ffn.expert_intermediate_size // tp + hidden)
    return max(routed, width * ffn.shared_intermediate_size // tp)


class RequestLimit(Protocol):
    """What a fit needs of a server's KV pool (step/kv_pool.py KvPool): how many requests
    of a length it holds at once (None: it sets no limit)."""

    def held_requests(self, tokens_per_request: int) -> int | None: ...

    def holds(self, requests: int, tokens_per_request: int) -> bool: ...

    @property
    def limits_as_bytes(self) -> bool: ...


@record
class MemoryFit:
    """A GPU's memory budget and what fits in it, per GPU."""

    budget_bytes: int
    """Capacity x utilization (the share of the preset's memory, before the server's
    deductions)."""
    stored_weight_bytes: int
    max_batch: int | None
    """Sequences that fit at the largest context asked for (0: not even one; None: any
    number, because a sequence there holds no bytes: no KV yet and no recurrent state)."""
    max_context: int | None
    """Longest context that fits at the scenario's batch (0: the weights alone do not fit;
    None: memory never limits it, because every layer is windowed or keeps a constant state)."""
    room: ServerRoom
    """What the server leaves to weights, KV and state: every limit above is solved in
    its usable_bytes."""
    pool: RequestLimit | None = None
    """The KV pool a server allocates in that room (step/kv_pool.py): max_batch is no more
    than the requests it holds (a windowed layer keeps its window and a chunk, a hybrid
    model pads its layer groups: bytes alone would promise more)."""


def memory_fit(
    budget_bytes: int,
    room: ServerRoom,
    stored_bytes: int,
    curve: KVCurve,
    bytes_per_unit: Fraction,
    state_bytes_per_sequence: Fraction,
    batch: int,
    context_tokens: int,
) -> MemoryFit:
    """Solve both limits exactly in whole KV blocks: B_max = floor(free / per-sequence
    bytes at the context rounded up to a block) (unbounded when a sequence holds nothing
    there), T_max = the largest whole number of blocks' tokens T with
    B x KV(T) <= free - B x state. ``curve`` counts the cache in units of ``bytes_per_unit``
    (elements, or finer units when K and V are stored in different formats); memory holds
    its held() part, which is non-decreasing. ``budget_bytes`` is reported; ``room`` is
    what is solved in."""
    curve = curve.held()
    free = room.usable_bytes - stored_bytes
    max_batch: int | None
    held = room.held_tokens(context_tokens)
    per_sequence = curve.elements(held) * bytes_per_unit + state_bytes_per_sequence
    if free < 0:
        max_batch = 0
    elif per_sequence == 0:
        max_batch = None
    else:
        max_batch = math.floor(free / per_sequence)
    left = free - batch * state_bytes_per_sequence
    if left < 0:
        max_context: int | None = 0
    else:
        solved = curve.solve(Fraction(left) / (batch * bytes_per_unit))
        blocks = None if solved is None else math.floor(solved) // room.block_size
        max_context = None if blocks is None else blocks * room.block_size
    return MemoryFit(budget_bytes, stored_bytes, max_batch, max_context, room)
