"""A quantized checkpoint's own weight recipe, read from its config.json.

``quantization_config`` says which format the quantized tensors take (quant_method, bits,
group_size, weight_block_size, config_groups, quant_algo) and which modules stay in the
activations' format (modules_to_not_convert, ignore, exclude_modules); ModelOpt writes the
same in an ``hf_quant_config.json`` beside the config, AMD Quark as a ``global_quant_config``
and an ``exclude`` list. Each becomes a WeightRecipe over decodecalc's tensor groups.
What every engine leaves unquantized stays in the config's torch_dtype: the input
embedding, norms and biases, MoE routers and the vision tower (which decode never reads).
The LM head is quantized only where the method quantizes it (ModelOpt, compressed-tensors
and Quark unless excluded, GPTQ with ``lm_head: true``).

An exclusion pattern may name some layers only (ModelOpt checkpoints often keep the first
or last layers' attention in BF16): the group is then split between the two formats by the
share of layers the pattern covers.
"""

from __future__ import annotations

import fnmatch
import re
from collections import Counter
from collections.abc import Callable
from fractions import Fraction
from pathlib import Path
from typing import TYPE_CHECKING

from decodecalc.errors import InputError
from decodecalc.loading.datafile import Document, is_file, read_json
from decodecalc.loading.fields import Fields
from decodecalc.model.precision import GROUP_NAMES, LINEAR_GROUPS, Mix, WeightRecipe
from decodecalc.record import record, replace

if TYPE_CHECKING:
    from collections.abc import Sequence

    from decodecalc.model.layers import Layer
    from decodecalc.model.model import Model
    from decodecalc.notes import Note

CHECKPOINT = "checkpoint"
"""The id of a recipe read from a model's own config (JSON's ``weights_recipe``)."""

LAYER_MODULES = {
    "attention q, o": ("self_attn.q_proj", "self_attn.o_proj", "self_attn.q_b_proj"),
    "attention k, v": ("self_attn.k_proj", "self_attn.v_proj", "self_attn.kv_b_proj"),
    "MLA down-projections": ("self_attn.q_a_proj", "self_attn.kv_a_proj_with_mqa"),
    "linear attention": (
        "linear_attn.in_proj_qkvz",
        "linear_attn.in_proj_ba",
        "linear_attn.out_proj",
    ),
    "mlp": ("mlp.gate_proj", "mlp.up_proj", "mlp.down_proj"),
    "shared experts": ("mlp.shared_experts.gate_proj", "mlp.shared_expert.gate_proj"),
    "routed experts": ("mlp.experts.0.gate_proj", "mlp.experts", "block_sparse_moe.experts.0.w1"),
}
"""Hugging Face module names (after the layer prefix) of each group's tensors, in the
spellings of the families decodecalc reads."""

LAYER_PREFIXES = ("model.layers.", "model.language_model.layers.", "language_model.model.layers.")
HEAD_MODULES = ("lm_head", "language_model.lm_head")

BASE_FORMATS = {"bfloat16": "bf16", "float16": "fp16", "float32": "fp32"}


@record
class Scheme:
    """What a quant_method does: the format, the groups it applies to, the exclusions."""

    format: str
    quantized: tuple[str, ...]
    excluded: tuple[str, ...] = ()
    head: bool = False
    """Whether the LM head is quantized unless excluded."""
    per_module: tuple[tuple[str, str], ...] = ()
    """ModelOpt's MIXED_PRECISION: each quantized module and its dtype; every module not
    named stays in the config's torch_dtype (``format`` and ``quantized`` then unused)."""


def read_recipe(cfg: Fields, layers: Sequence[Layer], hidden_size: int) -> WeightRecipe:
    """The recipe a config's quantization_config describes. A method or format decodecalc
    does not read gives a recipe that says so when used (``--weights`` still works)."""
    quant = cfg.mapping("quantization_config")
    method = quant.text("quant_method").lower()
    base = BASE_FORMATS.get(cfg.text("torch_dtype", "") or cfg.text("dtype", ""), "bf16")
    name = f"{method} checkpoint (its quantization_config)"
    reader = METHODS.get(method)
    if reader is None:
        known = ", ".join(sorted(METHODS))
        problem = f"{cfg.doc.path}: quant_method {method!r} is not one decodecalc reads ({known})"
        return WeightRecipe(CHECKPOINT, name, base, problem=problem)
    try:
        scheme = reader(quant)
    except Unpriced as exc:
        return WeightRecipe(CHECKPOINT, name, base, problem=f"{cfg.doc.path}: {exc}")
    covered = _matcher(quant, scheme.excluded)
    modules = dict(scheme.per_module)
    default = base if modules or scheme.quantized == ("routed experts",) else scheme.format
    overrides: list[tuple[str, Mix]] = []
    for group in GROUP_NAMES:
        mix: Mix = ((base, Fraction(1)),)
        if modules:
            mix = _module_mix(group, modules, layers, hidden_size, base)
        elif group in scheme.quantized or (group == "LM head" and scheme.head):
            kept = _covered_share(group, covered, layers, hidden_size)
            mix = tuple((f, s) for f, s in ((scheme.format, 1 - kept), (base, kept)) if s)
        if mix != ((default, Fraction(1)),):
            overrides.append((group, mix))
    return WeightRecipe(
        id=CHECKPOINT,
        name=name,
        default=default,
        overrides=tuple(overrides),
        description=f"per module, {' and '.join(sorted(set(modules.values())))} where "
        f"quantized_layers names it; {base} for the rest"
        if modules
        else f"{scheme.format} for {', '.join(scheme.quantized)}"
        f"{' and the LM head' if scheme.head else ''} unless excluded; {base} for the rest",
        source=cfg.doc.path,
    )


