"""The layer kinds the estimator understands, each counting its own parameters and cache.

A layer is a token mixer (attention of some kind, or a recurrent/linear-attention block)
followed by a feed-forward block (dense or mixture of experts). Each kind states what a
decode step reads of it: weights as tensor groups, and per sequence a KV cache that grows
with the context (capped by a window) or a state of constant size.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from decodecalc.tensors import Sharding, TensorGroup

SPLIT, REPLICATED, KV_HEADS = Sharding.SPLIT, Sharding.REPLICATED, Sharding.KV_HEADS


@dataclass(frozen=True)
class Attention:
    """Softmax attention caching K and V per token: MHA, GQA or MQA by ``num_kv_heads``.

    ``sliding_window`` caps the tokens a layer keeps and reads (None: all of them).
    """

    num_heads: int
    num_kv_heads: int
    head_dim: int
    qkv_bias: bool = False
    o_bias: bool = False
    qk_norm: bool = False
    sliding_window: int | None = None
    output_gate: bool = False
    """Qwen3-Next: q_proj also produces a per-head gate, doubling its width."""
    sinks: bool = False
    """gpt-oss: one learned attention-sink logit per head."""

    kind = "attention"

    def tensor_groups(self, hidden: int) -> tuple[TensorGroup, ...]:
        q_out = self.num_heads * self.head_dim
        kv_out = self.num_kv_heads * self.head_dim
        q_params = hidden * q_out * (2 if self.output_gate else 1) + (q_out if self.qkv_bias else 0)
        o_params = q_out * hidden
        kv_params = 2 * hidden * kv_out + (2 * kv_out if self.qkv_bias else 0)
        groups = [
            TensorGroup("attention q, o", q_params + o_params, True, SPLIT),
            TensorGroup("attention k, v", kv_params, True, KV_HEADS, self.num_kv_heads),
        ]
        small = (hidden if self.o_bias else 0) + (2 * self.head_dim if self.qk_norm else 0)
        if small:
            groups.append(TensorGroup("norms and biases", small, True, REPLICATED))
        if self.sinks:
            groups.append(TensorGroup("attention q, o", self.num_heads, True, SPLIT))
        return tuple(groups)

    def describe(self) -> str:
        shape = (
            "MHA"
            if self.num_kv_heads == self.num_heads
            else "MQA"
            if self.num_kv_heads == 1
            else "GQA"
        )
        window = f", sliding window {self.sliding_window:,}" if self.sliding_window else ""
        return f"{shape} {self.num_heads}/{self.num_kv_heads} heads x {self.head_dim}{window}"

    def tp_ok(self, tp: int) -> bool:
        kv = self.num_kv_heads
        return self.num_heads % tp == 0 and (kv % tp == 0 or tp % kv == 0)

    def kv_heads_per_gpu(self, tp: int) -> int:
        """KV heads each GPU caches: kv/N while N <= kv, then one whole head (replicated)."""
        return math.ceil(self.num_kv_heads / tp)

    def kv_elements_per_token(self, tp: int) -> int:
        """Cached elements per token on one GPU: 2 (K and V) * kv heads * head_dim."""
        return 2 * self.kv_heads_per_gpu(tp) * self.head_dim

    def kv_replicated(self, tp: int) -> bool:
        return tp > self.num_kv_heads

    def attention_flops(self, context_tokens: int) -> int:
        """One token's scores and weighted sum over the cached tokens: 4 x T x heads x head_dim."""
        tokens = min(context_tokens, self.sliding_window or context_tokens)
        return 4 * tokens * self.num_heads * self.head_dim

    def prefill_attention_flops(self, prompt_tokens: int) -> int:
        """Causal attention over a prompt: token t attends to min(t, window) earlier ones."""
        return (
            4 * self.num_heads * self.head_dim * _causal_pairs(prompt_tokens, self.sliding_window)
        )

    def state_elements(self, tp: int) -> int:
        return 0


