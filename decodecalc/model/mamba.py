"""Mamba state-space layers: a constant state per sequence, read and written every step.

Mamba-2 (Nemotron-H, Falcon-H1) keeps, per sequence, the short convolution's last
``conv_kernel - 1`` inputs over its conv channels (d_inner + 2 x groups x d_state) and an
SSM state of heads x head_dim x d_state. Mamba-1 (Jamba) keeps d_inner x (conv_kernel - 1)
conv inputs and a d_inner x d_state SSM state. Neither grows with the context.
"""

from __future__ import annotations

from decodecalc.model.linear_attention import BF16_STATE, ConstantState, StateFormat
from decodecalc.model.tensors import Sharding, TensorGroup
from decodecalc.record import record

SPLIT, REPLICATED = Sharding.SPLIT, Sharding.REPLICATED

MAMBA_SPLIT = "Mamba state split by head (and by group where TP divides them)"


@record
class Mamba2(ConstantState):
    """A Mamba-2 mixer (HF Mamba2Mixer, NemotronHMamba2Mixer, FalconH1Mixer): in_proj to
    gate, conv channels and per-head dt; a depthwise conv; the SSD scan; a gated RMSNorm
    over d_inner (``gated_norm``); out_proj. Tensor parallelism splits heads and, when
    they divide, groups (vLLM's MambaMixer2; a single group is replicated)."""

    num_heads: int
    head_dim: int
    state_size: int
    n_groups: int
    conv_kernel: int
    d_inner: int = 0
    """Width of the SSM (0: heads x head_dim, as Nemotron-H and Mamba-2 configs imply)."""
    proj_bias: bool = False
    conv_bias: bool = True
    gated_norm: bool = True
    state_format: StateFormat = BF16_STATE

    kind = "mamba2"
    split_rule = MAMBA_SPLIT

    @property
    def inner(self) -> int:
        return self.d_inner or self.num_heads * self.head_dim

    def _conv_dim(self, groups: int, tp: int = 1) -> int:
        return self.inner // tp + 2 * groups * self.state_size

    def tensor_groups(self, hidden: int) -> tuple[TensorGroup, ...]:
        conv = self._conv_dim(self.n_groups)
        in_out = self.inner + conv + self.num_heads  # z, x B C, dt
        projections = hidden * in_out + self.inner * hidden
        if self.proj_bias:
            projections += in_out + hidden
        small = conv * self.conv_kernel + (conv if self.conv_bias else 0)
        small += 3 * self.num_heads + (self.inner if self.gated_norm else 0)  # dt_bias, A, D
        return (TensorGroup("mamba", projections + small, True, SPLIT),)

    def describe(self) -> str:
        return (
            f"Mamba-2 {self.num_heads} heads x {self.head_dim}, state {self.state_size}, "
            f"{self.n_groups} group{'s' if self.n_groups > 1 else ''}, constant state"
        )

    def tp_ok(self, tp: int) -> bool:
        return self.num_heads % tp == 0 and (self.n_groups % tp == 0 or self.n_groups == 1)

    def attention_flops(self, context_tokens: int) -> int:
        """One step of the scan: update and read heads x head_dim x d_state (about 4 FLOPs
        each, as for linear attention), and the depthwise conv."""
        scan = 4 * self.num_heads * self.head_dim * self.state_size
        return scan + 2 * self._conv_dim(self.n_groups) * self.conv_kernel

    def state_parts(self, tp: int) -> tuple[int, int]:
        """Per sequence on one GPU: (d_inner/N + 2 x groups x d_state) x (conv_kernel - 1)
        conv inputs, groups split when N divides them; heads/N x head_dim x d_state of SSM
        state."""
        groups = self.n_groups // tp if self.n_groups % tp == 0 else self.n_groups
        conv = self._conv_dim(groups, tp) * (self.conv_kernel - 1)
        return conv, self.num_heads // tp * self.head_dim * self.state_size


@record
class Mamba1(ConstantState):
    """A Mamba-1 mixer as Jamba uses it (HF JambaMambaMixer): in_proj to x and gate
    (2 x d_inner), a depthwise conv, x_proj to dt, B and C, dt_proj, A (d_inner x d_state),
    D, and Jamba's RMSNorms on dt, B and C; out_proj. The state is d_inner channels of
    conv inputs and of SSM state; TP splits d_inner."""

    d_inner: int
    state_size: int
    conv_kernel: int
    dt_rank: int
    proj_bias: bool = False
    conv_bias: bool = True
    inner_norms: bool = True
    state_format: StateFormat = BF16_STATE

    kind = "mamba"
    split_rule = MAMBA_SPLIT

    def tensor_groups(self, hidden: int) -> tuple[TensorGroup, ...]:
        d, n, r = self.d_inner, self.state_size, self.dt_rank
        projections = hidden * 2 * d + d * hidden + (2 * d + hidden if self.proj_bias else 0)
        small = d * self.conv_kernel + (d if self.conv_bias else 0)
        small += d * (r + 2 * n) + r * d + d  # x_proj, dt_proj with its bias
        small += d * n + d  # A_log, D
        small += (r + 2 * n) if self.inner_norms else 0
        return (TensorGroup("mamba", projections + small, True, SPLIT),)

    def describe(self) -> str:
        return f"Mamba {self.d_inner:,} channels, state {self.state_size}, constant state"

    def tp_ok(self, tp: int) -> bool:
        return self.d_inner % tp == 0

    def attention_flops(self, context_tokens: int) -> int:
        return 4 * self.d_inner * self.state_size + 2 * self.d_inner * self.conv_kernel

    def state_parts(self, tp: int) -> tuple[int, int]:
        """Per sequence on one GPU: d_inner/N x (conv_kernel - 1) conv inputs, d_inner/N x
        d_state of SSM state."""
        channels = self.d_inner // tp
        return channels * (self.conv_kernel - 1), channels * self.state_size
