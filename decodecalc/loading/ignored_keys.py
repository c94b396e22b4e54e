"""config.json fields the readers knowingly leave unread: none changes the bytes a decode
step reads or the memory it holds.

Every other field a reader does not read stops it (``Fields.refuse_unread``): a field added
by a new checkpoint or a new transformers release may change decode bytes, and decodecalc
refuses rather than guess. A reader for a new family names its own harmless fields in
``BY_FAMILY``; ``tests/loading/test_readers_ignored_keys.py`` feeds every reader every field it
ignores and checks the layers it builds do not change. A new reader adopts the mechanism
by reading every field that changes decode bytes (``Fields`` records what it reads),
naming its harmless fields here, and giving that test one configuration of its family.
"""

from __future__ import annotations

COMMON = frozenset(
    {
        # Bookkeeping and generation defaults.
        "architectures",
        "_name_or_path",
        "auto_map",
        "transformers_version",
        "torch_dtype",
        "dtype",
        "use_cache",
        "bos_token_id",
        "eos_token_id",
        "pad_token_id",
        "initializer_range",
        "num_logits_to_keep",
        "keys_to_ignore_at_inference",
        "cache_implementation",  # how transformers allocates its cache, not what it holds
        "is_llama_config",  # SmolLM2's export marker: Llama's graph, which it reads as
        # What transformers 4 writes into every config it saves (PretrainedConfig's own).
        "add_cross_attention",
        "chunk_size_feed_forward",
        "cross_attention_hidden_size",
        "decoder_start_token_id",
        "finetuning_task",
        "id2label",
        "label2id",
        "is_decoder",
        "is_encoder_decoder",
        "output_attentions",
        "output_hidden_states",
        "prefix",
        "problem_type",
        "pruned_heads",
        "return_dict",
        "sep_token_id",
        "task_specific_params",
        "tf_legacy_loss",
        "tie_encoder_decoder",
        "tokenizer_class",
        "torchscript",
        "use_bfloat16",
        "ignore_index",
        # Generation defaults transformers 4's PretrainedConfig held, in every config it
        # printed or saved whole (to_dict): sampling settings, no shapes.
        "bad_words_ids",
        "begin_suppress_tokens",
        "diversity_penalty",
        "do_sample",
        "early_stopping",
        "encoder_no_repeat_ngram_size",
        "exponential_decay_length_penalty",
        "forced_bos_token_id",
        "forced_eos_token_id",
        "length_penalty",
        "max_length",
        "min_length",
        "no_repeat_ngram_size",
        "num_beam_groups",
        "num_beams",
        "num_return_sequences",
        "output_scores",
        "remove_invalid_values",
        "repetition_penalty",
        "return_dict_in_generate",
        "suppress_tokens",
        "temperature",
        "top_k",
        "top_p",
        "typical_p",
        # Arithmetic that moves no bytes: norm epsilons, activations, dropout, logit caps.
        "rms_norm_eps",
        "layer_norm_eps",
        "layer_norm_epsilon",
        "norm_eps",
        "layernorm_epsilon",
        "hidden_act",
        "hidden_activation",
        "attention_dropout",
        "hidden_dropout",
        "embd_pdrop",
        "resid_pdrop",
        "swiglu_limit",
        "swiglu_alpha",  # gpt-oss's clamped SwiGLU constant (transformers 5 writes it)
        "final_logit_softcapping",
        "attn_logit_softcapping",
        "query_pre_attn_scalar",
        "pretraining_tp",  # how Llama's pretraining sliced its matmuls
        # Positions: RoPE's base, scaling and the share of each head it rotates.
        "rope_theta",
        "rope_scaling",
        "rope_parameters",
        "rope_interleave",
        "partial_rotary_factor",
        "original_max_position_embeddings",
        "use_mrope",
        "initial_context_length",
        # Routing arithmetic: which experts win, not how many or how large.
        "norm_topk_prob",
        "routed_scaling_factor",
        "scoring_func",
        "n_group",
        "topk_group",
        "output_router_logits",
        "router_jitter_noise",  # noise on the router in training only
        "router_aux_loss_coef",
        "aux_loss_alpha",
        "seq_aux",
        "ep_size",
        # (num_nextn_predict_layers and mtp_num_hidden_layers count the multi-token
        # prediction layers: read, loading/families.py _mtp_layers.)
        "mtp_use_dedicated_embeddings",
        # A multimodal wrapper's token ids and projector activation (the tower is counted
        # from vision_config).
        "image_token_id",
        "image_token_index",
        "video_token_id",
        "vision_start_token_id",
        "vision_token_id",  # Qwen2.5-VL's text_config as transformers 4.53 re-saves it
        "vision_end_token_id",
        "boi_token_index",
        "eoi_token_index",
        "mm_tokens_per_image",
        "media_placeholder_token_id",
        "projector_hidden_act",
        "projection_layer_norm_eps",  # Kimi-K2.5's projector epsilon (transformers 5)
        "use_unified_vision_chunk",
        "video_placeholder",
        "vision_feature_select_strategy",
    }
)

