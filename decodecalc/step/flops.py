"""The terms beyond bytes (docs/physics.md section 5): compute, TP communication, overhead.

A decode step is memory-bound while streaming its bytes takes longer than its arithmetic;
past the ridge batch the FLOPs win. What GPUs send each other (tensor parallelism's two
all-reduces per layer, experts' all-to-all, pipeline hand-offs) is step/parallelism.py.
"""

from __future__ import annotations

from decodecalc.model.model import Model

ACTIVATION_BYTES = 2
"""Activations travel between GPUs in BF16."""


def matmul_params(model: Model) -> int:
    """Parameters one token multiplies by: the active ones less the input embedding (a row
    gather, no arithmetic) unless it doubles as the LM head."""
    gathered = 0 if model.tie_word_embeddings else model.vocab_size * model.hidden_size
    return model.active_params() - gathered


def step_flops(model: Model, batch: int, context_tokens: int) -> int:
    """FLOPs of one decode step, all GPUs together: B x (2 x matmul params + attention)."""
    attention = sum(n * m.attention_flops(context_tokens) for m, n in model.mixer_counts())
    return batch * (2 * matmul_params(model) + attention)
