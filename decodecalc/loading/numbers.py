"""Models and GPUs described by numbers on the command line, for closed models and what-ifs
that have no preset and no config.json: ``--model 'layers=80,hidden=8192,heads=64,...'``,
``--gpu 'bandwidth=3.35TB/s,memory=80GiB,bf16=989TFLOPS'``.

The numbers build the same layer objects the config.json readers build (loading/families.py),
so a model's numbers give exactly its preset's figures. What comes from numbers says so: its
id starts with ``numbers:`` and its notes become a note on every result (resolve adds it).

In comma lists (compare, sweep) a numbers spec keeps its commas: consecutive ``key=value``
pieces are one spec, and a key given again starts the next one (split_items).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any, TypeVar

from decodecalc.context import parse_tokens
from decodecalc.errors import InputError
from decodecalc.loading.families import MAX_LAYERS
from decodecalc.loading.fields import suggest
from decodecalc.loading.presets import NUMBERS_PREFIX
from decodecalc.model.hardware import GpuSpec
from decodecalc.model.layers import Attention, DenseMLP, Layer
from decodecalc.model.model import Model
from decodecalc.units import exact_number, parse_bandwidth, parse_flops, parse_size

if TYPE_CHECKING:
    from decodecalc.model.layers import FFN
    from decodecalc.model.mla import LatentAttention
    from decodecalc.model.moe import MoE


MODEL_EXAMPLE = (
    "e.g. layers=80,hidden=8192,heads=64,kv_heads=8,head_dim=128,intermediate=28672,vocab=128256"
)
GPU_EXAMPLE = "e.g. bandwidth=3.35TB/s,memory=80GiB,bf16=989TFLOPS"

DENSE_FIELDS = ("layers", "hidden", "heads", "kv_heads", "head_dim", "intermediate", "vocab")
MOE_FIELDS = (
    "experts",
    "experts_per_token",
    "expert_intermediate",
    "shared_experts",
    "dense_layers",
    "router_bias",
)
MLA_FIELDS = ("kv_lora_rank", "rope_head_dim", "q_lora_rank", "v_head_dim")
SHORT_FIELDS = ("params", "active_params", "kv_bytes_per_token")
MODEL_FIELDS = (
    "name",
    *DENSE_FIELDS,
    "tied",
    "max_context",
    "window",
    *MOE_FIELDS,
    *MLA_FIELDS,
    *SHORT_FIELDS,
)
GPU_FLOPS = ("bf16", "fp8", "fp4", "fp32")
"""Matmul classes a rate may be given for, as in GPU presets (loading/presets.py)."""
GPU_FIELDS = ("name", "bandwidth", "memory", *GPU_FLOPS, "link", "family", "power")

N = TypeVar("N", int, float)

MAX_WIDTH = 10**7
"""Largest width, head count or vocabulary accepted: real ones stay below 10^6, and the
parameter count multiplies several of them."""
DEFAULT_CONTEXT = 131_072
"""The maximum context assumed when max_context is not given (a note says so)."""


def without_family(profiles: Sequence[str]) -> str:
    """What a GPU of numbers without family= is told: the engine profiles its expected
    figures fall back to (each on every family it was measured on)."""
    from decodecalc.engine.profile import GPU_FAMILIES

    return (
        f"; without family= ({', '.join(GPU_FAMILIES)}), its expected figures fall back to "
        f"every engine profile on every family it was measured on: {', '.join(profiles)}"
    )


FROM_NUMBERS = (
    "given by numbers on the command line, not a preset: its figures follow from these "
    "numbers alone"
)


def split_items(text: str) -> list[str]:
    """The items of a comma list, a numbers spec's ``key=value`` pieces kept together: such a
    piece joins the spec before it unless that spec already has its key, which then starts
    the next spec. ``h100,bandwidth=1TB/s,memory=8GB,bf16=1PFLOPS`` is two GPUs; pieces
    that are only a preset's memory= and bandwidth= join the preset, as -g reads one alone:
    ``strix-halo,memory=64GiB,h100`` is two GPUs, the first with its memory given."""
    items: list[str] = []
    keys: set[str] = set()
    pieces = [p.strip() for p in text.split(",")]
    for index, piece in enumerate(pieces):
        key, equals, _ = piece.partition("=")
        key = key.strip().lower()
        if equals and ((keys and key not in keys) or _overrides_of(items, keys, pieces[index:])):
            items[-1] += "," + piece
            keys.add(key)
        else:
            items.append(piece)
            keys = {key} if equals else set()
    return items


def _overrides_of(items: list[str], keys: set[str], rest: list[str]) -> bool:
    """Whether ``rest`` starts with a preset's overrides: right after a preset's name, a run
    of key=value pieces that are memory= and bandwidth= alone, each once."""
    if not items or keys:
        return False
    run = []
    for piece in rest:
        key, equals, _ = piece.partition("=")
        if not equals:
            break
        run.append(key.strip().lower())
    return set(run) <= set(OVERRIDES) and len(run) == len(set(run))


class _Given:
    """The ``key=value`` pairs of one spec, read field by field; ``finish`` refuses fields
    that were given but do not apply (a misread what-if must not pass silently)."""

    def __init__(self, text: str, what: str, known: Sequence[str], example: str) -> None:
        self.text, self.what, self.example = text.strip(), what, example
        self.pairs: dict[str, str] = {}
        self.read: set[str] = set()
        for piece in self.text.split(","):
            key, equals, value = (p.strip() for p in piece.partition("="))
            key = key.lower()
            if not equals or not key or not value:
                raise self.error(f"{piece.strip()!r} is not FIELD=VALUE ({example})")
            if key not in known:
                hint = suggest(key, list(known)) or "; fields: " + ", ".join(known)
                raise self.error(f"unknown field {key!r}{hint}")
            if key in self.pairs:
                raise self.error(f"{key} is given twice")
            self.pairs[key] = value

    def error(self, problem: str) -> InputError:
        return InputError(f"{self.what} numbers {self.text!r}: {problem}")

    def need(self, *keys: str) -> None:
        """Every missing field in one message, not one per run."""
        missing = [k for k in keys if k not in self.pairs]
        if missing:
            raise self.error(f"missing {', '.join(missing)} ({self.example})")

    def has(self, key: str) -> bool:
        return key in self.pairs

    def value(self, key: str) -> str | None:
        self.read.add(key)
        return self.pairs.get(key)

    def whole(
        self, key: str, default: int | None = None, minimum: int = 1, maximum: int = MAX_WIDTH
    ) -> int:
        text = self.value(key)
        if text is None:
            if default is None:
                self.need(key)
            assert default is not None
            return default
        try:
            number = exact_number(text)
        except (ValueError, OverflowError):
            raise self.error(f"{key}={text} is not a whole number") from None
        if number.denominator != 1:
            raise self.error(f"{key}={text} is not a whole number")
        if not minimum <= number <= maximum:
            raise self.error(f"{key}={text} must be from {minimum} to {maximum:,}")
        return int(number)

    def optional(self, key: str) -> int | None:
        self.read.add(key)
        return self.whole(key) if self.has(key) else None

    def flag(self, key: str) -> bool:
        text = self.value(key)
        if text is None:
            return False
        word = text.lower()
        if word not in ("true", "false", "yes", "no", "1", "0"):
            raise self.error(f"{key}={text} is not true or false")
        return word in ("true", "yes", "1")

    def parsed(self, key: str, parse: Callable[[str], N]) -> N:
        """A field with a unit (3.35TB/s, 80GiB, 128K), its parse error prefixed by the spec."""
        text = self.value(key)
        assert text is not None
        try:
            return parse(text)
        except InputError as exc:
            raise self.error(f"{key}: {exc}") from None

    def label(self) -> tuple[str, str]:
        """The id (``numbers:`` and the name, else the spec itself) and the name."""
        name = self.value("name")
        return NUMBERS_PREFIX + (name or self.text.replace(" ", "")), name or self.text

    def finish(self, why: dict[str, str]) -> None:
        """Refuse the first field given but not read, saying why it does not apply."""
        for key in self.pairs:
            if key not in self.read:
                raise self.error(f"{key} does not apply: {why.get(key, 'unused')}")


def model_from_numbers(text: str) -> Model:
    """A model from its shapes: GQA (or MLA with ``kv_lora_rank``) attention, and a dense
    MLP or (with ``experts``) a mixture of experts after ``dense_layers`` dense ones."""
    given = _Given(text, "model", MODEL_FIELDS, MODEL_EXAMPLE)
    if any(given.has(k) for k in SHORT_FIELDS):
        return _approximate(given)
    mla, moe = given.has("kv_lora_rank"), given.has("experts")
    given.need(
        "layers",
        "hidden",
        "heads",
        "vocab",
        *(("kv_lora_rank", "rope_head_dim", "head_dim") if mla else ()),
        *(("experts", "experts_per_token", "expert_intermediate") if moe else ()),
        *(("intermediate",) if not moe or given.has("dense_layers") else ()),
    )
    count = given.whole("layers", maximum=MAX_LAYERS)
    hidden = given.whole("hidden")
    mixer = _latent(given) if mla else _attention(given, hidden)
    ffns = _ffns(given, count) if moe else [DenseMLP(given.whole("intermediate"))] * count
    # One Layer object per kind of block: Model sums over its distinct layers (two here),
    # not over each of up to MAX_LAYERS.
    kinds = {id(ffn): Layer(mixer, ffn) for ffn in ffns}
    model = _model(
        given,
        "numbers",
        hidden=hidden,
        vocab_size=given.whole("vocab"),
        tie_word_embeddings=given.flag("tied"),
        layers=tuple(kinds[id(ffn)] for ffn in ffns),
    )
    given.finish(_WHY_UNUSED)
    return model


def _model(given: _Given, family: str, hidden: int, notes: str = "", **shape: Any) -> Model:
    """The Model, labelled as given by numbers, with the maximum context given or assumed."""
    if given.has("max_context"):
        context = given.parsed("max_context", parse_tokens)
        if context < 1:  # as config.json's max_position_embeddings: 0 is refused
            raise given.error(f"max_context={given.value('max_context')} must be at least 1 token")
    else:
        context = DEFAULT_CONTEXT
        notes += f"; max_context not given, {DEFAULT_CONTEXT:,} tokens assumed"
    model_id, name = given.label()
    return Model(
        id=model_id,
        name=name,
        family=family,
        hidden_size=hidden,
        max_context_tokens=context,
        official_params=0,
        source="numbers on the command line",
        notes=f"{name} is {FROM_NUMBERS}{notes}",
        **shape,
    )


_WHY_UNUSED = {
    **dict.fromkeys(MOE_FIELDS, "mixture-of-experts fields need experts="),
    **dict.fromkeys(MLA_FIELDS, "MLA fields need kv_lora_rank="),
    "kv_heads": "MLA (kv_lora_rank=) caches a latent, not KV heads",
    "window": "MLA (kv_lora_rank=) here has no sliding window",
    "intermediate": "every layer is a mixture of experts; dense_layers= makes the first "
    "layers dense MLPs of this width",
}
"""Why a field given was not read, by field."""


def _attention(given: _Given, hidden: int) -> Attention:
    heads = given.whole("heads")
    kv = given.whole("kv_heads", default=heads)
    if heads % kv:
        raise given.error(f"kv_heads={kv} does not divide heads={heads}")
    if not given.has("head_dim") and hidden < heads:
        raise given.error(f"heads={heads} leave no width of hidden={hidden} per head")
    return Attention(
        num_heads=heads,
        num_kv_heads=kv,
        head_dim=given.whole("head_dim", default=hidden // heads),
        sliding_window=given.optional("window"),
    )


def _latent(given: _Given) -> LatentAttention:
    """MLA: ``head_dim`` is the non-RoPE query/key width, ``v_head_dim`` (default the same)
    the value's, as DeepSeek's qk_nope_head_dim and v_head_dim."""
    from decodecalc.model.mla import LatentAttention

    nope = given.whole("head_dim")
    return LatentAttention(
        num_heads=given.whole("heads"),
        kv_lora_rank=given.whole("kv_lora_rank"),
        qk_nope_head_dim=nope,
        qk_rope_head_dim=given.whole("rope_head_dim"),
        v_head_dim=given.whole("v_head_dim", default=nope),
        q_lora_rank=given.optional("q_lora_rank"),
    )


def _ffns(given: _Given, count: int) -> list[FFN]:
    """A mixture of experts in every layer but the first ``dense_layers`` (DeepSeek's
    first_k_dense_replace), which are dense MLPs of ``intermediate``."""
    routed = _experts(given)
    if not given.has("dense_layers"):
        return [routed] * count
    first = given.whole("dense_layers", minimum=0, maximum=count)
    dense = DenseMLP(given.whole("intermediate"))
    return [dense if i < first else routed for i in range(count)]


def _experts(given: _Given) -> MoE:
    """Routed experts, ``shared_experts`` of the same width always run (DeepSeek's
    n_shared_experts), and a router bias where the routing adds one (DeepSeek-V3)."""
    from decodecalc.model.moe import MoE

    width = given.whole("expert_intermediate")
    return MoE(
        num_experts=given.whole("experts"),
        experts_per_token=given.whole("experts_per_token"),
        expert_intermediate_size=width,
        shared_intermediate_size=width * given.whole("shared_experts", default=0, minimum=0),
        router_bias=given.flag("router_bias"),
    )


STAND_IN_GROUP = 8
"""Query heads per KV head in the short form's stand-in attention (GQA's common 8): it sets
which TP sizes divide the heads, and the attention FLOP count."""


def _approximate(given: _Given) -> Model:
    """The short form: a model known only by its parameter counts and KV bytes per token
    (closed models, model cards). Stand-in layers of width 1 carry exactly those bytes: the
    KV in GQA attention of ``kv_heads`` (default 8; 1 keeps the whole cache on every TP GPU,
    as MLA does), the always-read parameters in a dense MLP and, with ``experts``, the rest
    in routed experts of which a batch touches the expected share. Without ``experts`` the
    parameters beyond active_params are held in memory and never read, however large the
    batch. Every count is rounded to whole stand-in widths: approximate, and labelled so."""
    from decodecalc.model.moe import MoE
    from decodecalc.model.tensors import Sharding, TensorGroup

    given.need("params", "kv_bytes_per_token")
    total = given.parsed("params", _count)
    active = given.parsed("active_params", _count) if given.has("active_params") else total
    if active > total:
        raise given.error(f"active_params={given.pairs['active_params']} is more than params")
    count = given.whole("layers", default=1, maximum=MAX_LAYERS)
    kv_heads = given.whole("kv_heads", default=8)
    kv_bytes = given.parsed("kv_bytes_per_token", _bytes)
    if kv_bytes < 1:
        raise given.error("kv_bytes_per_token must be at least 1 byte")
    # a 16-bit cache: 2 bytes per element, K and V per KV head per layer
    head_dim = max(1, round(kv_bytes / (2 * 2 * kv_heads * count)))
    attention = Attention(STAND_IN_GROUP * kv_heads, kv_heads, head_dim)
    fixed = 2 + count * (2 + sum(g.params for g in attention.tensor_groups(1)))
    unread: tuple[TensorGroup, ...] = ()
    if given.has("experts"):
        given.need("experts_per_token")
        experts, per_token = given.whole("experts"), given.whole("experts_per_token")
        if per_token >= experts:
            raise given.error("experts_per_token must be fewer than experts")
        routed = (total - active) * experts / (experts - per_token)
        width = round(routed / (3 * count * experts))
        fixed += count * experts  # the router
        dense = round((total - fixed - 3 * count * experts * width) / (3 * count))
        ffn: FFN = MoE(experts, per_token, max(width, 1), shared_intermediate_size=max(dense, 0))
    else:
        dense = round((active - fixed) / (3 * count))
        ffn = DenseMLP(max(dense, 0))
        if total > active:
            name = "held, never read (params - active_params)"
            unread = (TensorGroup(name, total - active, False, Sharding.SPLIT),)
    if dense < 0:
        raise given.error("params are too few for the stand-in layers of its KV cache")
    model = _model(
        given,
        "numbers (approximate)",
        hidden=1,
        notes="; approximate: layers of width 1 stand in for the real ones, so bytes and "
        "memory follow from params, active_params and kv_bytes_per_token (16-bit), while "
        "FLOP counts, per-layer costs, TP all-reduce sizes and which TP sizes work are rough; "
        "a server's activation peak (1 to 4 GB per GPU on real models, from their widths and "
        "vocabulary) is left out of memory, so its fits are that much too generous",
        vocab_size=1,
        stand_in_widths=True,
        tie_word_embeddings=True,
        layers=(Layer(attention, ffn),) * count,
        extra_groups=unread,
    )
    given.finish(dict.fromkeys(MODEL_FIELDS, f"the short form takes {SHORT_HELP}"))
    return model


SHORT_HELP = (
    "params, active_params, kv_bytes_per_token, layers, kv_heads, experts, experts_per_token, "
    "max_context and name"
)


def parameter_count(text: str) -> int:
    """A parameter count: 70553706496, 70.6B, 671e9 (k, M, B, T decimal, as model cards),
    whatever its size (the caller says which it takes)."""
    scale = {"k": 10**3, "m": 10**6, "b": 10**9, "t": 10**12}.get(text[-1:].lower(), 1)
    digits = text[:-1] if scale > 1 else text
    try:
        return round(exact_number(digits) * scale)
    except (ValueError, OverflowError):
        raise InputError(f"{text!r} is not a parameter count (e.g. 70.6B, 8030261248)") from None


def _count(text: str) -> int:
    """A parameter count from 1 to 10^15 (parameter_count)."""
    value = parameter_count(text)
    if not 1 <= value <= 10**15:
        raise InputError(f"{text!r} is not a parameter count from 1 to 10^15")
    return value


def _bytes(text: str) -> int:
    """Bytes: a whole number, or a size with its unit (320KiB, 70.3kB)."""
    return int(text) if text.isascii() and text.isdigit() else parse_size(text, "size")


OVERRIDES = ("memory", "bandwidth")
"""What a preset GPU's spec may override: ``strix-halo,memory=64GiB`` (a chip in another memory
option, a board at another clock)."""


def gpu_with_overrides(preset: GpuSpec, text: str) -> GpuSpec:
    """A preset GPU with its memory or bandwidth given instead, said in its name (every
    header shows it) and its notes. The id stays the preset's, so that its engine family,
    link and price lists still apply; a datasheet's sustained bandwidth no longer does."""
    from decodecalc.record import replace

    example = "e.g. strix-halo,memory=64GiB or h100-sxm,bandwidth=3TB/s"
    given = _Given(text, f"GPU {preset.id}", OVERRIDES, example)
    changes: dict[str, Any] = {}
    if given.has("memory"):
        changes["memory_bytes"] = given.parsed("memory", parse_size)
        changes["memory_nominal"] = False  # the user's own figure
    if given.has("bandwidth"):
        changes["bandwidth_bytes_per_s"] = given.parsed("bandwidth", parse_bandwidth)
        changes["sustained_bandwidth_bytes_per_s"] = None
    given.finish({})
    said = ", ".join(f"{k}={v}" for k, v in given.pairs.items())
    return replace(
        preset,
        name=f"{preset.name} with {said}",
        notes=f"{preset.id} with {said} given on the command line in place of the preset's. "
        + preset.notes,
        **changes,
    )


