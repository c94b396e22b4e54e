"""Kimi Delta Attention (Kimi Linear): Gated DeltaNet's delta rule with a decay per channel
rather than per head, a constant state per sequence."""

from __future__ import annotations

from decodecalc.model.linear_attention import FP32_RECURRENT, ConstantState, StateFormat
from decodecalc.model.tensors import Sharding, TensorGroup
from decodecalc.record import record

SPLIT, REPLICATED = Sharding.SPLIT, Sharding.REPLICATED


@record
class KimiDeltaAttention(ConstantState):
    """One KDA layer (Kimi-Linear's modeling_kimi.py, its checkpoint's tensors): q, k and v
    projections to heads x head_dim, each through a depthwise short convolution of
    ``conv_kernel`` taps; the per-channel decay from a low-rank f_a -> f_b pair (hidden ->
    head_dim -> heads x head_dim), the update strength from b_proj (one per head), the
    output gate from a low-rank g_a -> g_b pair, a gated RMSNorm over head_dim and o_proj.
    A_log (per head) and dt_bias (per channel) are FP32 in the checkpoint ("side blocks").
    Per sequence it keeps heads x head_dim x head_dim of recurrent state and the three
    convolutions' last ``conv_kernel - 1`` inputs."""

    num_heads: int
    head_dim: int
    conv_kernel: int
    state_format: StateFormat = FP32_RECURRENT
    """vLLM keeps the recurrent state in FP32 whatever it is told (kda_state_dtype)."""

    kind = "kimi delta attention"
    split_rule = "Kimi Delta Attention state split by head"

    @property
    def _width(self) -> int:
        return self.num_heads * self.head_dim

    def tensor_groups(self, hidden: int) -> tuple[TensorGroup, ...]:
        p, d = self._width, self.head_dim
        split = 3 * hidden * p + p * hidden  # q, k, v, o
        split += 2 * d * p + hidden * self.num_heads + 3 * p * self.conv_kernel  # f_b, g_b, b
        return (
            TensorGroup("linear attention", split, True, SPLIT),
            TensorGroup("linear attention", 2 * hidden * d, True, REPLICATED),  # f_a, g_a
            TensorGroup("norms and biases", d, True, REPLICATED),  # o_norm
            TensorGroup("side blocks", self.num_heads + p, True, SPLIT),  # A_log, dt_bias
        )

    def describe(self) -> str:
        return (
            f"Kimi Delta Attention {self.num_heads} heads x {self.head_dim}, decay per "
            "channel, constant state"
        )

    def tp_ok(self, tp: int) -> bool:
        return self.num_heads % tp == 0

    def attention_flops(self, context_tokens: int) -> int:
        """The delta-rule state update and read: constant, about 4 x heads x dk x dv."""
        return 4 * self.num_heads * self.head_dim * self.head_dim

    def state_parts(self, tp: int) -> tuple[int, int]:
        """Per sequence on one GPU: 3 x width/N x (kernel - 1) convolution inputs (in the
        model's dtype) and heads/N x dk x dv of recurrent state (FP32 in vLLM)."""
        recurrent = self.num_heads * self.head_dim * self.head_dim
        return 3 * self._width * (self.conv_kernel - 1) // tp, recurrent // tp
