"""A model as a stack of layers, and what each decode step reads of it.

The estimator never looks at config.json field names: the loading layer turns a preset
into these objects, and everything here is counted from shapes. Tensor groups carry how
tensor parallelism splits them (docs/physics.md sections 2 and 3), so per-GPU figures follow
from the same description as the parameter count.
"""

from __future__ import annotations

from collections.abc import Iterable
from fractions import Fraction
from functools import cached_property
from typing import TYPE_CHECKING, TypeVar, cast

from decodecalc.model.layers import Layer
from decodecalc.model.tensors import Sharding, TensorGroup
from decodecalc.record import record

if TYPE_CHECKING:
    from decodecalc.model.layers import Mixer
    from decodecalc.model.moe import MoE
    from decodecalc.model.precision import WeightRecipe

T = TypeVar("T")


def counted(items: Iterable[T]) -> tuple[tuple[T, int], ...]:
    """Each distinct object with how many times it occurs, in first-seen order. A stack
    repeats a few layer and mixer objects (loading/families.py makes equal layers one
    object), and the sums over it are linear: summing over these pairs is a few terms,
    not one per layer, and a query makes many such sums."""
    found: dict[int, tuple[T, int]] = {}
    for item in items:
        first, count = found.get(id(item), (item, 0))
        found[id(item)] = (first, count + 1)
    return tuple(found.values())


