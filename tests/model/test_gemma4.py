"""Gemma 4 (31B), read from its published config (tests/fixtures/configs/gemma-4-31b.json)
and counted by hand against the checkpoint's tensor list."""

from __future__ import annotations

from pathlib import Path

from decodecalc import api
from decodecalc.loading.catalog import Catalog
from decodecalc.model.layers import Attention
from decodecalc.step.step import StepModel

CONFIG = Path(__file__).parents[1] / "fixtures" / "configs" / "gemma-4-31b.json"


def test_params_by_hand_match_the_checkpoint() -> None:
    """Tied embedding 262,144 x 5,376 = 1,409,286,144. Sliding layers (50): q 8,192 x 5,376
    + k, v 2 x 4,096 x 5,376 + o 5,376 x 8,192 + q/k norms 2 x 256 = 132,121,088. Full layers
    (10): q 16,384 x 5,376 + k 2,048 x 5,376 (no v_proj) + o 5,376 x 16,384 + 2 x 512
    = 187,171,840. Every layer: MLP 3 x 5,376 x 21,504 + four norms 4 x 5,376 + layer_scalar
    = 346,838,017, x 60. Final norm 5,376: text 30,697,345,340. Vision: 27 x (4 x 1,152^2
    + 2 x 72 + 3 x 1,152 x 4,304 + 4 x 1,152) = 545,070,384, patch 768 x 1,152 = 884,736,
    positions 2 x 10,240 x 1,152 = 23,592,960, std scale and bias 2,304, embed_vision
    1,152 x 5,376 = 6,193,152: 575,743,536. Total 31,273,088,876, the checkpoint's."""
    model = api.load_model(str(CONFIG))
    assert model.total_params() == 31_273_088_876
    assert model.active_params() == 30_697_345_340  # the tower is held, never read


def test_layer_schedule_and_cache(catalog: Catalog) -> None:
    """Every sixth layer is full (4 KV heads x 512, K and V cached); sliding layers cache
    2 x 16 x 256 = 8,192 elements a token for the last 1,024 tokens. At T = 8,192 in BF16:
    (50 x 8,192 x 1,024 + 10 x 4,096 x 8,192) x 2 = 838,860,800 + 671,088,640 = 1,509,949,440."""
    model = catalog.model("gemma-4-31b")
    full = [
        i for i, m in enumerate(model.mixers()) if isinstance(m, Attention) and not m.sliding_window
    ]
    assert full == list(range(5, 60, 6))
    step = StepModel.of(api.scenario("gemma-4-31b", "h100-sxm", kv_dtype="bf16"))
    assert step.kv_bytes(8192) == 1_509_949_440
