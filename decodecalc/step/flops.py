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


def head_params(model: Model) -> int:
    """The LM head's parameters, vocab x hidden, tied to the embedding or not: what a
    token multiplies only where the pass computes its logits."""
    return model.vocab_size * model.hidden_size


def pass_flops(model: Model, tokens: int, logits: int) -> int:
    """Matmul FLOPs of one forward pass over ``tokens`` tokens, all GPUs together, that
    computes logits at ``logits`` of them: 2 x (matmul params - LM head) x tokens
    + 2 x LM head x logits. Every pass is priced by it: a decode step's tokens each want
    their logits (tokens = logits = B, or B x (k + 1) verified with speculation); a prompt
    wants them only at its last position. Engines multiply the LM head there alone:
    vLLM gathers the hidden states at ``logits_indices = query_start_loc[1:] - 1``, one
    row per request in the pass, before compute_logits (vllm-project/vllm
    vllm/v1/worker/gpu_model_runner.py _prepare_inputs, commit 4e1790651fc7); SGLang's
    LogitsProcessor.forward takes ``last_index = cumsum(extend_seq_lens) - 1`` for a
    prefill without input logprobs (sgl-project/sglang
    python/sglang/srt/layers/logits_processor.py, commit 5993251f1c6c); TensorRT-LLM's
    LogitsProcessor keeps the ``cumsum(seq_lens) - 1`` rows unless gather_context_logits
    (return_context_logits) is set (NVIDIA/TensorRT-LLM
    tensorrt_llm/_torch/modules/logits_processor.py, commit 89fd9b74ab7a). vLLM also
    computes a row for a prompt's partial chunk (and discards it): at most one more row
    per chunk, 2 x LM head FLOPs against a chunk's thousands of tokens, left out."""
    head = head_params(model)
    return 2 * (matmul_params(model) - head) * tokens + 2 * head * logits


def step_flops(model: Model, batch: int, context_tokens: int) -> int:
    """FLOPs of one decode step, all GPUs together: B x (2 x matmul params + attention),
    every token's logits computed (pass_flops with logits = tokens = B)."""
    attention = sum(n * m.attention_flops(context_tokens) for m, n in model.mixer_counts())
    return pass_flops(model, batch, batch) + batch * attention
