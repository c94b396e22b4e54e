"""From config.json fields to layers, one reader per architecture family.

Presets hold a model's config.json fields under ``config:``, and ``--model config.json``
reads the file itself: both come here. Interleavings are data (``layer_types``,
``sliding_window_pattern``, ``first_k_dense_replace``, ``full_attention_interval``,
``no_rope_layers``, ``hybrid_override_pattern``, Jamba's layer periods); what a
family leaves implicit (Qwen2's q/k/v biases, Gemma's extra norms) is stated here once.
An architecture not listed is refused, never guessed.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

from decodecalc.loading.fields import Fields
from decodecalc.model.layers import Attention, DenseMLP, Layer
from decodecalc.model.tensors import Sharding, TensorGroup
from decodecalc.record import record, replace

if TYPE_CHECKING:
    from decodecalc.model.layers import FFN, Mixer
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


Reader = Callable[[Fields, str], Architecture]

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
        layers=tuple(layers),
        max_context_tokens=cfg.integer("max_position_embeddings", default=context_default),
    )


def _window(cfg: Fields, needs_flag: bool) -> int | None:
    window = cfg.optional_integer("sliding_window")
    enabled = cfg.boolean("use_sliding_window", default=not needs_flag)
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
        layer = Layer(attention, DenseMLP(cfg.integer("intermediate_size")))
        return _common(cfg, [layer] * cfg.integer("num_hidden_layers", maximum=MAX_LAYERS))

    return read


def _mixtral(cfg: Fields, model_type: str) -> Architecture:
    from decodecalc.model.moe import MoE

    moe = MoE(
        num_experts=cfg.integer("num_local_experts"),
        experts_per_token=cfg.integer("num_experts_per_tok"),
        expert_intermediate_size=cfg.integer("intermediate_size"),
    )
    layer = Layer(_gqa(cfg, _window(cfg, False)), moe)
    return _common(cfg, [layer] * cfg.integer("num_hidden_layers", maximum=MAX_LAYERS))


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
        num_experts=cfg.integer("num_experts"),
        experts_per_token=cfg.integer("num_experts_per_tok"),
        expert_intermediate_size=cfg.integer("moe_intermediate_size"),
        shared_intermediate_size=shared,
        shared_gate=shared > 0,
    )


def _qwen3_moe(cfg: Fields, model_type: str) -> Architecture:
    count = cfg.integer("num_hidden_layers", maximum=MAX_LAYERS)
    attention = _gqa(
        cfg, _window(cfg, True), qkv_bias=cfg.boolean("attention_bias", default=False), qk_norm=True
    )
    layers = [Layer(attention, _qwen_moe_ffn(cfg, i, count)) for i in range(count)]
    return _common(cfg, layers)


def _qwen3_next(cfg: Fields, model_type: str) -> Architecture:
    """Qwen3-Next: Gated DeltaNet linear attention, with full (gated-output) attention every
    ``full_attention_interval`` layers."""
    count = cfg.integer("num_hidden_layers", maximum=MAX_LAYERS)
    interval = cfg.integer("full_attention_interval", default=4)
    kinds = _layer_kinds(
        cfg, count, lambda i: "full_attention" if (i + 1) % interval == 0 else "linear_attention"
    )
    from decodecalc.model.linear_attention import LinearAttention

    full = _gqa(cfg, None, qk_norm=True, output_gate=True)
    linear = LinearAttention(
        num_key_heads=cfg.integer("linear_num_key_heads"),
        num_value_heads=cfg.integer("linear_num_value_heads"),
        key_head_dim=cfg.integer("linear_key_head_dim"),
        value_head_dim=cfg.integer("linear_value_head_dim"),
        conv_kernel=cfg.integer("linear_conv_kernel_dim"),
    )
    mixers: dict[str, Mixer] = {"full_attention": full, "linear_attention": linear}
    layers = [
        Layer(_kind(cfg, mixers, k), _qwen_moe_ffn(cfg, i, count)) for i, k in enumerate(kinds)
    ]
    return _common(cfg, layers)


def _deepseek(cfg: Fields, model_type: str) -> Architecture:
    """DeepSeek-V2/V3/V3.2 and Kimi-K2: MLA everywhere (V3.2's sparse, with its indexer);
    the first ``first_k_dense_replace`` layers dense, then MoE every ``moe_layer_freq``
    layers with shared experts."""
    from decodecalc.model.mla import LatentAttention
    from decodecalc.model.moe import MoE

    count = cfg.integer("num_hidden_layers", maximum=MAX_LAYERS)
    mla = LatentAttention(
        num_heads=cfg.integer("num_attention_heads"),
        kv_lora_rank=cfg.integer("kv_lora_rank"),
        qk_nope_head_dim=cfg.integer("qk_nope_head_dim"),
        qk_rope_head_dim=cfg.integer("qk_rope_head_dim"),
        v_head_dim=cfg.integer("v_head_dim"),
        q_lora_rank=cfg.optional_integer("q_lora_rank"),
    )
    if model_type == "deepseek_v32":  # sparse attention: a lightning indexer picks the top k
        mla = replace(
            mla,
            index_topk=cfg.integer("index_topk"),
            index_heads=cfg.integer("index_n_heads"),
            index_head_dim=cfg.integer("index_head_dim"),
        )
    cfg.optional_integer("num_key_value_heads")  # present in the file, unused by MLA
    dense_first = cfg.integer("first_k_dense_replace", default=0, minimum=0)
    frequency = cfg.integer("moe_layer_freq", default=1)
    expert = cfg.integer("moe_intermediate_size")
    moe = MoE(
        num_experts=cfg.integer("n_routed_experts"),
        experts_per_token=cfg.integer("num_experts_per_tok"),
        expert_intermediate_size=expert,
        shared_intermediate_size=expert * cfg.integer("n_shared_experts", default=0, minimum=0),
        # V3's noaux_tc routing adds a per-expert score-correction bias.
        router_bias=cfg.text("topk_method", "greedy") == "noaux_tc",
    )
    dense = DenseMLP(cfg.integer("intermediate_size"))
    layers = [
        Layer(mla, moe if i >= dense_first and i % frequency == 0 else dense) for i in range(count)
    ]
    return _common(cfg, layers)


def _llama4(cfg: Fields, model_type: str) -> Architecture:
    """Llama 4 Scout and Maverick: RoPE layers attend within chunks of
    ``attention_chunk_size`` tokens, every ``no_rope_layer_interval``-th layer (the zeros of
    ``no_rope_layers``) is global and NoPE (``layer_types``, where given, says so instead);
    MoE with one shared expert in the ``moe_layers`` (every ``interleave_moe_layer_step``-th),
    dense MLPs of ``intermediate_size_mlp`` elsewhere. Its L2 QK norm has no weights. The
    vision encoder of a full checkpoint is held in memory, never read by text decode."""
    text = cfg.mapping("text_config") if cfg.has("text_config") else cfg
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
    global_attention = _gqa(text, None)
    mixers: dict[str, Mixer] = {
        "chunked_attention": replace(
            global_attention, attention_chunk=text.optional_integer("attention_chunk_size")
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
    arch = _common(text, layers)
    if text is cfg:
        return arch
    vision = _llama4_vision(cfg.mapping("vision_config"), arch.hidden_size)
    return Architecture(**{**arch.__dict__, "extra_groups": (vision,)})


def _llama4_vision(vision: Fields, text_hidden: int) -> TensorGroup:
    """Llama 4's vision encoder, pixel-shuffle adapter and projector into the text model:
    ViT layers with biased attention and MLP and two LayerNorms each, a bias-free patch
    embedding, a class token and learned positions; held in memory, never read by text
    decode."""
    h = vision.integer("hidden_size")
    inner = vision.integer("intermediate_size")
    patch = vision.integer("patch_size")
    patches = (vision.integer("image_size") // patch) ** 2
    channels = vision.integer("num_channels", default=3)
    layer = 4 * (h * h + h) + 2 * h * inner + inner + h + 4 * h
    embeddings = channels * patch * patch * h + h + (patches + 1) * h + 4 * h  # and 2 LayerNorms
    ratio = vision.fraction("pixel_shuffle_ratio", maximum=1)
    shuffled = h / (ratio * ratio)
    if shuffled.denominator != 1:
        raise vision.error("pixel_shuffle_ratio", f"{ratio} does not shuffle {h} channels evenly")
    adapter_in, adapter_out = (
        vision.integer("projector_input_dim"),
        vision.integer("projector_output_dim"),
    )
    adapter = int(shuffled) * adapter_in + adapter_out * adapter_out
    projector = vision.integer("vision_output_dim") * text_hidden
    tower = vision.integer("num_hidden_layers") * layer + embeddings
    return TensorGroup("vision encoder", tower + adapter + projector, False, Sharding.REPLICATED)


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
    QK norms (``use_qk_norm``); RoPE on ``partial_rotary_factor`` of each head, which moves
    no bytes; the first ``first_k_dense_replace`` layers dense, the rest MoE with
    ``n_shared_experts`` shared experts of ``moe_intermediate_size``."""
    count = cfg.integer("num_hidden_layers", maximum=MAX_LAYERS)
    attention = _gqa(
        cfg,
        None,
        qkv_bias=cfg.boolean("attention_bias", default=False),
        qk_norm=cfg.boolean("use_qk_norm", default=False),
    )
    if cfg.has("partial_rotary_factor"):  # RoPE on part of each head: no bytes change
        cfg.fraction("partial_rotary_factor", maximum=1)
    expert = cfg.integer("moe_intermediate_size")
    moe = _routed(
        cfg,
        "n_routed_experts",
        "moe_intermediate_size",
        expert * cfg.integer("n_shared_experts", default=0, minimum=0),
    )
    dense = DenseMLP(cfg.integer("intermediate_size"))
    dense_first = cfg.integer("first_k_dense_replace", default=0, minimum=0)
    layers = [Layer(attention, dense if i < dense_first else moe) for i in range(count)]
    return _common(cfg, layers)


def _minimax_m2(cfg: Fields, model_type: str) -> Architecture:
    """MiniMax-M2: full GQA attention in every layer with a QK norm over the whole q and k
    projections (``qk_norm_type`` per_layer), and a MoE of ``num_local_experts`` experts of
    ``intermediate_size`` with no shared expert."""
    count = cfg.integer("num_hidden_layers", maximum=MAX_LAYERS)
    norm = cfg.boolean("use_qk_norm", default=False)
    whole = norm and cfg.text("qk_norm_type", "per_layer") == "per_layer"
    attention = _gqa(cfg, None, qk_norm=norm, qk_norm_whole=whole)
    moe = _routed(cfg, "num_local_experts", "intermediate_size")
    return _common(cfg, [Layer(attention, moe)] * count)


def _first_integer(cfg: Fields, *names: str) -> int:
    """The first present of several spellings a family's configs use for one field."""
    for name in names[:-1]:
        if cfg.has(name):
            return cfg.integer(name)
    return cfg.integer(names[-1])


def _nemotron_h(cfg: Fields, model_type: str) -> Architecture:
    """Nemotron-H: ``hybrid_override_pattern`` gives each block one op, M (Mamba-2), *
    (attention) or - (a squared-ReLU MLP of ``intermediate_size``), each behind its own
    norm. A mixer and the MLP after it make one layer here (two norms); a mixer followed by
    another mixer is a layer without an MLP (one norm)."""
    from decodecalc.model.mamba import Mamba2

    count = cfg.integer("num_hidden_layers", maximum=MAX_LAYERS)
    pattern = cfg.text("hybrid_override_pattern")
    if len(pattern) != count:
        raise cfg.error("hybrid_override_pattern", f"has {len(pattern)} blocks for {count} layers")
    bias = cfg.boolean("attention_bias", default=False)
    mixers: dict[str, Mixer] = {
        "M": Mamba2(
            num_heads=cfg.integer("mamba_num_heads"),
            head_dim=cfg.integer("mamba_head_dim"),
            state_size=_first_integer(cfg, "mamba_state_dim", "ssm_state_size"),
            n_groups=_first_integer(cfg, "mamba_num_groups", "n_groups"),
            conv_kernel=_first_integer(cfg, "mamba_d_conv", "conv_kernel"),
            proj_bias=cfg.boolean("use_bias", default=False),
            conv_bias=cfg.boolean("use_conv_bias", default=True),
        ),
        "*": _gqa(cfg, None, qkv_bias=bias, o_bias=bias),
    }
    mlp = DenseMLP(cfg.integer("intermediate_size"), gated=False)
    layers: list[Layer] = []
    for i, block in enumerate(pattern):
        if block in mixers:
            layers.append(Layer(mixers[block], DenseMLP(0), norms=1))
        elif block == "-" and layers and layers[-1].ffn == DenseMLP(0):
            layers[-1] = Layer(layers[-1].mixer, mlp)
        else:
            raise cfg.error(
                "hybrid_override_pattern",
                f"block {i} is {block!r}: decodecalc reads M (Mamba-2) and * (attention), "
                "each followed by at most one - (MLP)",
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
    window = cfg.integer("sliding_window")
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
    moe = MoE(
        num_experts=cfg.integer("num_local_experts"),
        experts_per_token=cfg.integer("num_experts_per_tok"),
        expert_intermediate_size=cfg.integer("intermediate_size"),
        router_bias=True,
        expert_bias=True,
    )
    return _common(cfg, [Layer(_kind(cfg, mixers, k), moe) for k in kinds])


def _gemma(qk_norm: bool, pattern_default: int, vocab: int, context: int) -> Reader:
    """Gemma 2 (local and global layers alternate) and Gemma 3 (five local to one global,
    ``sliding_window_pattern``): four norms per layer, tied embeddings. Gemma 3's published
    config.json leaves vocabulary, context and pattern to the transformers defaults, which
    are the fallbacks here."""

    def read(cfg: Fields, model_type: str) -> Architecture:
        text = cfg.mapping("text_config") if cfg.has("text_config") else cfg
        count = text.integer("num_hidden_layers", maximum=MAX_LAYERS)
        pattern = text.integer("sliding_window_pattern", default=pattern_default)
        kinds = _layer_kinds(
            text,
            count,
            lambda i: "full_attention" if (i + 1) % pattern == 0 else "sliding_attention",
        )
        window = text.integer("sliding_window")
        mixers: dict[str, Mixer] = {
            "sliding_attention": _gqa(text, window, qk_norm=qk_norm),
            "full_attention": _gqa(text, None, qk_norm=qk_norm),
        }
        mlp = DenseMLP(text.integer("intermediate_size"))
        layers = [Layer(_kind(text, mixers, k), mlp, norms=4) for k in kinds]
        arch = _common(text, layers, True, vocab, context)
        if text is cfg:
            return arch
        vision = _siglip(cfg.mapping("vision_config"), arch.hidden_size)
        return Architecture(**{**arch.__dict__, "extra_groups": (vision,)})

    return read


def _siglip(vision: Fields, text_hidden: int) -> TensorGroup:
    """Gemma 3's SigLIP vision tower and its projection into the text model: held in memory,
    never read by text decode."""
    h = vision.integer("hidden_size")
    inner = vision.integer("intermediate_size")
    patch = vision.integer("patch_size")
    patches = (vision.integer("image_size") // patch) ** 2
    channels = vision.integer("num_channels", default=3)
    layer = 4 * (h * h + h) + 2 * h * inner + inner + h + 4 * h  # attention, MLP, 2 LayerNorms
    embeddings = channels * patch * patch * h + h + patches * h
    tower = vision.integer("num_hidden_layers") * layer + embeddings + 2 * h
    projector = h * text_hidden + h
    return TensorGroup("vision encoder", tower + projector, False, Sharding.REPLICATED)


def _same_as(cfg: Fields, name: str, modelled: bool, why: str) -> None:
    """Read a flag whose other value changes the weights in a way decodecalc does not model:
    refuse it in one line rather than count the model wrong."""
    if cfg.boolean(name, default=modelled) != modelled:
        raise cfg.error(name, f"{str(not modelled).lower()} is not modelled ({why})")


def _stack(cfg: Fields, mixers: dict[str, Mixer], kinds: list[str], ffn: FFN) -> list[Layer]:
    return [Layer(_kind(cfg, mixers, kind), ffn) for kind in kinds]


def _olmo(cfg: Fields, model_type: str) -> Architecture:
    """OLMo 2 and OLMo 3: QK norms over the whole q and k projections, a norm after each
    sub-block (two a layer, none before); OLMo 3 gives each layer a kind in ``layer_types``,
    three ``sliding_window`` layers to one full by default."""
    count = cfg.integer("num_hidden_layers", maximum=MAX_LAYERS)
    bias = cfg.boolean("attention_bias", default=False)
    flags = {"qkv_bias": bias, "o_bias": bias, "qk_norm": True, "qk_norm_whole": True}
    mixers: dict[str, Mixer] = {"full_attention": _gqa(cfg, None, **flags)}
    if model_type == "olmo3":
        mixers["sliding_attention"] = _gqa(cfg, cfg.integer("sliding_window"), **flags)
        kinds = _layer_kinds(
            cfg, count, lambda i: "full_attention" if (i + 1) % 4 == 0 else "sliding_attention"
        )
    else:
        kinds = ["full_attention"] * count
    mlp = DenseMLP(cfg.integer("intermediate_size"))
    return _common(cfg, _stack(cfg, mixers, kinds, mlp))


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
    """Cohere2 (Command R7B, Command A): attention and the MLP side by side behind one
    LayerNorm (weights, no bias), so one norm a layer; sliding-window RoPE layers with a
    global NoPE layer every ``sliding_window_pattern``-th (``layer_types`` where given);
    tied embeddings. The original Cohere switches that transformers does not follow are
    read so that a config asking for another graph is refused."""
    count = cfg.integer("num_hidden_layers", maximum=MAX_LAYERS)
    _same_as(cfg, "use_parallel_block", True, "attention and MLP one after the other")
    _same_as(cfg, "use_qk_norm", False, "QK norms")
    _same_as(cfg, "use_gated_activation", True, "a plain MLP")
    pattern = cfg.integer("sliding_window_pattern", default=4)
    kinds = _layer_kinds(
        cfg, count, lambda i: "full_attention" if (i + 1) % pattern == 0 else "sliding_attention"
    )
    bias = cfg.boolean("attention_bias", default=False)
    mixers: dict[str, Mixer] = {
        "sliding_attention": _gqa(cfg, cfg.integer("sliding_window"), qkv_bias=bias, o_bias=bias),
        "full_attention": _gqa(cfg, None, qkv_bias=bias, o_bias=bias),
    }
    mlp = DenseMLP(cfg.integer("intermediate_size"))
    layers = [Layer(_kind(cfg, mixers, k), mlp, norms=1) for k in kinds]
    tie = cfg.boolean("use_embedding_sharing", default=True)
    return _common(cfg, layers, tie_default=tie)


def _granite_hybrid(cfg: Fields, model_type: str) -> Architecture:
    """Granite 4.0-H (granitemoehybrid): Mamba-2 and attention layers as ``layer_types``
    lists them (attention without positions, ``position_embedding_type`` nope), each
    followed by a MoE of ``num_local_experts`` experts with a shared expert of
    ``shared_intermediate_size``; without experts (H-Micro) the shared MLP alone. The Mamba-2
    width is ``mamba_expand`` x hidden."""
    from decodecalc.model.mamba import Mamba2
    from decodecalc.model.moe import MoE

    count = cfg.integer("num_hidden_layers", maximum=MAX_LAYERS)
    kinds = _layer_kinds(cfg, count, lambda i: "attention")
    bias = cfg.boolean("attention_bias", default=False)
    mixers: dict[str, Mixer] = {"attention": _gqa(cfg, None, qkv_bias=bias, o_bias=bias)}
    if "mamba" in kinds:
        mixers["mamba"] = Mamba2(
            num_heads=cfg.integer("mamba_n_heads"),
            head_dim=cfg.integer("mamba_d_head"),
            state_size=cfg.integer("mamba_d_state"),
            n_groups=cfg.integer("mamba_n_groups", default=1),
            conv_kernel=cfg.integer("mamba_d_conv", default=4),
            d_inner=cfg.integer("mamba_expand", default=2) * cfg.integer("hidden_size"),
            proj_bias=cfg.boolean("mamba_proj_bias", default=False),
            conv_bias=cfg.boolean("mamba_conv_bias", default=True),
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


def _minimax_m1(cfg: Fields, model_type: str) -> Architecture:
    """MiniMax-M1 (and MiniMax-Text-01): lightning (linear) attention where
    ``attn_type_list`` says 0, full GQA softmax attention where it says 1 (one layer in
    eight); every layer a MoE of ``num_local_experts`` experts of ``intermediate_size``."""
    from decodecalc.model.linear_attention import LightningAttention
    from decodecalc.model.moe import MoE

    count = cfg.integer("num_hidden_layers", maximum=MAX_LAYERS)
    types = cfg.raw_list("attn_type_list")
    if len(types) != count or not set(types) <= {0, 1}:
        raise cfg.error("attn_type_list", f"expected {count} entries of 0 (lightning) or 1 (full)")
    if cfg.integer("shared_intermediate_size", default=0, minimum=0):
        raise cfg.error("shared_intermediate_size", "a shared expert is not modelled for MiniMax")
    full = _gqa(cfg, None)
    lightning = LightningAttention(full.num_heads, full.head_dim)
    moe = MoE(
        num_experts=cfg.integer("num_local_experts"),
        experts_per_token=cfg.integer("num_experts_per_tok"),
        expert_intermediate_size=cfg.integer("intermediate_size"),
    )
    layers = [Layer(full if t else lightning, moe) for t in types]
    return _common(cfg, layers)


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
        "sliding_attention": _gqa(text, text.integer("sliding_window"), qk_norm=True),
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


_HUNYUAN_IGNORES = {
    "use_qk_norm": "always on in HunYuan V1",
    "use_rotary_pos_emb": "RoPE: no bytes",
    "pretraining_tp": "how the original training split matrices",
    "cla_share_factor": "applies only with use_cla, refused",
}
READER_IGNORES: dict[str, dict[str, str]] = {
    # Keys each reader above leaves unread on purpose, with why they move no decode bytes
    # (beyond the keys no reader needs: token ids, dtypes, epsilons, RoPE bases and scaling,
    # dropout, initialisation, cache switches). A key in none of these lists is unknown.
    "olmo2": {"rope_scaling": "RoPE frequencies: no weights, no cache"},
    "olmo3": {"rope_scaling": "YaRN on the full layers: no weights, no cache"},
    "seed_oss": {"residual_dropout": "training only"},
    "apertus": {"hidden_act": "xIELU: two learned scalars a layer (alpha_p, alpha_n), not counted"},
    "cohere2": {
        "logit_scale": "a scalar on the logits",
        "rotary_pct": "part of each head rotated: no bytes",
        "position_embedding_type": "RoPE layout",
        "use_parallel_embedding": "how the original code sharded the embedding",
        "layer_switch": "original Cohere key that transformers does not read",
        "order_of_interleaved_layers": "the same pattern as sliding_window_pattern",
    },
    "granitemoehybrid": {
        "position_embedding_type": "nope: attention without positions moves no other bytes",
        "embedding_multiplier": "a scalar",
        "attention_multiplier": "a scalar",
        "residual_multiplier": "a scalar",
        "logits_scaling": "a scalar",
        "mamba_chunk_size": "prefill chunking of the scan",
        "normalization_function": "rmsnorm, one weight a channel as counted",
        "time_step_limit": "a clamp on dt",
    },
    "ernie4_5": {"use_rmsnorm": "RMSNorm, as counted"},
    "ernie4_5_moe": {
        "num_nextn_predict_layers": "the MTP layer: stored, read only by speculative decoding",
        "moe_capacity": "training-time capacity factors",
        "moe_gate": "routing rule",
        "moe_use_aux_free": "the correction bias is counted either way",
        "moe_norm_min": "a clamp in routing",
        "use_rmsnorm": "RMSNorm, as counted",
        "weight_share_add_bias": "original training switch",
    },
    "lfm2": {
        "block_dim": "the hidden size again",
        "num_heads": "num_attention_heads again",
        "block_mlp_init_scale": "initialisation",
        "block_out_init_scale": "initialisation",
        "block_use_swiglu": "SwiGLU, as counted",
        "block_use_xavier_init": "initialisation",
        "block_norm_eps": "an epsilon",
        "theta": "RoPE base",
    },
    "gemma3n": {
        "vision_config": "the MobileNetV5 tower: its size is not in config.json, not counted",
        "audio_config": "the audio encoder: not counted",
        "activation_sparsity_pattern": "sparse activations in early MLPs: weights read whole",
        "altup_active_idx": "which stream is computed",
        "altup_coef_clip": "a training clamp",
        "altup_correct_scale": "the scale is counted either way",
        "final_logit_softcapping": "a scalar",
        "hidden_activation": "GELU",
        "rope_local_base_freq": "RoPE base",
        "query_pre_attn_scalar": "a scalar",
    },
    "hunyuan_v1_dense": _HUNYUAN_IGNORES,
    "hunyuan_v1_moe": {
        **_HUNYUAN_IGNORES,
        "use_mixed_mlp_moe": "the shared MLP beside the experts, as counted",
        "moe_drop_tokens": "training-time capacity",
        "moe_random_routing_dropped_token": "training-time capacity",
    },
    "minimax_m1": {
        "rotary_dim": "RoPE on part of each head: no bytes",
        "postnorm": "where the residual is taken: no bytes",
        "layernorm_full_attention_alpha": "a residual scale",
        "layernorm_full_attention_beta": "a residual scale",
        "layernorm_linear_attention_alpha": "a residual scale",
        "layernorm_linear_attention_beta": "a residual scale",
        "layernorm_mlp_alpha": "a residual scale",
        "layernorm_mlp_beta": "a residual scale",
        "shared_moe_mode": "applies only with a shared expert, refused",
        "sliding_window": "null in M1, and MiniMax's layers have no window",
    },
}


def _kind(cfg: Fields, mixers: dict[str, Mixer], kind: str) -> Mixer:
    if kind not in mixers:
        raise cfg.error("layer_types", f"unknown layer type {kind!r}; known: {', '.join(mixers)}")
    return mixers[kind]


FAMILIES: dict[str, Reader] = {
    "llama": _llama_like(),
    "mistral": _llama_like(),
    "phi3": _llama_like(),
    "qwen2": _llama_like(qkv_bias=True, window_flag=True),
    "qwen3": _llama_like(qk_norm=True, window_flag=True),
    "mixtral": _mixtral,
    "qwen3_moe": _qwen3_moe,
    "qwen3_next": _qwen3_next,
    "deepseek_v2": _deepseek,
    "deepseek_v3": _deepseek,
    "deepseek_v32": _deepseek,
    "kimi_k2": _deepseek,
    "gpt_oss": _gpt_oss,
    "glm4_moe": _glm4_moe,
    "minimax_m2": _minimax_m2,
    "nemotron_h": _nemotron_h,
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
    "gemma3n": _gemma3n,
    "gemma3n_text": _gemma3n,
    "hunyuan_v1_dense": _hunyuan,
    "hunyuan_v1_moe": _hunyuan,
}


def read_architecture(cfg: Fields) -> tuple[str, Architecture]:
    """The family named by ``model_type`` reads the rest; unknown families are refused. A
    quantization_config gives the checkpoint's weight recipe (loading/quantization.py)."""
    model_type = cfg.text("model_type")
    reader = FAMILIES.get(model_type)
    if reader is None:
        architectures = cfg.texts("architectures")
        named = f" (architectures: {', '.join(architectures)})" if architectures else ""
        raise cfg.error(
            "model_type",
            f"unknown model_type {model_type!r}{named}; decodecalc reads: "
            + ", ".join(sorted(FAMILIES)),
        )
    arch = reader(cfg, model_type)
    if cfg.has("quantization_config"):  # a quantized checkpoint: its own weight recipe
        from decodecalc.loading.quantization import read_recipe

        recipe = read_recipe(cfg, arch.layers, arch.hidden_size)
        arch = Architecture(**{**arch.__dict__, "default_weights": recipe})
    return model_type, arch
