"""LFM2's gated short convolution: a token mixer whose only memory of the past is the last
few inputs of a depthwise convolution."""

from __future__ import annotations

from decodecalc.model.linear_attention import BF16_STATE, ConstantState, StateFormat
from decodecalc.model.tensors import Sharding, TensorGroup
from decodecalc.record import record


@record
class ShortConv(ConstantState):
    """LFM2's short-convolution block (HF Lfm2ShortConv): in_proj to B, C and x (3 x
    hidden), a depthwise convolution of ``kernel`` taps over B * x, C * its output, then
    out_proj. Per sequence it keeps the convolution's last ``kernel - 1`` inputs over the
    hidden channels, a state of constant size; TP splits the channels."""

    width: int
    kernel: int
    bias: bool = False
    state_format: StateFormat = BF16_STATE

    kind = "short convolution"

    def tensor_groups(self, hidden: int) -> tuple[TensorGroup, ...]:
        w = self.width
        params = hidden * 3 * w + w * hidden + w * self.kernel  # in_proj, out_proj, conv
        if self.bias:
            params += 3 * w + hidden + w
        return (TensorGroup("short convolution", params, True, Sharding.SPLIT),)

    def describe(self) -> str:
        return f"short convolution {self.width:,} channels x {self.kernel} taps, constant state"

    def tp_ok(self, tp: int) -> bool:
        return self.width % tp == 0

    def attention_flops(self, context_tokens: int) -> int:
        """The gates and the convolution: 2 x channels x kernel, plus the two products."""
        return 2 * self.width * self.kernel + 2 * self.width

    def state_parts(self, tp: int) -> tuple[int, int]:
        """Per sequence on one GPU: channels/N x (kernel - 1) inputs, no recurrent state."""
        return self.width // tp * (self.kernel - 1), 0
