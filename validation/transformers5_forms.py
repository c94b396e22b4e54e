"""Write the config.json forms transformers 5 saves, for tests/fixtures/configs/transformers5/.

A development script (torch and transformers 5 needed, never at run time or by the tests):
each file is what ``AutoConfig.for_model(TYPE, **overrides).save_pretrained(DIR)`` writes,
every default spelled out, or a checkpoint's config.json of tests/fixtures/configs loaded
and saved again. The files carry the transformers_version that wrote them.

    python validation/transformers5_forms.py tests/fixtures/configs/transformers5
"""

from __future__ import annotations

import json
import sys
import tempfile
from pathlib import Path
from typing import Any

FIXTURES = Path(__file__).parent.parent / "tests" / "fixtures" / "configs"

DEFAULTS: dict[str, tuple[str, dict[str, Any]]] = {
    # file name: (model_type, overrides)
    "glm_moe_dsa": ("glm_moe_dsa", {}),
    "gemma3n_text": ("gemma3n_text", {}),
    "glm4_moe_lite": ("glm4_moe_lite", {}),
    "nemotron_h": ("nemotron_h", {}),
    # A Nemotron-H without MoE blocks (Nemotron-Nano-9B-v2's kinds of block): transformers
    # still writes its MoE defaults.
    "nemotron_h-dense": (
        "nemotron_h",
        {"layers_block_type": ["linear_attention", "mlp", "full_attention", "mlp"]},
    ),
    "granitemoehybrid": ("granitemoehybrid", {}),
    "mimo_v2_flash": ("mimo_v2_flash", {}),
    "minimax": ("minimax", {}),
    "qwen3_5_moe": ("qwen3_5_moe", {}),
    "qwen3_5": ("qwen3_5", {}),
    "mistral3": ("mistral3", {}),
    # New readers (issue 31), each at transformers' defaults, which its docstring names
    # a published checkpoint's shape.
    "cohere": ("cohere", {}),
    "qwen2_moe": ("qwen2_moe", {}),
    "olmoe": ("olmoe", {}),
    "granitemoe": ("granitemoe", {}),
    "granitemoeshared": ("granitemoeshared", {}),
    "internlm3": ("internlm3", {}),
    "exaone4": ("exaone4", {}),
    "starcoder2": ("starcoder2", {}),
    "gpt_neox": ("gpt_neox", {}),
    "phimoe": ("phimoe", {}),
    "qwen2_vl": ("qwen2_vl", {}),
    "qwen2_5_vl": ("qwen2_5_vl", {}),
    "qwen3_vl": ("qwen3_vl", {}),
    "qwen3_vl_moe": ("qwen3_vl_moe", {}),
    "minicpm3": ("minicpm3", {}),
    "dbrx": ("dbrx", {}),  # DbrxConfig's own small defaults (24 layers, 4 experts)
    # Dots1Config leaves the experts unset (None): dots.llm1's 128 routed experts, 6 a
    # token, 2 shared, one dense layer first.
    "dots1": (
        "dots1",
        {
            "n_routed_experts": 128,
            "n_shared_experts": 2,
            "num_experts_per_tok": 6,
            "first_k_dense_replace": 1,
        },
    ),
}

READERS_AT_DEFAULTS = (
    "gemma3",
    "llama4",
    "cohere2",
    "deepseek_v3",
    "deepseek_v32",
    "ernie4_5",
    "ernie4_5_moe",
    "falcon_h1",
    "gemma2",
    "gemma3_text",
    "glm4_moe",
    "gpt_oss",
    "jamba",
    "lfm2",
    "llama",
    "llama4_text",
    "minimax_m2",
    "ministral3",
    "mistral",
    "mixtral",
    "olmo2",
    "olmo3",
    "phi3",
    "qwen2",
    "qwen3",
    "qwen3_5_moe_text",
    "qwen3_5_text",
    "qwen3_moe",
    "qwen3_next",
    "seed_oss",
    "smollm3",
)
"""The other families decodecalc reads, each at transformers' defaults."""

RESAVED = (
    "deepseek-v3",
    "glm-5",
    "mimo-v2-flash",
    "gpt-oss-20b",
    "mixtral-8x7b",
    "mistral-small-3.2-24b",
    "gemma-3-27b",
    "kimi-k2.5",
)
"""Checkpoint configs of tests/fixtures/configs, loaded and saved again by transformers 5."""


def main(out: Path) -> None:
    from transformers import AutoConfig

    out.mkdir(parents=True, exist_ok=True)
    for name in READERS_AT_DEFAULTS:
        DEFAULTS.setdefault(name, (name, {}))
    for name, (model_type, overrides) in DEFAULTS.items():
        with tempfile.TemporaryDirectory() as folder:
            AutoConfig.for_model(model_type, **overrides).save_pretrained(folder)
            text = (Path(folder) / "config.json").read_text()
        (out / f"{name}.json").write_text(text)
    for name in RESAVED:
        with tempfile.TemporaryDirectory() as source, tempfile.TemporaryDirectory() as folder:
            config = json.loads((FIXTURES / f"{name}.json").read_text())
            (Path(source) / "config.json").write_text(json.dumps(config))
            AutoConfig.from_pretrained(source).save_pretrained(folder)
            text = (Path(folder) / "config.json").read_text()
        (out / f"{name}.resaved.json").write_text(text)


if __name__ == "__main__":
    main(Path(sys.argv[1]))
