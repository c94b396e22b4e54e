"""Model architecture as a stack of layers, and what each decode step reads of it.

The estimator never looks at config.json field names: the loading layer turns a preset
into these objects, and everything here is counted from shapes. Tensor groups carry how
tensor parallelism splits them (physics.md sections 2 and 3) so the per-GPU figures
follow from the same description as the parameter count.
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from dataclasses import dataclass
from enum import Enum


class Sharding(Enum):
    """How tensor parallelism over N GPUs divides a tensor."""

    SPLIT = "split"
    """Column- or row-parallel (and vocab-parallel): each GPU holds 1/N."""
    KV_HEADS = "kv_heads"
    """Split by KV head while N <= kv_heads; past that each GPU keeps one whole head."""
    REPLICATED = "replicated"
    """Norms and row-parallel biases: every GPU holds all of it."""


@dataclass(frozen=True)
class TensorGroup:
    """Parameters that share a role, a sharding rule and whether a decode step reads them."""

    name: str
    params: int
    streamed: bool
    """Read in full every decode step; False for the input embedding (a step gathers B rows)."""
    sharding: Sharding
    kv_heads: int = 0

    def params_per_gpu(self, tp: int) -> int:
        """Parameters one of ``tp`` GPUs holds (the largest shard when N does not divide)."""
        if self.sharding is Sharding.REPLICATED:
            return self.params
        if self.sharding is Sharding.KV_HEADS:
            per_head = self.params // self.kv_heads
            return per_head * math.ceil(self.kv_heads / tp)
        return math.ceil(self.params / tp)


@dataclass(frozen=True)
class Attention:
    """Softmax attention that caches K and V per token: MHA, GQA or MQA by ``num_kv_heads``.

    ``sliding_window`` caps the tokens a layer keeps and reads (None: all of them).
    """

    num_heads: int
    num_kv_heads: int
    head_dim: int
    qkv_bias: bool = False
    qk_norm: bool = False
    sliding_window: int | None = None

    def tensor_groups(self, hidden: int) -> tuple[TensorGroup, ...]:
        q_out = self.num_heads * self.head_dim
        kv_out = self.num_kv_heads * self.head_dim
        bias_q, bias_kv = (q_out, 2 * kv_out) if self.qkv_bias else (0, 0)
        groups = [
            TensorGroup("attention q, o", 2 * hidden * q_out + bias_q, True, Sharding.SPLIT),
            TensorGroup(
                "attention k, v",
                2 * hidden * kv_out + bias_kv,
                True,
                Sharding.KV_HEADS,
                self.num_kv_heads,
            ),
        ]
        if self.qk_norm:
            groups.append(TensorGroup("norms", 2 * self.head_dim, True, Sharding.REPLICATED))
        return tuple(groups)

    def kv_heads_per_gpu(self, tp: int) -> int:
        """KV heads each GPU caches: kv/N while N <= kv, then one whole head (replicated)."""
        return math.ceil(self.num_kv_heads / tp)

    def kv_elements_per_token(self, tp: int) -> int:
        """Cached elements per token on one GPU: 2 (K and V) * kv heads * head_dim."""
        return 2 * self.kv_heads_per_gpu(tp) * self.head_dim


@dataclass(frozen=True)
class DenseMLP:
    """A feed-forward block: gated (SwiGLU: gate, up, down) or plain (up, down)."""

    intermediate_size: int
    gated: bool = True

    def tensor_groups(self, hidden: int) -> tuple[TensorGroup, ...]:
        matrices = 3 if self.gated else 2
        return (
            TensorGroup("mlp", matrices * hidden * self.intermediate_size, True, Sharding.SPLIT),
        )


@dataclass(frozen=True)
class Layer:
    """One transformer block: attention, MLP, and two hidden-size norms."""

    attention: Attention
    mlp: DenseMLP

    def tensor_groups(self, hidden: int) -> tuple[TensorGroup, ...]:
        return (
            *self.attention.tensor_groups(hidden),
            *self.mlp.tensor_groups(hidden),
            TensorGroup("norms", 2 * hidden, True, Sharding.REPLICATED),
        )


@dataclass(frozen=True)
class Model:
    """A decoder-only language model, counted from its architecture."""

    id: str
    name: str
    family: str
    hidden_size: int
    vocab_size: int
    tie_word_embeddings: bool
    layers: tuple[Layer, ...]
    max_context_tokens: int
    official_params: int
    official_params_source: str = ""
    aliases: tuple[str, ...] = ()
    source: str = ""

    def tensor_groups(self) -> tuple[TensorGroup, ...]:
        """Every parameter once, grouped by role and summed over layers."""
        embedding = self.vocab_size * self.hidden_size
        if self.tie_word_embeddings:
            head = [TensorGroup("embedding = LM head (tied)", embedding, True, Sharding.SPLIT)]
        else:
            head = [
                TensorGroup("embedding", embedding, False, Sharding.SPLIT),
                TensorGroup("LM head", embedding, True, Sharding.SPLIT),
            ]
        per_layer = (g for layer in self.layers for g in layer.tensor_groups(self.hidden_size))
        final_norm = TensorGroup("norms", self.hidden_size, True, Sharding.REPLICATED)
        return (*head, *_merge([*per_layer, final_norm]))

    def total_params(self) -> int:
        """All parameters, the input embedding included (what memory must hold)."""
        return sum(g.params for g in self.tensor_groups())

    def streamed_params_per_gpu(self, tp: int = 1) -> int:
        """Parameters one GPU reads every decode step (physics.md section 2)."""
        return sum(g.params_per_gpu(tp) for g in self.tensor_groups() if g.streamed)

    def attention_layers(self) -> tuple[Attention, ...]:
        return tuple(layer.attention for layer in self.layers)

    def valid_tp(self, limit: int = 64) -> tuple[int, ...]:
        """TP sizes an engine such as vLLM accepts: they divide the attention heads, and
        either divide the KV heads or are a multiple of them (then KV heads replicate)."""
        return tuple(n for n in range(1, limit + 1) if self._tp_fits(n))

    def _tp_fits(self, tp: int) -> bool:
        return all(
            a.num_heads % tp == 0 and (a.num_kv_heads % tp == 0 or tp % a.num_kv_heads == 0)
            for a in self.attention_layers()
        )

    def supports_tp(self, tp: int) -> bool:
        return tp >= 1 and self._tp_fits(tp)


def _merge(groups: Iterable[TensorGroup]) -> list[TensorGroup]:
    """Sum groups that differ only in size, keeping first-seen order."""
    merged: dict[tuple[str, bool, Sharding, int], int] = {}
    for g in groups:
        key = (g.name, g.streamed, g.sharding, g.kv_heads)
        merged[key] = merged.get(key, 0) + g.params
    return [
        TensorGroup(name, params, streamed, sharding, kv)
        for (name, streamed, sharding, kv), params in merged.items()
    ]
