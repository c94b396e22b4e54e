"""Mixers with a constant state per sequence instead of a KV cache: Qwen3-Next's Gated
DeltaNet here, Mamba in mamba.py."""

from __future__ import annotations

from fractions import Fraction
from typing import ClassVar

from decodecalc.model.layer_kind import CacheTerms, TpRule
from decodecalc.model.pooled import NO_POOLED
from decodecalc.model.tensors import Sharding, TensorGroup
from decodecalc.record import record

SPLIT, REPLICATED = Sharding.SPLIT, Sharding.REPLICATED


@record
class StateFormat:
    """Bits per value of a constant state's two parts, which engines keep apart from the
    KV cache (--kv-dtype never touches them). vLLM (vllm/config/cache.py,
    model_executor/layers/mamba/mamba_utils.py): the convolution inputs in
    ``mamba_cache_dtype``, "auto" the model's dtype (BF16); the recurrent (SSM) state in
    ``mamba_ssm_cache_dtype``, "auto" the same, but FP32 where a model's config asks
    (``mamba_ssm_cache_dtype``, Qwen3.5's ``mamba_ssm_dtype``), FP32 for Nemotron-H by
    default, and always FP32 for Kimi Delta Attention's recurrent state. SGLang keeps the
    SSM state in FP32 unless told otherwise (--mamba-ssm-dtype)."""

    conv_bits: int = 16
    recurrent_bits: int = 16


BF16_STATE = StateFormat()
FP32_RECURRENT = StateFormat(recurrent_bits=32)


class ConstantState:
    """What a constant-state mixer says of the KV cache: nothing cached per token, nothing
    that grows or is windowed; its per-step arithmetic is the same at every context. Its
    state is two parts (convolution inputs, a recurrent state), each priced in its own
    format (``state_format``), whatever the KV dtype."""

    sliding_window = None
    attention_chunk = None
    kv_read_limit = None
    compressed_kv = NO_POOLED
    fixed_kv_bytes_per_token = 0
    kind: ClassVar[str]
    cache_name: ClassVar[str | None] = None
    """What explain calls the kind, where not its ``kind``."""
    split_rule: ClassVar[str | None] = None
    """How TP splits the state, where there is something to say (``tp_rule``)."""

    def kv_elements_per_token(self, tp: int) -> int:
        return 0

    def kv_reread_elements_per_token(self, tp: int) -> int:
        return 0

    def kv_replicated(self, tp: int) -> bool:
        return False

    def attention_flops(self, context_tokens: int) -> int:
        raise NotImplementedError

    def prefill_attention_flops(self, prompt_tokens: int) -> int:
        return prompt_tokens * self.attention_flops(0)

    state_format: StateFormat

    def state_parts(self, tp: int) -> tuple[int, int]:
        """Per sequence on one GPU: (convolution inputs, recurrent state) elements."""
        raise NotImplementedError

    def state_elements(self, tp: int) -> int:
        return sum(self.state_parts(tp))

    def state_bytes(self, tp: int) -> Fraction:
        """Each part at its own format's bits (StateFormat), not the KV dtype's."""
        conv, recurrent = self.state_parts(tp)
        f = self.state_format
        return Fraction(conv * f.conv_bits + recurrent * f.recurrent_bits, 8)

    def cache_terms(self, tp: int) -> CacheTerms:
        state = f"no KV; a constant state of {self.state_elements(tp):,} elements"
        return CacheTerms(self.cache_name or self.kind, state)

    def tp_rule(self) -> TpRule | None:
        return None if self.split_rule is None else TpRule(self.split_rule)


@record
class LinearAttention(ConstantState):
    """Gated DeltaNet linear attention (Qwen3-Next): a recurrent state of constant size per
    sequence (value heads x key dim x value dim, plus the short convolution's last
    ``conv_kernel - 1`` inputs), read and written every step, never growing with context."""

    num_key_heads: int
    num_value_heads: int
    key_head_dim: int
    value_head_dim: int
    conv_kernel: int
    state_format: StateFormat = BF16_STATE

    kind = "linear"
    cache_name = "linear attention"
    split_rule = "linear-attention state split by head"

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

    def attention_flops(self, context_tokens: int) -> int:
        """The delta-rule state update and read: constant, about 4 x heads x dk x dv."""
        return 4 * self.num_value_heads * self.key_head_dim * self.value_head_dim

    def state_parts(self, tp: int) -> tuple[int, int]:
        """Per sequence on one GPU: convolution inputs and the recurrent state."""
        recurrent = self.num_value_heads * self.key_head_dim * self.value_head_dim
        return self._conv_dim * (self.conv_kernel - 1) // tp, recurrent // tp


@record
class LightningAttention(ConstantState):
    """MiniMax-01/M1's lightning attention: linear attention with a fixed per-head decay and
    no convolution. Per sequence a state of heads x head_dim x head_dim (the running sum of
    k v^T), read and written every step, never growing with context. Weights: one fused
    q/k/v projection, a sigmoid output gate from the layer input, an RMSNorm over all
    heads' outputs, and out_proj."""

    num_heads: int
    head_dim: int
    state_format: StateFormat = BF16_STATE

    kind = "lightning attention"

    def tensor_groups(self, hidden: int) -> tuple[TensorGroup, ...]:
        inner = self.num_heads * self.head_dim
        projections = hidden * 3 * inner + hidden * inner + inner * hidden  # qkv, gate, out
        return (
            TensorGroup("linear attention", projections, True, SPLIT),
            TensorGroup("norms and biases", inner, True, REPLICATED),
        )

    def describe(self) -> str:
        return f"lightning attention {self.num_heads} heads x {self.head_dim}, constant state"

    def tp_ok(self, tp: int) -> bool:
        return self.num_heads % tp == 0

    def attention_flops(self, context_tokens: int) -> int:
        """The decayed state update and its read: about 4 x heads x head_dim^2."""
        return 4 * self.num_heads * self.head_dim * self.head_dim

    def state_parts(self, tp: int) -> tuple[int, int]:
        """Per sequence on one GPU: no convolution; heads/N x head_dim x head_dim."""
        return 0, self.num_heads // tp * self.head_dim * self.head_dim