@record
class Model:
    """A decoder-only language model, counted from its architecture."""

    id: str
    name: str
    family: str
    hidden_size: int
    vocab_size: int
    tie_word_embeddings: bool
    layers: tuple[Layer, ...]
    max_context_tokens: int
    official_params: int
    """0 when unknown (a model read straight from a config.json)."""
    official_params_source: str = ""
    official_active_params: int | None = None
    official_active_params_source: str = ""
    extra_groups: tuple[TensorGroup, ...] = ()
    """Weights outside the decoder stack: those memory holds but decode never reads
    (Gemma 3's vision encoder, Gemma 3n's per-layer embeddings, of which a step gathers a
    row), and those it reads every step though no layer owns them (Gemma 3n's AltUp
    projections)."""
    default_weights: WeightRecipe | None = None
    """How the checkpoint stores its weights, from its config.json's quantization_config
    (or the hf_quant_config.json beside it): used when no --weights is given. None: the
    config says nothing, and BF16 is assumed."""
    aliases: tuple[str, ...] = ()
    source: str = ""
    notes: str = ""
    mtp_layers: int = 0
    """Multi-token-prediction layers the checkpoint ships beside the decoder stack
    (num_nextn_predict_layers): plain decode never reads them, speculative decoding's MTP
    drafts with them, and a server holds them (loading/families.py MTP_FAMILIES)."""
    stand_in_widths: bool = False
    """The layers are stand-ins one unit wide carrying the right byte counts (the short
    numbers form, loading/numbers.py): their widths, vocabulary and hidden size are no
    real ones, so nothing sized by them per token (a server's activation peak) is counted."""

    def tensor_groups(self) -> tuple[TensorGroup, ...]:
        """Every parameter once, grouped by role and summed over layers."""
        return self._groups

    @cached_property
    def _groups(self) -> tuple[TensorGroup, ...]:
        # Computed once per model: estimates ask for it at every batch they try.
        embedding = self.vocab_size * self.hidden_size
        if self.tie_word_embeddings:
            head = [TensorGroup("embedding = LM head (tied)", embedding, True, Sharding.SPLIT)]
        else:
            head = [
                TensorGroup("embedding", embedding, False, Sharding.SPLIT),
                TensorGroup("LM head", embedding, True, Sharding.SPLIT),
            ]
        per_layer = [
            (g, count)
            for layer, count in self.layer_counts()
            for g in layer.tensor_groups(self.hidden_size)
        ]
        final_norm = TensorGroup("norms and biases", self.hidden_size, True, Sharding.REPLICATED)
        return (*head, *_merge([*per_layer, (final_norm, 1)]), *self.extra_groups)

    def total_params(self) -> int:
        """All parameters, the input embedding included (what memory must hold)."""
        return sum(g.params for g in self.tensor_groups())

    def active_params(self) -> int:
        """Parameters one token uses: all but the routed experts it is not sent to."""
        unused = sum(
            g.params * (g.experts - g.experts_per_token) // g.experts
            for g in self.tensor_groups()
            if g.experts
        )
        unread = sum(g.params for g in self.extra_groups if not g.streamed)
        return self.total_params() - unused - unread

    def streamed_params_per_gpu(self, tp: int = 1, batch: int = 1) -> Fraction:
        """Parameters one GPU reads per decode step (docs/physics.md section 2); routed experts
        count at the expected share a batch of ``batch`` tokens touches."""
        return sum(
            (g.params_per_gpu(tp) * g.read_fraction(batch) for g in self.tensor_groups()),
            start=Fraction(0),
        )

    def mixers(self) -> tuple[Mixer, ...]:
        return self._mixers

    def layer_counts(self) -> tuple[tuple[Layer, int], ...]:
        """Each distinct layer object with how many layers it stands for (counted)."""
        return self._layer_counts

    def mixer_counts(self) -> tuple[tuple[Mixer, int], ...]:
        """Each distinct mixer object with how many layers use it (counted)."""
        return self._mixer_counts

    def state_bytes_per_sequence(self, tp: int = 1) -> int:
        """Every layer's constant state for one sequence on one GPU, each part in its own
        format (never the KV dtype's), rounded up once."""
        from decodecalc.model.dtypes import ceil_bytes

        state = sum((n * m.state_bytes(tp) for m, n in self._mixer_counts), Fraction(0))
        return ceil_bytes(state)

    def caches_values(self) -> bool:
        """Whether any layer caches V apart from K (attention's K and V): the only cache a
        V format of its own (--v-dtype) prices. MLA's latent is one tensor per token,
        shared by K and V, and a constant state holds no V."""
        from decodecalc.model.layers import Attention

        return any(
            isinstance(m, Attention) and m.kv_elements_per_token(1) > 0
            for m, _ in self._mixer_counts
        )

    def has_latent_attention(self) -> bool:
        """Whether any layer caches MLA's latent: one tensor per token, shared by K and V."""
        from decodecalc.model.mla import LatentAttention

        return any(isinstance(m, LatentAttention) for m, _ in self._mixer_counts)

    def kv_head_width(self) -> Fraction | None:
        """Cached K and V elements per head vector over the attention layers, the width a
        per-head scale (DType.head_scale_bits) is spread over: a model's head_dim where the
        layers share one; where they differ, the mean weighted by elements per token (exact
        for bytes per token, while every layer holds the whole context). None: no layer
        caches K and V by heads."""
        from decodecalc.model.layers import Attention

        layers = [
            (m, n) for m, n in self._mixer_counts if isinstance(m, Attention) and not m.kv_shared
        ]
        vectors = sum(2 * m.num_kv_heads * n for m, n in layers)
        elements = sum(m.kv_dim * m.num_kv_heads * n for m, n in layers)
        return Fraction(elements, vectors) if vectors else None

    def takes_cache_layout(self, layer_kind: str | None) -> bool:
        """Whether a cache format laid out for one layer kind (DType.layer_kind: FlashMLA's
        latent, DeepSeek-V4's entry) can hold this model's cache: some layer is of that
        kind. None: a format for any cache."""
        return layer_kind is None or any(m.kind == layer_kind for m, _ in self._mixer_counts)

    @cached_property
    def _layer_counts(self) -> tuple[tuple[Layer, int], ...]:
        return counted(self.layers)

    @cached_property
    def _mixer_counts(self) -> tuple[tuple[Mixer, int], ...]:
        return counted(self.mixers())

    @cached_property
    def _mixers(self) -> tuple[Mixer, ...]:
        return tuple(layer.mixer for layer in self.layers)

    def moe(self) -> MoE | None:
        """The first MoE block, for reporting experts per token (None for dense models)."""
        return self._moe

    @cached_property
    def _moe(self) -> MoE | None:
        # Found once per model: every step of a search asks (step/parallelism.py).
        for layer, _ in self._layer_counts:
            if layer.ffn.routed:
                return cast("MoE", layer.ffn)
        return None

    def valid_tp(self, limit: int = 64) -> tuple[int, ...]:
        """TP sizes an engine such as vLLM accepts: they divide the attention heads, and
        either divide the KV heads or are a multiple of them (then KV heads replicate)."""
        return tuple(n for n in range(1, limit + 1) if self.supports_tp(n))

    def supports_tp(self, tp: int) -> bool:
        return tp >= 1 and all(m.tp_ok(tp) for m, _ in self._mixer_counts)

    def layer_summary(self) -> tuple[tuple[int, str], ...]:
        """Each distinct kind of layer with how many layers are of it, in first-seen order."""
        counts: dict[str, int] = {}
        for layer in self.layers:
            text = layer.describe()
            counts[text] = counts.get(text, 0) + 1
        return tuple((n, text) for text, n in counts.items())

    def layer_period(self) -> int:
        """The shortest run of layers the stack repeats at least twice (a partial last
        repeat allowed): 6 for Gemma 3's five local to one global, the layer count when there
        is none. A run that does not come round whole a second time is no period: Nemotron
        Nano 2's 31 layers end with a copy of their first 3, not a repeat of the 28 before."""
        n = len(self.layers)
        return next(
            (
                p
                for p in range(1, n // 2 + 1)
                if all(self.layers[i] == self.layers[i % p] for i in range(n))
            ),
            n,
        )


def _merge(groups: Iterable[tuple[TensorGroup, int]]) -> list[TensorGroup]:
    """Sum groups (each taken ``count`` times) that differ only in size, in first-seen order."""
    merged: dict[tuple[object, ...], int] = {}
    for g, count in groups:
        key = (g.name, g.streamed, g.sharding, g.kv_heads, g.experts, g.experts_per_token)
        merged[key] = merged.get(key, 0) + g.params * count
    return [
        TensorGroup(name, params, streamed, sharding, kv, experts, per_token)  # type: ignore[arg-type]
        for (name, streamed, sharding, kv, experts, per_token), params in merged.items()
    ]
