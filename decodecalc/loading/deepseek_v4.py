"""DeepSeek-V4's config.json (model_type ``deepseek_v4``): V4-Flash, V4-Pro and the -0731
releases with their DSpark draft stages.

Every layer is compressed attention (model/compressed_attention.py) of the ratio
``compress_ratios`` gives it, followed by a mixture of experts whose first
``num_hash_layers`` route by a token-id table (``tid2eid``, a row gathered per token, so
held but not streamed) instead of a learned bias. Manifold-constrained hyper-connections keep
``hc_mult`` residual streams: each block mixes them with FP32 weights of
(2 + hc) x hc rows by hc x hidden, read every step. Entries of ``compress_ratios`` past
``num_hidden_layers`` belong to the multi-token-prediction or DSpark draft layers, which
plain decode does not run: they are checked, not counted.

The checkpoint stores linear layers in FP8 E4M3 with one UE8M0 (8-bit) scale per 128x128
block, routed experts in FP4 E2M1 with a UE8M0 scale per 32 (MXFP4's layout) when
``expert_dtype`` is fp4, and the compressors, the indexer's weights_proj, the router,
norms, embedding and head in BF16, sinks, positional biases and hyper-connections in FP32:
the recipe here says so group by group.
"""

from __future__ import annotations

from fractions import Fraction
from typing import Any

from decodecalc.context import MAX_CONTEXT_TOKENS
from decodecalc.loading.fields import Fields
from decodecalc.model.compressed_attention import SPARSE_RATIO, CompressedAttention
from decodecalc.model.layers import Layer
from decodecalc.model.moe import MoE
from decodecalc.model.precision import WeightRecipe
from decodecalc.model.tensors import Sharding, TensorGroup

RATIOS = (0, SPARSE_RATIO, 128)
"""Compression ratios DeepSeek's inference code builds layers for."""

FP8_FORMATS = {"ue8m0": "fp8-128x128-ue8m0", "fp32": "fp8-128x128"}
"""The FP8 dtype preset by the scale format of the 128x128 blocks (``scale_fmt``)."""

EXPERT_FORMATS = {"fp4": "mxfp4"}
"""Routed experts stored apart from the rest (``expert_dtype``); FP8 when absent or fp8."""


def read_deepseek_v4(cfg: Fields, count: int) -> dict[str, Any]:
    """The fields of an Architecture (loading/families.py builds it) for ``count`` decoder
    layers, 43 (Flash) or 61 (Pro), each with its own ratio."""
    ratios = _ratios(cfg, count)
    hidden = cfg.integer("hidden_size")
    if cfg.boolean("attention_bias", default=False):
        raise cfg.error("attention_bias", "biases here are not modelled")
    if cfg.integer("num_key_value_heads", default=1) != 1:
        raise cfg.error("num_key_value_heads", "DeepSeek-V4 attention has one KV head")
    mixers = {r: _attention(cfg, r) for r in sorted(set(ratios))}
    experts = cfg.integer("n_routed_experts")
    moe = MoE(
        num_experts=experts,
        experts_per_token=cfg.integer("num_experts_per_tok"),
        expert_intermediate_size=cfg.integer("moe_intermediate_size"),
        shared_intermediate_size=cfg.integer("moe_intermediate_size")
        * cfg.integer("n_shared_experts", default=0, minimum=0),
    )
    hashed = cfg.integer("num_hash_layers", default=0, minimum=0, maximum=count)
    hc = cfg.integer("hc_mult", default=1)
    mixing = 2 * _hc_block(hc, hidden)  # before attention and before the MLP
    plain = {r: Layer(m, moe, side_params=mixing + experts) for r, m in mixers.items()}
    hashing = {r: Layer(m, moe, side_params=mixing) for r, m in mixers.items()}
    layers = [(hashing if i < hashed else plain)[r] for i, r in enumerate(ratios)]
    vocab = cfg.integer("vocab_size")
    per_token = cfg.integer("num_experts_per_tok")
    extra = (
        # the final hyper-connection merge (hc_head_fn, _base, _scale), read every step
        TensorGroup("side blocks", hc + hc * hc * hidden + 1, True, Sharding.REPLICATED),
        # hash layers' token-to-experts table: a step gathers B rows, like the embedding
        TensorGroup("hash routing tables", hashed * vocab * per_token, False, Sharding.REPLICATED),
    )
    return {
        "hidden_size": hidden,
        "vocab_size": vocab,
        "tie_word_embeddings": cfg.boolean("tie_word_embeddings", default=False),
        "layers": layers,
        "max_context_tokens": cfg.integer("max_position_embeddings", maximum=MAX_CONTEXT_TOKENS),
        "extra_groups": extra if hashed else extra[:1],
        "default_weights": _recipe(cfg),
    }