@dataclass(frozen=True)
class LatentAttention:
    """Multi-head latent attention (DeepSeek-V2/V3, Kimi-K2): one compressed latent of
    ``kv_lora_rank`` plus a shared RoPE key of ``qk_rope_head_dim`` per token, for K and V
    together. Every TP rank reads the whole latent: it is not split by heads."""

    num_heads: int
    kv_lora_rank: int
    qk_nope_head_dim: int
    qk_rope_head_dim: int
    v_head_dim: int
    q_lora_rank: int | None = None

    kind = "mla"
    sliding_window = None

    def tensor_groups(self, hidden: int) -> tuple[TensorGroup, ...]:
        q_head = self.qk_nope_head_dim + self.qk_rope_head_dim
        if self.q_lora_rank:
            q_down = hidden * self.q_lora_rank + self.q_lora_rank  # q_a_proj + q_a_layernorm
            q_up = self.q_lora_rank * self.num_heads * q_head
        else:
            q_down, q_up = 0, hidden * self.num_heads * q_head
        kv_down = hidden * (self.kv_lora_rank + self.qk_rope_head_dim) + self.kv_lora_rank
        kv_up = self.kv_lora_rank * self.num_heads * (self.qk_nope_head_dim + self.v_head_dim)
        o = self.num_heads * self.v_head_dim * hidden
        return (
            TensorGroup("attention q, o", q_up + o, True, SPLIT),
            TensorGroup("attention k, v", kv_up, True, SPLIT),
            TensorGroup("MLA down-projections", q_down + kv_down, True, REPLICATED),
        )

    def describe(self) -> str:
        return (
            f"MLA {self.num_heads} heads, latent {self.kv_lora_rank} + rope "
            f"{self.qk_rope_head_dim} per token"
        )

    def tp_ok(self, tp: int) -> bool:
        return self.num_heads % tp == 0

    def kv_elements_per_token(self, tp: int) -> int:
        """kv_lora_rank + qk_rope_head_dim, the same on every GPU whatever the TP."""
        return self.kv_lora_rank + self.qk_rope_head_dim

    def kv_replicated(self, tp: int) -> bool:
        return tp > 1

    def attention_flops(self, context_tokens: int) -> int:
        """Absorbed MLA: scores over the latent and the RoPE key, values from the latent."""
        return context_tokens * self.num_heads * self._per_head

    @property
    def _per_head(self) -> int:
        return 2 * (self.kv_lora_rank + self.qk_rope_head_dim) + 2 * self.kv_lora_rank

    def prefill_attention_flops(self, prompt_tokens: int) -> int:
        return self.num_heads * self._per_head * _causal_pairs(prompt_tokens, None)

    def state_elements(self, tp: int) -> int:
        return 0


@dataclass(frozen=True)
class LinearAttention:
    """Gated DeltaNet linear attention (Qwen3-Next): a recurrent state of constant size per
    sequence (value heads x key dim x value dim, plus the short convolution's last
    ``conv_kernel - 1`` inputs), read and written every step, never growing with context."""

    num_key_heads: int
    num_value_heads: int
    key_head_dim: int
    value_head_dim: int
    conv_kernel: int

    kind = "linear"
    sliding_window = None

    @property
    def _conv_dim(self) -> int:
        return (
            2 * self.num_key_heads * self.key_head_dim + self.num_value_heads * self.value_head_dim
        )

    def tensor_groups(self, hidden: int) -> tuple[TensorGroup, ...]:
        key_dim = self.num_key_heads * self.key_head_dim
        value_dim = self.num_value_heads * self.value_head_dim
        projections = hidden * (2 * key_dim + 2 * value_dim)  # in_proj_qkvz
        projections += hidden * 2 * self.num_value_heads  # in_proj_ba
        projections += value_dim * hidden  # out_proj
        small = self._conv_dim * self.conv_kernel + 2 * self.num_value_heads  # conv1d, dt, A
        return (
            TensorGroup("linear attention", projections + small, True, SPLIT),
            TensorGroup("norms and biases", self.value_head_dim, True, REPLICATED),
        )

    def describe(self) -> str:
        return (
            f"linear attention (Gated DeltaNet) {self.num_value_heads} value heads, constant state"
        )

    def tp_ok(self, tp: int) -> bool:
        return self.num_key_heads % tp == 0 and self.num_value_heads % tp == 0

    def kv_elements_per_token(self, tp: int) -> int:
        return 0

    def kv_replicated(self, tp: int) -> bool:
        return False

    def attention_flops(self, context_tokens: int) -> int:
        """The delta-rule state update and read: constant, about 4 x heads x dk x dv."""
        return 4 * self.num_value_heads * self.key_head_dim * self.value_head_dim

    def prefill_attention_flops(self, prompt_tokens: int) -> int:
        return prompt_tokens * self.attention_flops(0)

    def state_elements(self, tp: int) -> int:
        """Per sequence on one GPU: recurrent state plus convolution state."""
        recurrent = self.num_value_heads * self.key_head_dim * self.value_head_dim
        conv = self._conv_dim * (self.conv_kernel - 1)
        return (recurrent + conv) // tp


