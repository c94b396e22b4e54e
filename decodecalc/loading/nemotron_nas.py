"""Nemotron-NAS's config.json (model_type ``nemotron-nas``, DeciLM remote code: Llama-3.3-
Nemotron-Super-49B, Llama-3.1-Nemotron-Ultra-253B): Llama's layers cut per layer by an
architecture search. ``block_configs`` gives each layer its attention (GQA with
``num_attention_heads / n_heads_in_group`` KV heads, left out where ``no_op``, or one linear
map where ``replace_with_linear``) and its MLP (a gated MLP whose width ``ffn_mult`` sets,
or none where ``no_op``). A layer keeps the norm before each part it has.

modeling_decilm.py's width: ``int(2 x ffn_mult x hidden / 3)`` rounded up to a multiple of
256, in floating point as written there (5.25 x 8,192: 28,672).
"""

from __future__ import annotations

from decodecalc.loading.fields import Fields
from decodecalc.model.layers import Attention, DenseMLP, Layer
from decodecalc.model.no_mixer import NoMixer

HARMLESS = {
    # Sink-token and window switches of the original code: off (null or false) in the
    # published checkpoints; any other value is refused below.
    "unshifted_sink",
    "use_prefill_window_in_sink_attention",
}
UNMODELLED = ("num_sink_tokens", "window_length", "sparsify")
"""Block fields that, set, would change what a layer reads: refused (null in the published
checkpoints)."""


def _ffn_width(ffn_mult: float, hidden: int) -> int:
    """modeling_decilm.py's _ffn_mult_to_intermediate_size, operation for operation."""
    width = int(2 * ffn_mult * hidden / 3)
    return -(-width // 256) * 256


def _part(block: Fields, name: str) -> Fields:
    part = Fields(block.doc, (*block.key_path, name), block.data.get(name), block.limit)
    block.read.add(name)
    for field in UNMODELLED:
        if part.has(field):
            raise part.error(field, "not modelled (null in the published checkpoints)")
        part.read.add(field)
    for field in HARMLESS:
        if part.boolean(field, default=False):
            raise part.error(field, "sink tokens are not modelled")
    if part.boolean("replace_with_linear", default=False) and name == "ffn":
        raise part.error("replace_with_linear", "a linear map in place of the MLP is not modelled")
    return part


def _attention(part: Fields, heads: int, head_dim: int, bias: bool) -> Attention | NoMixer:
    if part.boolean("no_op", default=False):
        return NoMixer()
    if part.boolean("replace_with_linear", default=False):
        return NoMixer(linear=True)
    group = part.integer("n_heads_in_group")
    if heads % group:
        raise part.error("n_heads_in_group", f"{group} does not divide {heads} attention heads")
    return Attention(heads, heads // group, head_dim, qkv_bias=bias, o_bias=bias)


def read_nemotron_nas(cfg: Fields, hidden: int, count: int) -> list[Layer]:
    """The ``count`` layers ``block_configs`` describes, for a model of width ``hidden``."""
    heads = cfg.integer("num_attention_heads")
    head_dim = cfg.integer("head_dim", default=hidden // heads)
    bias = cfg.boolean("attention_bias", default=False)
    if cfg.boolean("mlp_bias", default=False):
        raise cfg.error("mlp_bias", "biases here are not modelled")
    blocks = cfg.data.get("block_configs")
    cfg.read.add("block_configs")
    if not isinstance(blocks, list) or len(blocks) != count:
        size = len(blocks) if isinstance(blocks, list) else 0
        raise cfg.error("block_configs", f"must list one block for each of {count} layers: {size}")
    built: dict[tuple[object, object, int], Layer] = {}
    layers = []
    for index, data in enumerate(blocks):
        block = Fields(cfg.doc, (*cfg.key_path, "block_configs", index), data, cfg.limit)
        attention, ffn = _part(block, "attention"), _part(block, "ffn")
        mixer = _attention(attention, heads, head_dim, bias)
        mlp = (
            DenseMLP(0)
            if ffn.boolean("no_op", default=False)
            else DenseMLP(_ffn_width(float(ffn.fraction("ffn_mult", maximum=1_000)), hidden))
        )
        has_attention = not attention.boolean("no_op", default=False)
        norms = int(has_attention) + int(bool(mlp.intermediate_size))
        for part in (block, attention, ffn):
            part.refuse_unread((), (), "decodecalc's nemotron-nas reader")
        key = (mixer, mlp, norms)
        layers.append(built.setdefault(key, Layer(mixer, mlp, norms=norms)))
    return layers