class Unpriced(Exception):
    """A quantization_config in a format no dtype preset prices."""


def _mxfp4(q: Fields) -> Scheme:
    """Transformers' MXFP4 (gpt-oss): only the MoE experts are quantized."""
    return Scheme("mxfp4", ("routed experts",), q.texts("modules_to_not_convert"))


def _fp8(q: Fields) -> Scheme:
    """Transformers' fine-grained FP8 (DeepSeek-V3, Qwen3 FP8): every linear layer, with
    128x128 block scales when weight_block_size says so."""
    block = q.raw_list("weight_block_size")
    return Scheme(
        _format("float", 8, None, block), LINEAR_GROUPS, q.texts("modules_to_not_convert")
    )


def _int(head_flag: bool) -> Callable[[Fields], Scheme]:
    """AWQ and GPTQ: integer weights with a scale per ``group_size`` (-1: per channel)."""

    def read(q: Fields) -> Scheme:
        group = q.integer("group_size", default=-1, minimum=-1)
        fmt = _format("int", q.integer("bits"), None if group == -1 else group, ())
        head = q.boolean("lm_head", default=False) if head_flag else False
        return Scheme(fmt, LINEAR_GROUPS, q.texts("modules_to_not_convert"), head)

    return read


def _compressed_tensors(q: Fields) -> Scheme:
    """llm-compressor's format: config_groups of targets with a weights scheme each."""
    groups = q.mapping("config_groups")
    formats = set()
    for key in list(groups.data):
        group = groups.mapping(str(key))
        targets = group.texts("targets")
        if targets != ("Linear",):
            raise Unpriced(f"config_groups.{key} targets {list(targets)}, not every Linear layer")
        weights = group.mapping("weights")
        strategy = weights.text("strategy", "tensor")
        size = weights.optional_integer("group_size") if "group" in strategy else None
        block = weights.raw_list("block_structure") if strategy == "block" else ()
        kind, bits = weights.text("type", "int"), weights.integer("num_bits")
        fmt = _format(kind, bits, size, block)
        # compressed-tensors stores a zero point per group only for an asymmetric scheme;
        # symmetric is its default (Kimi-K2-Thinking: 4.5 bits, not 5).
        if weights.boolean("symmetric", default=True):
            fmt = SYMMETRIC.get(fmt, fmt)
        formats.add(fmt)
    if len(formats) != 1:
        raise Unpriced(f"config_groups hold {len(formats)} weight formats; decodecalc prices one")
    return Scheme(formats.pop(), LINEAR_GROUPS, q.texts("ignore"), head=True)


SYMMETRIC = {"int4-g32": "int4-g32-sym"}
"""The dtype of a symmetric scheme where the group's dtype counts a zero point too."""

MODELOPT_FORMATS = {
    "FP8": "fp8",
    "FP8_PER_CHANNEL_PER_TOKEN": "fp8",
    "FP8_PB_WO": "fp8-128x128",
    "NVFP4": "nvfp4",
    "W4A16_NVFP4": "nvfp4",
}


def _modelopt(q: Fields) -> Scheme:
    """NVIDIA ModelOpt: ``quantization`` (hf_quant_config.json's form) or flat fields."""
    inner = q.mapping("quantization") if q.has("quantization") else q
    algo = inner.text("quant_algo").upper()
    excluded = inner.texts("exclude_modules" if inner is not q else "ignore")
    if algo == "MIXED_PRECISION":
        layers = inner.mapping("quantized_layers")
        per_module = tuple(
            (str(m), _modelopt_format(layers.mapping(str(m)).text("quant_algo")))
            for m in layers.data
        )
        return Scheme("", (), excluded, per_module=per_module)
    return Scheme(_modelopt_format(algo), LINEAR_GROUPS, excluded, head=True)


