"""Kimi Linear (Kimi Delta Attention with MLA every fourth layer), read from its published
config.json (tests/fixtures/configs/kimi-linear-48b-a3b.json) and counted by hand."""

from __future__ import annotations

from fractions import Fraction
from pathlib import Path

from decodecalc import api
from decodecalc.loading.catalog import Catalog
from decodecalc.model.kimi_delta import KimiDeltaAttention
from decodecalc.model.mla import LatentAttention
from decodecalc.step.step import StepModel
from tests.conftest import Run

CONFIG = Path(__file__).parents[1] / "fixtures" / "configs" / "kimi-linear-48b-a3b.json"


def test_params_by_hand_match_the_checkpoint() -> None:
    """Embedding and head 2 x 163,840 x 2,304 = 754,974,720. KDA (20 layers): q, k, v
    3 x 2,304 x 4,096 + o 4,096 x 2,304 + convs 3 x 4,096 x 4 + A_log 32 + dt_bias 4,096
    + f_a, g_a 2 x 2,304 x 128 + f_b, g_b 2 x 128 x 4,096 + b 2,304 x 32 + o_norm 128
    = 39,514,272. MLA (7): q 2,304 x 32 x 192 + kv_a 2,304 x 576 + 512 + kv_b
    512 x 32 x 256 + o 4,096 x 2,304 = 29,114,880. MoE (26): 256 x 3 x 2,304 x 1,024
    + shared 3 x 2,304 x 1,024 + gate 256 x 2,304 + bias 256 = 1,819,607,296. Dense layer 0
    3 x 2,304 x 9,216 = 63,700,992; norms 27 x 2 x 2,304 + 2,304. Total 49,122,681,728, the
    safetensors count of moonshotai/Kimi-Linear-48B-A3B-Instruct."""
    model = api.load_model(str(CONFIG))
    assert model.total_params() == 49_122_681_728
    stored = StepModel.of(api.scenario(model, "h100-sxm")).stages[0].stored_weight_bytes
    # BF16 but for A_log and dt_bias (20 x (32 + 4,096) = 82,560 in FP32): the index's
    # total_size 49,122,681,728 x 2 + 82,560 x 2 = 98,245,528,576.
    assert stored == 98_245_528_576


def test_layer_schedule_from_linear_attn_config(catalog: Catalog) -> None:
    """full_attn_layers [4, 8, ..., 24, 27] counted from 1: layers 3, 7, ..., 23, 26."""
    mixers = catalog.model("kimi-linear-48b-a3b").mixers()
    mla = [i for i, m in enumerate(mixers) if isinstance(m, LatentAttention)]
    assert mla == [3, 7, 11, 15, 19, 23, 26]
    assert sum(isinstance(m, KimiDeltaAttention) for m in mixers) == 20


def test_cache_and_state() -> None:
    """7 MLA layers x (512 + 64) = 4,032 elements a token (8,064 bytes in BF16). 20 KDA
    layers keep 32 x 128 x 128 = 524,288 recurrent elements in FP32 (vLLM's
    kda_state_dtype: 2,097,152 bytes) and 3 x 4,096 x 3 = 36,864 convolution inputs in
    BF16 (73,728 bytes): 20 x 2,170,880 = 43,417,600 bytes a sequence, whatever the
    context and whatever the KV dtype (review item 3: it was 22,446,080, all in BF16)."""
    step = StepModel.of(api.scenario("kimi-linear-48b-a3b", "h100-sxm"))
    assert step.kv_bytes(1000) == 8_064 * 1000
    assert step.state_bytes == 43_417_600
    fp8 = StepModel.of(api.scenario("kimi-linear-48b-a3b", "h100-sxm", kv_dtype="fp8"))
    assert fp8.state_bytes == 43_417_600
    # At batch 256 (the review's): 256 x 43,417,600 = 11,114,905,600 bytes a step
    big = StepModel.of(api.scenario("kimi-linear-48b-a3b", "h200", batch=256))
    assert big.state_bytes == 11_114_905_600
    assert step.crossover() == Fraction(step.weight_bytes, 8_064)


def test_a_layer_named_twice_is_refused(cli: Run, tmp_path: Path) -> None:
    import json

    config = json.loads(CONFIG.read_text())
    config["linear_attn_config"]["kda_layers"].append(4)
    path = tmp_path / "config.json"
    path.write_text(json.dumps(config))
    r = cli("show", str(path))
    assert r.code == 2
    assert "must name each of layers 1..27 once" in r.err
