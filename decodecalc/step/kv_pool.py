"""The KV pool a serving engine carves out of GPU memory, and how many requests it holds
(docs/serving.md, "The KV pool").

vLLM sizes its cache at start-up by profiling (v1/worker/gpu_worker.py
``determine_available_memory``): it loads the weights, runs one forward pass over a dummy
batch of ``max_num_batched_tokens`` tokens and a sampler pass over one row per sequence,
and gives the cache what is left of ``memory x gpu_memory_utilization`` after the weights,
that profile's peak and the memory allocated outside PyTorch (NCCL buffers, cuBLAS
workspaces). CUDA graphs are captured after the pool is allocated, out of the headroom
the utilization leaves (vLLM 0.19.0 only warns that this changes in a later version):

    available = memory x utilization - weights as stored - activation peak - reserve
    blocks    = floor(available / (block_size x KV bytes per token over all layer slots))
    tokens    = blocks x block_size

The pool is per GPU, but every GPU of a tensor-parallel group holds its own heads of the
same tokens, so ``tokens`` is the replica's. Under data-parallel attention each of the tp
GPUs is an attention rank with its own requests: it holds their whole cache (every head)
and a whole copy of every weight outside the routed experts, and sizes a pool of its own
on those, so the replica holds ``ranks`` pools like it (vLLM's data-parallel engines each
profile and allocate their own; SGLang's DP-attention ranks likewise).

Under pipeline parallelism a stage's GPUs hold only its layers' weights (the first stage
the embedding, the last the LM head) and its layers' cache, for every token the replica
runs: each stage's pool is sized alone, on its own weights and bytes per token, and the
stage with the fewest blocks (the one with the most weights or layers) decides, as vLLM
gives every rank the smallest rank's block count (v1/core/kv_cache_utils.py
``get_kv_cache_configs``): the split that ``StepModel.held_bytes`` checks estimate and
plan against (step/step.py).

A model mixing layer kinds (sliding-window and global attention) shares one block pool
between groups of equally many layers, the group size being the smallest kind's count (or
the largest, when every kind has under 1.5 times the smallest): kinds that do not fill
their last group are padded with empty layer slots (v1/core/kv_cache_utils.py
``_get_kv_cache_groups_uniform_page_size``). Under pipeline stages each stage's layers
are grouped alone: exact for a model of one kind, an approximation for a mixed one (vLLM
forms the groups over the whole model and gives each rank its members of them). A
request of T tokens holds ceil(T / block) blocks in each global layer and, in a windowed
layer, the blocks of its window plus one chunk and one more block, as the window need not
start at a block's edge (``SlidingWindowSpec.max_memory_usage_bytes``), so the "maximum
concurrency" vLLM logs is blocks / blocks per request. DeepSeek-V4's pooled
entries (one per 4 or 128 tokens, model/compressed_attention.py) are kinds of their own
that keep every token, beside its layers' windows.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from fractions import Fraction
from typing import TYPE_CHECKING

from decodecalc.engine.scheduler import SchedulerLimits
from decodecalc.errors import InputError
from decodecalc.model.dtypes import ceil_bytes
from decodecalc.model.model import counted
from decodecalc.record import record
from decodecalc.step.memory import ServerRoom, server_room, stored_weight_bytes
from decodecalc.step.parallelism import stage_groups, stage_layer_counts

if TYPE_CHECKING:
    from decodecalc.model.layers import Mixer
    from decodecalc.model.tensors import TensorGroup
    from decodecalc.scenarios.scenario import Scenario

WIDE_GROUP_RATIO = Fraction(3, 2)
"""vLLM groups a hybrid model's layers by the largest kind's count when it is under 1.5
times the smallest's (12 windowed + 13 global layers pad to 13 + 13, not 12 + 24)."""


@record
class LayerKind:
    """Layers caching alike (same window, same bytes per token), and the layer slots the
    engine allocates for them after padding their last group."""

    window: int | None
    layers: int
    slots: int
    bytes_per_token: Fraction
    """Per layer, per GPU."""


@record
class Drafter:
    """A speculative drafter a server holds beside its target on the same GPUs: its
    weights, and its caching layers, whose cache vLLM allocates from the same pool (the
    drafter's layers are one more group of the KV cache config), for every request."""

    scenario: Scenario
    """The drafter's model, formats and TP (answers/speculative.py draft_scenario)."""
    groups: tuple[TensorGroup, ...]
    """What it holds beyond the target's weights (an EAGLE or MTP head reads the target's
    embedding and LM head: only its layers)."""
    mixers: tuple[Mixer, ...]
    """Its caching layers."""