def _modelopt_format(algo: str) -> str:
    if algo.upper() not in MODELOPT_FORMATS:
        raise Unpriced(f"ModelOpt quant_algo {algo!r} has no dtype preset")
    return MODELOPT_FORMATS[algo.upper()]


QUARK_TYPES = {
    "fp4": ("float", 4),
    "fp8_e4m3": ("float", 8),
    "int8": ("int", 8),
    "int4": ("int", 4),
}


def _quark(q: Fields) -> Scheme:
    """AMD Quark (amd/*-MXFP4, *-FP8-KV): one ``global_quant_config`` weight spec for every
    linear layer and the LM head, less ``exclude``; per-layer specs are not priced."""
    for per_layer in ("layer_quant_config", "layer_type_quant_config"):
        if q.has(per_layer) and q.mapping(per_layer).data:
            raise Unpriced(f"Quark's {per_layer} gives layers formats of their own")
    weight = q.mapping("global_quant_config").mapping("weight")
    dtype = weight.text("dtype")
    if dtype not in QUARK_TYPES:
        raise Unpriced(f"Quark weight dtype {dtype!r} has no dtype preset")
    kind, bits = QUARK_TYPES[dtype]
    group = weight.optional_integer("group_size")
    size = group if weight.text("qscheme", "") == "per_group" else None
    return Scheme(_format(kind, bits, size, ()), LINEAR_GROUPS, q.texts("exclude"), head=True)


METHODS: dict[str, Callable[[Fields], Scheme]] = {
    "mxfp4": _mxfp4,
    "fp8": _fp8,
    "awq": _int(head_flag=False),
    "gptq": _int(head_flag=True),
    "compressed-tensors": _compressed_tensors,
    "modelopt": _modelopt,
    "quark": _quark,
}


def _format(kind: str, bits: int, group: int | None, block: tuple[int, ...]) -> str:
    """The dtype preset of a numeric format; Unpriced when none matches."""
    known = {
        ("float", 8, None, ()): "fp8",
        ("float", 8, None, (128, 128)): "fp8-128x128",
        ("float", 4, 16, ()): "nvfp4",
        ("float", 4, 32, ()): "mxfp4",
        ("int", 8, None, ()): "int8",
        ("int", 4, None, ()): "int4",
        ("int", 4, 32, ()): "int4-g32",
        ("int", 4, 64, ()): "int4-g64",
        ("int", 4, 128, ()): "int4-g128",
    }
    found = known.get((kind, bits, group, block))
    if found is None:
        scales = f", group {group}" if group else f", blocks {list(block)}" if block else ""
        raise Unpriced(f"{bits}-bit {kind} weights{scales} have no dtype preset")
    return found


def _matcher(quant: Fields, patterns: tuple[str, ...]) -> Callable[[str], bool]:
    """Whether a module (or a module above it) is excluded: ``re:`` patterns are regular
    expressions matched from the start (compressed-tensors), patterns with wildcards match
    the whole name (ModelOpt, transformers), plain names match whole dotted parts."""
    parts = []
    for pattern in patterns:
        if pattern.startswith("re:"):
            try:
                re.compile(pattern[3:])
            except re.error as exc:
                raise quant.error(None, f"{pattern!r} is not a regular expression: {exc}") from None
            parts.append(f"(?:{pattern[3:]}).*")
        elif any(c in pattern for c in "*?["):
            parts.append(fnmatch.translate(pattern))
        else:
            parts.append(rf"(?:.*\.)?{re.escape(pattern)}(?:\..*)?")
    if not parts:
        return lambda module: False
    combined = re.compile("|".join(f"(?:{p})" for p in parts))

    def covered(module: str) -> bool:
        names = module.split(".")
        return any(combined.fullmatch(".".join(names[:n])) for n in range(1, len(names) + 1))

    return covered


def _covered_share(
    group: str, covered: Callable[[str], bool], layers: Sequence[Layer], hidden_size: int
) -> Fraction:
    """The share of a group the exclusions keep unquantized: of the layers that have it
    for a layer's tensors (DeepSeek's dense MLPs are in its first three layers only), all or
    nothing for the LM head."""
    if group == "LM head":
        return Fraction(any(covered(m) for m in HEAD_MODULES))
    modules = LAYER_MODULES[group]
    having = _layers_having(group, layers, hidden_size)
    hit = sum(
        any(covered(f"{prefix}{i}.{m}") for prefix in LAYER_PREFIXES for m in modules)
        for i in having
    )
    return Fraction(hit, len(having)) if having else Fraction(0)


