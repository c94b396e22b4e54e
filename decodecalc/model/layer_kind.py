"""What every layer kind (every token mixer) provides: the members the step, the KV curve,
the listings and explain ask of a mixer, so that none of them asks which kind it holds.

A new kind implements every member of ``LayerKind`` (docs/development.md's recipe names
them; tests/model/test_layer_kind_recipe.py holds recipe, protocol and kinds to one list), and the
views only format what these members return.
"""

from __future__ import annotations

from collections.abc import Iterable
from fractions import Fraction
from typing import TYPE_CHECKING, Protocol

from decodecalc.record import record

if TYPE_CHECKING:
    from decodecalc.model.pooled import PooledEntries
    from decodecalc.model.tensors import TensorGroup


@record
class CacheTerms:
    """What one layer keeps per sequence on one GPU, as explain's section 2 states it:
    ``kind``: the kind's name there; ``shape``: how its cache per token is made up, with the
    numbers in and what they come to ("2 (K,V) x 8 KV heads x 128 = 2,048 elements per
    token", "no KV; a constant state of ..."). The line reads ``kind: shape``."""

    kind: str
    shape: str


@record
class TpRule:
    """How tensor parallelism treats a kind's per-sequence cache, as ``show`` and estimate
    state it: ``text``, where ``{limits}`` stands for the GPU counts a cache splits across
    before it is replicated (``limit``, each layer's own; the layers of a model joined)."""

    text: str
    limit: int | None = None


class LayerKind(Protocol):
    """A token mixer: attention of some kind, or a recurrent, linear-attention, Mamba or
    convolution block. Attributes first (what the KV curve reads), then methods."""

    @property
    def kind(self) -> str:
        """A short name ("attention", "mla", "mamba2"): ids and listings."""
        ...

    @property
    def sliding_window(self) -> int | None:
        """Tokens the layer keeps and reads at most (None: every token)."""
        ...

    @property
    def attention_chunk(self) -> int | None:
        """Chunked local attention's chunk (None: not chunked)."""
        ...

    @property
    def kv_read_limit(self) -> int | None:
        """Top-k sparse attention's cap on tokens read though all are kept (None: none)."""
        ...

    @property
    def compressed_kv(self) -> PooledEntries:
        """Pooled entries beside the window (DeepSeek-V4); () for every other kind."""
        ...

    @property
    def fixed_kv_bytes_per_token(self) -> int:
        """Cache bytes per token in a fixed format whatever the KV dtype (index keys)."""
        ...

    def tensor_groups(self, hidden: int) -> tuple[TensorGroup, ...]:
        """The weights, as groups with their sharding."""
        ...

    def describe(self) -> str:
        """The architecture in one phrase (show, models)."""
        ...

    def tp_ok(self, tp: int) -> bool:
        """Whether tensor parallelism of ``tp`` divides the layer."""
        ...

    def kv_elements_per_token(self, tp: int) -> int:
        """KV elements cached per token on one GPU."""
        ...

    def kv_reread_elements_per_token(self, tp: int) -> int:
        """Elements per token read from a cache another layer holds."""
        ...

    def kv_replicated(self, tp: int) -> bool:
        """Whether every GPU holds the whole cache at this TP."""
        ...

    def state_elements(self, tp: int) -> int:
        """A constant per-sequence state on one GPU, in elements."""
        ...

    def state_bytes(self, tp: int) -> Fraction:
        """That state in bytes, each part in the format engines keep it in: its own, never
        the KV dtype (model/linear_attention.py StateFormat)."""
        ...

    def attention_flops(self, context_tokens: int) -> int:
        """One token's mixing FLOPs at a context."""
        ...

    def prefill_attention_flops(self, prompt_tokens: int) -> int:
        """A whole prompt's mixing FLOPs."""
        ...

    def cache_terms(self, tp: int) -> CacheTerms:
        """The cache per token with its numbers, for explain."""
        ...

    def tp_rule(self) -> TpRule | None:
        """How TP splits the cache or state (None: nothing to say)."""
        ...


def tp_cache_rule(mixers: Iterable[LayerKind]) -> str:
    """How tensor parallelism treats a model's per-sequence cache (docs/physics.md section
    3): each kind's rule once, caches that grow with the context before constant states,
    each in the order its kind first appears, with the GPU counts its layers split across
    before they replicate joined (8/16 where layers differ)."""
    limits: dict[tuple[bool, str], set[int]] = {}
    for mixer in mixers:
        rule = mixer.tp_rule()
        if rule is not None:
            held = limits.setdefault((mixer.state_elements(1) > 0, rule.text), set())
            held.update(() if rule.limit is None else (rule.limit,))
    return "; ".join(
        text.format(limits="/".join(str(n) for n in sorted(held)))
        for (_, text), held in sorted(limits.items(), key=lambda item: item[0][0])
    )
