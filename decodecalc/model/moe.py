"""Mixture-of-experts feed-forward blocks."""

from __future__ import annotations

from fractions import Fraction

from decodecalc.model.tensors import Sharding, TensorGroup, expected_experts
from decodecalc.record import record

SPLIT, REPLICATED = Sharding.SPLIT, Sharding.REPLICATED


@record
class MoE:
    """A mixture of experts: a router picks ``experts_per_token`` of ``num_experts`` experts
    per token; shared experts (one MLP of ``shared_intermediate_size``) always run. Experts
    are gated MLPs (gate, up, down) unless ``gated`` is False (up, down: Nemotron 3's
    squared-ReLU experts)."""

    num_experts: int
    experts_per_token: int
    expert_intermediate_size: int
    shared_intermediate_size: int = 0
    router_bias: bool = False
    expert_bias: bool = False
    shared_gate: bool = False
    """Qwen3-Next scales the shared expert by a learned sigmoid gate (hidden -> 1)."""
    gated: bool = True
    zero_experts: int = 0
    """LongCat-Flash's zero-compute (identity) experts: the router may pick them among the
    ``experts_per_token``, and they read no weights, so a token reads the mean share of
    real ones, k x E / (E + Z), under uniform routing."""

    routed = True

    def __post_init__(self) -> None:
        if not 1 <= self.experts_per_token <= self.num_experts + self.zero_experts:
            from decodecalc.errors import InputError

            raise InputError(
                f"{self.experts_per_token} experts per token of {self.num_experts} experts: "
                "a token uses between 1 and all of them"
            )

    @property
    def matrices(self) -> int:
        """Weight matrices per expert: gate, up and down, or up and down."""
        return 3 if self.gated else 2

    def tensor_groups(self, hidden: int) -> tuple[TensorGroup, ...]:
        per_expert = self.matrices * hidden * self.expert_intermediate_size
        if self.expert_bias:
            per_expert += 2 * self.expert_intermediate_size + hidden
        choices = self.num_experts + self.zero_experts
        router = hidden * choices + (choices if self.router_bias else 0)
        router += hidden if self.shared_gate else 0
        groups = [
            TensorGroup(
                "routed experts",
                self.num_experts * per_expert,
                True,
                SPLIT,
                # the zero-compute experts are choices without weights: the routed weights
                # are read as the share of all E + Z choices a batch touches
                experts=choices,
                experts_per_token=self.experts_per_token,
            ),
            TensorGroup("router", router, True, REPLICATED),
        ]
        if self.shared_intermediate_size:
            shared = self.matrices * hidden * self.shared_intermediate_size
            groups.append(TensorGroup("shared experts", shared, True, SPLIT))
        return tuple(groups)

    def touched(self, batch: int) -> Fraction:
        """Expected distinct experts with weights a batch reads per layer: of the E + Z
        choices, E (1 - (1 - k/(E + Z))^B) x E/(E + Z) are real ones."""
        choices = self.num_experts + self.zero_experts
        return expected_experts(choices, self.experts_per_token, batch) * self.num_experts / choices

    def describe(self) -> str:
        shared = (
            f" + shared {self.shared_intermediate_size:,}" if self.shared_intermediate_size else ""
        )
        return (
            f"MoE {self.experts_per_token} of {self.num_experts} experts x "
            f"{self.expert_intermediate_size:,}{shared}"
            + (f" + {self.zero_experts} zero-compute" if self.zero_experts else "")
            + ("" if self.gated else " (not gated)")
        )
