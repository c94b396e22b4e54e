"""Multi-head latent attention: the KV cache of DeepSeek-V2/V3 and Kimi-K2."""

from __future__ import annotations

from decodecalc.physics.causal import causal_pairs
from decodecalc.physics.tensors import Sharding, TensorGroup
from decodecalc.record import record

SPLIT, REPLICATED = Sharding.SPLIT, Sharding.REPLICATED


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
        return self.num_heads * self._per_head * causal_pairs(prompt_tokens, None)

    def state_elements(self, tp: int) -> int:
        return 0
