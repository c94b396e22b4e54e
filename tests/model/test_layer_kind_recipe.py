"""The recipe for a new layer kind (docs/development.md) against the protocol every kind
implements (model/layer_kind.py): a member the recipe leaves out is a view edit, a failing
step or a crash waiting for whoever adds the next kind by the recipe."""

from __future__ import annotations

import inspect
import re
from pathlib import Path

import pytest

import decodecalc.model.layers as layers
from decodecalc.model.layer_kind import LayerKind
from decodecalc.record import field_names

RECIPE_PAGE = Path(__file__).resolve().parents[2] / "docs" / "development.md"
PACKAGE = Path(__file__).resolve().parents[2] / "decodecalc"


def protocol_members() -> set[str]:
    return {
        name
        for name, value in vars(LayerKind).items()
        if not name.startswith("_") and (callable(value) or isinstance(value, property))
    }


def recipe() -> str:
    text = RECIPE_PAGE.read_text()
    start = text.index("**A new layer kind**")
    return text[start : text.index("\n\n", start)]


def layer_kinds() -> list[type]:
    """Every class in model/layers.py's ``Mixer`` union."""
    source = inspect.getsource(layers)
    union = source[source.index("Mixer: TypeAlias = (") : source.index("FFN: TypeAlias")]
    names = re.findall(r"\b([A-Z]\w+)\b", union.removeprefix("Mixer: TypeAlias"))
    found = []  # the union exists for type checkers only: import each class it names
    for name in names:
        module = re.search(rf"from (decodecalc\.model\.\w+) import [^\n]*\b{name}\b", source)
        namespace = vars(layers) if module is None else vars(__import__(module[1], fromlist=["x"]))
        found.append(namespace[name])
    return found


def test_the_protocol_has_every_member_the_views_and_step_ask() -> None:
    # 6 attributes the KV curve reads, 12 methods: 18 in all
    assert len(protocol_members()) == 18


def test_the_recipe_names_every_member_of_the_protocol() -> None:
    named = set(re.findall(r"`(\w+)`", recipe()))
    assert protocol_members() - named == set()


def test_the_union_holds_every_kind() -> None:
    # attention, MLA, Gated DeltaNet, Mamba-2, Mamba-1, lightning attention, short
    # convolution, DeepSeek-V4's compressed attention, Kimi Delta Attention, and
    # Nemotron-NAS's layer without attention (NoMixer)
    assert len(layer_kinds()) == 10


@pytest.mark.parametrize("kind", layer_kinds(), ids=lambda k: k.__name__)
def test_every_layer_kind_implements_the_protocol(kind: type) -> None:
    held = set(field_names(kind))  # a field without a default is no class attribute
    missing = {m for m in protocol_members() if not hasattr(kind, m) and m not in held}
    assert not missing, f"{kind.__name__} lacks {sorted(missing)}"
    for name in protocol_members():
        if callable(getattr(LayerKind, name)):  # a method stays a method, with its arguments
            wanted = inspect.signature(getattr(LayerKind, name)).parameters
            given = inspect.signature(getattr(kind, name)).parameters
            assert list(given) == list(wanted), f"{kind.__name__}.{name}{list(given)}"


def test_no_view_asks_which_kind_a_layer_is() -> None:
    """Views format what each kind's members return: none imports a layer kind's class."""
    kinds = {k.__name__ for k in layer_kinds()}
    asking = [
        f"{path.name}: {name}"
        for path in sorted((PACKAGE / "views").glob("*.py"))
        for name in kinds
        if re.search(rf"\bimport\b[^\n]*\b{name}\b|isinstance\([^)]*\b{name}\b", path.read_text())
    ]
    assert not asking, asking


def test_the_tp_rule_joins_each_kinds_words_kv_caches_first() -> None:
    """Each kind says how TP splits its cache; a model's rule names each kind once, caches
    that grow before constant states, and joins the head counts its attention layers split
    across (8 and 16 KV heads: up to 8/16 GPUs)."""
    from decodecalc.model.layer_kind import tp_cache_rule
    from decodecalc.model.layers import Attention
    from decodecalc.model.mamba import Mamba1
    from decodecalc.model.short_conv import ShortConv

    mamba = Mamba1(d_inner=8192, state_size=16, conv_kernel=4, dt_rank=256)
    mixers = [
        mamba,
        Attention(num_heads=32, num_kv_heads=16, head_dim=128),
        ShortConv(width=2048, kernel=3),  # nothing to say
        Attention(num_heads=32, num_kv_heads=8, head_dim=128),
        mamba,
    ]
    assert tp_cache_rule(mixers) == (
        "KV heads split across up to 8/16 GPUs, then replicated; "
        "Mamba state split by head (and by group where TP divides them)"
    )


def test_one_kv_head_is_said_to_be_replicated_not_split_across_1_gpus() -> None:
    """Multi-query attention has one KV head: TP splits it across no GPUs, so the rule says
    it is replicated (review s40 #25: "split across up to 1 GPUs")."""
    from decodecalc.model.layer_kind import tp_cache_rule
    from decodecalc.model.layers import Attention

    one = Attention(num_heads=32, num_kv_heads=1, head_dim=128)
    assert tp_cache_rule([one]) == "one KV head, replicated on every TP rank"
    eight = Attention(num_heads=32, num_kv_heads=8, head_dim=128)
    assert tp_cache_rule([one, eight]) == (
        "one KV head, replicated on every TP rank; "
        "KV heads split across up to 8 GPUs, then replicated"
    )
