"""The layer kinds the estimator understands, each counting its own parameters and cache.

A layer is a token mixer (attention of some kind, or a recurrent/linear-attention/Mamba
block) followed by a feed-forward block (dense or mixture of experts). The common kinds live
here; MLA (mla.py), linear attention (linear_attention.py), Mamba (mamba.py) and MoE
(moe.py) are modules of their own, loaded only for the models that have them. Each kind
states what a decode step reads of it: weights as tensor groups, and per sequence a KV cache
that grows with the context (capped by a window, cut to a chunk or to a top-k: kvcache.py)
or a state of constant size.
"""

from __future__ import annotations

from fractions import Fraction
from typing import TYPE_CHECKING, TypeAlias

from decodecalc.model.causal import causal_pairs
from decodecalc.model.layer_kind import CacheTerms, TpRule
from decodecalc.model.pooled import NO_POOLED
from decodecalc.model.tensors import Sharding, TensorGroup
from decodecalc.record import record

SPLIT, REPLICATED, KV_HEADS = Sharding.SPLIT, Sharding.REPLICATED, Sharding.KV_HEADS


def chunk_tokens(context_tokens: int | Fraction, chunk: int) -> int | Fraction:
    """Tokens a chunked layer reads at context T: those of the chunk the newest token is in,
    T - c x floor((T - 1) / c) for T > 0 (c at T = c, 1 at T = c + 1), none at T = 0."""
    if context_tokens <= 0:
        return 0
    return context_tokens - chunk * ((context_tokens - 1) // chunk)


@record
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
    qk_norm_whole: bool = False
    """MiniMax-M2's per-layer QK norm: one weight per q and k channel of every head, not a
    shared head_dim-wide one."""
    attention_chunk: int | None = None
    """Llama 4's chunked local attention: a layer reads only the tokens of the current
    chunk of this many tokens (kvcache.chunk_tokens), a sawtooth in the context."""
    kv_shared: bool = False
    """Gemma 3n's last layers: K and V come from the cache of an earlier layer of the same
    kind, so the layer caches nothing of its own yet reads that cache again each step."""
    v_head_dim: int = 0
    """Width of each value head when it differs from the key's (MiMo-V2-Flash: 192-wide
    keys, 128-wide values); 0: ``head_dim``."""
    v_from_k: bool = False
    """Gemma 4's full-attention layers (``attention_k_eq_v``): the values are the key
    projection, normed apart, so there is no v_proj; the cache still holds K and V."""

    kind = "attention"
    kv_read_limit = None
    compressed_kv = NO_POOLED
    """DeepSeek-V4's pooled entries (model/compressed_attention.py); none here."""
    """Top-k sparse attention's cap on tokens read (DeepSeek-V3.2's MLA); none here."""
    fixed_kv_bytes_per_token = 0
    """Cache bytes per token in a fixed format, whatever the KV dtype (an indexer's keys)."""

    @property
    def v_dim(self) -> int:
        return self.v_head_dim or self.head_dim

    @property
    def kv_dim(self) -> int:
        """Cached elements per KV head per token: a key and a value."""
        return self.head_dim + self.v_dim

    def tensor_groups(self, hidden: int) -> tuple[TensorGroup, ...]:
        q_out = self.num_heads * self.head_dim
        kv_out = self.num_kv_heads * self.head_dim
        q_params = hidden * q_out * (2 if self.output_gate else 1) + (q_out if self.qkv_bias else 0)
        o_params = self.num_heads * self.v_dim * hidden
        kv_width = self.num_kv_heads * (self.head_dim if self.v_from_k else self.kv_dim)
        kv_params = hidden * kv_width + (kv_width if self.qkv_bias else 0)
        groups = [
            TensorGroup("attention q, o", q_params + o_params, True, SPLIT),
            TensorGroup("attention k, v", kv_params, True, KV_HEADS, self.num_kv_heads),
        ]
        norm = q_out + kv_out if self.qk_norm_whole else 2 * self.head_dim
        small = (hidden if self.o_bias else 0) + (norm if self.qk_norm else 0)
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
        if self.attention_chunk:
            window = f", chunked local (chunks of {self.attention_chunk:,})"
        values = f" (values {self.v_dim})" if self.v_dim != self.head_dim else ""
        values += ", V from the K projection" if self.v_from_k else ""
        shape = f"{shape} {self.num_heads}/{self.num_kv_heads} heads x {self.head_dim}{values}"
        return f"{shape}{window}"

    def tp_ok(self, tp: int) -> bool:
        kv = self.num_kv_heads
        return self.num_heads % tp == 0 and (kv % tp == 0 or tp % kv == 0)

    def kv_heads_per_gpu(self, tp: int) -> int:
        """KV heads each GPU caches: kv/N while N <= kv, then one whole head (replicated)."""
        return -(-self.num_kv_heads // tp)

    def kv_elements_per_token(self, tp: int) -> int:
        """Cached elements per token on one GPU: kv heads x (K and V widths), 2 x head_dim
        where they are equal (none for a layer that reads another layer's cache)."""
        return 0 if self.kv_shared else self._kv_width(tp)

    def kv_reread_elements_per_token(self, tp: int) -> int:
        """Elements per token a step reads from a cache another layer holds."""
        return self._kv_width(tp) if self.kv_shared else 0

    def _kv_width(self, tp: int) -> int:
        return self.kv_heads_per_gpu(tp) * self.kv_dim

    def kv_replicated(self, tp: int) -> bool:
        return tp > self.num_kv_heads

    def attention_flops(self, context_tokens: int) -> int:
        """One token's scores and weighted sum over the tokens it reads: 4 x T x heads x
        head_dim (scores over the keys, the sum over the values: 2 x T x heads x (K + V
        widths)), T capped by the window or cut back to the current chunk."""
        if self.attention_chunk:
            tokens = int(chunk_tokens(context_tokens, self.attention_chunk))
        else:
            tokens = min(context_tokens, self.sliding_window or context_tokens)
        return 2 * tokens * self.num_heads * self.kv_dim

    def prefill_attention_flops(self, prompt_tokens: int) -> int:
        """Causal attention over a prompt: token t attends to min(t, window) earlier ones,
        or to the t mod c before it in its chunk."""
        if self.attention_chunk:
            c = self.attention_chunk
            full, rest = divmod(prompt_tokens, c)
            pairs = full * (c * (c - 1) // 2) + rest * (rest - 1) // 2
        else:
            pairs = causal_pairs(prompt_tokens, self.sliding_window)
        return 2 * self.num_heads * self.kv_dim * pairs

    def state_elements(self, tp: int) -> int:
        return 0

    def state_bytes(self, tp: int) -> Fraction:
        return Fraction(0)

    def cache_terms(self, tp: int) -> CacheTerms:
        """K and V per KV head on this GPU, capped by a window or cut to a chunk; a layer
        that reads an earlier layer's cache says so (it holds nothing of its own)."""
        window = f", window {self.sliding_window:,}" if self.sliding_window else ""
        window += f", chunks of {self.attention_chunk:,}" if self.attention_chunk else ""
        shared = self.kv_reread_elements_per_token(tp)
        return CacheTerms(
            "attention",
            f"2 (K,V) x {self.kv_heads_per_gpu(tp)} KV heads x {self.head_dim}{window}"
            f" = {self.kv_elements_per_token(tp) or shared:,} elements per token"
            + (", read from an earlier layer's cache (held there)" if shared else ""),
        )

    def tp_rule(self) -> TpRule:
        """One KV head (multi-query attention) splits across no GPUs: said as such, not
        "up to 1 GPUs"."""
        if self.num_kv_heads == 1:
            return TpRule("one KV head, replicated on every TP rank")
        return TpRule(
            "KV heads split across up to {limits} GPUs, then replicated", self.num_kv_heads
        )


@record
class DenseMLP:
    """A feed-forward block: gated (SwiGLU/GeGLU: gate, up, down) or plain (up, down).
    Size 0 is a block without one: Nemotron-H follows some mixers by another mixer."""

    intermediate_size: int
    gated: bool = True
    bias: bool = False
    """Biases on its projections (StarCoder2's, GPT-NeoX's): one a channel of each."""

    routed = False
    """Not a mixture of experts (MoE.routed is True)."""

    def tensor_groups(self, hidden: int) -> tuple[TensorGroup, ...]:
        if not self.intermediate_size:
            return ()
        matrices = 3 if self.gated else 2
        weights = TensorGroup("mlp", matrices * hidden * self.intermediate_size, True, SPLIT)
        if not self.bias:
            return (weights,)
        biases = (matrices - 1) * self.intermediate_size + hidden
        return (weights, TensorGroup("norms and biases", biases, True, REPLICATED))

    def describe(self) -> str:
        if not self.intermediate_size:
            return "no MLP"
        return f"dense MLP {self.intermediate_size:,}" + ("" if self.gated else " (not gated)")


@record
class Layer:
    """One block: a token mixer, a feed-forward block, and ``norms`` hidden-size norms
    (two in most models; Gemma 2/3 add a norm after each sub-block, four in all)."""

    mixer: Mixer
    ffn: FFN
    norms: int = 2
    side_params: int = 0
    """Weights of side blocks read every step beside the mixer and the MLP (Gemma 3n's
    AltUp router and coefficients, LAuReL's low-rank path, the per-layer input gate and
    projection); small, so every GPU holds them whole."""

    def tensor_groups(self, hidden: int) -> tuple[TensorGroup, ...]:
        side = (TensorGroup("side blocks", self.side_params, True, REPLICATED),)
        return (
            *self.mixer.tensor_groups(hidden),
            *self.ffn.tensor_groups(hidden),
            TensorGroup("norms and biases", self.norms * hidden, True, REPLICATED),
            *(side if self.side_params else ()),
        )

    def describe(self) -> str:
        return f"{self.mixer.describe()}; {self.ffn.describe()}"


if TYPE_CHECKING:
    from decodecalc.model.compressed_attention import CompressedAttention
    from decodecalc.model.kimi_delta import KimiDeltaAttention
    from decodecalc.model.linear_attention import LightningAttention, LinearAttention
    from decodecalc.model.mamba import Mamba1, Mamba2
    from decodecalc.model.mla import LatentAttention
    from decodecalc.model.moe import MoE
    from decodecalc.model.no_mixer import NoMixer
    from decodecalc.model.short_conv import ShortConv

    Mixer: TypeAlias = (
        Attention
        | LatentAttention
        | LinearAttention
        | Mamba2
        | Mamba1
        | LightningAttention
        | ShortConv
        | CompressedAttention
        | KimiDeltaAttention
        | NoMixer
    )
    FFN: TypeAlias = DenseMLP | MoE
