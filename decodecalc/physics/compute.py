"""The terms beyond bytes (docs/physics.md section 5): compute, TP communication, overhead.

A decode step is memory-bound while streaming its bytes takes longer than its arithmetic;
past the ridge batch the FLOPs win. Tensor parallelism adds two all-reduces per layer.
"""

from __future__ import annotations

from decodecalc.physics.hardware import Link
from decodecalc.physics.model import Model
from decodecalc.record import record

ACTIVATION_BYTES = 2
"""Activations travel between GPUs in BF16."""


def matmul_params(model: Model) -> int:
    """Parameters one token multiplies by: the active ones less the input embedding (a row
    gather, no arithmetic) unless it doubles as the LM head."""
    gathered = 0 if model.tie_word_embeddings else model.vocab_size * model.hidden_size
    return model.active_params() - gathered


def step_flops(model: Model, batch: int, context_tokens: int) -> int:
    """FLOPs of one decode step, all GPUs together: B x (2 x matmul params + attention)."""
    attention = sum(m.attention_flops(context_tokens) for m in model.mixers())
    return batch * (2 * matmul_params(model) + attention)


@record
class AllReduce:
    """Two all-reduces per layer per step, as tensor-parallel attention and MLP need."""

    link: Link
    tp: int
    layers: int
    hidden_size: int

    def seconds(self, batch: int) -> float:
        """Ring all-reduce: latency + 2 (N-1)/N x bytes / link bandwidth, twice per layer."""
        if self.tp == 1:
            return 0.0
        message = batch * self.hidden_size * ACTIVATION_BYTES
        ring = 2 * (self.tp - 1) / self.tp * message / self.link.bandwidth_bytes_per_s
        return 2 * self.layers * (self.link.latency_s + ring)