MAMBA = frozenset(
    {
        # The scan's numerics and kernels. (The recurrent state's format, which a config
        # may ask for in mamba_ssm_cache_dtype or mamba_ssm_dtype, is read: families.py
        # _state_format.)
        "chunk_size",
        "time_step_min",
        "time_step_max",
        "time_step_limit",
        "time_step_floor",
        "time_step_rank",
        "mamba_hidden_act",
        "use_mamba_kernels",
        "use_associative_scan",  # Jamba's scan algorithm in transformers 5
        "use_mambapy",  # the pure-PyTorch scan fallback
        "residual_in_fp32",
        "rescale_prenorm_residual",
        "expand",
    }
)

MIMO = frozenset(
    {
        "swa_rope_theta",  # the sliding layers' RoPE base
        "attention_value_scale",  # a constant on the values
        "attention_projection_layout",  # q, k, v fused or apart: the same weights
        "moe_router_dtype",
    }
)

LLAMA4 = frozenset(
    {
        # Llama 4's attention temperature tuning for long contexts, router noise in training.
        "attn_temperature_tuning",
        "floor_scale",
        "attn_scale",
    }
)

NEMOTRON = MAMBA | {
    "mlp_hidden_act",  # relu2 or another: an up and a down projection either way
    "moe_shared_expert_overlap",  # when the shared expert runs, not how large it is
    "mtp_layers_block_type",
    "mtp_hybrid_override_pattern",
}

BY_FAMILY: dict[str, frozenset[str]] = {
    "nemotron_h": NEMOTRON,
    "qwen3_next": MAMBA,
    "qwen3_5": MAMBA,
    "qwen3_5_text": MAMBA,
    "qwen3_5_moe": MAMBA,
    "qwen3_5_moe_text": MAMBA,
    "falcon_h1": MAMBA,
    "jamba": MAMBA,
    "llama4": LLAMA4,
    "llama4_text": LLAMA4,
    "mimo_v2_flash": MIMO,
    "mimo_v2": MIMO,
}
"""Fields harmless in one family only, by model_type (a wrapper's and its text model's)."""


