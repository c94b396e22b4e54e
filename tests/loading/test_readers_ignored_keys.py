"""Never silently wrong: each config.json reader reads the fields that change decode bytes,
ignores a declared list that does not (loading/ignored_keys.py), and stops with one line on
any other field.

One configuration per reader (a shipped preset's, a real config.json of
tests/fixtures/configs, or a text model taken out of its wrapper) is read three ways: as
it is, with every field its reader ignores added (the layers must not change), and with a
field no reader knows (exit 2, one line).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import yaml

from decodecalc.loading.datafile import read_json
from decodecalc.loading.families import FAMILIES, WRAPPERS, Architecture, read_architecture
from decodecalc.loading.fields import Fields
from decodecalc.loading.ignored_keys import ignored
from tests.conftest import Run
from tests.loading.test_family_readers import CONFIGS as FAMILY_CONFIGS
from tests.loading.test_readers_minicpm import MINICPM_1B

ROOT = Path(__file__).parents[2]
CONFIGS = Path(__file__).parents[1] / "fixtures" / "configs"


def preset(name: str) -> dict[str, Any]:
    config: dict[str, Any] = yaml.safe_load(
        (ROOT / "presets" / "models" / f"{name}.yaml").read_text()
    )["config"]
    return config


def fixture(name: str) -> dict[str, Any]:
    config: dict[str, Any] = json.loads((CONFIGS / f"{name}.json").read_text())
    return config


def t5_form(name: str) -> dict[str, Any]:
    """A config as transformers 5 writes it (tests/fixtures/configs/transformers5)."""
    config: dict[str, Any] = json.loads((CONFIGS / "transformers5" / f"{name}.json").read_text())
    return config


def text_of(config: dict[str, Any], model_type: str) -> dict[str, Any]:
    """A wrapper's text model as a config of its own."""
    return {**config["text_config"], "model_type": model_type}


FALCON_H1 = {
    "model_type": "falcon_h1",
    "hidden_size": 64,
    "num_hidden_layers": 2,
    "num_attention_heads": 4,
    "num_key_value_heads": 2,
    "intermediate_size": 128,
    "vocab_size": 100,
    "max_position_embeddings": 1024,
    "mamba_d_state": 8,
    "mamba_n_heads": 4,
    "mamba_d_head": 16,
    "mamba_d_ssm": 64,
}


def qwen3_5_dense() -> dict[str, Any]:
    """Qwen3.5's dense text model: the MoE fixture's text model with a gated MLP instead."""
    moe = ("num_experts", "num_experts_per_tok", "moe_intermediate_size")
    text = {
        k: v
        for k, v in text_of(fixture("qwen3.5-35b-a3b"), "qwen3_5_text").items()
        if k not in moe and k != "shared_expert_intermediate_size"
    }
    return {**text, "intermediate_size": 6144}