def gpu_from_numbers(text: str) -> GpuSpec:
    """A GPU from its bandwidth, memory and (optional) dense peak FLOP/s per matmul class,
    interconnect preset, engine family and board power."""
    from decodecalc.engine.profile import GPU_FAMILIES
    from decodecalc.scenarios.rates import parse_power

    if "int8=" in text.replace(" ", "").lower():
        raise InputError(
            f"GPU numbers {text.strip()!r}: int8: decodecalc's INT8 weights run their matmuls "
            "at the BF16 rate (they are dequantized), so give bf16= instead"
        )
    given = _Given(text, "GPU", GPU_FIELDS, GPU_EXAMPLE)
    given.need("bandwidth", "memory")
    family = given.value("family") or ""
    if family and family not in GPU_FAMILIES:
        raise given.error(f"family={family}: expected one of {', '.join(GPU_FAMILIES)}")
    gpu_id, name = given.label()
    gpu = GpuSpec(
        id=gpu_id,
        name=name,
        vendor="",
        bandwidth_bytes_per_s=given.parsed("bandwidth", parse_bandwidth),
        memory_bytes=given.parsed("memory", parse_size),
        memory_kind="",
        notes=f"{name} is {FROM_NUMBERS}",
        source="numbers on the command line",
        flops_per_s=tuple((c, given.parsed(c, parse_flops)) for c in GPU_FLOPS if given.has(c)),
        link=given.value("link"),
        family=family,
        power_w=given.parsed("power", parse_power) if given.has("power") else None,
    )
    given.finish({})
    return gpu