_HUNYUAN_IGNORES = {
    "use_qk_norm": "always on in HunYuan V1",
    "use_rotary_pos_emb": "RoPE: no bytes",
    "pretraining_tp": "how the original training split matrices",
    "cla_share_factor": "applies only with use_cla, refused",
}
READER_IGNORES: dict[str, dict[str, str]] = {
    "gemma4": {
        "audio_token_id": "a token id",
        "boa_token_id": "a token id",
        "boi_token_id": "a token id",
        "eoa_token_id": "a token id",
        "eoa_token_index": "a token id",
        "eoi_token_id": "a token id",
        "image_token_id": "a token id",
        "video_token_id": "a token id",
        "vision_soft_tokens_per_image": "image tokens per image: prefill length, no weights",
    },
    "gemma4_text": {
        "use_bidirectional_attention": "image tokens attend both ways in prefill: no bytes",
    },
    "kimi_linear": {
        "mla_use_nope": "MLA without RoPE: the same weights and latent",
        "moe_renormalize": "routing arithmetic",
        "moe_router_activation_func": "routing arithmetic (sigmoid)",
        "num_expert_group": "routing arithmetic",
        "use_grouped_topk": "routing arithmetic",
        "gate_lower_bound": "the decay's lower bound: arithmetic",
    },
    "deepseek_v4": {
        "hc_eps": "the hyper-connections' Sinkhorn epsilon: arithmetic",
        "hc_sinkhorn_iters": "Sinkhorn iterations of the stream mix: arithmetic, no bytes",
        "compress_rope_theta": "the pooled entries' RoPE base: no bytes",
        "topk_method": "noaux_tc routing: its bias is counted per layer from the config",
    },
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
    "phi3": {
        "interpolate_factor": "original Phi code's RoPE interpolation: positions only",
        "lm_head_bias": "false in Phi-4-mini; transformers' Phi3 builds no head bias either way",
    },
    "falcon_h1": {
        **{
            f"{part}_multiplier": "a scalar (muP)"
            for part in ("attention_in", "attention_out", "embedding", "key", "lm_head")
        },
        "ssm_in_multiplier": "a scalar (muP)",
        "ssm_out_multiplier": "a scalar (muP)",
        "mlp_multipliers": "scalars on the MLP's gate and down projection",
        "ssm_multipliers": "scalars on the Mamba projections' parts",
        "mamba_expand": "mamba_d_ssm gives the width",
        "mamba_chunk_size": "prefill chunking of the scan",
        "mamba_norm_before_gate": "where the gated norm sits: the same weights",
    },
    "internlm2": {
        "attn_implementation": "which attention kernel the remote code runs: the same bytes",
    },
    "phimoe": {"input_jitter_noise": "noise on the router's input in training only"},
    "bailing_moe_v2": {
        "embedding_dropout": "dropout in training only",
        "output_dropout": "dropout in training only",
        "mtp_loss_scaling_factor": "the MTP loss's weight in training",
        "max_window_layers": "never read by modeling_bailing_moe_v2.py: no layer has a window",
        "score_function": "how the router scores experts (sigmoid): which experts, not how many",
    },
    "dbrx": {
        # transformers' DbrxConfig sets it from attn_config.kv_n_heads, whatever it says
        "num_key_value_heads": "attn_config.kv_n_heads said again (transformers 5 writes it)",
        "emb_pdrop": "dropout on the embeddings in training only",
        "attn_pdrop": "attention dropout in training only",
        "clip_qkv": "a clamp on the q, k and v activations",
        "ffn_act_fn": "the experts' activation (SiLU): three matrices either way",
        "moe_jitter_eps": "noise on the router's input in training only",
        "moe_loss_weight": "the router's load-balancing loss in training",
        "moe_normalize_expert_weights": "how the chosen experts' weights are normalised",
        "uniform_expert_assignment": "a testing switch of the original code that "
        "transformers does not read",
        "model_type": "the sub-configs' empty model_type",
    },
    "minicpm3": {
        "scale_emb": "a scalar on the embeddings",
        "scale_depth": "a scalar on the residual",
        "dim_model_base": "a scalar on the logits",
    },
    "minicpm": {
        "scale_emb": "a scalar on the embeddings",
        "scale_depth": "a scalar on the residual",
        "dim_model_base": "a scalar on the logits",
        "mup_denominator": "MiniCPM4's scalar on the logits",
    },
    "olmoe": {"clip_qkv": "a clamp on q, k and v activations: no bytes"},
    "granitemoe": {
        "embedding_multiplier": "a scalar",
        "attention_multiplier": "a scalar",
        "residual_multiplier": "a scalar",
        "logits_scaling": "a scalar",
    },
    "granitemoeshared": {
        "embedding_multiplier": "a scalar",
        "attention_multiplier": "a scalar",
        "residual_multiplier": "a scalar",
        "logits_scaling": "a scalar",
    },
    "cohere": {"logit_scale": "a scalar on the logits"},
    "starcoder2": {
        "norm_epsilon": "an epsilon",
        "embedding_dropout": "training only",
        "residual_dropout": "training only",
    },
    "gpt_neox": {
        "rotary_pct": "RoPE on part of each head: no bytes",
        "rotary_emb_base": "RoPE base",
        "classifier_dropout": "training only (a classification head not in the causal LM)",
    },
    "ernie4_5": {"use_rmsnorm": "RMSNorm, as counted"},
    "ernie4_5_moe": {
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
    "minimax": {
        "block_size": "the lightning attention's prefill block: arithmetic, no bytes",
        "full_attn_alpha_factor": "a residual scale",
        "full_attn_beta_factor": "a residual scale",
        "linear_attn_alpha_factor": "a residual scale",
        "linear_attn_beta_factor": "a residual scale",
        "mlp_alpha_factor": "a residual scale",
        "mlp_beta_factor": "a residual scale",
        "sliding_window": "null: MiniMax's layers have no window",
    },
}


READER_IGNORES["gemma3n_text"] = READER_IGNORES["gemma3n"]  # the same text model, unwrapped


def ignored(*model_types: str) -> frozenset[str]:
    """Every field the readers of these model types knowingly leave unread."""
    return COMMON.union(
        *(BY_FAMILY.get(t, frozenset()) for t in model_types),
        *(frozenset(READER_IGNORES.get(t, {})) for t in model_types),
    )