def configs() -> dict[str, dict[str, Any]]:
    """One configuration for every model_type decodecalc reads."""
    qwen = fixture("qwen3.5-35b-a3b")
    return {
        "llama": preset("llama-3.1-8b"),
        "mistral": preset("mistral-7b"),
        "phi3": fixture("phi-3-mini"),
        "qwen2": fixture("qwen2.5-7b"),
        "qwen3": fixture("qwen3-8b"),
        "mixtral": fixture("mixtral-8x7b"),
        "qwen3_moe": fixture("qwen3-30b-a3b"),
        "qwen3_next": fixture("qwen3-next-80b-a3b"),
        "qwen3_5": {**qwen, "model_type": "qwen3_5", "text_config": qwen3_5_dense()},
        "qwen3_5_text": qwen3_5_dense(),
        "qwen3_5_moe": qwen,
        "qwen3_5_moe_text": text_of(qwen, "qwen3_5_moe_text"),
        "deepseek_v2": fixture("deepseek-v2"),
        "deepseek_v3": fixture("deepseek-v3"),
        "deepseek_v32": preset("deepseek-v3.2"),
        "kimi_k2": preset("kimi-k2"),
        "kimi_k25": fixture("kimi-k2.5"),
        "glm4_moe_lite": preset("glm-4.7-flash"),
        "glm_moe_dsa": fixture("glm-5"),
        "deepseek_v4": fixture("deepseek-v4-flash-0731"),
        "kimi_linear": fixture("kimi-linear-48b-a3b"),
        "gemma4": fixture("gemma-4-31b"),
        "gemma4_text": fixture("gemma-4-31b")["text_config"],
        "longcat_flash": fixture("longcat-flash"),
        "mimo_v2_flash": fixture("mimo-v2-flash"),
        "mimo_v2": {**fixture("mimo-v2-flash"), "model_type": "mimo_v2"},
        "minimax": t5_form("minimax"),
        "internlm2": fixture("internlm2.5-7b-chat-internvl2"),
        "mimo": fixture("mimo-7b"),
        **{
            name: t5_form(name)
            for name in (
                "cohere",
                "qwen2_moe",
                "olmoe",
                "granitemoe",
                "granitemoeshared",
                "internlm3",
                "exaone4",
                "starcoder2",
                "gpt_neox",
                "phimoe",
                "qwen2_vl",
                "qwen2_5_vl",
                "qwen3_vl",
                "qwen3_vl_moe",
                "minicpm3",
                "dots1",
                "dbrx",
            )
        },
        **{
            f"{name}_text": text_of(t5_form(name), f"{name}_text")
            for name in ("qwen2_vl", "qwen2_5_vl", "qwen3_vl", "qwen3_vl_moe")
        },
        "gpt_oss": fixture("gpt-oss-20b"),
        "glm4_moe": preset("glm-4.5"),
        "minimax_m2": preset("minimax-m2"),
        "nemotron_h": fixture("nemotron-3-nano-30b-a3b"),
        "nemotron-nas": fixture("llama-3.3-nemotron-super-49b-v1"),
        "minicpm": MINICPM_1B,
        "bailing_moe_v2": fixture("ling-mini-2.0-defaults"),
        "jamba": preset("jamba-mini-1.5"),
        "falcon_h1": FALCON_H1,
        "llama4": preset("llama-4-scout"),
        "llama4_text": text_of(preset("llama-4-scout"), "llama4_text"),
        "gemma2": fixture("gemma-2-9b"),
        "gemma3": fixture("gemma-3-27b"),
        "gemma3_text": text_of(fixture("gemma-3-27b"), "gemma3_text"),
        "mistral3": fixture("mistral-small-3.2-24b"),
        "ministral3": text_of(fixture("mistral-small-3.2-24b"), "ministral3"),
        # The families tests/loading/test_family_readers.py reads by hand, one configuration each.
        **{config["model_type"]: config for config in FAMILY_CONFIGS.values()},
        "gemma3n_text": text_of(FAMILY_CONFIGS["gemma-3n-e4b"], "gemma3n_text"),
        "hunyuan_v1_dense": {
            **{
                k: v
                for k, v in FAMILY_CONFIGS["hunyuan-a13b"].items()
                if "exper" not in k and "moe" not in k
            },
            "model_type": "hunyuan_v1_dense",
            "intermediate_size": 14336,
        },
    }


CONFIGS_BY_TYPE = configs()


def read(tmp_path: Path, config: dict[str, Any]) -> Architecture:
    path = tmp_path / "config.json"
    path.write_text(json.dumps(config))
    return read_architecture(Fields(read_json(path)))[1]


def test_every_model_type_has_a_configuration_here() -> None:
    assert set(CONFIGS_BY_TYPE) == {*FAMILIES, *WRAPPERS}


@pytest.mark.parametrize("model_type", sorted(CONFIGS_BY_TYPE))
def test_fields_a_reader_ignores_change_nothing(tmp_path: Path, model_type: str) -> None:
    """Every ignored field, given a value no reader could parse, is never read: the
    layers, embeddings and vision tower stay as they were."""
    config = CONFIGS_BY_TYPE[model_type]
    plain = read(tmp_path, config)
    text_type = config.get("text_config", {}).get("model_type", WRAPPERS.get(model_type))
    names = ignored(model_type, *([text_type] if "text_config" in config else []))
    noise = {name: "ignored by decodecalc" for name in names}
    noisy = {**noise, **config}
    if "text_config" in config:
        noisy["text_config"] = {**noise, **config["text_config"]}
    # The file's own values stay: a field already present keeps its meaning.
    assert read(tmp_path, noisy) == plain


@pytest.mark.parametrize("model_type", sorted(CONFIGS_BY_TYPE))
def test_a_field_no_reader_knows_stops_the_read(cli: Run, tmp_path: Path, model_type: str) -> None:
    config = CONFIGS_BY_TYPE[model_type]
    inner = config.get("text_config")
    if inner is not None:  # the text model's own fields are checked too
        config = {**config, "text_config": {**inner, "kv_bytes_multiplier": 2}}
    else:
        config = {**config, "kv_bytes_multiplier": 2}
    path = tmp_path / "config.json"
    path.write_text(json.dumps(config))
    r = cli("show", str(path))
    assert r.code == 2
    assert r.err.count("\n") == 1 and r.err.startswith("decodecalc: error: ")
    assert "kv_bytes_multiplier: not a field decodecalc's" in r.err
    assert "may change what decode reads" in r.err


