"""Tensor groups: parameters that share a role, a TP sharding rule and a read pattern."""

from __future__ import annotations

from enum import Enum
from fractions import Fraction

from decodecalc.record import record

EXACT_BATCH_LIMIT = 64
"""Up to this batch the expected number of experts is computed in exact fractions."""


class Sharding(Enum):
    """How tensor parallelism over N GPUs divides a tensor."""

    SPLIT = "split"
    """Column-, row- or vocab-parallel, and MoE experts (each split N ways): 1/N per GPU."""
    KV_HEADS = "kv_heads"
    """Split by KV head while N <= kv_heads; past that each GPU keeps one whole head."""
    REPLICATED = "replicated"
    """Norms, routers, MLA's down-projections: every GPU holds all of it."""


@record
class TensorGroup:
    """Parameters of one role. ``experts`` > 0 marks routed MoE experts: E equal experts of
    which each token uses ``experts_per_token``, so a step reads only the experts touched."""

    name: str
    params: int
    streamed: bool
    """Read every decode step; False for the input embedding (a step gathers B rows)."""
    sharding: Sharding
    kv_heads: int = 0
    experts: int = 0
    experts_per_token: int = 0

    def params_per_gpu(self, tp: int) -> int:
        """Parameters one of ``tp`` GPUs holds (the largest shard when N does not divide)."""
        if self.sharding is Sharding.REPLICATED:
            return self.params
        if self.sharding is Sharding.KV_HEADS:
            per_head = self.params // self.kv_heads
            return per_head * -(-self.kv_heads // tp)
        return -(-self.params // tp)  # whole numbers: a float quotient drops digits past 2^53

    def read_fraction(self, batch: int) -> Fraction:
        """Share of the group a decode step of ``batch`` tokens reads."""
        if not self.streamed:
            return Fraction(0)
        if not self.experts:
            return Fraction(1)
        return expected_experts(self.experts, self.experts_per_token, batch) / self.experts


def expected_experts(experts: int, per_token: int, batch: int) -> Fraction:
    """Distinct experts a batch touches with uniform routing: E * (1 - (1 - k/E)^B).

    >>> expected_experts(8, 2, 1), float(expected_experts(8, 2, 8))
    (Fraction(2, 1), 7.199...)
    """
    miss = Fraction(experts - per_token, experts)
    if batch <= EXACT_BATCH_LIMIT:
        return experts * (1 - miss**batch)
    return Fraction(experts * (1 - float(miss) ** batch))
