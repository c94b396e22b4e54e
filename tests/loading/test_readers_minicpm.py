"""MiniCPM (model_type ``minicpm``, remote code modeling_minicpm.py: Llama's layers, tied
embeddings by default). No verbatim config.json of a MiniCPM checkpoint was found in a
public repository, so the configs here are the shapes of MiniCPM-2B and MiniCPM-1B, whose
non-embedding parameter counts the MiniCPM paper (arXiv 2404.06395, its table of model
configurations) gives: 2,442,057,984 and 1,247,442,432."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from decodecalc.errors import InputError
from decodecalc.loading.catalog import Catalog
from decodecalc.scenarios.scenario import Scenario
from decodecalc.step.step import StepModel

MINICPM_2B = {
    "architectures": ["MiniCPMForCausalLM"],
    "model_type": "minicpm",
    "hidden_size": 2304,
    "intermediate_size": 5760,
    "num_hidden_layers": 40,
    "num_attention_heads": 36,
    "num_key_value_heads": 36,
    "vocab_size": 122753,
    "max_position_embeddings": 2048,
    "scale_emb": 12,
    "dim_model_base": 256,
    "scale_depth": 1.4,
    "rms_norm_eps": 1e-05,
    "hidden_act": "silu",
}
MINICPM_1B = {
    **MINICPM_2B,
    "hidden_size": 1536,
    "intermediate_size": 3840,
    "num_hidden_layers": 52,
    "num_attention_heads": 24,
    "num_key_value_heads": 8,
    "vocab_size": 73440,
}


def _model(catalog: Catalog, tmp_path: Path, config: dict[str, Any]) -> Any:
    path = tmp_path / "config.json"
    path.write_text(json.dumps(config))
    return catalog.model(str(path))


@pytest.mark.parametrize(
    ("config", "params"),
    [
        # MiniCPM-2B: a layer q, k, v, o 4 x 2,304^2 = 21,233,664, MLP 3 x 2,304 x 5,760 =
        # 39,813,120, two norms 4,608: 61,051,392, x 40 = 2,442,055,680, the final norm
        # 2,304: 2,442,057,984 without the embedding (the paper's figure); the tied
        # embedding 122,753 x 2,304 = 282,822,912 once: 2,724,880,896.
        (MINICPM_2B, 2_724_880_896),
        # MiniCPM-1B: q, o 2 x 1,536^2 = 4,718,592, k, v 2 x 1,536 x 512 = 1,572,864, MLP 3 x
        # 1,536 x 3,840 = 17,694,720, norms 3,072: 23,989,248, x 52 = 1,247,440,896, the final
        # norm 1,536: 1,247,442,432 (the paper's); the embedding 73,440 x 1,536 = 112,803,840.
        (MINICPM_1B, 1_360_246_272),
    ],
)
def test_minicpm_counts_as_the_paper(
    catalog: Catalog, tmp_path: Path, config: dict[str, Any], params: int
) -> None:
    assert _model(catalog, tmp_path, config).total_params() == params


def test_minicpm_caches_llamas_kv(catalog: Catalog, tmp_path: Path) -> None:
    """MiniCPM-1B: 52 layers x 2 x 8 KV heads x (1,536 / 24 = 64) x 2 bytes = 52 x 2,048 =
    106,496 a token."""
    bf16 = catalog.dtype("bf16")
    model = _model(catalog, tmp_path, MINICPM_1B)
    assert StepModel.of(Scenario(model, bf16, bf16, 4_800_000_000_000)).kv_bytes(1) == 106_496


def test_an_untied_minicpm_counts_its_head(catalog: Catalog, tmp_path: Path) -> None:
    model = _model(catalog, tmp_path, {**MINICPM_1B, "tie_word_embeddings": False})
    assert model.total_params() == 1_360_246_272 + 112_803_840


def test_minicpm4s_sparse_attention_is_refused(catalog: Catalog, tmp_path: Path) -> None:
    with pytest.raises(InputError, match="InfLLM v2 sparse attention"):
        _model(catalog, tmp_path, {**MINICPM_1B, "sparse_config": {"kernel_size": 32}})