@pytest.mark.parametrize(
    ("model_type", "field", "value"),
    [
        # transformers 5 writes these; today's readers understand them (see
        # tests/loading/test_readers_moe_schedules.py); a value they cannot honour stops them.
        ("glm4_moe", "mlp_bias", True),
        ("llama", "mlp_bias", True),
        ("qwen3_next", "use_sliding_window", True),
        ("deepseek_v3", "attention_bias", True),
        ("glm_moe_dsa", "indexer_types", ["full", "skip"]),
        ("nemotron_h", "moe_latent_size", 1024),
    ],
)
def test_a_value_a_reader_cannot_honour_stops_it(
    cli: Run, tmp_path: Path, model_type: str, field: str, value: object
) -> None:
    path = tmp_path / "config.json"
    path.write_text(json.dumps({**CONFIGS_BY_TYPE[model_type], field: value}))
    r = cli("show", str(path))
    assert r.code == 2, r.out
    assert r.err.count("\n") == 1 and field in r.err


@pytest.mark.parametrize(
    ("field", "value", "what"),
    [
        ("hidden_size_per_layer_input", 256, "per-layer inputs (Gemma 4 E2B and E4B)"),
        ("num_kv_shared_layers", 20, "an earlier layer's KV cache (Gemma 4 E2B and E4B)"),
        ("enable_moe_block", True, "Gemma 4's MoE block (26B-A4B) is not modelled yet"),
    ],
)
def test_unmodelled_sizes_of_a_family_are_refused_by_name(
    cli: Run, tmp_path: Path, field: str, value: object, what: str
) -> None:
    path = tmp_path / "config.json"
    path.write_text(json.dumps({**CONFIGS_BY_TYPE["gemma4_text"], field: value}))
    r = cli("show", str(path))
    assert r.code == 2
    assert r.err.count("\n") == 1 and what in r.err


@pytest.mark.parametrize(
    ("model_type", "harmless", "harmful"),
    [
        # Qwen3-Coder-480B-A35B's qkv_bias: false is the family's default (transformers'
        # Qwen3-MoE reads attention_bias; no q, k or v bias at false).
        ("qwen3_moe", {"qkv_bias": False}, {"qkv_bias": True}),
        # Nemotron-H-56B's attention_head_dim: hidden / heads, the head width said again.
        ("nemotron_h", {"attention_head_dim": 128}, {"attention_head_dim": 64}),
        # SmolLM2's export marker: bookkeeping.
        ("llama", {"is_llama_config": True}, {"kv_bytes_multiplier": 2}),
        # Phi-4-mini's original-code fields: every layer full attention (what transformers'
        # Phi3 builds, never reading it), its RoPE interpolation, no head bias.
        (
            "phi3",
            {"full_attn_mod": 1, "interpolate_factor": 1, "lm_head_bias": False},
            {"full_attn_mod": 2},
        ),
    ],
)
def test_harmless_fields_of_published_configs_read_through(
    cli: Run,
    tmp_path: Path,
    model_type: str,
    harmless: dict[str, object],
    harmful: dict[str, object],
) -> None:
    config = CONFIGS_BY_TYPE[model_type]
    assert read(tmp_path, {**config, **harmless}) == read(tmp_path, config)
    path = tmp_path / "config.json"
    path.write_text(json.dumps({**config, **harmful}))
    r = cli("show", str(path))
    assert r.code == 2 and r.err.count("\n") == 1
    assert next(iter(harmful)) in r.err


def test_models_family_of_a_type_read_without_a_preset_says_so(cli: Run) -> None:
    r = cli("models", "--family", "olmoe")
    assert r.code == 2 and r.err.count("\n") == 1
    assert "decodecalc reads its config.json" in r.err


def test_models_family_of_a_refused_type_says_why(cli: Run) -> None:
    r = cli("models", "--family", "jetmoe")
    assert r.code == 2 and r.err.count("\n") == 1
    assert "refused: JetMoE's mixture of attention heads" in r.err


@pytest.mark.parametrize(
    ("model_type", "what"),
    [
        ("deci", "per-layer KV head counts"),
        ("jetmoe", "mixture of attention heads"),
        ("step3", "multi-matrix factorised attention"),
        ("phi3small", "block-sparse attention"),
        ("arctic", "dense residual MLP beside each layer's MoE"),
        ("bailing_moe", "not read yet"),
    ],
)
def test_known_types_not_read_are_refused_naming_why(
    cli: Run, tmp_path: Path, model_type: str, what: str
) -> None:
    path = tmp_path / "config.json"
    path.write_text(json.dumps({"model_type": model_type, "hidden_size": 4096}))
    r = cli("show", str(path))
    assert r.code == 2
    assert r.err.count("\n") == 1 and what in r.err