@record
class KvPool:
    """A server's KV cache pool, per GPU and in tokens per replica. Under pipeline
    parallelism the per-GPU figures are those of the stage that decides (fewest blocks)."""

    tokens: int
    """KV cache tokens the pool holds (per replica = the TP group, after block rounding)."""
    blocks: int
    block_size: int
    budget_bytes: int
    """Per GPU: memory as CUDA reports it x utilization."""
    weight_bytes: int
    """Per GPU: every weight its stage holds as stored, each tensor group in its own
    format."""
    activation_bytes: int
    """Per GPU: the profile's peak, the larger of its forward and sampler passes."""
    reserve_bytes: int
    """Per GPU: memory allocated outside PyTorch (and all-reduce buffers under TP)."""
    available_bytes: int
    """Per GPU: what is left for the cache (negative: the weights alone do not fit)."""
    kv_bytes_per_token: int
    """Per GPU, summed over every layer slot of its stage a block spans (padding slots
    included)."""
    kinds: tuple[LayerKind, ...]
    max_num_batched_tokens: int
    state_bytes_per_sequence: int = 0
    """Recurrent state a request holds whatever its length (linear-attention layers)."""
    draft_weight_bytes: int = 0
    """Per GPU: the speculative drafter's share of weight_bytes (its cache is in kinds)."""
    ranks: int = 1
    """Data-parallel attention ranks, each with a pool like this one for its own requests
    (1: the TP group shares this one)."""

    @property
    def replica_tokens(self) -> int:
        """KV cache tokens the replica holds over its ranks' pools."""
        return self.tokens * self.ranks

    def max_concurrency(self, tokens_per_request: int) -> float:
        """Requests of ``tokens_per_request`` (input + output) tokens the replica holds at
        once: blocks / blocks one request needs (vLLM's "Maximum concurrency" line), on
        every rank."""
        if tokens_per_request < 1:
            raise InputError(f"tokens per request {tokens_per_request} must be at least 1")
        if self.blocks <= 0:
            return 0.0
        return float(self.blocks / self.blocks_per_request(tokens_per_request)) * self.ranks

    def held_requests(self, tokens_per_request: int) -> int | None:
        """Whole requests of ``tokens_per_request`` tokens the replica holds at once, a
        whole number on each rank (None: the pool sets no limit, as a request holds no
        block: context 0, or no layer caches)."""
        if tokens_per_request < 1 or not self.kinds:
            return None
        per_rank = self.blocks / self.blocks_per_request(tokens_per_request)
        return math.floor(per_rank) * self.ranks

    @property
    def limits_as_bytes(self) -> bool:
        """One kind of layer, caching every token, unpadded, without state: a batch's
        requests fit in the blocks exactly when its cache fits in the room in whole blocks
        (B x ceil(T / block) <= floor(available / block bytes)), which the byte count
        checks already, so asking the pool adds nothing (the sweep skips it)."""
        if self.state_bytes_per_sequence or len(self.kinds) != 1:
            return False
        (kind,) = self.kinds
        return kind.window is None and kind.slots == kind.layers

    def holds(self, requests: int, tokens_per_request: int) -> bool:
        """The replica's pools hold ``requests`` at once."""
        held = self.held_requests(tokens_per_request)
        return held is None or requests <= held

    def blocks_per_request(self, tokens_per_request: int) -> Fraction:
        """Blocks (of block_size tokens in every layer slot) one request occupies: each
        kind holds ceil(tokens it keeps / block) blocks in its slots, a windowed kind at
        most its window plus one chunk and one more block; recurrent state in block-sized
        units."""
        slot_bytes = sum((k.slots * k.bytes_per_token for k in self.kinds), start=Fraction(0))
        if not slot_bytes:
            return Fraction(1)
        blocks = Fraction(0)
        for kind in self.kinds:
            held = -(-tokens_per_request // self.block_size)
            if kind.window is not None:
                # The window and a chunk, plus a block: the window need not start at a
                # block's edge (SlidingWindowSpec.max_memory_usage_bytes's "+ 1").
                kept = min(tokens_per_request, kind.window - 1 + self.max_num_batched_tokens)
                held = -(-kept // self.block_size) + 1
            blocks += kind.slots * kind.bytes_per_token / slot_bytes * held
        block_bytes = slot_bytes * self.block_size
        return blocks + Fraction(self.state_bytes_per_sequence) / block_bytes


def kv_pool(scenario: Scenario, limits: SchedulerLimits, drafter: Drafter | None = None) -> KvPool:
    """The pool the engine allocates for a scenario on its GPUs (the scenario's weights,
    overrides, KV formats, TP and PP; the limits' utilization, budget and reserve): each
    pipeline stage's, and of those the one with the fewest blocks (then the least room).
    Every stage is charged the whole activation peak and reserve; a speculative
    ``drafter``'s weights and cache the last stage, which runs it."""
    gpu = scenario.gpu
    if gpu is None:
        raise InputError("the KV pool needs a GPU preset (its memory): give --gpu")
    room = server_room(gpu.memory_bytes, scenario.model, scenario.tp, limits)
    mixers = scenario.model.mixers()
    counts = stage_layer_counts(len(mixers), scenario.pp)
    pools = []
    start = 0
    for count, groups in zip(counts, stage_groups(scenario.model, scenario.pp), strict=True):
        stage = mixers[start : start + count]
        start += count
        last = start == len(mixers)
        pools.append(_stage_pool(scenario, limits, stage, groups, room, drafter if last else None))
    return min(pools, key=lambda pool: (pool.blocks, pool.available_bytes))


def _stage_pool(
    scenario: Scenario,
    limits: SchedulerLimits,
    mixers: Sequence[Mixer],
    groups: Sequence[TensorGroup],
    room: ServerRoom,
    drafter: Drafter | None,
) -> KvPool:
    """One stage's pool: the room the server leaves (the budget less the activation peak
    and the reserve, per GPU) less the stage's weights (and a drafter's), in blocks over
    its layers' slots (and the drafter's layers, grouped apart)."""
    pairs = counted(mixers)  # a few distinct layer objects, not one per layer
    kinds = layer_kinds(scenario, pairs)
    draft_weights = 0
    if drafter is not None:
        kinds += layer_kinds(drafter.scenario, counted(drafter.mixers))
        draft_weights = stored_weight_bytes(drafter.scenario, drafter.groups)
    slot_bytes = sum((k.slots * k.bytes_per_token for k in kinds), start=Fraction(0))
    weights = stored_weight_bytes(scenario, groups) + draft_weights
    available = room.usable_bytes - weights
    blocks = 0
    if slot_bytes and available > 0:
        blocks = math.floor(available / (slot_bytes * limits.block_size))
    return KvPool(
        tokens=blocks * limits.block_size,
        blocks=blocks,
        block_size=limits.block_size,
        budget_bytes=room.budget_bytes,
        weight_bytes=weights,
        activation_bytes=room.activation_bytes,
        reserve_bytes=room.reserve_bytes,
        available_bytes=available,
        kv_bytes_per_token=ceil_bytes(slot_bytes),
        kinds=kinds,
        max_num_batched_tokens=limits.max_num_batched_tokens,
        state_bytes_per_sequence=ceil_bytes(
            sum((n * m.state_bytes(scenario.attention_tp) for m, n in pairs), start=Fraction(0))
        ),
        draft_weight_bytes=draft_weights,
        ranks=scenario.attention_ranks,
    )


def layer_kinds(scenario: Scenario, pairs: Sequence[tuple[Mixer, int]]) -> tuple[LayerKind, ...]:
    """The caching layers (``pairs``: the model's, or a pipeline stage's, each distinct
    mixer with its count, model/model.py counted) by kind, each with the slots vLLM's
    grouping gives it: one kind fills its own group; with several, every kind is padded
    to a multiple of the group size (the smallest kind's count, or the largest's when all
    are close)."""
    counts: dict[tuple[int | None, Fraction], int] = {}
    for mixer, n in pairs:
        per_token = _layer_bytes_per_token(scenario, mixer)
        if per_token:
            key = (mixer.sliding_window, per_token)
            counts[key] = counts.get(key, 0) + n
    if not counts:
        return ()
    smallest, largest = min(counts.values()), max(counts.values())
    group = largest if largest < smallest * WIDE_GROUP_RATIO else smallest
    ordered = sorted(counts.items(), key=lambda item: (item[0][0] is None, item[0][0] or 0))
    regular = tuple(
        LayerKind(window, n, -(-n // group) * group, per_token)
        for (window, per_token), n in ordered
    )
    return regular + _pooled_kinds(scenario, pairs)


def _pooled_kinds(scenario: Scenario, pairs: Sequence[tuple[Mixer, int]]) -> tuple[LayerKind, ...]:
    """DeepSeek-V4's pooled entries (and a CSA layer's index keys) as kinds of their own
    that every token of a request keeps: per layer, d / r elements a token in the KV dtype,
    plus the index keys' fixed bytes. Each ratio is a pool of its own in the engines, so
    no group pads them."""
    counts: dict[Fraction, int] = {}
    for mixer, n in pairs:
        for _, elements, _ in mixer.compressed_kv:
            per_token = scenario.kv_dtype.bytes_for(elements) + mixer.fixed_kv_bytes_per_token
            counts[per_token] = counts.get(per_token, 0) + n
    return tuple(LayerKind(None, n, n, per_token) for per_token, n in counts.items())


def _layer_bytes_per_token(scenario: Scenario, mixer: Mixer) -> Fraction:
    """One layer's cache per token on one GPU: K in kv_dtype, V in v_dtype when it differs
    (every head under data-parallel attention)."""
    elements = mixer.kv_elements_per_token(scenario.attention_tp)
    values = v_elements(mixer, elements)
    v_dtype = scenario.v_dtype or scenario.kv_dtype
    return scenario.kv_dtype.bytes_for(elements - values) + v_dtype.bytes_for(values)


def v_elements(mixer: Mixer, elements: int) -> int:
    """The V share of an attention layer's cache (half, unless values are narrower than
    keys); MLA's latent and anything else is all K."""
    from decodecalc.model.layers import Attention

    if not isinstance(mixer, Attention):
        return 0
    return elements * mixer.v_dim // mixer.kv_dim