def _hc_block(hc: int, hidden: int) -> int:
    """One hyper-connection mix (hc_fn, hc_base, hc_scale): (2 + hc) x hc weights over the
    hc x hidden streams, a bias for each and 3 scales; none with a single stream."""
    if hc == 1:
        return 0
    rows = (2 + hc) * hc
    return rows * hc * hidden + rows + 3


def _ratios(cfg: Fields, count: int) -> tuple[int, ...]:
    """The decoder layers' ratios; the entries after them are the draft layers' (one per
    multi-token-prediction layer, or per DSpark stage, one per target layer it reads)."""
    ratios = cfg.raw_list("compress_ratios")
    drafts = cfg.integer("num_nextn_predict_layers", default=0, minimum=0)
    targets = cfg.raw_list("dspark_target_layer_ids")
    if targets:  # DSpark: a draft stage per target layer, each a block of its own
        for name in ("dspark_block_size", "dspark_markov_rank", "dspark_noise_token_id"):
            cfg.integer(name, minimum=0)
        if any(not 0 <= t < count for t in targets):
            raise cfg.error("dspark_target_layer_ids", f"names a layer outside 0..{count - 1}")
        drafts = len(targets)
    if len(ratios) != count + drafts:
        raise cfg.error(
            "compress_ratios",
            f"has {len(ratios)} entries; expected {count} layers + {drafts} draft layers",
        )
    for ratio in ratios:
        if ratio not in RATIOS:
            raise cfg.error("compress_ratios", f"ratio {ratio} is none of {RATIOS}")
    return tuple(ratios[:count])


def _attention(cfg: Fields, ratio: int) -> CompressedAttention:
    sparse = ratio == SPARSE_RATIO
    return CompressedAttention(
        num_heads=cfg.integer("num_attention_heads"),
        head_dim=cfg.integer("head_dim"),
        qk_rope_head_dim=cfg.integer("qk_rope_head_dim"),
        q_lora_rank=cfg.integer("q_lora_rank"),
        o_lora_rank=cfg.integer("o_lora_rank"),
        o_groups=cfg.integer("o_groups"),
        sliding_window=cfg.integer("sliding_window", maximum=MAX_CONTEXT_TOKENS),
        compress_ratio=ratio,
        index_topk=cfg.integer("index_topk") if sparse else 0,
        index_heads=cfg.integer("index_n_heads") if sparse else 0,
        index_head_dim=cfg.integer("index_head_dim") if sparse else 0,
    )


def _recipe(cfg: Fields) -> WeightRecipe | None:
    """The checkpoint's formats group by group (module docstring); None without a
    quantization_config (a BF16 checkpoint)."""
    from decodecalc.loading.quantization import BASE_FORMATS, CHECKPOINT

    expert = cfg.text("expert_dtype", "fp8")
    activations = BASE_FORMATS.get(cfg.text("torch_dtype", "bfloat16"), "bf16")
    if not cfg.has("quantization_config"):
        return None
    quant = cfg.mapping("quantization_config")
    if quant.text("quant_method") != "fp8" or quant.text("fmt", "e4m3") != "e4m3":
        raise quant.error("quant_method", "DeepSeek-V4 checkpoints are FP8 E4M3")
    if quant.raw_list("weight_block_size") != (128, 128):
        raise quant.error("weight_block_size", "only 128x128 blocks are read")
    scales = quant.text("scale_fmt", "fp32")
    if scales not in FP8_FORMATS:
        raise quant.error("scale_fmt", f"expected one of {', '.join(FP8_FORMATS)}")
    if expert not in (*EXPERT_FORMATS, "fp8"):
        raise cfg.error("expert_dtype", f"expected fp4 or fp8, got {expert!r}")
    base = (activations, Fraction(1))
    overrides = {
        group: (base,)
        for group in ("embedding", "LM head", "router", "norms and biases", "compressors")
    }
    overrides["side blocks"] = (("fp32", Fraction(1)),)
    overrides["hash routing tables"] = (("int64", Fraction(1)),)
    if expert in EXPERT_FORMATS:
        overrides["routed experts"] = ((EXPERT_FORMATS[expert], Fraction(1)),)
    return WeightRecipe(
        id=CHECKPOINT,
        name="fp8 checkpoint (its quantization_config and expert_dtype)",
        default=FP8_FORMATS[scales],
        overrides=tuple(overrides.items()),
        description=f"FP8 E4M3 linear layers with a {scales.upper()} scale per 128x128 block; "
        f"routed experts {EXPERT_FORMATS.get(expert, 'in the same FP8')}; compressors, "
        f"router, norms, embedding and head {activations}; sinks, positional biases and "
        "hyper-connections FP32; hash routing tables int64",
        source=cfg.doc.path,
    )
