"""From config.json fields to layers, one reader per architecture family.

Presets hold a model's config.json fields under ``config:``, and ``--model config.json``
reads the file itself: both come here. Interleavings are data (``layer_types``,
``sliding_window_pattern``, ``first_k_dense_replace``, ``full_attention_interval``,
``no_rope_layers``, ``hybrid_override_pattern``, Jamba's layer periods); what a
family leaves implicit (Qwen2's q/k/v biases, Gemma's extra norms) is stated here once.
A multimodal wrapper's ``text_config`` is read by its text model's reader, its vision
tower counted in loading/vision.py. An architecture not listed is refused, never guessed,
and so is a field a reader neither reads nor knows to be harmless (loading/ignored_keys.py).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

from decodecalc.context import MAX_CONTEXT_TOKENS
from decodecalc.loading.fields import Fields
from decodecalc.model.layers import Attention, DenseMLP, Layer
from decodecalc.model.tensors import Sharding, TensorGroup
from decodecalc.record import field_names, record, replace

if TYPE_CHECKING:
    from decodecalc.model.layers import FFN, Mixer
    from decodecalc.model.linear_attention import StateFormat
    from decodecalc.model.mla import LatentAttention
    from decodecalc.model.moe import MoE
    from decodecalc.model.precision import WeightRecipe


@record
class Architecture:
    """What a config says about the network, before any preset metadata."""

    hidden_size: int
    vocab_size: int
    tie_word_embeddings: bool
    layers: tuple[Layer, ...]
    max_context_tokens: int
    extra_groups: tuple[TensorGroup, ...] = ()
    default_weights: WeightRecipe | None = None
    mtp_layers: int = 0


Reader = Callable[[Fields, str], Architecture]

MTP_FAMILIES = frozenset(
    {
        "deepseek_v3",
        "deepseek_v32",
        "deepseek_v4",
        "glm4_moe",
        "glm4_moe_lite",
        "glm_moe_dsa",
        "mimo",
        "mimo_v2_flash",
        "ernie4_5_moe",
        "qwen3_next",
        "qwen3_5",
        "qwen3_5_text",
        "qwen3_5_moe",
        "qwen3_5_moe_text",
        "longcat_flash",
    }
)
"""Model types whose released checkpoints ship multi-token-prediction layers that vLLM
drafts with (vllm/config/speculative.py MTP_MODEL_TYPES: deepseek_mtp, mimo_mtp,
glm4_moe_mtp, ernie_mtp, qwen3_next_mtp, longcat_flash_mtp, and the Qwen3.5 cards'
qwen3_next_mtp): one layer each where the config does not count them. Any other type has
none unless its config says so (num_nextn_predict_layers, mtp_num_hidden_layers)."""


def _mtp_layers(cfg: Fields, model_type: str) -> int:
    """The checkpoint's multi-token-prediction layers: the config's count, else MTP_FAMILIES'
    one layer, else none."""
    for key in ("num_nextn_predict_layers", "mtp_num_hidden_layers"):
        if cfg.has(key):
            return cfg.integer(key, minimum=0, maximum=MAX_LAYERS)
    return 1 if model_type in MTP_FAMILIES else 0


MAX_SIZE = 10**7
"""The largest width, head count, vocabulary, expert count or other size a config.json may
give (Fields.limit): real ones stay below 10^6 (Gemma 3's vocabulary is 262,208) and a
parameter count multiplies several of them. Token counts (max_position_embeddings, windows,
chunks) go to MAX_CONTEXT_TOKENS instead, layer counts to MAX_LAYERS."""
MAX_LAYERS = 10_000
"""More layers than any model has by far: the stack is built layer by layer."""


def _layer_kinds(cfg: Fields, count: int, default: Callable[[int], str]) -> list[str]:
    """Per-layer attention kinds: config.json's ``layer_types`` when present, else a rule."""
    kinds = list(cfg.texts("layer_types")) or [default(i) for i in range(count)]
    if len(kinds) != count:
        raise cfg.error("layer_types", f"has {len(kinds)} entries for {count} layers")
    return kinds


def _gqa(cfg: Fields, window: int | None, **flags: bool) -> Attention:
    heads = cfg.integer("num_attention_heads")
    hidden = cfg.integer("hidden_size")
    kv = cfg.integer("num_key_value_heads", default=heads)
    if heads % kv:
        raise cfg.error("num_key_value_heads", f"{kv} does not divide {heads} attention heads")
    if not cfg.has("head_dim") and hidden < heads:
        raise cfg.error("num_attention_heads", f"{heads} heads leave no width of {hidden} per head")
    return Attention(
        num_heads=heads,
        num_kv_heads=kv,
        head_dim=cfg.integer("head_dim", default=hidden // heads),
        sliding_window=window,
        **flags,
    )


def _common(
    cfg: Fields,
    layers: list[Layer],
    tie_default: bool = False,
    vocab_default: int | None = None,
    context_default: int | None = None,
) -> Architecture:
    return Architecture(
        hidden_size=cfg.integer("hidden_size"),
        vocab_size=cfg.integer("vocab_size", default=vocab_default),
        tie_word_embeddings=cfg.boolean("tie_word_embeddings", default=tie_default),
        layers=_interned(layers),
        max_context_tokens=cfg.integer(
            "max_position_embeddings", default=context_default, maximum=MAX_CONTEXT_TOKENS
        ),
    )


def _interned(layers: list[Layer]) -> tuple[Layer, ...]:
    """The stack with equal layers as one object: Model sums over its distinct layers, a
    few, not each of 80 (a query's time goes into such sums). Readers build each kind of
    mixer and feed-forward block once, so layers are matched by those objects first and
    compared by value (hashing every field) once per such pair."""
    by_id: dict[int, Layer] = {}
    by_parts: dict[tuple[int, ...], Layer] = {}
    by_value: dict[Layer, Layer] = {}
    names = field_names(Layer)
    for layer in layers:  # (the list keeps every object alive, so no id is reused)
        if id(layer) in by_id:
            continue
        key = tuple(id(getattr(layer, name)) for name in names)  # the same objects: equal
        if key not in by_parts:
            by_parts[key] = by_value.setdefault(layer, layer)
        by_id[id(layer)] = by_parts[key]
    return tuple(by_id[id(layer)] for layer in layers)


def _over(mixers: list[Mixer], ffn: FFN) -> list[Layer]:
    """A layer per mixer, each with ``ffn``: one Layer object per distinct mixer object,
    as _interned would leave them, without building 80 to drop 79."""
    built: dict[int, Layer] = {}
    for mixer in mixers:
        if id(mixer) not in built:
            built[id(mixer)] = Layer(mixer, ffn)
    return [built[id(mixer)] for mixer in mixers]


def _unbiased(cfg: Fields, *names: str) -> None:
    """Fields that, true, would add biases a reader does not count: refused."""
    for name in names:
        if cfg.boolean(name, default=False):
            raise cfg.error(name, "biases here are not modelled")


def _window(cfg: Fields, needs_flag: bool) -> int | None:
    window = (
        cfg.optional_integer("sliding_window", minimum=0, maximum=MAX_CONTEXT_TOKENS) or None
    )  # 0: none (Qwen2-MoE)
    enabled = cfg.boolean("use_sliding_window", default=not needs_flag)
    if not enabled:  # Qwen's first layers without a window: moot while no layer has one
        cfg.optional_integer("max_window_layers", minimum=0)
    return window if enabled else None


def _llama_like(qkv_bias: bool = False, qk_norm: bool = False, window_flag: bool = False) -> Reader:
    """Llama, Mistral, Phi-3, Qwen2/2.5/3: every layer the same dense block."""

    def read(cfg: Fields, model_type: str) -> Architecture:
        bias = cfg.boolean("attention_bias", default=qkv_bias)
        attention = _gqa(
            cfg,
            _window(cfg, window_flag),
            qkv_bias=bias,
            o_bias=bias and not qkv_bias,
            qk_norm=qk_norm,
        )
        _unbiased(cfg, "mlp_bias")
        mlp = DenseMLP(cfg.integer("intermediate_size"))
        count = cfg.integer("num_hidden_layers", maximum=MAX_LAYERS)
        return _common(cfg, _over(_alike(cfg, attention, count), mlp))

    return read


def _alike(cfg: Fields, attention: Attention, count: int) -> list[Mixer]:
    """Each layer's attention in a model whose layers are alike. transformers 5 writes
    ``layer_types`` for these too: "full_attention", or "sliding_attention" where a window
    is set (Qwen2's first ``max_window_layers`` full); any other kind stops the read."""
    kind = "sliding_attention" if attention.sliding_window else "full_attention"
    mixers: dict[str, Mixer] = {kind: attention}
    if attention.sliding_window:
        mixers["full_attention"] = replace(attention, sliding_window=None)
    return [_kind(cfg, mixers, k) for k in _layer_kinds(cfg, count, lambda i: kind)]


_LLAMA = _llama_like()


def _phi3(cfg: Fields, model_type: str) -> Architecture:
    """Phi-3 and Phi-4-mini: Llama's block. Phi-4-mini's ``full_attn_mod`` 1 (from the
    original code: every layer full attention) is what transformers' Phi3 builds, which
    never reads it; another value would ask for a layer schedule it does not build."""
    if cfg.integer("full_attn_mod", default=1) != 1:
        raise cfg.error("full_attn_mod", "only 1 (every layer full attention) is modelled")
    return _LLAMA(cfg, model_type)


def _mixtral(cfg: Fields, model_type: str) -> Architecture:
    """Mixtral, and Phi-3.5-MoE (phimoe): Mixtral's with LayerNorms that have biases (two a
    layer and the final one), q, k, v and o biases where ``attention_bias`` says so, and a
    bias on the LM head where ``lm_head_bias`` does (true in Phi-3.5-MoE-instruct: one a
    vocabulary entry, split with the head)."""
    from decodecalc.model.moe import MoE

    moe = MoE(
        num_experts=cfg.integer("num_local_experts"),
        experts_per_token=cfg.integer("num_experts_per_tok"),
        expert_intermediate_size=cfg.integer("intermediate_size"),
    )
    count = cfg.integer("num_hidden_layers", maximum=MAX_LAYERS)
    if model_type != "phimoe":
        attention = _alike(cfg, _gqa(cfg, _window(cfg, False)), count)
        return _common(cfg, _over(attention, moe))
    bias = cfg.boolean("attention_bias", default=False)
    mixers = _alike(cfg, _gqa(cfg, _window(cfg, False), qkv_bias=bias, o_bias=bias), count)
    layers = [replace(layer, norms=4) for layer in _over(mixers, moe)]
    layers[-1] = replace(layers[-1], norms=5)  # and the final LayerNorm's bias
    arch = _common(cfg, layers)
    if not cfg.boolean("lm_head_bias", default=False):
        return arch
    head_bias = TensorGroup("norms and biases", arch.vocab_size, True, Sharding.SPLIT)
    return replace(arch, extra_groups=(head_bias,))


def _qwen_moe_ffn(cfg: Fields, index: int, count: int) -> FFN:
    """Qwen3-MoE and Qwen3-Next: MoE every ``decoder_sparse_step`` layers, except
    ``mlp_only_layers``, which keep a dense MLP of ``intermediate_size``."""
    step = cfg.integer("decoder_sparse_step", default=1)
    dense_only = cfg.raw_list("mlp_only_layers")
    from decodecalc.model.moe import MoE

    dense_size = cfg.optional_integer("intermediate_size")
    if index in dense_only or (index + 1) % step != 0:
        if dense_size is None:
            raise cfg.error(None, f"layer {index} is dense but intermediate_size is missing")
        return DenseMLP(dense_size)
    shared = cfg.integer("shared_expert_intermediate_size", default=0, minimum=0)
    return MoE(
        # transformers 5 saves Qwen3-MoE's num_experts as num_local_experts
        num_experts=_first_integer(cfg, "num_local_experts", "num_experts"),
        experts_per_token=cfg.integer("num_experts_per_tok"),
        expert_intermediate_size=cfg.integer("moe_intermediate_size"),
        shared_intermediate_size=shared,
        shared_gate=shared > 0,
    )


def _qwen3_moe(cfg: Fields, model_type: str) -> Architecture:
    """Qwen3-MoE (QK norms, no biases) and Qwen2-MoE / Qwen1.5-MoE (q, k and v biases, no
    QK norms): GQA, then MoE layers as ``_qwen_moe_ffn`` schedules them (Qwen2-MoE's shared
    expert with its sigmoid gate)."""
    count = cfg.integer("num_hidden_layers", maximum=MAX_LAYERS)
    qwen2 = model_type == "qwen2_moe"
    # Qwen3-Coder's qkv_bias: false, the family's default (transformers reads attention_bias)
    _same_as(cfg, "qkv_bias", qwen2, "q, k and v biases")
    attention = _gqa(
        cfg,
        _window(cfg, True),
        qkv_bias=qwen2 or cfg.boolean("attention_bias", default=False),
        qk_norm=not qwen2,
    )
    mixers = _alike(cfg, attention, count)
    return _common(cfg, [Layer(m, _qwen_moe_ffn(cfg, i, count)) for i, m in enumerate(mixers)])


STATE_DTYPES = {"float32": 32, "bfloat16": 16, "float16": 16}
"""A recurrent state's formats a config may ask for, in bits (vLLM's MambaDType)."""


def _state_format(cfg: Fields, recurrent_bits: int = 16) -> StateFormat:
    """How engines store a constant state (model/linear_attention.py StateFormat): the
    convolution inputs in the model's 16-bit dtype, the recurrent state as the config asks
    (``mamba_ssm_cache_dtype``, Nemotron's; ``mamba_ssm_dtype``, Qwen3.5's), else in
    ``recurrent_bits``, vLLM's default for the family."""
    from decodecalc.model.linear_attention import StateFormat

    for key in ("mamba_ssm_cache_dtype", "mamba_ssm_dtype"):
        name = cfg.text(key, "auto")
        if name != "auto" and name not in STATE_DTYPES:
            raise cfg.error(key, f"is {name!r}; decodecalc reads {', '.join(STATE_DTYPES)}")
        recurrent_bits = STATE_DTYPES.get(name, recurrent_bits)
    return StateFormat(recurrent_bits=recurrent_bits)


def _gated_deltanet(cfg: Fields, model_type: str) -> Architecture:
    """Qwen3-Next and Qwen3.5: Gated DeltaNet linear attention, with full attention (its
    output gated, ``attn_output_gate``) every ``full_attention_interval`` layers (or as
    ``layer_types`` says); MoE layers as Qwen3-MoE's, or in Qwen3.5's dense sizes a gated
    MLP of ``intermediate_size`` everywhere. Qwen3.5 splits the linear attention's input
    projections (in_proj_qkv, in_proj_z, in_proj_b, in_proj_a) where Qwen3-Next fuses
    them (in_proj_qkvz, in_proj_ba): the same weights."""
    count = cfg.integer("num_hidden_layers", maximum=MAX_LAYERS)
    interval = cfg.integer("full_attention_interval", default=4)
    kinds = _layer_kinds(
        cfg, count, lambda i: "full_attention" if (i + 1) % interval == 0 else "linear_attention"
    )
    from decodecalc.model.linear_attention import LinearAttention

    _unbiased(cfg, "attention_bias", "use_sliding_window")
    gate = cfg.boolean("attn_output_gate", default=True)
    full = _gqa(cfg, None, qk_norm=True, output_gate=gate)
    linear = LinearAttention(
        num_key_heads=cfg.integer("linear_num_key_heads"),
        num_value_heads=cfg.integer("linear_num_value_heads"),
        key_head_dim=cfg.integer("linear_key_head_dim"),
        value_head_dim=cfg.integer("linear_value_head_dim"),
        conv_kernel=cfg.integer("linear_conv_kernel_dim"),
        state_format=_state_format(cfg),
    )
    mixers: dict[str, Mixer] = {"full_attention": full, "linear_attention": linear}
    if model_type in DENSE_QWEN3_5:
        mlp = DenseMLP(cfg.integer("intermediate_size"))
        ffns: list[FFN] = [mlp] * count
    else:
        ffns = [_qwen_moe_ffn(cfg, i, count) for i in range(count)]
    layers = [Layer(_kind(cfg, mixers, k), ffn) for k, ffn in zip(kinds, ffns, strict=True)]
    return _common(cfg, layers)


DENSE_QWEN3_5 = ("qwen3_5", "qwen3_5_text")
"""Qwen3.5's dense sizes (0.8B to 27B): a gated MLP in every layer."""


def _sparse_layers(cfg: Fields, count: int, dense_first: int) -> list[bool]:
    """Which layers hold a MoE block. transformers 5 lists it per layer (``mlp_layer_types``,
    "dense" or "sparse"); earlier configs give the dense layers first
    (``first_k_dense_replace``, ``dense_first`` when absent), then MoE every
    ``moe_layer_freq`` layers."""
    first = cfg.integer("first_k_dense_replace", default=dense_first, minimum=0)
    frequency = cfg.integer("moe_layer_freq", default=1)
    rule = [i >= first and i % frequency == 0 for i in range(count)]
    if not cfg.has("mlp_layer_types"):
        return rule
    kinds = _layer_kinds_named(cfg, "mlp_layer_types", count, ("dense", "sparse"))
    listed = [kind == "sparse" for kind in kinds]
    # transformers 5 writes both and builds from the list; a rule that says otherwise
    # leaves the file ambiguous (engines that read the rule would build another model).
    if listed != rule and (cfg.has("first_k_dense_replace") or cfg.has("moe_layer_freq")):
        raise cfg.error("mlp_layer_types", "disagrees with first_k_dense_replace")
    return listed


def _layer_kinds_named(
    cfg: Fields, name: str, count: int, known: tuple[str, ...]
) -> tuple[str, ...]:
    """A per-layer list of kinds, each one of ``known``, one per layer."""
    kinds = cfg.texts(name)
    if len(kinds) != count:
        raise cfg.error(name, f"has {len(kinds)} entries for {count} layers")
    for kind in kinds:
        if kind not in known:
            raise cfg.error(name, f"unknown kind {kind!r}; known: {', '.join(known)}")
    return kinds


def _deepseek(cfg: Fields, model_type: str) -> Architecture:
    """DeepSeek-V2/V3/V3.2, Kimi-K2, Mistral Large 3, GLM-4.7-Flash and GLM-5: MLA
    everywhere (V3.2's and GLM-5's sparse, with an indexer); dense layers first, then MoE
    with shared experts (``_sparse_layers``). GLM-5's ``indexer_types`` may let a layer
    reuse the previous layer's top k ("shared": no indexer of its own, no indexer cache)."""
    from decodecalc.model.moe import MoE

    count = cfg.integer("num_hidden_layers", maximum=MAX_LAYERS)
    mla = _mla(cfg)
    glm = model_type in GLM_MLA
    if model_type in SPARSE_MLA:  # sparse attention: a lightning indexer picks the top k
        # transformers' GlmMoeDsaConfig defaults (zai-org/GLM-5) where a GLM-5 config is silent
        mla = replace(
            mla,
            index_topk=cfg.integer("index_topk", default=2048 if glm else None),
            index_heads=cfg.integer("index_n_heads", default=32 if glm else None),
            index_head_dim=cfg.integer("index_head_dim", default=128 if glm else None),
        )
    _unbiased(cfg, "mlp_bias")
    sparse_layers = _sparse_layers(cfg, count, 1 if model_type == "glm4_moe_lite" else 0)
    if cfg.has("layer_types"):  # transformers 5 lists each MLA layer's kind: all alike
        kind = "indexed_attention" if model_type in SPARSE_MLA else "full_attention"
        _layer_kinds_named(cfg, "layer_types", count, (kind,))
    attention = _indexer_schedule(cfg, mla, count)
    expert = cfg.integer("moe_intermediate_size")
    moe = MoE(
        num_experts=_first_integer(cfg, "num_local_experts", "n_routed_experts"),
        experts_per_token=cfg.integer("num_experts_per_tok"),
        expert_intermediate_size=expert,
        shared_intermediate_size=expert * cfg.integer("n_shared_experts", default=0, minimum=0),
        # V3's noaux_tc routing adds a per-expert score-correction bias; GLM's always has
        # it, and so does transformers 5's DeepSeek-V3, whose config drops topk_method.
        router_bias=glm
        or cfg.text("topk_method", TOPK_METHODS.get(model_type, "greedy")) == "noaux_tc",
    )
    dense = DenseMLP(cfg.integer("intermediate_size"))
    layers = [
        Layer(mixer, moe if sparse else dense)
        for mixer, sparse in zip(attention, sparse_layers, strict=True)
    ]
    return _common(cfg, layers)


def _mla(cfg: Fields) -> LatentAttention:
    """Multi-head latent attention as DeepSeek-V2/V3 configs give it."""
    from decodecalc.model.mla import LatentAttention

    _unbiased(cfg, "attention_bias")
    cfg.optional_integer("num_key_value_heads")  # present in the file, unused by MLA
    cfg.optional_integer("head_dim")  # transformers 5 repeats qk_rope_head_dim here
    nope, rope = cfg.integer("qk_nope_head_dim"), cfg.integer("qk_rope_head_dim")
    if cfg.integer("qk_head_dim", default=nope + rope) != nope + rope:  # transformers 5's sum
        raise cfg.error("qk_head_dim", f"differs from qk_nope + qk_rope_head_dim {nope + rope}")
    return LatentAttention(
        num_heads=cfg.integer("num_attention_heads"),
        kv_lora_rank=cfg.integer("kv_lora_rank"),
        qk_nope_head_dim=nope,
        qk_rope_head_dim=rope,
        v_head_dim=cfg.integer("v_head_dim"),
        q_lora_rank=cfg.optional_integer("q_lora_rank"),
    )


def _longcat_flash(cfg: Fields, model_type: str) -> Architecture:
    """LongCat-Flash: each of ``num_layers`` layers holds two MLA blocks, two dense MLPs of
    ``ffn_hidden_size`` and one MoE beside them (shortcut-connected) of
    ``n_routed_experts`` experts of ``expert_ffn_hidden_size`` plus ``zero_expert_num``
    zero-compute (identity) experts that read nothing; ``moe_topk`` choices per token,
    so a token reads k x E / (E + Z) real experts on average. Here each layer is two: the
    first MLA with a dense MLP, the second MLA with the MoE, whose shared expert is the
    second dense MLP (the same weights, read every step). Four norms either way."""
    from decodecalc.model.moe import MoE

    count = cfg.integer("num_layers", maximum=MAX_LAYERS)
    if cfg.integer("num_hidden_layers", default=2 * count) != 2 * count:
        raise cfg.error("num_hidden_layers", f"must be twice num_layers ({2 * count})")
    if cfg.text("attention_method", "mla") != "mla":
        raise cfg.error("attention_method", "only MLA is modelled")
    if cfg.text("zero_expert_type", "identity") != "identity":
        raise cfg.error("zero_expert_type", "only identity zero-compute experts are modelled")
    for scale in ("mla_scale_q_lora", "mla_scale_kv_lora"):  # scalars: no bytes
        cfg.boolean(scale, default=False)
    _unbiased(cfg, "router_bias")
    mla = _mla(cfg)
    dense = cfg.integer("ffn_hidden_size")
    moe = MoE(
        num_experts=cfg.integer("n_routed_experts"),
        experts_per_token=cfg.integer("moe_topk"),
        expert_intermediate_size=cfg.integer("expert_ffn_hidden_size"),
        shared_intermediate_size=dense,
        router_bias=True,  # its score-correction bias, one per choice
        zero_experts=cfg.integer("zero_expert_num", default=0, minimum=0),
    )
    pair = [Layer(mla, DenseMLP(dense)), Layer(mla, moe)]
    return _common(cfg, pair * count)


SPARSE_MLA = ("deepseek_v32", "glm_moe_dsa")
TOPK_METHODS = {"deepseek_v3": "noaux_tc", "deepseek_v32": "noaux_tc", "kimi_k2": "noaux_tc"}
"""Routing where a config does not say (transformers 5 writes no topk_method)."""
GLM_MLA = ("glm4_moe_lite", "glm_moe_dsa")


def _indexer_schedule(cfg: Fields, mla: Mixer, count: int) -> list[Mixer]:
    """Each layer's MLA: GLM-5's ``indexer_types`` "shared" layers keep the top k but
    have no indexer of their own (no indexer weights, no indexer keys cached)."""
    if not cfg.has("indexer_types"):
        return [mla] * count
    kinds = _layer_kinds_named(cfg, "indexer_types", count, ("full", "shared"))
    shared = replace(mla, index_heads=0, index_head_dim=0)
    return [mla if kind == "full" else shared for kind in kinds]


def _llama4(text: Fields, model_type: str) -> Architecture:
    """Llama 4 Scout and Maverick: RoPE layers attend within chunks of
    ``attention_chunk_size`` tokens, every ``no_rope_layer_interval``-th layer (the zeros of
    ``no_rope_layers``) is global and NoPE (``layer_types``, where given, says so instead);
    MoE with one shared expert in the ``moe_layers`` (every ``interleave_moe_layer_step``-th),
    dense MLPs of ``intermediate_size_mlp`` elsewhere. Its L2 QK norm has no weights. The
    vision encoder of a full checkpoint is held in memory, never read by text decode
    (loading/vision.py)."""
    text.boolean("use_qk_norm", default=True)  # an L2 norm without weights: no bytes
    count = text.integer("num_hidden_layers", maximum=MAX_LAYERS)
    interval = text.integer("no_rope_layer_interval", default=4)
    rope = text.raw_list("no_rope_layers") or tuple(
        int((i + 1) % interval != 0) for i in range(count)
    )
    if len(rope) != count:
        raise text.error("no_rope_layers", f"has {len(rope)} entries for {count} layers")
    step = text.integer("interleave_moe_layer_step", default=1)
    moe_layers = set(
        text.raw_list("moe_layers") if text.has("moe_layers") else range(step - 1, count, step)
    )
    bias = text.boolean("attention_bias", default=False)  # transformers 5 writes it
    global_attention = _gqa(text, None, qkv_bias=bias, o_bias=bias)
    mixers: dict[str, Mixer] = {
        "chunked_attention": replace(
            global_attention,
            attention_chunk=text.optional_integer(
                "attention_chunk_size", maximum=MAX_CONTEXT_TOKENS
            ),
        ),
        "full_attention": global_attention,
    }
    kinds = _layer_kinds(
        text, count, lambda i: "chunked_attention" if rope[i] else "full_attention"
    )
    from decodecalc.model.moe import MoE

    expert = text.integer("intermediate_size")
    moe = MoE(
        num_experts=text.integer("num_local_experts"),
        experts_per_token=text.integer("num_experts_per_tok"),
        expert_intermediate_size=expert,
        shared_intermediate_size=expert,
    )
    dense = DenseMLP(text.integer("intermediate_size_mlp", default=expert))
    layers = [
        Layer(_kind(text, mixers, kind), moe if i in moe_layers else dense)
        for i, kind in enumerate(kinds)
    ]
    return _common(text, layers)


def _routed(cfg: Fields, experts: str, per_expert: str, shared: int = 0) -> MoE:
    """A MoE block whose router carries a per-expert score-correction bias (sigmoid
    routing with noaux_tc, as GLM-4.5 and MiniMax-M2 have whatever topk_method says)."""
    from decodecalc.model.moe import MoE

    return MoE(
        num_experts=cfg.integer(experts),
        experts_per_token=cfg.integer("num_experts_per_tok"),
        expert_intermediate_size=cfg.integer(per_expert),
        shared_intermediate_size=shared,
        router_bias=True,
    )


def _glm4_moe(cfg: Fields, model_type: str) -> Architecture:
    """GLM-4.5 and GLM-4.5-Air: GQA with q/k/v biases (``attention_bias``) and, in GLM-4.5,
    QK norms (``use_qk_norm``); RoPE on ``partial_rotary_factor`` of each head moves no
    bytes (an ignored field); the first ``first_k_dense_replace`` layers dense, the rest MoE with
    ``n_shared_experts`` shared experts of ``moe_intermediate_size``."""
    count = cfg.integer("num_hidden_layers", maximum=MAX_LAYERS)
    attention = _gqa(
        cfg,
        None,
        qkv_bias=cfg.boolean("attention_bias", default=False),
        qk_norm=cfg.boolean("use_qk_norm", default=False),
    )
    expert = cfg.integer("moe_intermediate_size")
    moe = _routed(
        cfg,
        "num_local_experts" if cfg.has("num_local_experts") else "n_routed_experts",
        "moe_intermediate_size",
        expert * cfg.integer("n_shared_experts", default=0, minimum=0),
    )
    dense = DenseMLP(cfg.integer("intermediate_size"))
    sparse = _sparse_layers(cfg, count, 0)
    mixers = _alike(cfg, attention, count)
    return _common(
        cfg, [Layer(m, moe if s else dense) for m, s in zip(mixers, sparse, strict=True)]
    )


def _minimax_m2(cfg: Fields, model_type: str) -> Architecture:
    """MiniMax-M2: full GQA attention in every layer with a QK norm over the whole q and k
    projections (``qk_norm_type`` per_layer), and a MoE of ``num_local_experts`` experts of
    ``intermediate_size`` with no shared expert."""
    count = cfg.integer("num_hidden_layers", maximum=MAX_LAYERS)
    norm = cfg.boolean("use_qk_norm", default=True)  # transformers 5 always builds them
    whole = norm and cfg.text("qk_norm_type", "per_layer") == "per_layer"
    attention = _gqa(cfg, None, qk_norm=norm, qk_norm_whole=whole)
    moe = _routed(cfg, "num_local_experts", "intermediate_size")
    return _common(cfg, _over(_alike(cfg, attention, count), moe))


def _first_integer(cfg: Fields, *names: str) -> int:
    """The first present of several spellings a family's configs use for one field."""
    for name in names[:-1]:
        if cfg.has(name):
            return cfg.integer(name)
    return cfg.integer(names[-1])


BLOCK_NAMES = {"mamba": "M", "linear_attention": "M", "attention": "*", "full_attention": "*"}
BLOCK_NAMES |= {"mlp": "-", "moe": "E"}
"""transformers 5's names for Nemotron-H's blocks (``layers_block_type``), old and new."""


def _nemotron_blocks(cfg: Fields) -> tuple[str, str]:
    """The block string and the field it came from: ``hybrid_override_pattern``, or the
    list ``layers_block_type`` that transformers 5 saves instead."""
    if not cfg.has("layers_block_type"):
        return cfg.text("hybrid_override_pattern"), "hybrid_override_pattern"
    names = cfg.texts("layers_block_type")
    unknown = sorted({n for n in names if n not in BLOCK_NAMES})
    if unknown:
        raise cfg.error(
            "layers_block_type",
            f"unknown block {unknown[0]!r}; known: {', '.join(sorted(BLOCK_NAMES))}",
        )
    return "".join(BLOCK_NAMES[n] for n in names), "layers_block_type"


NEMOTRON_MOE_FIELDS = (
    "n_routed_experts",
    "num_local_experts",
    "num_experts_per_tok",
    "moe_intermediate_size",
    "moe_shared_expert_intermediate_size",
    "n_shared_experts",
)
"""Nemotron-H's MoE sizes: read with an E block, read through (sizing nothing) without."""


def _nemotron_h(cfg: Fields, model_type: str) -> Architecture:
    """Nemotron-H and Nemotron 3: each block is one op, M (Mamba-2), * (attention), -
    (a squared-ReLU MLP of ``intermediate_size``) or E (Nemotron 3's MoE: squared-ReLU
    experts, one shared expert of ``moe_shared_expert_intermediate_size``, a router with
    a score-correction bias), each behind its own norm. A mixer and the MLP or MoE after
    it make one layer here (two norms); a mixer followed by another mixer is a layer
    without an MLP (one norm)."""
    from decodecalc.model.mamba import Mamba2
    from decodecalc.model.moe import MoE

    pattern, field = _nemotron_blocks(cfg)
    count = cfg.integer("num_hidden_layers", default=len(pattern), maximum=MAX_LAYERS)
    if len(pattern) != count:
        raise cfg.error(field, f"has {len(pattern)} blocks for {count} layers")
    bias = cfg.boolean("attention_bias", default=False)
    _unbiased(cfg, "mlp_bias", "mamba_proj_bias")  # use_bias gives the Mamba projections'
    attention = _gqa(cfg, None, qkv_bias=bias, o_bias=bias)
    if cfg.integer("attention_head_dim", default=attention.head_dim) != attention.head_dim:
        raise cfg.error("attention_head_dim", f"differs from the head width {attention.head_dim}")
    mixers: dict[str, Mixer] = {
        "M": Mamba2(
            num_heads=cfg.integer("mamba_num_heads"),
            head_dim=cfg.integer("mamba_head_dim"),
            state_size=_first_integer(cfg, "mamba_state_dim", "ssm_state_size"),
            n_groups=_first_integer(cfg, "mamba_num_groups", "n_groups"),
            conv_kernel=_first_integer(cfg, "mamba_d_conv", "conv_kernel"),
            proj_bias=cfg.boolean("use_bias", default=False),
            conv_bias=cfg.boolean("use_conv_bias", default=True),
            # vLLM's NemotronHForCausalLMConfig: FP32 unless the config says otherwise
            state_format=_state_format(cfg, recurrent_bits=32),
        ),
        "*": attention,
    }
    ffns: dict[str, FFN] = {"-": DenseMLP(cfg.integer("intermediate_size"), gated=False)}
    if "E" in pattern:
        if cfg.integer("n_shared_experts", default=1, minimum=0) > 1:
            raise cfg.error("n_shared_experts", "more than one shared expert is not modelled")
        ffns["E"] = MoE(
            num_experts=_first_integer(cfg, "num_local_experts", "n_routed_experts"),
            experts_per_token=cfg.integer("num_experts_per_tok"),
            expert_intermediate_size=cfg.integer("moe_intermediate_size"),
            shared_intermediate_size=cfg.integer("moe_shared_expert_intermediate_size"),
            router_bias=True,
            gated=False,
        )
    else:  # transformers 5 writes its MoE defaults into every config: they size nothing
        for name in NEMOTRON_MOE_FIELDS:
            cfg.optional_integer(name, minimum=0)
    layers: list[Layer] = []
    for i, block in enumerate(pattern):
        if block in mixers:
            layers.append(Layer(mixers[block], DenseMLP(0), norms=1))
        elif block in ffns and layers and layers[-1].ffn == DenseMLP(0):
            layers[-1] = Layer(layers[-1].mixer, ffns[block])
        else:
            raise cfg.error(
                field,
                f"block {i} is {block!r}: decodecalc reads M (Mamba-2) and * (attention), "
                "each followed by at most one - (MLP) or E (MoE)",
            )
    return _common(cfg, layers)


def _falcon_h1(cfg: Fields, model_type: str) -> Architecture:
    """Falcon-H1: attention and a Mamba-2 mixer side by side in every layer, behind one
    norm, then a gated MLP behind another. Here each such layer is two: the attention
    without an MLP, then the Mamba-2 mixer with the MLP (the same weights, cache and state;
    twice the layer count)."""
    from decodecalc.model.mamba import Mamba2

    count = cfg.integer("num_hidden_layers", maximum=MAX_LAYERS)
    bias = cfg.boolean("attention_bias", default=False)
    _unbiased(cfg, "projectors_bias", "mlp_bias")
    attention = _gqa(cfg, None, qkv_bias=bias, o_bias=bias)
    mamba = Mamba2(
        num_heads=cfg.integer("mamba_n_heads"),
        head_dim=cfg.integer("mamba_d_head"),
        state_size=cfg.integer("mamba_d_state"),
        n_groups=cfg.integer("mamba_n_groups", default=1),
        conv_kernel=cfg.integer("mamba_d_conv", default=4),
        d_inner=cfg.integer("mamba_d_ssm"),
        proj_bias=cfg.boolean("mamba_proj_bias", default=False),
        conv_bias=cfg.boolean("mamba_conv_bias", default=True),
        gated_norm=cfg.boolean("mamba_rms_norm", default=False),
        state_format=_state_format(cfg),
    )
    mlp = DenseMLP(cfg.integer("intermediate_size"))
    pair = [Layer(attention, DenseMLP(0), norms=1), Layer(mamba, mlp, norms=1)]
    return _common(cfg, pair * count)


def _jamba(cfg: Fields, model_type: str) -> Architecture:
    """Jamba: Mamba-1 layers with attention every ``attn_layer_period`` layers (from
    ``attn_layer_offset``) and MoE every ``expert_layer_period`` (from
    ``expert_layer_offset``), dense MLPs elsewhere."""
    from decodecalc.model.mamba import Mamba1

    count = cfg.integer("num_hidden_layers", maximum=MAX_LAYERS)
    hidden = cfg.integer("hidden_size")
    d_inner = cfg.integer("mamba_expand", default=2) * hidden
    mamba = Mamba1(
        d_inner=d_inner,
        state_size=cfg.integer("mamba_d_state", default=16),
        conv_kernel=cfg.integer("mamba_d_conv", default=4),
        dt_rank=cfg.integer("mamba_dt_rank") if cfg.has("mamba_dt_rank") else -(-hidden // 16),
        proj_bias=cfg.boolean("mamba_proj_bias", default=False),
        conv_bias=cfg.boolean("mamba_conv_bias", default=True),
        state_format=_state_format(cfg),
    )
    attention = _gqa(cfg, None)
    from decodecalc.model.moe import MoE

    inner = cfg.integer("intermediate_size")
    moe = MoE(
        num_experts=cfg.integer("num_experts"),
        experts_per_token=cfg.integer("num_experts_per_tok"),
        expert_intermediate_size=inner,
    )
    attn_period = cfg.integer("attn_layer_period", default=8)
    attn_offset = cfg.integer("attn_layer_offset", default=4, minimum=0)
    moe_period = cfg.integer("expert_layer_period", default=2)
    moe_offset = cfg.integer("expert_layer_offset", default=1, minimum=0)
    layers = [
        Layer(
            attention if i % attn_period == attn_offset else mamba,
            moe if i % moe_period == moe_offset else DenseMLP(inner),
        )
        for i in range(count)
    ]
    return _common(cfg, layers)


def _gpt_oss(cfg: Fields, model_type: str) -> Architecture:
    """gpt-oss: alternating banded (sliding) and full attention with biases and sinks;
    every layer a biased MoE."""
    count = cfg.integer("num_hidden_layers", maximum=MAX_LAYERS)
    window = cfg.integer("sliding_window", maximum=MAX_CONTEXT_TOKENS)
    kinds = _layer_kinds(
        cfg, count, lambda i: "sliding_attention" if i % 2 == 0 else "full_attention"
    )
    flags = {"qkv_bias": True, "o_bias": True, "sinks": True}
    mixers: dict[str, Mixer] = {
        "sliding_attention": _gqa(cfg, window, **flags),
        "full_attention": _gqa(cfg, None, **flags),
    }
    from decodecalc.model.moe import MoE

    cfg.boolean("attention_bias", default=True)
    per_token = cfg.integer("num_experts_per_tok")
    if cfg.integer("experts_per_token", default=per_token) != per_token:  # gpt-oss says it twice
        raise cfg.error("experts_per_token", f"differs from num_experts_per_tok {per_token}")
    moe = MoE(
        num_experts=cfg.integer("num_local_experts"),
        experts_per_token=per_token,
        expert_intermediate_size=cfg.integer("intermediate_size"),
        router_bias=True,
        expert_bias=True,
    )
    return _common(cfg, [Layer(_kind(cfg, mixers, k), moe) for k in kinds])


def _mimo_window(cfg: Fields) -> int:
    """The sliding layers' window: ``sliding_window_size`` in the checkpoint's config,
    ``sliding_window`` in transformers 5's, which re-saves it as that plus one (the
    reference attends to that many earlier tokens and the query itself)."""
    window = cfg.optional_integer("sliding_window", maximum=MAX_CONTEXT_TOKENS)
    size = cfg.optional_integer("sliding_window_size", maximum=MAX_CONTEXT_TOKENS)
    if size is None and window is None:
        raise cfg.error("sliding_window", "one window size is needed (sliding_window_size)")
    if size is not None and window not in (None, size, size + 1):
        raise cfg.error("sliding_window", f"differs from sliding_window_size {size}")
    return size if size is not None else window  # type: ignore[return-value]


def _mimo_kinds(cfg: Fields, count: int) -> tuple[list[str], list[bool]]:
    """Each layer's attention kind and whether its MLP is a MoE: the checkpoint's lists
    (``hybrid_layer_pattern`` 1 sliding, ``moe_layer_freq`` 1 MoE) or transformers 5's
    (``layer_types``, ``mlp_layer_types``; its defaults where absent: full attention
    first and every 6th layer, a dense first layer). Where a file has both, they agree."""
    rule = _layer_kinds(
        cfg,
        count,
        lambda i: "full_attention" if i == 0 or (i + 1) % 6 == 0 else "sliding_attention",
    )
    kinds = rule
    if cfg.has("hybrid_layer_pattern"):
        pattern = cfg.raw_list("hybrid_layer_pattern")
        if len(pattern) != count or not set(pattern) <= {0, 1}:
            raise cfg.error("hybrid_layer_pattern", f"needs {count} entries, each 0 or 1")
        kinds = ["sliding_attention" if p else "full_attention" for p in pattern]
        if cfg.has("layer_types") and kinds != rule:
            raise cfg.error("layer_types", "disagrees with hybrid_layer_pattern")
    if cfg.has("moe_layer_freq"):  # the released config lists it per layer
        freq = cfg.raw_list("moe_layer_freq")
        if len(freq) != count or not set(freq) <= {0, 1}:
            raise cfg.error("moe_layer_freq", f"needs {count} entries, each 0 or 1")
        sparse = [bool(f) for f in freq]
        if cfg.has("mlp_layer_types"):
            listed = _layer_kinds_named(cfg, "mlp_layer_types", count, ("dense", "sparse"))
            if [kind == "sparse" for kind in listed] != sparse:
                raise cfg.error("mlp_layer_types", "disagrees with moe_layer_freq")
    else:
        sparse = _sparse_layers(cfg, count, 1)
    return kinds, sparse


def _mimo_v2_flash(cfg: Fields, model_type: str) -> Architecture:
    """MiMo-V2-Flash: 192-wide keys with 128-wide values; full attention in the layers
    ``hybrid_layer_pattern`` marks 0 (or ``layer_types`` calls full), sliding-window
    attention with heads of its own (``swa_*``) and attention sinks in the rest; a dense
    first layer (``moe_layer_freq`` 0, or ``mlp_layer_types`` dense), then MoE with a
    score-correction bias on the router. transformers 5's config has no ``swa_*`` fields:
    its sliding layers keep the query heads and widths and double the KV heads, and have
    sinks where the full layers have none; those are the defaults here."""
    count = cfg.integer("num_hidden_layers", maximum=MAX_LAYERS)
    _unbiased(cfg, "attention_bias")
    window = _mimo_window(cfg)

    def attention(prefix: str, sinks: str, window: int | None, kv_scale: int) -> Attention:
        heads = cfg.integer(f"{prefix}num_attention_heads", cfg.integer("num_attention_heads"))
        kv_default = kv_scale * cfg.integer("num_key_value_heads")
        kv = cfg.integer(f"{prefix}num_key_value_heads", kv_default)
        if heads % kv:
            raise cfg.error(f"{prefix}num_key_value_heads", f"{kv} does not divide {heads}")
        return Attention(
            num_heads=heads,
            num_kv_heads=kv,
            head_dim=cfg.integer(f"{prefix}head_dim", cfg.integer("head_dim", 192)),
            v_head_dim=cfg.integer(f"{prefix}v_head_dim", cfg.integer("v_head_dim", 128)),
            sliding_window=window,
            sinks=cfg.boolean(sinks, default=window is not None),
        )

    mixers: dict[str, Mixer] = {
        "full_attention": attention("", "add_full_attention_sink_bias", None, 1),
        "sliding_attention": attention("swa_", "add_swa_attention_sink_bias", window, 2),
    }
    kinds, sparse = _mimo_kinds(cfg, count)
    expert = cfg.integer("moe_intermediate_size")
    shared = cfg.integer("n_shared_experts", default=0, minimum=0) * expert
    cfg.text("topk_method", "noaux_tc")  # its router keeps a score-correction bias either way
    moe = _routed(cfg, "n_routed_experts", "moe_intermediate_size", shared)
    dense = DenseMLP(cfg.integer("intermediate_size"))
    layers = [
        Layer(_kind(cfg, mixers, kind), moe if s else dense)
        for kind, s in zip(kinds, sparse, strict=True)
    ]
    return _common(cfg, layers)


def _gemma(qk_norm: bool, pattern_default: int, vocab: int, context: int) -> Reader:
    """Gemma 2 (local and global layers alternate) and Gemma 3 (five local to one global,
    ``sliding_window_pattern``): four norms per layer, tied embeddings. Gemma 3's published
    config.json leaves vocabulary, context and pattern to the transformers defaults, which
    are the fallbacks here."""

    def read(text: Fields, model_type: str) -> Architecture:
        count = text.integer("num_hidden_layers", maximum=MAX_LAYERS)
        # transformers 5 saves the pattern as _sliding_window_pattern (layer_types rule)
        saved = text.integer("_sliding_window_pattern", default=pattern_default)
        pattern = text.integer("sliding_window_pattern", default=saved)
        kinds = _layer_kinds(
            text,
            count,
            lambda i: "full_attention" if (i + 1) % pattern == 0 else "sliding_attention",
        )
        window = text.integer("sliding_window", maximum=MAX_CONTEXT_TOKENS)
        if (
            text.integer("sliding_window_size", default=window, maximum=MAX_CONTEXT_TOKENS)
            != window
        ):  # Gemma 2 says it twice
            raise text.error("sliding_window_size", f"differs from sliding_window {window}")
        mixers: dict[str, Mixer] = {
            "sliding_attention": _gqa(text, window, qk_norm=qk_norm),
            "full_attention": _gqa(text, None, qk_norm=qk_norm),
        }
        _unbiased(text, "attention_bias")
        # transformers 5's switch for EmbeddingGemma, a model that attends both ways
        _same_as(text, "use_bidirectional_attention", False, "an embedding model: no decode")
        mlp = DenseMLP(text.integer("intermediate_size"))
        layers = [Layer(_kind(text, mixers, k), mlp, norms=4) for k in kinds]
        return _common(text, layers, True, vocab, context)

    return read


def _same_as(cfg: Fields, name: str, modelled: bool, why: str) -> None:
    """Read a flag whose other value changes the weights in a way decodecalc does not model:
    refuse it in one line rather than count the model wrong."""
    if cfg.boolean(name, default=modelled) != modelled:
        raise cfg.error(name, f"{str(not modelled).lower()} is not modelled ({why})")


def _stack(cfg: Fields, mixers: dict[str, Mixer], kinds: list[str], ffn: FFN) -> list[Layer]:
    return _over([_kind(cfg, mixers, kind) for kind in kinds], ffn)


def _olmo(cfg: Fields, model_type: str) -> Architecture:
    """OLMo 2 and OLMo 3: QK norms over the whole q and k projections, a norm after each
    sub-block (two a layer, none before); OLMo 3 gives each layer a kind in ``layer_types``,
    three ``sliding_window`` layers to one full by default."""
    count = cfg.integer("num_hidden_layers", maximum=MAX_LAYERS)
    bias = cfg.boolean("attention_bias", default=False)
    flags = {"qkv_bias": bias, "o_bias": bias, "qk_norm": True, "qk_norm_whole": True}
    mixers: dict[str, Mixer] = {"full_attention": _gqa(cfg, None, **flags)}
    if model_type == "olmo3":
        mixers["sliding_attention"] = _gqa(
            cfg, cfg.integer("sliding_window", maximum=MAX_CONTEXT_TOKENS), **flags
        )
        kinds = _layer_kinds(
            cfg, count, lambda i: "full_attention" if (i + 1) % 4 == 0 else "sliding_attention"
        )
    else:
        kinds = ["full_attention"] * count
    mlp = DenseMLP(cfg.integer("intermediate_size"))
    return _common(cfg, _stack(cfg, mixers, kinds, mlp))


def _olmoe(cfg: Fields, model_type: str) -> Architecture:
    """OLMoE: OLMo's attention with QK norms over the whole q and k projections (norms
    before each sub-block here), every layer a MoE of ``num_experts`` experts of
    ``intermediate_size``, no shared expert. ``clip_qkv`` clamps activations: no bytes."""
    from decodecalc.model.moe import MoE

    count = cfg.integer("num_hidden_layers", maximum=MAX_LAYERS)
    bias = cfg.boolean("attention_bias", default=False)
    flags = {"qkv_bias": bias, "o_bias": bias, "qk_norm": True, "qk_norm_whole": True}
    attention = _gqa(cfg, None, **flags)
    moe = MoE(
        num_experts=cfg.integer("num_experts"),
        experts_per_token=cfg.integer("num_experts_per_tok"),
        expert_intermediate_size=cfg.integer("intermediate_size"),
    )
    return _common(cfg, _over(_alike(cfg, attention, count), moe))


def _granite_moe(cfg: Fields, model_type: str) -> Architecture:
    """Granite 3.x MoE (granitemoe) and its shared-expert variant (granitemoeshared):
    Llama's attention, every layer ``num_experts_per_tok`` of ``num_local_experts``
    experts of ``intermediate_size`` and, in granitemoeshared, a shared MLP of
    ``shared_intermediate_size`` (none at 0). The scalar multipliers move no bytes."""
    from decodecalc.model.moe import MoE

    count = cfg.integer("num_hidden_layers", maximum=MAX_LAYERS)
    bias = cfg.boolean("attention_bias", default=False)
    attention = _gqa(cfg, None, qkv_bias=bias, o_bias=bias)
    moe = MoE(
        num_experts=cfg.integer("num_local_experts"),
        experts_per_token=cfg.integer("num_experts_per_tok"),
        expert_intermediate_size=cfg.integer("intermediate_size"),
        shared_intermediate_size=cfg.integer("shared_intermediate_size", default=0, minimum=0),
    )
    return _common(cfg, _over(_alike(cfg, attention, count), moe))


def _internlm3(cfg: Fields, model_type: str) -> Architecture:
    """InternLM3: Llama's block; its original ``qkv_bias`` and ``bias`` switches (false in
    InternLM3-8B) would add biases transformers' InternLM3 builds from attention_bias and
    mlp_bias, so a true one is refused."""
    _same_as(cfg, "qkv_bias", False, "q, k and v biases")
    _same_as(cfg, "bias", False, "output and MLP biases")
    return _LLAMA(cfg, model_type)


def _internlm2(cfg: Fields, model_type: str) -> Architecture:
    """InternLM2 and 2.5 (remote code, modeling_internlm2.py): Llama's block with q, k and v
    fused in one ``wqkv`` of (heads + 2 x KV heads) x head_dim rows, the elements of
    Llama's three. Its ``bias`` switch (true by default in InternLM2Config, false in the
    published checkpoints) gives wqkv and wo biases; the MLP's w1, w2, w3 have none."""
    bias = cfg.boolean("bias", default=True)
    attention = _gqa(cfg, None, qkv_bias=bias, o_bias=bias)
    mlp = DenseMLP(cfg.integer("intermediate_size"))
    count = cfg.integer("num_hidden_layers", maximum=MAX_LAYERS)
    return _common(cfg, _over(_alike(cfg, attention, count), mlp))


def _exaone4(cfg: Fields, model_type: str) -> Architecture:
    """EXAONE 4.0: QK norms per head, a norm after each sub-block (none before), three
    ``sliding_window`` layers to one full (``sliding_window_pattern``, or ``layer_types``),
    the full layers without positions (NoPE: no bytes)."""
    count = cfg.integer("num_hidden_layers", maximum=MAX_LAYERS)
    pattern = cfg.integer("sliding_window_pattern", default=4)
    window = cfg.optional_integer("sliding_window", maximum=MAX_CONTEXT_TOKENS)
    rule = "sliding_attention" if window else "full_attention"
    kinds = _layer_kinds(cfg, count, lambda i: "full_attention" if (i + 1) % pattern == 0 else rule)
    mixers: dict[str, Mixer] = {"full_attention": _gqa(cfg, None, qk_norm=True)}
    if window:
        mixers["sliding_attention"] = _gqa(cfg, window, qk_norm=True)
    mlp = DenseMLP(cfg.integer("intermediate_size"))
    return _common(cfg, _stack(cfg, mixers, kinds, mlp))


def _layernorm_gpt(cfg: Fields, model_type: str) -> Architecture:
    """StarCoder2 and GPT-NeoX (Pythia): LayerNorms with biases (two a layer and a final
    one), biased attention projections (``use_bias``; GPT-NeoX's ``attention_bias``, its
    q, k and v fused) and a plain biased MLP, up and down. GPT-NeoX's parallel residual
    changes where the sum is taken, not the weights; StarCoder2 may attend within a
    ``sliding_window``. Every head has its own K and V in GPT-NeoX."""
    count = cfg.integer("num_hidden_layers", maximum=MAX_LAYERS)
    neox = model_type == "gpt_neox"
    bias = cfg.boolean("attention_bias" if neox else "use_bias", default=True)
    window = None if neox else cfg.optional_integer("sliding_window", maximum=MAX_CONTEXT_TOKENS)
    attention = _gqa(cfg, window, qkv_bias=bias, o_bias=bias)
    mlp = DenseMLP(cfg.integer("intermediate_size"), gated=False, bias=True)
    if neox:
        cfg.boolean("use_parallel_residual", default=True)  # where the sum is taken
    layers = [replace(layer, norms=4) for layer in _over(_alike(cfg, attention, count), mlp)]
    layers[-1] = replace(layers[-1], norms=5)  # and the final LayerNorm's bias
    return _common(cfg, layers, tie_default=not neox)


def _minicpm(cfg: Fields, model_type: str) -> Architecture:
    """MiniCPM 1 and 2 (remote code, modeling_minicpm.py): Llama's layers, biases on q, k,
    v and o where ``attention_bias`` says so, embeddings tied unless the file says not
    (MiniCPMConfig's default is tied). ``scale_emb``, ``scale_depth``, ``dim_model_base``
    and MiniCPM4's ``mup_denominator`` are scalars. MiniCPM4's ``sparse_config`` (InfLLM
    v2: each token reads chosen blocks of the cache) is refused: not modelled."""
    if cfg.has("sparse_config"):
        raise cfg.error(
            "sparse_config",
            "MiniCPM4's InfLLM v2 sparse attention (blocks of the cache "
            "chosen per token) is not modelled",
        )
    arch = _LLAMA(cfg, model_type)
    return replace(arch, tie_word_embeddings=cfg.boolean("tie_word_embeddings", default=True))


def _minicpm3(cfg: Fields, model_type: str) -> Architecture:
    """MiniCPM3: DeepSeek-V2's multi-head latent attention (``q_lora_rank``,
    ``kv_lora_rank``) in every layer, each followed by a dense gated MLP; tied embeddings.
    Its ``scale_emb``, ``scale_depth`` and ``dim_model_base`` are scalars."""
    _unbiased(cfg, "mlp_bias")
    count = cfg.integer("num_hidden_layers", maximum=MAX_LAYERS)
    layer = Layer(_mla(cfg), DenseMLP(cfg.integer("intermediate_size")))
    return _common(cfg, [layer] * count, tie_default=True)


def _dots1(cfg: Fields, model_type: str) -> Architecture:
    """dots.llm1: Qwen3's attention (QK norms per head; a window only where
    ``use_sliding_window`` turns it on), the first ``first_k_dense_replace`` layers dense,
    the rest DeepSeek-V3's MoE: ``n_routed_experts`` of ``moe_intermediate_size`` with a
    score-correction bias on the router and ``n_shared_experts`` shared ones."""
    count = cfg.integer("num_hidden_layers", maximum=MAX_LAYERS)
    bias = cfg.boolean("attention_bias", default=False)
    attention = _gqa(cfg, _window(cfg, True), qkv_bias=bias, o_bias=bias, qk_norm=True)
    expert = cfg.integer("moe_intermediate_size")
    shared = expert * cfg.integer("n_shared_experts", default=0, minimum=0)
    moe = _routed(cfg, "n_routed_experts", "moe_intermediate_size", shared)
    dense = DenseMLP(cfg.integer("intermediate_size"))
    sparse = _sparse_layers(cfg, count, 0)
    mixers = _alike(cfg, attention, count)
    return _common(
        cfg, [Layer(m, moe if s else dense) for m, s in zip(mixers, sparse, strict=True)]
    )


def _nope_rule(cfg: Fields, count: int) -> tuple[int, ...]:
    """SmolLM3's ``no_rope_layers`` (1: RoPE, 0: NoPE), or every
    ``no_rope_layer_interval``-th layer NoPE. Positions move no bytes; the list is checked
    so that a malformed one is not passed over."""
    interval = cfg.integer("no_rope_layer_interval", default=4)
    rope = cfg.raw_list("no_rope_layers") or tuple(
        int((i + 1) % interval != 0) for i in range(count)
    )
    if len(rope) < count:
        raise cfg.error("no_rope_layers", f"has {len(rope)} entries for {count} layers")
    return rope


def _smollm3(cfg: Fields, model_type: str) -> Architecture:
    """SmolLM3: Llama's dense block, a NoPE layer every fourth (``no_rope_layers``), tied
    embeddings; a sliding window only where ``use_sliding_window`` turns it on, and then
    on the NoPE layers (``layer_types`` says so where given)."""
    count = cfg.integer("num_hidden_layers", maximum=MAX_LAYERS)
    rope = _nope_rule(cfg, count)
    window = _window(cfg, needs_flag=True)
    _same_as(cfg, "mlp_bias", False, "biased MLP projections")
    bias = cfg.boolean("attention_bias", default=False)
    mixers: dict[str, Mixer] = {
        "full_attention": _gqa(cfg, None, qkv_bias=bias, o_bias=bias),
        "sliding_attention": _gqa(cfg, window, qkv_bias=bias, o_bias=bias),
    }
    kinds = _layer_kinds(
        cfg,
        count,
        lambda i: "sliding_attention" if window and not rope[i] else "full_attention",
    )
    mlp = DenseMLP(cfg.integer("intermediate_size"))
    return _common(cfg, _stack(cfg, mixers, kinds, mlp), tie_default=True)


def _seed_oss(cfg: Fields, model_type: str) -> Architecture:
    """Seed-OSS: Llama's dense block with q/k/v biases (``attention_bias``, on by default)
    and an o_proj bias only where ``attention_out_bias`` says so."""
    _same_as(cfg, "mlp_bias", False, "biased MLP projections")
    attention = _gqa(
        cfg,
        None,
        qkv_bias=cfg.boolean("attention_bias", default=True),
        o_bias=cfg.boolean("attention_out_bias", default=False),
    )
    layer = Layer(attention, DenseMLP(cfg.integer("intermediate_size")))
    return _common(cfg, [layer] * cfg.integer("num_hidden_layers", maximum=MAX_LAYERS))


def _apertus(cfg: Fields, model_type: str) -> Architecture:
    """Apertus: QK norms per head and a plain (not gated) MLP, up and down, with the xIELU
    activation; norms before attention and before the MLP."""
    bias = cfg.boolean("attention_bias", default=False)
    attention = _gqa(cfg, None, qkv_bias=bias, o_bias=bias, qk_norm=True)
    layer = Layer(attention, DenseMLP(cfg.integer("intermediate_size"), gated=False))
    return _common(cfg, [layer] * cfg.integer("num_hidden_layers", maximum=MAX_LAYERS))


def _cohere2(cfg: Fields, model_type: str) -> Architecture:
    """Cohere (Command R, R+; QK norms over the whole q and k where ``use_qk_norm``) and
    Cohere2 (Command R7B, Command A): attention and the MLP side by side behind one
    LayerNorm (weights, no bias), so one norm a layer; sliding-window RoPE layers with a
    global NoPE layer every ``sliding_window_pattern``-th (``layer_types`` where given);
    tied embeddings. The original Cohere switches that transformers does not follow are
    read so that a config asking for another graph is refused."""
    count = cfg.integer("num_hidden_layers", maximum=MAX_LAYERS)
    _same_as(cfg, "use_parallel_block", True, "attention and MLP one after the other")
    _same_as(cfg, "use_gated_activation", True, "a plain MLP")
    bias = cfg.boolean("attention_bias", default=False)
    if model_type == "cohere":  # Command R and R+: every layer global, R+ with QK norms
        norm = cfg.boolean("use_qk_norm", default=False)
        full = _gqa(cfg, None, qkv_bias=bias, o_bias=bias, qk_norm=norm, qk_norm_whole=norm)
        kinds = _layer_kinds(cfg, count, lambda i: "full_attention")
        mixers: dict[str, Mixer] = {"full_attention": full}
    else:
        _same_as(cfg, "use_qk_norm", False, "QK norms")
        pattern = cfg.integer("sliding_window_pattern", default=4)
        kinds = _layer_kinds(
            cfg,
            count,
            lambda i: "full_attention" if (i + 1) % pattern == 0 else "sliding_attention",
        )
        window = cfg.integer("sliding_window", maximum=MAX_CONTEXT_TOKENS)
        mixers = {
            "sliding_attention": _gqa(cfg, window, qkv_bias=bias, o_bias=bias),
            "full_attention": _gqa(cfg, None, qkv_bias=bias, o_bias=bias),
        }
    mlp = DenseMLP(cfg.integer("intermediate_size"))
    layers = [Layer(_kind(cfg, mixers, k), mlp, norms=1) for k in kinds]
    tie = cfg.boolean("use_embedding_sharing", default=True)
    return _common(cfg, layers, tie_default=tie)


def _granite_hybrid(cfg: Fields, model_type: str) -> Architecture:
    """Granite 4.0-H (granitemoehybrid): Mamba-2 and attention layers as ``layer_types``
    lists them (attention without positions, ``position_embedding_type`` nope; transformers
    5 names the Mamba-2 layer "linear_attention", the checkpoints "mamba"), each
    followed by a MoE of ``num_local_experts`` experts with a shared expert of
    ``shared_intermediate_size``; without experts (H-Micro) the shared MLP alone. The Mamba-2
    width is ``mamba_expand`` x hidden."""
    from decodecalc.model.mamba import Mamba2
    from decodecalc.model.moe import MoE

    count = cfg.integer("num_hidden_layers", maximum=MAX_LAYERS)
    kinds = _layer_kinds(cfg, count, lambda i: "attention")
    bias = cfg.boolean("attention_bias", default=False)
    attention = _gqa(cfg, None, qkv_bias=bias, o_bias=bias)
    mixers: dict[str, Mixer] = {"attention": attention, "full_attention": attention}
    if {"mamba", "linear_attention"} & set(kinds):
        mixers["mamba"] = mixers["linear_attention"] = Mamba2(
            num_heads=cfg.integer("mamba_n_heads"),
            head_dim=cfg.integer("mamba_d_head"),
            state_size=cfg.integer("mamba_d_state"),
            n_groups=cfg.integer("mamba_n_groups", default=1),
            conv_kernel=cfg.integer("mamba_d_conv", default=4),
            d_inner=cfg.integer("mamba_expand", default=2) * cfg.integer("hidden_size"),
            proj_bias=cfg.boolean("mamba_proj_bias", default=False),
            conv_bias=cfg.boolean("mamba_conv_bias", default=True),
            state_format=_state_format(cfg),
        )
    shared = cfg.integer("shared_intermediate_size", default=0, minimum=0)
    experts = cfg.integer("num_local_experts", default=0, minimum=0)
    ffn: FFN
    if experts:
        ffn = MoE(
            num_experts=experts,
            experts_per_token=cfg.integer("num_experts_per_tok"),
            expert_intermediate_size=cfg.integer("intermediate_size"),
            shared_intermediate_size=shared,
        )
    elif shared:
        cfg.optional_integer("intermediate_size")  # the experts' width, with none to size
        cfg.optional_integer("num_experts_per_tok")
        ffn = DenseMLP(shared)
    else:
        raise cfg.error(None, "neither experts (num_local_experts) nor shared_intermediate_size")
    return _common(cfg, _stack(cfg, mixers, kinds, ffn), tie_default=True)


def _ernie(cfg: Fields, model_type: str) -> Architecture:
    """ERNIE 4.5, dense and MoE: Llama's block; in ernie4_5_moe a MoE at every
    ``moe_layer_interval``-th layer from ``moe_layer_start_index`` to
    ``moe_layer_end_index``, ``moe_k`` of ``moe_num_experts`` experts with a router
    correction bias, and ``moe_num_shared_experts`` shared experts of the expert size. The
    MTP layer (``num_nextn_predict_layers``) ships in the checkpoint but plain decode never
    reads it, so it is not counted."""
    from decodecalc.model.moe import MoE

    count = cfg.integer("num_hidden_layers", maximum=MAX_LAYERS)
    _same_as(cfg, "use_bias", False, "biased projections")
    attention = _gqa(cfg, None)
    dense = DenseMLP(cfg.integer("intermediate_size"))
    if model_type == "ernie4_5":
        return _common(cfg, [Layer(attention, dense)] * count, tie_default=True)
    expert = cfg.integer("moe_intermediate_size")
    moe = MoE(
        num_experts=cfg.integer("moe_num_experts"),
        experts_per_token=cfg.integer("moe_k"),
        expert_intermediate_size=expert,
        shared_intermediate_size=expert
        * cfg.integer("moe_num_shared_experts", default=0, minimum=0),
        router_bias=True,
    )
    start = cfg.integer("moe_layer_start_index", default=0, minimum=0)
    end = cfg.integer("moe_layer_end_index", default=-1, minimum=-1)
    end = count - 1 if end == -1 else end  # -1: to the last layer
    interval = cfg.integer("moe_layer_interval", default=1)
    layers = [
        Layer(attention, moe if start <= i <= end and (i + 1) % interval == 0 else dense)
        for i in range(count)
    ]
    return _common(cfg, layers, tie_default=True)


def _lfm2_ffn_size(cfg: Fields) -> int:
    """LFM2's MLP width: ``block_ff_dim`` (or ``intermediate_size``), cut to two thirds,
    scaled by ``block_ffn_dim_multiplier`` and rounded up to ``block_multiple_of`` when
    ``block_auto_adjust_ff_dim`` (HF Lfm2MLP)."""
    size = _first_integer(cfg, "block_ff_dim", "intermediate_size")
    if not cfg.boolean("block_auto_adjust_ff_dim", default=True):
        return size
    size = 2 * size // 3
    if not cfg.has("block_ffn_dim_multiplier"):
        return size
    size = int(cfg.fraction("block_ffn_dim_multiplier", maximum=1_000) * size)
    multiple = cfg.integer("block_multiple_of", default=256)
    return -(-size // multiple) * multiple


def _lfm2(cfg: Fields, model_type: str) -> Architecture:
    """LFM2: gated short-convolution layers and GQA layers with QK norms (``layer_types``,
    or the attention layers listed in ``full_attn_idxs``), each followed by a gated MLP;
    tied embeddings (``tie_embedding`` in the original configs)."""
    from decodecalc.model.short_conv import ShortConv

    count = cfg.integer("num_hidden_layers", maximum=MAX_LAYERS)
    attention_at = set(cfg.raw_list("full_attn_idxs"))
    kinds = _layer_kinds(cfg, count, lambda i: "full_attention" if i in attention_at else "conv")
    mixers: dict[str, Mixer] = {
        "full_attention": _gqa(cfg, None, qk_norm=True),
        "conv": ShortConv(
            width=cfg.integer("hidden_size"),
            kernel=cfg.integer("conv_L_cache", default=3),
            bias=cfg.boolean("conv_bias", default=False),
        ),
    }
    mlp = DenseMLP(_lfm2_ffn_size(cfg))
    tie = cfg.boolean("tie_embedding", default=True)
    return _common(cfg, _stack(cfg, mixers, kinds, mlp), tie_default=tie)


def _minimax_kinds(cfg: Fields, count: int) -> list[str]:
    """MiniMax's layer kinds: ``attn_type_list`` of the checkpoint's config (0 lightning,
    1 full) or ``layer_types`` of transformers 5's (linear_attention, full_attention;
    where absent, its MiniMaxConfig default: full attention in the even layers)."""
    if not cfg.has("attn_type_list"):
        return list(
            _layer_kinds_named(cfg, "layer_types", count, MINIMAX_KINDS)
            if cfg.has("layer_types")
            else [MINIMAX_KINDS[1 - i % 2] for i in range(count)]
        )
    types = cfg.raw_list("attn_type_list")
    if len(types) != count:
        raise cfg.error(
            "attn_type_list", f"has {len(types)} entries for {count} layers (num_hidden_layers)"
        )
    if not set(types) <= {0, 1}:
        raise cfg.error("attn_type_list", "entries are 0 (lightning) or 1 (full)")
    kinds = [MINIMAX_KINDS[t] for t in types]
    if cfg.has("layer_types") and list(_layer_kinds(cfg, count, kinds.__getitem__)) != kinds:
        raise cfg.error("layer_types", "disagrees with attn_type_list")
    return kinds


MINIMAX_KINDS = ("linear_attention", "full_attention")
"""MiniMax's layer kinds by the checkpoint's attn_type_list numbers (0, 1)."""


def _minimax_m1(cfg: Fields, model_type: str) -> Architecture:
    """MiniMax-M1 and MiniMax-Text-01 (minimax_m1, and transformers' minimax): lightning
    (linear) attention where ``attn_type_list`` says 0, full GQA softmax attention where
    it says 1 (one layer in eight), or as ``layer_types`` says; every layer a MoE of
    ``num_local_experts`` experts of ``intermediate_size``."""
    from decodecalc.model.linear_attention import LightningAttention
    from decodecalc.model.moe import MoE

    count = cfg.integer("num_hidden_layers", maximum=MAX_LAYERS)
    kinds = _minimax_kinds(cfg, count)
    if cfg.integer("shared_intermediate_size", default=0, minimum=0):
        raise cfg.error("shared_intermediate_size", "a shared expert is not modelled for MiniMax")
    full = _gqa(cfg, None)
    mixers: dict[str, Mixer] = {
        "full_attention": full,
        "linear_attention": LightningAttention(full.num_heads, full.head_dim),
    }
    moe = MoE(
        num_experts=cfg.integer("num_local_experts"),
        experts_per_token=cfg.integer("num_experts_per_tok"),
        expert_intermediate_size=cfg.integer("intermediate_size"),
    )
    return _common(cfg, _stack(cfg, mixers, kinds, moe))


def _gemma3n_widths(text: Fields, count: int) -> list[int]:
    """Gemma 3n's MLP widths: one ``intermediate_size`` for all layers or one per layer
    (MatFormer slices give layers different widths)."""
    if not isinstance(text.data.get("intermediate_size"), list):
        return [text.integer("intermediate_size")] * count
    widths = list(text.raw_list("intermediate_size"))
    if len(widths) != count or min(widths) < 1:
        raise text.error("intermediate_size", f"expected {count} positive widths, one a layer")
    return widths


def _gemma3n(cfg: Fields, model_type: str) -> Architecture:
    """Gemma 3n's text decoder (under ``text_config`` in gemma3n): Gemma's four norms, QK
    norms (the V norm has no weights), four ``sliding_window`` layers to one global
    (``layer_types``). The last ``num_kv_shared_layers`` layers compute no K and V: each
    reads the cache of the last earlier layer of its kind, so they hold no cache but read
    one (their k and v projections ship all the same). Beside every layer AltUp
    (``altup_num_inputs`` streams: a router, its norm, two coefficient maps, an output
    scale), LAuReL (rank ``laurel_rank``, a norm) and the per-layer input (gate and
    projection of ``hidden_size_per_layer_input``, a norm), all read every step, as are the
    AltUp projections into and out of the streams and the per-layer input projection.
    The per-layer embeddings (``vocab_size_per_layer_input`` rows of layers x per-layer
    width) are a table a step gathers one row of per token: held, not streamed. The vision
    (MobileNetV5, defined in timm) and audio towers are not counted: config.json does not
    give their sizes."""
    text = cfg.mapping("text_config") if cfg.has("text_config") else cfg
    count = text.integer("num_hidden_layers", maximum=MAX_LAYERS)
    kinds = _layer_kinds(
        text, count, lambda i: "full_attention" if (i + 1) % 5 == 0 else "sliding_attention"
    )
    shared_from = count - text.integer("num_kv_shared_layers", default=0, minimum=0)
    if shared_from < 0 or (
        shared_from < count and not set(kinds[shared_from:]) <= set(kinds[:shared_from])
    ):
        raise text.error(
            "num_kv_shared_layers", "shares a cache no earlier layer of its kind holds"
        )
    _same_as(text, "attention_bias", False, "biased attention projections")
    mixers: dict[str, Mixer] = {
        "sliding_attention": _gqa(
            text, text.integer("sliding_window", maximum=MAX_CONTEXT_TOKENS), qk_norm=True
        ),
        "full_attention": _gqa(text, None, qk_norm=True),
    }
    hidden = text.integer("hidden_size")
    streams = text.integer("altup_num_inputs", default=4)
    rank = text.integer("laurel_rank", default=64)
    per_layer = text.integer("hidden_size_per_layer_input", default=256)
    side = streams**2 + streams**3 + hidden * streams + 2 * hidden * rank + 2 * hidden * per_layer
    # Hidden-size vectors: four norms around the blocks, AltUp's router norm and output
    # scale, LAuReL's norm and the per-layer input's.
    layers = [
        Layer(
            replace(_kind(text, mixers, kind), kv_shared=i >= shared_from),
            DenseMLP(width),
            norms=8,
            side_params=side,
        )
        for i, (kind, width) in enumerate(zip(kinds, _gemma3n_widths(text, count), strict=True))
    ]
    arch = _common(text, layers, True, 262_400, 32_768)
    table = text.integer("vocab_size_per_layer_input", default=262_144) * count * per_layer
    projections = hidden * count * per_layer + per_layer + 2 * (streams - 1) * hidden * hidden
    extra = (
        TensorGroup("per-layer embeddings", table, False, Sharding.SPLIT),
        TensorGroup("side blocks", projections, True, Sharding.REPLICATED),
    )
    return Architecture(**{**arch.__dict__, "extra_groups": extra})


def _per_layer_constant(cfg: Fields, name: str, default: int) -> int:
    """A field HunYuan gives as one number or as a list of one number a layer: decodecalc
    reads a list only when every layer has the same value."""
    if not isinstance(cfg.data.get(name), list):
        return cfg.integer(name, default=default)
    values = set(cfg.raw_list(name))
    if len(values) != 1 or min(values) < 1:
        raise cfg.error(name, "differs from layer to layer, which is not modelled")
    return values.pop()


def _hunyuan(cfg: Fields, model_type: str) -> Architecture:
    """HunYuan V1 dense and MoE (Hunyuan-A13B): Llama's attention with QK norms per head
    applied after RoPE; in the MoE every layer has ``moe_topk`` of ``num_experts`` experts of
    ``moe_intermediate_size`` (``intermediate_size`` where absent) beside a shared MLP of
    ``num_shared_expert`` x ``intermediate_size`` (as vLLM builds it). Cross-layer KV
    sharing (``use_cla``) is refused."""
    from decodecalc.model.moe import MoE

    count = cfg.integer("num_hidden_layers", maximum=MAX_LAYERS)
    _same_as(cfg, "use_cla", False, "cross-layer attention sharing K and V between layers")
    _same_as(cfg, "mlp_bias", False, "biased MLP projections")
    bias = cfg.boolean("attention_bias", default=False)
    attention = _gqa(cfg, None, qkv_bias=bias, o_bias=bias, qk_norm=True)
    if cfg.integer("attention_head_dim", default=attention.head_dim) != attention.head_dim:
        raise cfg.error("attention_head_dim", f"differs from the head_dim {attention.head_dim}")
    inner = cfg.integer("intermediate_size")
    if model_type == "hunyuan_v1_dense":
        return _common(cfg, [Layer(attention, DenseMLP(inner))] * count)
    moe = MoE(
        num_experts=_per_layer_constant(cfg, "num_experts", 1),
        experts_per_token=_per_layer_constant(cfg, "moe_topk", 1),
        expert_intermediate_size=_per_layer_constant(cfg, "moe_intermediate_size", inner),
        shared_intermediate_size=inner * _per_layer_constant(cfg, "num_shared_expert", 1),
    )
    return _common(cfg, [Layer(attention, moe)] * count)


def _deepseek_v4(cfg: Fields, model_type: str) -> Architecture:
    from decodecalc.loading.deepseek_v4 import read_deepseek_v4  # its own module

    fields = read_deepseek_v4(cfg, cfg.integer("num_hidden_layers", maximum=MAX_LAYERS))
    return Architecture(**{**fields, "layers": _interned(fields["layers"])})


def _kimi_linear(cfg: Fields, model_type: str) -> Architecture:
    from decodecalc.loading.kimi_linear import read_kimi_linear  # its own module

    count = cfg.integer("num_hidden_layers", maximum=MAX_LAYERS)
    fields = read_kimi_linear(cfg, count, _mla(cfg))
    return Architecture(**{**fields, "layers": _interned(fields["layers"])})


def _dbrx(cfg: Fields, model_type: str) -> Architecture:
    """DBRX: Llama's GQA with q, k and v fused in one ``Wqkv`` (the same elements), every
    layer a MoE of ``ffn_config.moe_num_experts`` gated experts of ``ffn_hidden_size``
    (w1, v1, w2) with a router and no shared expert; LayerNorms without biases (two a
    layer and the final one), an untied head. Its own names: ``d_model``, ``n_heads``,
    ``n_layers``, ``max_seq_len``; ``attn_config.kv_n_heads`` the KV heads. ``clip_qkv``
    clamps activations: no bytes."""
    from decodecalc.model.moe import MoE

    hidden = cfg.integer("d_model")
    heads = cfg.integer("n_heads")
    count = cfg.integer("n_layers", maximum=MAX_LAYERS)
    attn, ffn = cfg.mapping("attn_config"), cfg.mapping("ffn_config")
    ffn.optional_integer("hidden_size")  # transformers sets it to d_model, whatever it says
    kv = attn.integer("kv_n_heads", default=1)
    if heads % kv or hidden % heads:
        raise attn.error("kv_n_heads", f"{kv} KV heads do not divide {heads} heads of {hidden}")
    attention = Attention(heads, kv, hidden // heads)
    moe = MoE(
        num_experts=ffn.integer("moe_num_experts", default=4),
        experts_per_token=ffn.integer("moe_top_k", default=1),
        expert_intermediate_size=ffn.integer("ffn_hidden_size", default=3584),
    )
    return Architecture(
        hidden_size=hidden,
        vocab_size=cfg.integer("vocab_size", default=32_000),
        tie_word_embeddings=cfg.boolean("tie_word_embeddings", default=False),
        layers=_interned(_over([attention] * count, moe)),
        max_context_tokens=cfg.integer("max_seq_len", default=2_048),
    )


def _bailing_moe_v2(cfg: Fields, model_type: str) -> Architecture:
    """Ling 2.0 (bailing_moe_v2, remote code modeling_bailing_moe_v2.py: Ling-mini-2.0,
    Ling-flash-2.0, Ring-2.0): GQA with q, k and v fused in ``query_key_value`` (biased where
    ``use_qkv_bias``), per-head QK norms where ``use_qk_norm``, the output projection biased
    where ``use_bias``; the first ``first_k_dense_replace`` layers a dense MLP, the rest
    ``num_experts`` gated experts of ``moe_intermediate_size`` and ``num_shared_experts`` shared
    ones (one MLP that many times as wide), the router with a score-correction bias (a buffer
    the checkpoint holds whatever ``moe_router_enable_expert_bias`` says). Defaults are
    BailingMoeV2Config's. The MTP layers (``num_nextn_predict_layers``) are in the checkpoint,
    not the decode step, as DeepSeek's."""
    count = cfg.integer("num_hidden_layers", maximum=MAX_LAYERS)
    flags = {"qkv_bias": cfg.boolean("use_qkv_bias", default=False)}
    flags["o_bias"] = cfg.boolean("use_bias", default=False)
    flags["qk_norm"] = cfg.boolean("use_qk_norm", default=True)
    attention = _gqa(cfg, None, **flags)
    cfg.boolean("moe_router_enable_expert_bias", default=True)  # routing only: see above
    expert = cfg.integer("moe_intermediate_size")
    shared = expert * cfg.integer("num_shared_experts", default=1, minimum=0)
    moe = _routed(cfg, "num_experts", "moe_intermediate_size", shared)
    dense = DenseMLP(cfg.integer("intermediate_size"))
    first = cfg.integer("first_k_dense_replace", default=1, minimum=0)
    mixers = _alike(cfg, attention, count)
    layers = [Layer(m, dense if i < first else moe) for i, m in enumerate(mixers)]
    return _common(cfg, layers)


def _nemotron_nas(cfg: Fields, model_type: str) -> Architecture:
    from decodecalc.loading.nemotron_nas import read_nemotron_nas  # its own module

    count = cfg.integer("num_hidden_layers", maximum=MAX_LAYERS)
    return _common(cfg, read_nemotron_nas(cfg, cfg.integer("hidden_size"), count))


def _gemma4(cfg: Fields, model_type: str) -> Architecture:
    from decodecalc.loading.gemma4 import read_gemma4  # its own module

    fields = read_gemma4(cfg, cfg.integer("num_hidden_layers", maximum=MAX_LAYERS))
    return Architecture(**{**fields, "layers": _interned(fields["layers"])})


def _kind(cfg: Fields, mixers: dict[str, Mixer], kind: str) -> Mixer:
    if kind not in mixers:
        raise cfg.error("layer_types", f"unknown layer type {kind!r}; known: {', '.join(mixers)}")
    return mixers[kind]


FAMILIES: dict[str, Reader] = {
    "llama": _llama_like(),
    "mistral": _llama_like(),
    "ministral3": _llama_like(),  # Ministral 3, Devstral 2: Mistral's text model, YaRN RoPE
    "phi3": _phi3,
    "qwen2": _llama_like(qkv_bias=True, window_flag=True),
    "qwen3": _llama_like(qk_norm=True, window_flag=True),
    "mixtral": _mixtral,
    "qwen3_moe": _qwen3_moe,
    "qwen2_moe": _qwen3_moe,
    "olmoe": _olmoe,
    "granitemoe": _granite_moe,
    "granitemoeshared": _granite_moe,
    "internlm3": _internlm3,
    "internlm2": _internlm2,
    # MiMo-7B (remote code): Qwen2's layers; its num_nextn_predict_layers MTP layers (an
    # input_proj of 2 x hidden by hidden, three norms and a Qwen2 layer each) are in the
    # checkpoint but not the decode step, as DeepSeek's (priced when they draft).
    "mimo": _llama_like(qkv_bias=True, window_flag=True),
    "exaone4": _exaone4,
    "cohere": _cohere2,
    "starcoder2": _layernorm_gpt,
    "phimoe": _mixtral,
    "minicpm3": _minicpm3,
    "minicpm": _minicpm,
    "dots1": _dots1,
    # Qwen's vision-language models: the text model of each (its own model_type under
    # text_config in transformers 5, the wrapper's own fields in Qwen2-VL's published form)
    "qwen2_vl": _llama_like(qkv_bias=True, window_flag=True),
    "qwen2_vl_text": _llama_like(qkv_bias=True, window_flag=True),
    "qwen2_5_vl": _llama_like(qkv_bias=True, window_flag=True),
    "qwen2_5_vl_text": _llama_like(qkv_bias=True, window_flag=True),
    "qwen3_vl_text": _llama_like(qk_norm=True, window_flag=True),
    "qwen3_vl_moe_text": _qwen3_moe,
    "gpt_neox": _layernorm_gpt,
    "qwen3_next": _gated_deltanet,
    "qwen3_5": _gated_deltanet,
    "qwen3_5_text": _gated_deltanet,
    "qwen3_5_moe": _gated_deltanet,
    "qwen3_5_moe_text": _gated_deltanet,
    "deepseek_v2": _deepseek,
    "deepseek_v3": _deepseek,
    "deepseek_v32": _deepseek,
    "kimi_k2": _deepseek,
    "glm4_moe_lite": _deepseek,
    "glm_moe_dsa": _deepseek,
    "deepseek_v4": _deepseek_v4,
    "kimi_linear": _kimi_linear,
    "gemma4": _gemma4,
    "gemma4_text": _gemma4,
    "longcat_flash": _longcat_flash,
    "mimo_v2_flash": _mimo_v2_flash,
    "mimo_v2": _mimo_v2_flash,
    "gpt_oss": _gpt_oss,
    "glm4_moe": _glm4_moe,
    "minimax_m2": _minimax_m2,
    "nemotron_h": _nemotron_h,
    "nemotron-nas": _nemotron_nas,
    "dbrx": _dbrx,
    "bailing_moe_v2": _bailing_moe_v2,
    "jamba": _jamba,
    "falcon_h1": _falcon_h1,
    "llama4": _llama4,
    "llama4_text": _llama4,
    # transformers' Gemma2Config / Gemma3TextConfig defaults
    "gemma2": _gemma(qk_norm=False, pattern_default=2, vocab=256_000, context=8_192),
    "gemma3": _gemma(qk_norm=True, pattern_default=6, vocab=262_208, context=131_072),
    "gemma3_text": _gemma(qk_norm=True, pattern_default=6, vocab=262_208, context=131_072),
    "olmo2": _olmo,
    "olmo3": _olmo,
    "smollm3": _smollm3,
    "seed_oss": _seed_oss,
    "apertus": _apertus,
    "cohere2": _cohere2,
    "granitemoehybrid": _granite_hybrid,
    "ernie4_5": _ernie,
    "ernie4_5_moe": _ernie,
    "lfm2": _lfm2,
    "minimax_m1": _minimax_m1,
    "minimax": _minimax_m1,
    "gemma3n": _gemma3n,
    "gemma3n_text": _gemma3n,
    "hunyuan_v1_dense": _hunyuan,
    "hunyuan_v1_moe": _hunyuan,
}

WRAPPERS: dict[str, str] = {
    "llama4": "llama4_text",
    "gemma3": "gemma3_text",
    "qwen3_5": "qwen3_5_text",
    "qwen3_5_moe": "qwen3_5_moe_text",
    "mistral3": "mistral",
    "kimi_k25": "kimi_k2",
    "gemma3n": "gemma3n_text",
    "qwen2_vl": "qwen2_vl_text",
    "qwen2_5_vl": "qwen2_5_vl_text",
    "qwen3_vl": "qwen3_vl_text",
    "qwen3_vl_moe": "qwen3_vl_moe_text",
    "gemma4": "gemma4_text",
}
"""Multimodal wrappers: the text model under ``text_config`` is read by the reader of its
own model_type (this one when it names none); the vision tower is loading/vision.py's."""

FLAT_WRAPPERS = ("qwen2_vl", "qwen2_5_vl")
"""Wrappers whose published config.json gives the text model's fields at its top level
beside ``vision_config`` (transformers 5 re-saves them under ``text_config``). Where a
file has both (transformers 4.5x re-saved them so), transformers builds the text model
from ``text_config`` alone and so does decodecalc: the top-level copies are read through."""

REFUSED: dict[str, str] = {
    # Issue 31's list, not read yet: each named for what it adds or what was not checked.
    "deci": "DeciLM-7B's per-layer KV head counts (num_key_value_heads_per_layer) are not "
    "read yet (Nemotron-NAS's block_configs are: model_type nemotron-nas)",
    "jetmoe": "JetMoE's mixture of attention heads (experts in attention) is not modelled",
    "phi3small": "Phi-3-small's block-sparse attention (dense every "
    "dense_attention_every_n_layers) is not modelled",
    "step3": "Step3's multi-matrix factorised attention is not modelled",
    "arctic": "not read yet: Arctic's dense residual MLP beside each layer's MoE (remote "
    "code) has not been checked against a published config.json",
    "bailing_moe": "not read yet: Ling 1.x's remote code (modeling_bailing_moe.py) has not "
    "been checked against a published config.json (Ling 2.0's bailing_moe_v2 is read)",
}
"""Families whose config is known but whose decode-relevant novelty is not modelled: one
line saying so, rather than the list of families decodecalc reads."""


def _reader(cfg: Fields, model_type: str) -> Reader:
    """The family's reader, or one line naming what decodecalc cannot read."""
    if model_type in REFUSED:
        raise cfg.error("model_type", f"{model_type!r}: {REFUSED[model_type]}")
    reader = FAMILIES.get(model_type)
    if reader is None:
        architectures = cfg.texts("architectures")
        named = f" (architectures: {', '.join(architectures)})" if architectures else ""
        raise cfg.error(
            "model_type",
            f"unknown model_type {model_type!r}{named}; decodecalc reads: "
            + ", ".join(sorted({*FAMILIES, *WRAPPERS})),
        )
    return reader


def read_architecture(cfg: Fields) -> tuple[str, Architecture]:
    """The family named by ``model_type`` reads the rest (a wrapper's text model reads
    ``text_config``); unknown families are refused, and so is a field the reader neither
    reads nor ignores. A quantization_config gives the checkpoint's weight recipe
    (loading/quantization.py)."""
    model_type = cfg.text("model_type")
    text, text_type = cfg, model_type
    if model_type in WRAPPERS and cfg.has("text_config"):
        text = cfg.mapping("text_config")
        text_type = text.text("model_type", WRAPPERS[model_type])
    arch = _reader(text, text_type)(text, text_type)
    arch = replace(arch, mtp_layers=_mtp_layers(text, text_type))
    if text is not cfg:
        arch = _wrapped(cfg, text, model_type, arch)
        if model_type in FLAT_WRAPPERS:  # (transformers 4.5x's form: both places)
            cfg.read.update(k for k in cfg.data if k in text.data)
    elif model_type in FLAT_WRAPPERS and cfg.has("vision_config"):  # no text_config
        from decodecalc.loading.vision import TOWERS

        tower = TOWERS[model_type](cfg, arch.hidden_size)
        arch = Architecture(**{**arch.__dict__, "extra_groups": (*arch.extra_groups, tower)})
    held = cfg if cfg.has("quantization_config") or text is cfg else text
    if held.has("quantization_config") and arch.default_weights is None:  # (or the reader's)
        from decodecalc.loading.quantization import read_recipe

        recipe = read_recipe(held, arch.layers, arch.hidden_size)
        arch = Architecture(**{**arch.__dict__, "default_weights": recipe})
    if cfg.doc.cached:  # checked so when it was stored (loading/cache.py)
        return model_type, arch
    from decodecalc.loading.ignored_keys import ignored

    who = f"decodecalc's {text_type} reader"
    cfg.refuse_unread(ignored(model_type, text_type), ("quantization_config", "vision_config"), who)
    return model_type, arch


def _wrapped(cfg: Fields, text: Fields, model_type: str, arch: Architecture) -> Architecture:
    """A text model read from a wrapper's ``text_config``: the wrapper's flag, where
    given, says whether the embeddings are tied, and its vision tower (with the projector)
    is held in memory and never read by text decode (counted where config.json sizes it)."""
    from decodecalc.loading.vision import TOWERS

    # transformers 5 ties by the wrapper's own flag where the file gives one (a re-saved
    # config writes it), else as the text model says.
    tied = cfg.boolean("tie_word_embeddings", default=arch.tie_word_embeddings)
    tower = TOWERS.get(model_type)  # (Gemma 3n's MobileNetV5: config.json gives no size)
    towers = (tower(cfg, arch.hidden_size),) if tower and cfg.has("vision_config") else ()
    extra = (*arch.extra_groups, *towers)
    return Architecture(**{**arch.__dict__, "tie_word_embeddings": tied, "extra_groups": extra})
