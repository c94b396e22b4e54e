"""Ling 2.0 (model_type ``bailing_moe_v2``, remote code). The fixture
``ling-mini-2.0-defaults.json`` is BailingMoeV2Config's defaults (inclusionAI/Ling-V2's
models/configuration_bailing_moe_v2.py), which are Ling-mini-2.0's shape: that repository's
modeling_bailing_moe_v2.py, built from it on PyTorch's meta device (transformers 4.56.2),
holds 16,255,643,392 parameters and buffers, and its README says "1.43B activated of 16.26B
total params" and "non-embedding 789M" activated."""

from __future__ import annotations

import json
from pathlib import Path

from decodecalc.loading.catalog import Catalog
from decodecalc.scenarios.scenario import Scenario
from decodecalc.step.step import StepModel

LING = Path(__file__).parents[1] / "fixtures" / "configs" / "ling-mini-2.0-defaults.json"

# By hand. Width 2,048, 16 heads and 4 KV heads of 128. Attention: query_key_value 2,048 x
# (16 + 2 x 4) x 128 = 6,291,456, dense 2,048 x 2,048 = 4,194,304, QK norms 2 x 128: 10,486,016;
# two norms 4,096; x 20 layers = 209,802,240. Layer 0's dense MLP 3 x 2,048 x 5,120 =
# 31,457,280. Layers 1-19 a MoE: 256 experts of 3 x 2,048 x 512 = 3,145,728 (805,306,368),
# one shared expert 3,145,728, router 256 x 2,048 = 524,288 and its expert_bias 256:
# 808,976,640, x 19 = 15,370,556,160. word_embeddings and lm_head 2 x 157,184 x 2,048 =
# 643,825,664, the final norm 2,048. In all 16,255,643,392 ("16.26B").
TOTAL = 16_255_643_392
# Active: the 248 experts a token does not reach, 248 x 3,145,728 x 19 = 14,822,670,336
# fewer: 1,432,973,056 ("1.43B"); less the two embeddings, 789,147,392 ("789M").
ACTIVE = 1_432_973_056


def test_ling_mini_counts_as_its_modeling_code_builds_it(catalog: Catalog) -> None:
    model = catalog.model(str(LING))
    assert model.total_params() == TOTAL
    assert model.active_params() == ACTIVE
    assert ACTIVE - 2 * 157_184 * 2_048 == 789_147_392


def test_ling_mini_caches_gqa_kv(catalog: Catalog) -> None:
    """20 layers x (K + V) x 4 KV heads x 128 x 2 bytes = 20 x 2,048 = 40,960 a token."""
    bf16 = catalog.dtype("bf16")
    step = StepModel.of(Scenario(catalog.model(str(LING)), bf16, bf16, 4_800_000_000_000))
    assert step.kv_bytes(1_000) == 1_000 * 40_960


def test_ling_biases_and_an_mtp_layer(catalog: Catalog, tmp_path: Path) -> None:
    """use_qkv_bias adds 3,072 a layer and use_bias 2,048 (x 20 = 102,400); an MTP layer is
    in the checkpoint (the remote code on the meta device: 17,083,504,896 with one) but not
    in the decode step, so the count stays."""
    config = json.loads(LING.read_text())
    path = tmp_path / "config.json"
    path.write_text(json.dumps({**config, "use_qkv_bias": True, "use_bias": True}))
    assert catalog.model(str(path)).total_params() == TOTAL + 102_400
    path.write_text(json.dumps({**config, "num_nextn_predict_layers": 1}))
    assert catalog.model(str(path)).total_params() == TOTAL