def _layers_having(group: str, layers: Sequence[Layer], hidden_size: int) -> list[int]:
    """The layers holding a group (DeepSeek's dense MLPs are in its first three only).
    Each distinct layer object is asked once: a stack repeats a few (model.counted)."""
    holds: dict[int, bool] = {}
    for layer in layers:
        if id(layer) not in holds:
            holds[id(layer)] = any(g.name == group for g in layer.tensor_groups(hidden_size))
    return [i for i, layer in enumerate(layers) if holds[id(layer)]]


def _module_mix(
    group: str, modules: dict[str, str], layers: Sequence[Layer], hidden_size: int, base: str
) -> Mix:
    """A group under MIXED_PRECISION: each layer's share in the format ``quantized_layers``
    gives the first of the group's modules it names in that layer, else in ``base``."""
    if group == "LM head":
        named = [modules[m] for m in HEAD_MODULES if m in modules]
        return ((named[0] if named else base, Fraction(1)),)
    if group not in LAYER_MODULES:
        return ((base, Fraction(1)),)
    having = _layers_having(group, layers, hidden_size)
    formats = [
        next(
            (
                modules[name]
                for prefix in LAYER_PREFIXES
                for m in LAYER_MODULES[group]
                if (name := f"{prefix}{i}.{m}") in modules
            ),
            base,
        )
        for i in having
    ]
    counts = Counter(formats)
    return tuple((f, Fraction(n, len(having))) for f, n in counts.items()) or ((base, Fraction(1)),)


TORCH_DTYPES = frozenset(
    "bfloat16 float16 float32 float64 half float double auto "
    "float8_e4m3fn float8_e5m2 int8 uint8".split()
)
"""What a config's torch_dtype (transformers 5: dtype) may name: PyTorch's dtypes a
checkpoint is saved in (torch.* spelled either way), and "auto"."""


def read_config(path: Path, shown: str | None = None) -> Document:
    """A model's config.json as every door reads it (--model FILE, the Hub, import): its
    torch_dtype checked and hf_quant_config.json beside it folded in. ``shown``: the name
    messages give it (a Hub id's), else its path."""
    doc = read_json(path)
    if shown is not None:
        doc = replace(doc, path=shown)
    for key in ("torch_dtype", "dtype"):
        value = doc.data.get(key)
        if value is None:
            continue
        name = value.removeprefix("torch.") if isinstance(value, str) else None
        if name not in TORCH_DTYPES:
            text = repr(value)[:40] + ("..." if len(repr(value)) > 40 else "")
            raise InputError(
                f"{doc.path}: {key} {text} is not a dtype (bfloat16, float16, float32, ...); "
                "its unquantized weights would be priced in a format it does not name"
            )
    return with_side_file(doc, path)


def with_side_file(doc: Document, path: Path) -> Document:
    """A config.json with the hf_quant_config.json beside it (ModelOpt's export) folded in
    as its quantization_config, in the form vLLM reads too, when it has none of its own."""
    side = path.parent / "hf_quant_config.json"
    if not isinstance(doc.data, dict) or "quantization_config" in doc.data or not is_file(side):
        return doc
    quant = read_json(side).data
    inner = quant.get("quantization") if isinstance(quant, dict) else None
    if not isinstance(inner, dict):
        raise InputError(f"{side}: expected a 'quantization' mapping (ModelOpt's format)")
    folded = {"quant_method": "modelopt", "quantization": inner}
    return replace(doc, data={**doc.data, "quantization_config": folded})


EXPORT_FORMATS = {
    "fp8": "fp8",
    "fp4": "nvfp4",
    "nvfp4": "nvfp4",
    "mxfp4": "mxfp4",
    "int4": "int4-g128",
    "awq": "int4-g128",
    "gptq": "int4-g128",
}
"""Words of a quantized export's name (Llama-3.1-8B-Instruct-FP8, Qwen3-8B-AWQ) and the
weight format to suggest for each."""


def export_name_note(model: Model, weights: str, given: bool) -> tuple[Note, ...]:
    """A model read from a config.json that names no format (neither its
    quantization_config nor an hf_quant_config.json beside it) whose id or folder says a
    quantized one: its weights are read as ``weights``, likely 2-4x the bytes the export
    holds, so a note says so and how to give the format. Nothing where --weights is
    given or the config names a format."""
    if given or model.default_weights is not None or model.official_params:
        return ()
    words = re.split(r"[-_./ ]+", model.id.lower())
    named = next((w for w in words if w in EXPORT_FORMATS), None)
    if named is None:
        return ()
    from decodecalc.notes import Note

    return (
        Note(
            "export-format-unread",
            f"{model.id}: the name says {named.upper()}, but neither config.json nor an "
            f"hf_quant_config.json beside it names a weight format, so weights are read as "
            f"{weights}; give the format with -w (e.g. -w {EXPORT_FORMATS[named]})",
        ),
    )
