"""Turning preset files into core objects: models, GPUs and dtypes.

Model presets hold architecture fields named as in the model's config.json under
``config:``; family quirks that config.json leaves implicit (Qwen2's q/k/v biases,
Qwen3's per-head q/k norms) come from ``model_type`` here, not from the file.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from decodecalc.dtypes import DType
from decodecalc.errors import InputError
from decodecalc.fields import Fields
from decodecalc.hardware import GpuSpec
from decodecalc.model import Attention, DenseMLP, Layer, Model
from decodecalc.units import parse_bandwidth, parse_size
from decodecalc.yamlfile import YamlDocument


@dataclass(frozen=True)
class Family:
    """What a ``model_type`` implies beyond its config.json fields."""

    qkv_bias: bool = False
    qk_norm: bool = False
    window_needs_flag: bool = False
    """Qwen2/3 configs carry a sliding_window that applies only with use_sliding_window."""


FAMILIES = {
    "llama": Family(),
    "mistral": Family(),
    "phi3": Family(),
    "qwen2": Family(qkv_bias=True, window_needs_flag=True),
    "qwen3": Family(qk_norm=True, window_needs_flag=True),
}


def _common(fields: Fields) -> tuple[str, tuple[str, ...], str]:
    return fields.text("name"), fields.texts("aliases"), fields.text("source")


def load_model(doc: YamlDocument, preset_id: str) -> Model:
    top = Fields(doc)
    name, aliases, source = _common(top)
    official = top.integer("official_params")
    official_source = top.text("official_params_source", "")
    cfg = top.mapping("config")
    top.finish()

    model_type = cfg.text("model_type")
    family = FAMILIES.get(model_type)
    if family is None:
        raise cfg.error(
            "model_type", f"unknown model_type {model_type!r}; known: {', '.join(sorted(FAMILIES))}"
        )
    hidden = cfg.integer("hidden_size")
    heads = cfg.integer("num_attention_heads")
    kv_heads = cfg.integer("num_key_value_heads", default=heads)
    if heads % kv_heads:
        raise cfg.error(
            "num_key_value_heads", f"{kv_heads} does not divide {heads} attention heads"
        )
    head_dim = cfg.integer("head_dim", default=hidden // heads)
    window = cfg.optional_integer("sliding_window")
    use_window = cfg.boolean("use_sliding_window", default=not family.window_needs_flag)
    attention = Attention(
        num_heads=heads,
        num_kv_heads=kv_heads,
        head_dim=head_dim,
        qkv_bias=cfg.boolean("attention_bias", default=family.qkv_bias),
        qk_norm=family.qk_norm,
        sliding_window=window if use_window else None,
    )
    layer = Layer(attention, DenseMLP(cfg.integer("intermediate_size")))
    model = Model(
        id=preset_id,
        name=name,
        family=model_type,
        hidden_size=hidden,
        vocab_size=cfg.integer("vocab_size"),
        tie_word_embeddings=cfg.boolean("tie_word_embeddings", default=False),
        layers=(layer,) * cfg.integer("num_hidden_layers"),
        max_context_tokens=cfg.integer("max_position_embeddings"),
        official_params=official,
        official_params_source=official_source,
        aliases=aliases,
        source=source,
    )
    cfg.finish()
    return model


def load_gpu(doc: YamlDocument, preset_id: str) -> GpuSpec:
    top = Fields(doc)
    name, aliases, source = _common(top)
    try:
        bandwidth = parse_bandwidth(top.text("bandwidth"))
        memory = parse_size(top.text("memory"))
    except InputError as exc:
        raise InputError(f"{doc.path}: {exc}") from None
    gpu = GpuSpec(
        id=preset_id,
        name=name,
        vendor=top.text("vendor"),
        bandwidth_bytes_per_s=bandwidth,
        memory_bytes=memory,
        memory_kind=top.text("memory_kind"),
        aliases=aliases,
        notes=top.text("notes", ""),
        source=source,
    )
    top.finish()
    return gpu


def load_dtype(doc: YamlDocument, preset_id: str) -> DType:
    """A dtype gives its cost one of three ways: ``bits`` (plus ``scale_bits`` per
    ``block_size`` values), ``block_bytes`` per ``block_size`` (GGUF), or
    ``average_bits`` for a mixture of formats."""
    top = Fields(doc)
    name, aliases, source = _common(top)
    forms = [f for f in ("bits", "block_bytes", "average_bits") if top.has(f)]
    if len(forms) != 1:
        raise top.error(None, "give exactly one of bits, block_bytes or average_bits")
    if forms == ["bits"]:
        bits = top.fraction("bits")
        if top.has("scale_bits"):
            bits += top.fraction("scale_bits") / top.integer("block_size")
    elif forms == ["block_bytes"]:
        bits = top.fraction("block_bytes") * 8 / top.integer("block_size")
    else:
        bits = top.fraction("average_bits")
    dtype = DType(
        id=preset_id,
        name=name,
        bits_per_value=bits,
        kv_cache=top.boolean("kv_cache", default=False),
        compute=top.boolean("compute", default=False),
        mixture=forms == ["average_bits"],
        description=top.text("description"),
        aliases=aliases,
        source=source,
    )
    top.finish()
    return dtype


LOADERS: dict[str, Callable[[YamlDocument, str], object]] = {
    "models": load_model,
    "gpus": load_gpu,
    "dtypes": load_dtype,
}


def preset_id_of(path: Path) -> str:
    return path.stem.lower()