def _causal_pairs(tokens: int, window: int | None) -> int:
    """Sum over t = 0..tokens-1 of min(t, window): query-key pairs of causal attention.

    >>> _causal_pairs(4, None), _causal_pairs(4, 2)
    (6, 5)
    """
    if window is None or tokens - 1 <= window:
        return tokens * (tokens - 1) // 2
    return window * (window + 1) // 2 + (tokens - 1 - window) * window


Mixer = Attention | LatentAttention | LinearAttention


@dataclass(frozen=True)
class DenseMLP:
    """A feed-forward block: gated (SwiGLU/GeGLU: gate, up, down) or plain (up, down)."""

    intermediate_size: int
    gated: bool = True

    def tensor_groups(self, hidden: int) -> tuple[TensorGroup, ...]:
        matrices = 3 if self.gated else 2
        return (TensorGroup("mlp", matrices * hidden * self.intermediate_size, True, SPLIT),)

    def describe(self) -> str:
        return f"dense MLP {self.intermediate_size:,}"


@dataclass(frozen=True)
class MoE:
    """A mixture of experts: a router picks ``experts_per_token`` of ``num_experts`` gated
    experts per token; shared experts (one MLP of ``shared_intermediate_size``) always run."""

    num_experts: int
    experts_per_token: int
    expert_intermediate_size: int
    shared_intermediate_size: int = 0
    router_bias: bool = False
    expert_bias: bool = False
    shared_gate: bool = False
    """Qwen3-Next scales the shared expert by a learned sigmoid gate (hidden -> 1)."""

    def tensor_groups(self, hidden: int) -> tuple[TensorGroup, ...]:
        per_expert = 3 * hidden * self.expert_intermediate_size
        if self.expert_bias:
            per_expert += 2 * self.expert_intermediate_size + hidden
        router = hidden * self.num_experts + (self.num_experts if self.router_bias else 0)
        router += hidden if self.shared_gate else 0
        groups = [
            TensorGroup(
                "routed experts",
                self.num_experts * per_expert,
                True,
                SPLIT,
                experts=self.num_experts,
                experts_per_token=self.experts_per_token,
            ),
            TensorGroup("router", router, True, REPLICATED),
        ]
        if self.shared_intermediate_size:
            shared = 3 * hidden * self.shared_intermediate_size
            groups.append(TensorGroup("shared experts", shared, True, SPLIT))
        return tuple(groups)

    def describe(self) -> str:
        shared = (
            f" + shared {self.shared_intermediate_size:,}" if self.shared_intermediate_size else ""
        )
        return (
            f"MoE {self.experts_per_token} of {self.num_experts} experts x "
            f"{self.expert_intermediate_size:,}{shared}"
        )


FFN = DenseMLP | MoE


@dataclass(frozen=True)
class Layer:
    """One block: a token mixer, a feed-forward block, and ``norms`` hidden-size norms
    (two in most models; Gemma 2/3 add a norm after each sub-block, four in all)."""

    mixer: Mixer
    ffn: FFN
    norms: int = 2

    def tensor_groups(self, hidden: int) -> tuple[TensorGroup, ...]:
        return (
            *self.mixer.tensor_groups(hidden),
            *self.ffn.tensor_groups(hidden),
            TensorGroup("norms and biases", self.norms * hidden, True, REPLICATED),
        )

    def describe(self) -> str:
        return f"{self.mixer.describe()}; {self.ffn.describe()}"
