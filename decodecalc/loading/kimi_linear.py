"""Kimi Linear's config.json (model_type ``kimi_linear``, Kimi-Linear-48B-A3B): Kimi Delta
Attention layers (model/kimi_delta.py) with an MLA layer every fourth, as
``linear_attn_config`` lists them (``kda_layers`` and ``full_attn_layers``, counted from 1);
a dense MLP in the first ``first_k_dense_replace`` layers, then MoE with shared experts and
a score-correction bias. The checkpoint is BF16 but for KDA's A_log and dt_bias in FP32."""

from __future__ import annotations

from fractions import Fraction
from typing import TYPE_CHECKING, Any

from decodecalc.loading.fields import Fields
from decodecalc.model.kimi_delta import KimiDeltaAttention
from decodecalc.model.layers import DenseMLP, Layer
from decodecalc.model.moe import MoE
from decodecalc.model.precision import WeightRecipe

if TYPE_CHECKING:
    from decodecalc.model.mla import LatentAttention


def read_kimi_linear(cfg: Fields, count: int, mla: LatentAttention) -> dict[str, Any]:
    """The fields of an Architecture (loading/families.py builds it) for ``count`` layers,
    ``mla`` the MLA layers' attention as DeepSeek's configs give it (families._mla)."""
    linear = cfg.mapping("linear_attn_config")
    kda = set(linear.raw_list("kda_layers"))
    full = set(linear.raw_list("full_attn_layers"))
    if kda & full or kda | full != set(range(1, count + 1)):
        raise linear.error(
            "kda_layers", f"with full_attn_layers must name each of layers 1..{count} once"
        )
    delta = KimiDeltaAttention(
        num_heads=linear.integer("num_heads"),
        head_dim=linear.integer("head_dim"),
        conv_kernel=linear.integer("short_conv_kernel_size"),
    )
    if linear.boolean("use_full_rank_gate", default=False):
        raise linear.error("use_full_rank_gate", "a full-rank decay gate is not modelled")
    expert = cfg.integer("moe_intermediate_size")
    moe = MoE(
        num_experts=cfg.integer("num_experts"),
        experts_per_token=cfg.integer("num_experts_per_token"),
        expert_intermediate_size=expert,
        shared_intermediate_size=expert * cfg.integer("num_shared_experts", default=0, minimum=0),
        router_bias=True,  # e_score_correction_bias, one per expert
    )
    dense = DenseMLP(cfg.integer("intermediate_size"))
    first = cfg.integer("first_k_dense_replace", default=0, minimum=0)
    frequency = cfg.integer("moe_layer_freq", default=1)
    layers = [
        Layer(
            delta if i + 1 in kda else mla,
            moe if i >= first and i % frequency == 0 else dense,
        )
        for i in range(count)
    ]
    activations = cfg.text("dtype", "") or cfg.text("torch_dtype", "bfloat16")
    return {
        "hidden_size": cfg.integer("hidden_size"),
        "vocab_size": cfg.integer("vocab_size"),
        "tie_word_embeddings": cfg.boolean("tie_word_embeddings", default=False),
        "layers": layers,
        "max_context_tokens": cfg.integer("model_max_length"),
        "default_weights": _recipe(activations, cfg.doc.path),
    }


def _recipe(activations: str, source: str) -> WeightRecipe:
    """The checkpoint as it is stored: the activations' format, A_log and dt_bias in FP32."""
    from decodecalc.loading.quantization import BASE_FORMATS, CHECKPOINT

    base = BASE_FORMATS.get(activations, "bf16")
    return WeightRecipe(
        id=CHECKPOINT,
        name=f"{base} checkpoint",
        default=base,
        overrides=(("side blocks", (("fp32", Fraction(1)),)),),
        description=f"{base} for every tensor but KDA's A_log and dt_bias, FP32",
        source=source,
    )
