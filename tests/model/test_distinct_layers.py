"""A stack's sums run over its distinct layers: loading makes equal layers one object
(loading/families.py), and Model.layer_counts / mixer_counts give each with how many
layers it stands for. Sums over those pairs must equal the sums over every layer."""

from __future__ import annotations

import pytest

from decodecalc.model.kvcache import KVCurve
from decodecalc.model.model import counted
from decodecalc.step.flops import matmul_params, step_flops
from tests.conftest import shared_catalog

CATALOG = shared_catalog()
MODELS = [m.id for m in CATALOG.models()]


def test_llama_3_1_70b_is_one_layer_eighty_times() -> None:
    model = CATALOG.model("llama-3.1-70b")
    (layer, count), *rest = model.layer_counts()
    assert not rest and count == 80 and all(x is layer for x in model.layers)
    # config.json: 8 KV heads x head_dim 128 (8,192 / 64 heads), K and V, 80 layers:
    # 8 x 128 x 2 x 80 = 163,840 elements per token.
    assert KVCurve.for_layers(model.mixer_counts(), 1).elements_per_token == 163_840


def test_counted_keeps_first_seen_order_and_counts() -> None:
    a, b = object(), object()
    assert counted([a, b, a, a]) == ((a, 3), (b, 1))


@pytest.mark.parametrize("model_id", MODELS)
def test_sums_over_distinct_layers_equal_sums_over_every_layer(model_id: str) -> None:
    model = CATALOG.model(model_id)
    assert sum(n for _, n in model.layer_counts()) == len(model.layers)
    assert sum(n for _, n in model.mixer_counts()) == len(model.layers)
    one_each = [(m, 1) for m in model.mixers()]
    for tp in (1, 8):
        assert KVCurve.for_layers(model.mixer_counts(), tp) == KVCurve.for_layers(one_each, tp)
    every_layer = sum(m.attention_flops(32_768) for m in model.mixers())
    assert step_flops(model, 1, 32_768) == 2 * matmul_params(model) + every_layer


@pytest.mark.parametrize("model_id", ["gemma-3-27b", "qwen3-next-80b-a3b", "deepseek-v3.2"])
def test_shared_or_separate_layer_objects_give_the_same_answer(model_id: str) -> None:
    """The same stack built of separate (equal) objects sums layer by layer; the loaded one
    sums over shared objects. Split K/V formats and pipeline stages must not tell them
    apart."""
    from decodecalc.answers.estimate import estimate
    from decodecalc.record import replace
    from decodecalc.resolving.resolve import resolve
    from decodecalc.scenarios.spec import ScenarioSpec

    shared = CATALOG.model(model_id)
    separate = replace(
        shared,
        layers=tuple(replace(x, mixer=replace(x.mixer), ffn=replace(x.ffn)) for x in shared.layers),
    )
    assert len({id(x.mixer) for x in separate.layers}) == len(separate.layers)
    answers = []
    for model in (shared, separate):
        spec = ScenarioSpec(
            model=model, gpu="h200", kv_dtype="fp8", v_dtype="bf16", batch=8, pp=2, engine="vllm"
        )
        answers.append(estimate(resolve(spec, CATALOG), (1, 4_096, 65_536, 1_000_000)))
    assert answers[0].rows == answers[1].rows
