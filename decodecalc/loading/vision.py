"""Vision towers of multimodal wrappers: weights memory holds and text decode never reads.

A wrapper's config.json holds the text model under ``text_config`` (read by its family's
reader, loading/families.py) beside a ``vision_config``; the tower and its projector into
the text model are counted here, one function per kind of tower, from the fields each
reference implementation builds its layers from.
"""

from __future__ import annotations

from collections.abc import Callable

from decodecalc.loading.fields import Fields
from decodecalc.model.tensors import Sharding, TensorGroup


def _tower(params: int) -> TensorGroup:
    return TensorGroup("vision encoder", params, False, Sharding.REPLICATED)


def _linear(inputs: int, outputs: int, bias: bool = True) -> int:
    return inputs * outputs + (outputs if bias else 0)


def _square_vit(vision: Fields) -> tuple[int, int]:
    """A ViT over square images (SigLIP, Llama 4's): its width, and its weights: layers of
    biased attention and MLP with two LayerNorms each, a biased patch embedding and one
    learned position per patch."""
    h = vision.integer("hidden_size")
    inner = vision.integer("intermediate_size")
    patch = vision.integer("patch_size")
    patches = (vision.integer("image_size") // patch) ** 2
    channels = vision.integer("num_channels", default=3)
    layer = 4 * (h * h + h) + 2 * h * inner + inner + h + 4 * h
    embeddings = channels * patch * patch * h + h + patches * h
    return h, vision.integer("num_hidden_layers") * layer + embeddings


def _llama4(cfg: Fields, text_hidden: int) -> TensorGroup:
    """Llama 4's vision encoder, pixel-shuffle adapter and projector into the text model:
    a square ViT whose patch embedding has no bias but a class token (as many weights)
    with a position of its own, two more LayerNorms; held in memory, never read by text
    decode."""
    vision = cfg.mapping("vision_config")
    h, tower = _square_vit(vision)
    tower += h + 4 * h  # the class token's position, and two LayerNorms
    ratio = vision.fraction("pixel_shuffle_ratio", maximum=1)
    shuffled = h / (ratio * ratio)
    if shuffled.denominator != 1:
        raise vision.error("pixel_shuffle_ratio", f"{ratio} does not shuffle {h} channels evenly")
    adapter_in, adapter_out = (
        vision.integer("projector_input_dim"),
        vision.integer("projector_output_dim"),
    )
    # The adapter's first linear takes the MLP width (the shuffled channels, 4 x 1,408 =
    # 5,632, in the published configs), as transformers builds it.
    adapter = vision.integer("intermediate_size") * adapter_in + adapter_out * adapter_out
    projector = vision.integer("vision_output_dim") * text_hidden
    return _tower(tower + adapter + projector)


def _siglip(cfg: Fields, text_hidden: int) -> TensorGroup:
    """Gemma 3's SigLIP vision tower (a square ViT and a final LayerNorm) and its
    projection into the text model: held in memory, never read by text decode. Gemma 3's
    configs turn SigLIP's pooling head off (``vision_use_head`` false, the default here);
    transformers 5 writes its own default, true: a probe, biased attention, a LayerNorm
    and a biased MLP."""
    vision = cfg.mapping("vision_config")
    h, tower = _square_vit(vision)
    if vision.boolean("vision_use_head", default=False):
        inner = vision.integer("intermediate_size")
        tower += h + 4 * (h * h + h) + 2 * h + _linear(h, inner) + _linear(inner, h)
    return _tower(tower + 2 * h + h * text_hidden + h)


def _qwen_vit(cfg: Fields, text_hidden: int) -> TensorGroup:
    """Qwen3.5's ViT (Qwen3-VL's, without deepstack mergers): a biased 3-D patch
    embedding over ``temporal_patch_size`` frames, learned positions, ``depth`` blocks of
    two LayerNorms, biased fused qkv and output projections and a biased two-layer MLP;
    then a merger of ``spatial_merge_size``^2 patches: a LayerNorm and two biased linears
    into ``out_hidden_size``."""
    vision = cfg.mapping("vision_config")
    h = vision.integer("hidden_size")
    inner = vision.integer("intermediate_size")
    patch = vision.integer("patch_size")
    frames = vision.integer("temporal_patch_size", default=2)
    channels = vision.integer("in_channels", default=3)
    embed = (
        _linear(channels * frames * patch * patch, h)
        + vision.integer("num_position_embeddings") * h
    )
    block = 2 * 2 * h + _linear(h, 3 * h) + _linear(h, h) + _linear(h, inner) + _linear(inner, h)
    merged = h * vision.integer("spatial_merge_size", default=2) ** 2
    out = vision.integer("out_hidden_size", default=text_hidden)
    merger = 2 * h + _linear(merged, merged) + _linear(merged, out)
    return _tower(embed + vision.integer("depth") * block + merger)


def _qwen3_vl(cfg: Fields, text_hidden: int) -> TensorGroup:
    """Qwen3-VL's ViT: Qwen3.5's (``_qwen_vit``) and a deepstack merger for each of
    ``deepstack_visual_indexes`` (a LayerNorm over the merged patches, then the two biased
    linears into ``out_hidden_size``), which feed early text layers."""
    tower = _qwen_vit(cfg, text_hidden).params
    vision = cfg.mapping("vision_config")
    merged = vision.integer("hidden_size") * vision.integer("spatial_merge_size", default=2) ** 2
    out = vision.integer("out_hidden_size", default=text_hidden)
    deepstack = 2 * merged + _linear(merged, merged) + _linear(merged, out)
    return _tower(tower + len(vision.raw_list("deepstack_visual_indexes")) * deepstack)


def _qwen2_vl(cfg: Fields, text_hidden: int) -> TensorGroup:
    """Qwen2-VL's ViT (``embed_dim`` wide): a bias-free 3-D patch embedding over
    ``temporal_patch_size`` frames, ``depth`` blocks of two LayerNorms with biases, biased
    fused qkv and output projections and a biased MLP of ``mlp_ratio`` x the width; then
    the merger of ``spatial_merge_size``^2 patches: a LayerNorm and two biased linears
    into the text model (``hidden_size``). No learned positions (rotary)."""
    vision = cfg.mapping("vision_config")
    e = vision.integer("embed_dim")
    inner = vision.integer("mlp_ratio", default=4) * e
    block = 4 * e + _linear(e, 3 * e) + _linear(e, e) + _linear(e, inner) + _linear(inner, e)
    merged = e * vision.integer("spatial_merge_size", default=2) ** 2
    out = vision.integer("hidden_size", default=text_hidden)
    merger = 2 * e + _linear(merged, merged) + _linear(merged, out)
    return _tower(_qwen_patches(vision, e) + vision.integer("depth") * block + merger)


def _qwen2_5_vl(cfg: Fields, text_hidden: int) -> TensorGroup:
    """Qwen2.5-VL's ViT: Qwen2-VL's patch embedding, ``depth`` blocks of two RMSNorms,
    biased fused qkv and output projections and a biased gated MLP of
    ``intermediate_size``; the merger an RMSNorm and two biased linears into
    ``out_hidden_size``. Its window attention (``window_size``, ``fullatt_block_indexes``)
    moves no weights."""
    vision = cfg.mapping("vision_config")
    h = vision.integer("hidden_size")
    inner = vision.integer("intermediate_size")
    block = 2 * h + _linear(h, 3 * h) + _linear(h, h) + 2 * _linear(h, inner) + _linear(inner, h)
    merged = h * vision.integer("spatial_merge_size", default=2) ** 2
    out = vision.integer("out_hidden_size", default=text_hidden)
    merger = h + _linear(merged, merged) + _linear(merged, out)
    return _tower(_qwen_patches(vision, h) + vision.integer("depth") * block + merger)


def _qwen_patches(vision: Fields, width: int) -> int:
    """Qwen2-VL's and Qwen2.5-VL's patch embedding: a bias-free 3-D convolution."""
    patch = vision.integer("patch_size")
    frames = vision.integer("temporal_patch_size", default=2)
    return vision.integer("in_channels", default=3) * frames * patch * patch * width


def _pixtral(cfg: Fields, text_hidden: int) -> TensorGroup:
    """Mistral 3's Pixtral ViT: a bias-free patch convolution, an RMSNorm, layers of two
    RMSNorms, bias-free q, k, v, o and a gated MLP; then the projector: an RMSNorm, a
    bias-free merge of ``spatial_merge_size``^2 patches and two linears into the text
    model (biased when ``multimodal_projector_bias``)."""
    vision = cfg.mapping("vision_config")
    h = vision.integer("hidden_size")
    inner = vision.integer("intermediate_size")
    patch = vision.integer("patch_size")
    channels = vision.integer("num_channels", default=3)
    layer = 2 * h + 4 * h * h + 3 * h * inner
    tower = channels * patch * patch * h + h + vision.integer("num_hidden_layers") * layer
    merge = cfg.integer("spatial_merge_size", default=2)
    bias = cfg.boolean("multimodal_projector_bias", default=False)
    cfg.integer("vision_feature_layer", default=-1, minimum=-10_000)  # one layer's features
    projector = h + _linear(h * merge * merge, h, False)
    projector += _linear(h, text_hidden, bias) + _linear(text_hidden, text_hidden, bias)
    return _tower(tower + projector)


def _moonvit(cfg: Fields, text_hidden: int) -> TensorGroup:
    """Kimi-K2.5's MoonViT: a biased patch embedding, learned 2-D positions (its time
    positions are fixed sinusoids), blocks of two LayerNorms, biased qkv and output
    projections and a biased two-layer MLP, a final LayerNorm; then the patch merger
    (``mm_projector_type`` patchmerger): a LayerNorm and two biased linears from the
    merged patches into ``text_hidden_size``."""
    vision = cfg.mapping("vision_config")
    kind = vision.text("mm_projector_type")
    if kind != "patchmerger":
        raise vision.error("mm_projector_type", f"{kind!r} is not modelled (patchmerger is)")
    h = vision.integer("vt_hidden_size")
    inner = vision.integer("vt_intermediate_size")
    patch = vision.integer("patch_size")
    positions = vision.integer("init_pos_emb_height") * vision.integer("init_pos_emb_width")
    embed = _linear(3 * patch * patch, h) + positions * h
    block = 2 * 2 * h + _linear(h, 3 * h) + _linear(h, h) + _linear(h, inner) + _linear(inner, h)
    kernel = vision.raw_list("merge_kernel_size") or (2, 2)
    width = vision.integer("mm_hidden_size")
    if cfg.integer("projection_hidden_size", default=width) != width:  # transformers 5's
        raise cfg.error("projection_hidden_size", f"differs from mm_hidden_size {width}")
    merged = width * kernel[0] * kernel[-1]
    out = vision.integer("text_hidden_size", default=text_hidden)
    merger = 2 * width + _linear(merged, merged) + _linear(merged, out)
    return _tower(embed + vision.integer("vt_num_hidden_layers") * block + 2 * h + merger)


def _gemma4_vit(cfg: Fields, text_hidden: int) -> TensorGroup:
    """Gemma 4's vision model: a bias-free patch projection, a table of two learned
    position axes, layers of bias-free q, k, v, o (q and k normed per head, v by a norm
    without weights), a gated MLP and four RMSNorms, the standardization's scale and bias;
    then ``embed_vision``, a bias-free projection into the text model (its norm has no
    weights). Clipped linears (the small sizes') are refused."""
    if cfg.has("audio_config"):
        raise cfg.error("audio_config", "Gemma 4's audio tower is not modelled")
    vision = cfg.mapping("vision_config")
    if vision.boolean("use_clipped_linears", default=False):
        raise vision.error("use_clipped_linears", "clipped linears are not modelled")
    h = vision.integer("hidden_size")
    inner = vision.integer("intermediate_size")
    patch = vision.integer("patch_size")
    head = vision.integer("head_dim")
    layer = 4 * h * h + 2 * head + 3 * h * inner + 4 * h
    embed = 3 * patch * patch * h + 2 * vision.integer("position_embedding_size") * h
    standardize = 2 * h if vision.boolean("standardize", default=False) else 0
    tower = vision.integer("num_hidden_layers") * layer + embed + standardize
    return _tower(tower + h * text_hidden)


TOWERS: dict[str, Callable[[Fields, int], TensorGroup]] = {
    "llama4": _llama4,
    "gemma3": _siglip,
    "qwen3_5": _qwen_vit,
    "qwen3_5_moe": _qwen_vit,
    "qwen3_vl": _qwen3_vl,
    "qwen3_vl_moe": _qwen3_vl,
    "qwen2_vl": _qwen2_vl,
    "qwen2_5_vl": _qwen2_5_vl,
    "mistral3": _pixtral,
    "kimi_k25": _moonvit,
    "gemma4": _gemma4_vit,
}
"""The tower of each multimodal wrapper, by the wrapper's model_type."""
