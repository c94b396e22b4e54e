"""Nemotron-NAS (Llama-3.3-Nemotron-Super-49B, Llama-3.1-Nemotron-Ultra-253B) read from the
published config.json files (tests/fixtures/configs, SOURCES.md): layers without attention,
a width of its own for each layer's MLP. transformers has no modeling code for the type
(remote code, modeling_decilm.py), so the counts are by hand from that file's shapes."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from decodecalc.errors import InputError
from decodecalc.loading.catalog import Catalog
from decodecalc.scenarios.scenario import Scenario
from decodecalc.step.step import StepModel

CONFIGS = Path(__file__).parents[1] / "fixtures" / "configs"
SUPER = CONFIGS / "llama-3.3-nemotron-super-49b-v1.json"
ULTRA = CONFIGS / "llama-3.1-nemotron-ultra-253b-v1.json"

# Super-49B by hand. Width 8,192, 64 heads of 128, head_dim 8,192 / 64 = 128. An attention
# layer (n_heads_in_group 8: 8 KV heads): q, o 2 x 8,192^2 = 134,217,728, k, v 2 x 8,192 x
# 1,024 = 16,777,216, its norm 8,192: 151,003,136; 49 such layers: 7,399,153,664. MLP widths
# int(2 x ffn_mult x 8,192 / 3) rounded up to 256, 3 x 8,192 x width each plus a norm of
# 8,192: 5.25 -> 28,672 (49 layers), 2.625 -> 14,336 (6), 1.3125 -> 7,168 (10), 1.0 ->
# 5,461 -> 5,632 (8), 0.5 -> 2,730 -> 2,816 (6), 3.28125 -> 17,920 (1); the 80 layers'
# widths add up to 49 x 28,672 + 6 x 14,336 + 10 x 7,168 + 8 x 5,632 + 6 x 2,816 + 17,920
# = 1,642,496, so 3 x 8,192 x 1,642,496 = 40,365,981,696 and 80 norms 655,360. Embedding
# and head 2 x 128,256 x 8,192 = 2,101,346,304, the final norm 8,192. In all
# 7,399,153,664 + 40,366,637,056 + 2,101,354,496 = 49,867,145,216: the card's "49B" (49.9B).
SUPER_PARAMS = 49_867_145_216
# Ultra-253B the same way (width 16,384, 128 heads of 128, 64 attention layers with 8 KV
# heads, some layers with neither attention nor MLP): 253,401,268,224, the card's "253B".
ULTRA_PARAMS = 253_401_268_224


def test_super_counts_as_modeling_decilm_builds_it(catalog: Catalog) -> None:
    assert catalog.model(str(SUPER)).total_params() == SUPER_PARAMS


def test_ultra_counts_as_modeling_decilm_builds_it(catalog: Catalog) -> None:
    assert catalog.model(str(ULTRA)).total_params() == ULTRA_PARAMS


@pytest.mark.parametrize(
    ("path", "per_token"),
    [
        # 49 attention layers x (K + V) x 8 KV heads x 128 x 2 bytes = 49 x 4,096 = 200,704;
        # the 31 layers without attention cache nothing.
        (SUPER, 200_704),
        # 64 attention layers x 2 x 8 x 128 x 2 bytes = 64 x 4,096 = 262,144.
        (ULTRA, 262_144),
    ],
)
def test_only_the_layers_with_attention_cache(catalog: Catalog, path: Path, per_token: int) -> None:
    bf16 = catalog.dtype("bf16")
    step = StepModel.of(Scenario(catalog.model(str(path)), bf16, bf16, 4_800_000_000_000))
    assert step.kv_bytes(1_000) == 1_000 * per_token
    assert step.state_bytes == 0


def _edited(tmp_path: Path, layer: int, part: str, **fields: object) -> str:
    config = json.loads(SUPER.read_text())
    config["block_configs"][layer][part].update(fields)
    path = tmp_path / "config.json"
    path.write_text(json.dumps(config))
    return str(path)


def test_a_linear_map_in_place_of_attention_adds_its_weight_and_no_cache(
    catalog: Catalog, tmp_path: Path
) -> None:
    """Layer 6 has no attention; a linear replacement there brings its norm and one
    8,192 x 8,192 map (67,108,864) and 8,192: 67,117,056 more, and still no cache."""
    path = _edited(tmp_path, 6, "attention", no_op=False, replace_with_linear=True)
    model = catalog.model(path)
    assert model.total_params() == SUPER_PARAMS + 67_117_056
    bf16 = catalog.dtype("bf16")
    assert StepModel.of(Scenario(model, bf16, bf16, 4_800_000_000_000)).kv_bytes(1) == 200_704


def test_a_layer_without_an_mlp_loses_its_weights_and_norm(
    catalog: Catalog, tmp_path: Path
) -> None:
    """Layer 0's MLP (ffn_mult 2.625: 14,336) left out: 3 x 8,192 x 14,336 = 352,321,536
    and its norm 8,192 fewer."""
    path = _edited(tmp_path, 0, "ffn", no_op=True, ffn_mult=None)
    assert catalog.model(path).total_params() == SUPER_PARAMS - 352_329_728


@pytest.mark.parametrize(
    ("part", "fields", "named"),
    [
        ("attention", {"window_length": 4096}, "window_length"),
        ("attention", {"num_sink_tokens": 4}, "num_sink_tokens"),
        ("ffn", {"replace_with_linear": True}, "replace_with_linear"),
        ("ffn", {"moe": {"num_local_experts": 8}}, "moe"),
    ],
)
def test_block_fields_that_change_the_layer_are_refused(
    catalog: Catalog, tmp_path: Path, part: str, fields: dict[str, object], named: str
) -> None:
    with pytest.raises(InputError, match=named):
        catalog.model(_edited(tmp_path, 0, part, **fields))


def test_a_layer_without_attention_pays_no_attention_all_reduce(catalog: Catalog) -> None:
    """TP's all-reduces: one after the attention of each of the 49 layers that have it and
    one after each of the 80 MLPs: 129, not 2 x 80."""
    from decodecalc.step.parallelism import tp_allreduces

    assert tp_allreduces(catalog.model(str(SUPER))) == 129
