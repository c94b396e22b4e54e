"""Gemma 4's config.json (``gemma4`` wrapping ``gemma4_text``): the dense sizes (31B) read
exactly; the sizes with per-layer inputs and shared KV (E2B, E4B), the MoE block (26B-A4B),
the double-wide MLP and the audio tower are refused by name.

Layers follow ``layer_types``: sliding layers attend over ``sliding_window`` tokens with
``num_key_value_heads`` heads of ``head_dim``, full layers over every token with
``num_global_key_value_heads`` heads of ``global_head_dim``; with ``attention_k_eq_v`` a
full layer has no v_proj (its values are the key projection under a norm without weights),
yet caches K and V. Every layer has q and k norms, four block norms and a learned
``layer_scalar``; the embedding is tied. The vision tower (Gemma4VisionModel and the
``embed_vision`` projection) is counted in loading/vision.py.
"""

from __future__ import annotations

from typing import Any

from decodecalc.context import MAX_CONTEXT_TOKENS
from decodecalc.loading.fields import Fields
from decodecalc.model.layers import Attention, DenseMLP, Layer

REFUSED_SIZES = (
    ("hidden_size_per_layer_input", "per-layer inputs (Gemma 4 E2B and E4B)"),
    ("num_kv_shared_layers", "layers reading an earlier layer's KV cache (Gemma 4 E2B and E4B)"),
)
"""Fields that, non-zero, build what the reader does not count: refused by name."""


def read_gemma4(cfg: Fields, count: int) -> dict[str, Any]:
    """The fields of an Architecture (loading/families.py builds it) for ``count`` layers."""
    for name, what in REFUSED_SIZES:
        if cfg.integer(name, default=0, minimum=0):
            raise cfg.error(name, f"{what} are not modelled yet; the dense sizes (31B) are")
    if cfg.boolean("enable_moe_block", default=False):
        raise cfg.error("enable_moe_block", "Gemma 4's MoE block (26B-A4B) is not modelled yet")
    for name in ("num_experts", "top_k_experts", "moe_intermediate_size"):
        cfg.optional_integer(name)  # null without the MoE block
    cfg.optional_integer("expert_intermediate_size")
    cfg.optional_integer("vocab_size_per_layer_input")  # used only with per-layer inputs
    if cfg.boolean("use_double_wide_mlp", default=False):
        raise cfg.error("use_double_wide_mlp", "a double-wide MLP is not modelled")
    if cfg.boolean("attention_bias", default=False):
        raise cfg.error("attention_bias", "biases here are not modelled")
    heads = cfg.integer("num_attention_heads")
    sliding = Attention(
        num_heads=heads,
        num_kv_heads=cfg.integer("num_key_value_heads"),
        head_dim=cfg.integer("head_dim"),
        qk_norm=True,
        sliding_window=cfg.integer("sliding_window"),
    )
    kv = cfg.integer("num_global_key_value_heads", default=sliding.num_kv_heads)
    full = Attention(
        num_heads=heads,
        num_kv_heads=kv,
        head_dim=cfg.integer("global_head_dim", default=sliding.head_dim),
        qk_norm=True,
        v_from_k=cfg.boolean("attention_k_eq_v", default=False),
    )
    mlp = DenseMLP(cfg.integer("intermediate_size"))
    by_kind = {
        "sliding_attention": Layer(sliding, mlp, norms=4, side_params=1),  # + layer_scalar
        "full_attention": Layer(full, mlp, norms=4, side_params=1),
    }
    kinds = cfg.texts("layer_types")
    if len(kinds) != count:
        raise cfg.error("layer_types", f"has {len(kinds)} entries for {count} layers")
    known = ", ".join(by_kind)
    for kind in kinds:
        if kind not in by_kind:
            raise cfg.error("layer_types", f"unknown layer type {kind!r}; known: {known}")
    return {
        "hidden_size": cfg.integer("hidden_size"),
        "vocab_size": cfg.integer("vocab_size"),
        "tie_word_embeddings": cfg.boolean("tie_word_embeddings", default=True),
        "layers": [by_kind[k] for k in kinds],
        "max_context_tokens": cfg.integer("max_position_embeddings", maximum=MAX_CONTEXT_TOKENS),
    }
