"""Multi-head latent attention: the KV cache of DeepSeek-V2/V3 and Kimi-K2."""

from __future__ import annotations

from fractions import Fraction

from decodecalc.model.causal import causal_pairs
from decodecalc.model.layer_kind import CacheTerms, TpRule
from decodecalc.model.pooled import NO_POOLED
from decodecalc.model.tensors import Sharding, TensorGroup
from decodecalc.record import record

SPLIT, REPLICATED = Sharding.SPLIT, Sharding.REPLICATED

INDEXER_SCALE_BLOCK = 128
"""Indexer key values per FP32 scale in DeepSeek-V3.2's cache (its ``block_size``)."""


@record
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
    index_topk: int | None = None
    """DeepSeek-V3.2's sparse attention: each query reads only the latents of the top
    ``index_topk`` tokens that its lightning indexer picks (None: every token, as V3)."""
    index_heads: int = 0
    index_head_dim: int = 0

    kind = "mla"
    sliding_window = None
    attention_chunk = None
    compressed_kv = NO_POOLED

    @property
    def kv_read_limit(self) -> int | None:
        """Sparse MLA reads min(T, top-k) latents a step, though it keeps all T."""
        return self.index_topk

    @property
    def fixed_kv_bytes_per_token(self) -> int:
        """The indexer's own key cache, in FP8 whatever the KV dtype, with one FP32 scale per
        128 values (the reference implementation's k_cache and k_scale_cache; vLLM's
        indexer cache stores the same 132 bytes for a 128-dim key). Read in full every step:
        the indexer scores every cached token to pick the top k."""
        if not self.index_heads:
            return 0
        return self.index_head_dim + 4 * -(-self.index_head_dim // INDEXER_SCALE_BLOCK)

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
        groups = (
            TensorGroup("attention q, o", q_up + o, True, SPLIT),
            TensorGroup("attention k, v", kv_up, True, SPLIT),
            TensorGroup("MLA down-projections", q_down + kv_down, True, REPLICATED),
        )
        if not self.index_heads:
            return groups
        # The lightning indexer: query heads from the q latent (wq_b), one shared key
        # (wk) with its LayerNorm (weight and bias), and per-head weights (weights_proj).
        index_q = (self.q_lora_rank or hidden) * self.index_heads * self.index_head_dim
        index_k = hidden * self.index_head_dim + 2 * self.index_head_dim
        indexer = index_q + index_k + hidden * self.index_heads
        return (*groups, TensorGroup("indexer", indexer, True, REPLICATED))

    def describe(self) -> str:
        sparse = (
            f", sparse: top {self.index_topk:,} tokens by an indexer of {self.index_heads}"
            f" heads x {self.index_head_dim}"
            if self.index_topk
            else ""
        )
        return (
            f"MLA {self.num_heads} heads, latent {self.kv_lora_rank} + rope "
            f"{self.qk_rope_head_dim} per token{sparse}"
        )

    def tp_ok(self, tp: int) -> bool:
        return self.num_heads % tp == 0

    def kv_elements_per_token(self, tp: int) -> int:
        """kv_lora_rank + qk_rope_head_dim, the same on every GPU whatever the TP."""
        return self.kv_lora_rank + self.qk_rope_head_dim

    def kv_reread_elements_per_token(self, tp: int) -> int:
        return 0

    def kv_replicated(self, tp: int) -> bool:
        return tp > 1

    def attention_flops(self, context_tokens: int) -> int:
        """Absorbed MLA: scores over the latent and the RoPE key, values from the latent,
        for the tokens read; a sparse layer's indexer scores every cached key."""
        read = min(context_tokens, self.index_topk or context_tokens)
        return read * self.num_heads * self._per_head + context_tokens * self._index_per_token

    @property
    def _per_head(self) -> int:
        return 2 * (self.kv_lora_rank + self.qk_rope_head_dim) + 2 * self.kv_lora_rank

    @property
    def _index_per_token(self) -> int:
        return 2 * self.index_heads * self.index_head_dim

    def prefill_attention_flops(self, prompt_tokens: int) -> int:
        attention = self.num_heads * self._per_head * causal_pairs(prompt_tokens, self.index_topk)
        return attention + self._index_per_token * causal_pairs(prompt_tokens, None)

    def state_elements(self, tp: int) -> int:
        return 0

    def state_bytes(self, tp: int) -> Fraction:
        return Fraction(0)

    def cache_terms(self, tp: int) -> CacheTerms:
        """The latent and the RoPE key, whole on every GPU; a sparse layer's top k."""
        return CacheTerms(
            "MLA latent",
            f"{self.kv_lora_rank} + {self.qk_rope_head_dim} = "
            f"{self.kv_elements_per_token(tp):,} elements per token (whole on every GPU)"
            + (f", top {self.index_topk:,} tokens read" if self.index_topk else ""),
        )

    def tp_rule(self) -> TpRule:
        return TpRule("the MLA latent is replicated: every TP rank reads all of it")
