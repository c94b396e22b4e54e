"""Per-tensor precision: which format each tensor group is stored in, and its bytes.

Real checkpoints are mixed precision. gpt-oss's official checkpoint stores only the routed
experts in MXFP4 and everything else in BF16; FP8 and NVFP4 checkpoints keep the LM head in
BF16; llama.cpp's Q4_K_M gives some tensors Q6_K. Pricing such a checkpoint in one format
misses by several percent to a factor of two (uniform MXFP4 reads gpt-oss-120b's step as
2.7 GB; the checkpoint reads 5.0 GB). A weight recipe names a default format and the tensor
groups that differ; every place that turns parameters into bytes asks ``group_dtype``.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from fractions import Fraction

from decodecalc.errors import InputError
from decodecalc.model.dtypes import DType, ceil_bytes
from decodecalc.record import record

LINEAR_GROUPS = (
    "attention q, o",
    "attention k, v",
    "MLA down-projections",
    "linear attention",
    "mlp",
    "shared experts",
    "routed experts",
)
"""The decoder layers' linear layers: what a quantized checkpoint quantizes by default."""

GROUP_NAMES = (
    "embedding",
    "LM head",
    "embedding = LM head (tied)",
    *LINEAR_GROUPS,
    "router",
    "norms and biases",
    "vision encoder",
)
"""Every tensor group name the layer kinds produce: what a recipe may override."""

Mix = tuple[tuple[str, Fraction], ...]
"""Formats (dtype ids) a group is stored in, each with its share of the group's parameters;
one entry with share 1 for a group stored in one format."""

Overrides = tuple[tuple[str, DType], ...]
"""Group name -> the format its parameters are stored in, where it is not the default."""


@record
class WeightRecipe:
    """How a checkpoint stores its weights: ``default`` for every group that ``overrides``
    does not name. A preset (presets/recipes), or a model's own recipe read from its
    config.json's quantization_config."""

    id: str
    name: str
    default: str
    """A dtype id."""
    overrides: tuple[tuple[str, Mix], ...] = ()
    description: str = ""
    source: str = ""
    aliases: tuple[str, ...] = ()
    problem: str = ""
    """Why the checkpoint's format cannot be priced (a quant_method decodecalc does not
    read). Raised only when the recipe is used, so ``--weights DTYPE`` still works."""


def group_dtype(name: str, default: DType, overrides: Overrides) -> DType:
    """The format a group is stored in."""
    for group, dtype in overrides:
        if group == name:
            return dtype
    return default


def weight_bytes(
    parts: Iterable[tuple[str, int | Fraction]], default: DType, overrides: Overrides
) -> int:
    """Bytes of (group name, parameters) pairs, each group in its own format and rounded up
    on its own: a group is its own tensors, and the per-group lines that ``explain`` and
    ``show`` print then add up to the total."""
    return sum(ceil_bytes(group_dtype(n, default, overrides).bytes_for(p)) for n, p in parts)


def expand(
    recipe: WeightRecipe, groups: Iterable[str], lookup: Callable[[str], DType]
) -> tuple[DType, Overrides]:
    """The recipe as formats, for a model with these groups: overrides of groups the model
    does not have, or that match the default, are left out. ``lookup`` turns a dtype id
    into its DType (the catalog's)."""
    if recipe.problem:
        raise InputError(f"{recipe.problem}; give --weights DTYPE or a recipe")
    default = lookup(recipe.default)
    present = set(groups)
    overrides: list[tuple[str, DType]] = []
    for group, mix in recipe.overrides:
        if group in present:
            dtype = blend([(lookup(d), share) for d, share in mix])
            if dtype != default:
                overrides.append((group, dtype))
    return default, tuple(overrides)


def blend(parts: Sequence[tuple[DType, Fraction]]) -> DType:
    """One format for a group stored in several by share (llama.cpp's Q4_K_M stores half
    the layers' ffn_down in Q6_K, the rest of the MLP in Q4_K): bits are the share-weighted
    average. A single format is returned as it is."""
    if len(parts) == 1:
        return parts[0][0]
    total = sum(share for _, share in parts)
    shares = [(d, share / total) for d, share in parts]
    return DType(
        id=mix_text(tuple((d.id, share) for d, share in parts)),
        name=mix_text(tuple((d.name, share) for d, share in parts)),
        bits_per_value=sum((d.bits_per_value * share for d, share in shares), Fraction(0)),
        kv_cache=False,
        compute=False,
        mixture=True,
        description="a tensor group stored in several formats, by share of its parameters",
        matmul=shares[0][0].matmul,
    )


def mix_text(mix: Mix) -> str:
    """``mxfp4``, or ``3/4 q4-k + 1/4 q6-k`` for a group split between formats."""
    if len(mix) == 1:
        return mix[0][0]
    total = sum(share for _, share in mix)
    return " + ".join(f"{share / total} {name}" for name, share in mix)
