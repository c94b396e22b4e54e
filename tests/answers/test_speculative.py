"""Speculative decoding: tokens per verify step, the drafter's scenario, bad settings."""

from __future__ import annotations

import json

import pytest

from decodecalc.answers.speculative import draft_scenario
from decodecalc.errors import InputError
from decodecalc.loading.catalog import Catalog
from decodecalc.scenarios.workload import Speculation
from decodecalc.step.step import streamed_weight_bytes
from tests.conftest import Run, preset_scenario


def test_tokens_per_step_for_a_constant_rate() -> None:
    # a = 0.8, k = 3: 1 + 0.8 + 0.64 + 0.512 = 2.952 = (1 - 0.8^4) / (1 - 0.8) = 0.5904 / 0.2
    assert Speculation("eagle", 3, (0.8,)).tokens_per_step == pytest.approx(2.952, abs=1e-12)
    # a = 0.5, k = 1: one proposal accepted half the time, 1.5 tokens
    assert Speculation("mtp", 1, (0.5,)).tokens_per_step == pytest.approx(1.5)
    # nothing accepted: the verify step's own token only
    assert Speculation("eagle", 4, (0.0,)).tokens_per_step == 1.0


def test_tokens_per_step_from_per_position_rates() -> None:
    # vLLM's per-position rates 0.9, 0.7, 0.5: 1 + 0.9 + 0.7 + 0.5 = 3.1
    spec = Speculation("eagle", 3, (0.9, 0.7, 0.5))
    assert spec.tokens_per_step == pytest.approx(3.1)
    assert spec.queries == 4


@pytest.mark.parametrize(
    ("method", "proposed", "rates", "words"),
    [
        ("eagle", 3, (1.0,), "under 1"),
        ("eagle", 3, (1.5,), "under 1"),
        ("eagle", 3, (-0.1,), "from 0"),
        ("eagle", 3, (float("nan"),), "from 0"),
        ("eagle", 3, (0.5, 0.6, 0.4), "never rise"),
        ("eagle", 3, (0.9, 0.8), "3 per-position"),
        ("eagle", 0, (0.8,), "from 1 to"),
        ("medusa", 3, (0.8,), "not one of"),
        ("draft", 3, (0.8,), "needs a draft model"),
    ],
)
def test_bad_speculation(method: str, proposed: int, rates: tuple[float, ...], words: str) -> None:
    with pytest.raises(InputError, match=words):
        Speculation(method, proposed, rates)


def test_eagle_head_streams_one_layer_and_the_lm_head(catalog: Catalog) -> None:
    target = preset_scenario(catalog, "llama-3.1-8b")
    head = draft_scenario(target, Speculation("eagle", 3, (0.8,)))
    # Llama-3.1-8B, one decoder layer: q 4096x4096 + k, v 4096x1024 each + o 4096x4096
    # = 41,943,040; MLP 3 x 4096 x 14,336 = 176,160,768; two norms 8,192: 218,112,000.
    # LM head 128,256 x 4,096 = 525,336,576; final norm 4,096. Total 743,452,672 params,
    # BF16: 1,486,905,344 bytes (the input embedding is a row gather, not streamed).
    assert len(head.model.layers) == 1
    assert streamed_weight_bytes(head, 1) == 1_486_905_344


def test_draft_model_falls_back_to_one_gpu(catalog: Catalog) -> None:
    # (a draft shares its target's vocabulary: Qwen2.5's 152,064 tokens, both)
    target = preset_scenario(catalog, "qwen2.5-72b", tp=8, link=catalog.link("nvlink4"))
    qwen = catalog.model("qwen2.5-7b")  # 28 query heads, 4 KV heads: no even split over 8
    assert not qwen.supports_tp(8)
    drafter = draft_scenario(target, Speculation("draft", 4, (0.7,), qwen))
    assert (drafter.model.id, drafter.tp, drafter.link) == ("qwen2.5-7b", 1, None)
    wider = catalog.model("qwen2.5-32b")  # 40 query heads, 8 KV heads
    assert draft_scenario(target, Speculation("draft", 4, (0.7,), wider)).tp == 8


SERVE = ["serving", "-m", "llama-3.1-8b", "-g", "h100", "--input-len", "1000", "--output-len",
         "500", "--concurrency", "1", "--acceptance", "0.7", "--json"]  # fmt: skip


def test_the_drafter_takes_its_weights_and_cache_from_the_pool(cli: Run) -> None:
    """Review s40 #3. On one H100 the room for Llama-3.1-8B's server is 74,305,608,089 B
    (tests/step/test_memory.py: 76,544,055,705 less the 1,970,012,160 B sampler peak and
    the 268,435,456 B reserve), its weights 16,060,522,496 B, its cache 131,072 B a token.
    - llama-3.2-1b as the draft: 1,235,814,400 parameters x 2 B = 2,471,628,800 B (16
      layers of 60,821,504, the tied embedding 128,256 x 2,048, a final norm); its cache
      16 x 8 x 64 x 2 x 2 B = 32,768 B a token from the same pool. floor((74,305,608,089 -
      16,060,522,496 - 2,471,628,800) / (16 x 163,840)) = floor(55,773,456,793 / 2,621,440)
      = 21,275 blocks = 340,400 tokens (444,368 without a drafter).
    - EAGLE: one layer like the last, 218,112,000 x 2 B = 436,224,000 B and 4,096 B a
      token: floor(57,808,861,593 / (16 x 135,168)) = 26,730 blocks = 427,680 tokens."""
    assert json.loads(cli(*SERVE[:-3], "--json").out)["kv_pool_tokens"] == 444_368
    draft = json.loads(cli(*SERVE, "--speculative", "llama-3.2-1b").out)
    assert draft["kv_pool_tokens"] == 340_400
    # 1,500 tokens hold 94 blocks in each layer: 21,275 / 94
    assert draft["max_concurrency_kv"] == pytest.approx(21_275 / 94)
    assert json.loads(cli(*SERVE, "--speculative", "eagle").out)["kv_pool_tokens"] == 427_680
    # A 70B draft (141.11 GB in BF16) beside the target cannot be on one 80 GB H100.
    big = cli(*SERVE, "--speculative", "llama-3.1-70b")
    assert big.code == 2 and "141.11 GB of them the speculative drafter's" in big.err


def test_a_draft_model_keeps_its_checkpoints_format_whatever_the_target_is_in(cli: Run) -> None:
    """Review s41: vLLM loads a draft model in its own checkpoint's format, not the target's
    --quantization. Llama-3.1-70B's checkpoint is BF16 (no quantization_config): 70,553,706,496
    parameters x 2 B = 141.11 GB beside an FP8 target, not the 70.55 GB of FP8."""
    fp8 = [*SERVE[:5], "-w", "fp8", *SERVE[5:]]
    big = cli(*fp8, "--speculative", "llama-3.1-70b")
    assert big.code == 2 and "141.11 GB of them the speculative drafter's" in big.err


def test_what_cannot_draft_is_refused(cli: Run) -> None:
    """Review s40 #3 and #12: a draft model of another tokenizer (Qwen3's 151,936 tokens
    against Llama 3's 128,256) and MTP on a checkpoint without MTP layers: one line, exit 2."""
    other = cli(*SERVE, "--speculative", "qwen3-8b")
    assert other.code == 2 and "151,936" in other.err and "128,256" in other.err
    mtp = cli(*SERVE, "--speculative", "mtp")
    assert mtp.code == 2 and "llama-3.1-8b has none" in mtp.err
    assert len(mtp.err.strip().splitlines()) == 1
    # Kimi-K2's config.json gives num_nextn_predict_layers: 0, not nothing (review s41).
    kimi = cli(*SERVE[:2], "kimi-k2", "-g", "h200", *SERVE[5:], "--tp", "8", "--speculative", "mtp")
    assert kimi.code == 2
    assert "num_nextn_predict_layers and mtp_num_hidden_layers are 0 or absent" in kimi.err


def test_mtp_layers_come_out_of_the_pool(cli: Run) -> None:
    """DeepSeek-V3 ships one MTP layer (config.json num_nextn_predict_layers 1): MTP takes
    a MoE layer's weights and one more layer's MLA cache, 576 x 2 B = 1,152 B a token (on
    every GPU, as MLA's latent is), from each GPU's pool: 61 x 1,152 = 70,272 B a token
    without it, 71,424 with it, so the pool holds fewer tokens."""
    args = ["serving", "-m", "deepseek-v3", "-g", "h200", "--tp", "8", "-w", "fp8",
            "--input-len", "1000", "--output-len", "500", "--concurrency", "16",
            "--json"]  # fmt: skip
    plain = json.loads(cli(*args).out)
    mtp = json.loads(cli(*args, "--speculative", "mtp", "--acceptance", "0.7").out)
    assert mtp["kv_pool_tokens"] < plain["kv_pool_tokens"] * 70_272 / 71_424


def test_speculation_accepting_nothing_is_said_never_to_pay(cli: Run) -> None:
    """Acceptance 0: every verify step emits one token, as a plain step does, and computes
    k + 1 query tokens and the drafter's passes on top, so it loses from one request
    running (break-even 1). The closed loop's 16 requests read as 16, not 16.0, and the
    words say it never pays, not that it stops paying from 1."""
    result = cli(
        "serving", "-m", "llama-3.1-70b", "-g", "h100-sxm", "--tp", "2", "-w", "fp8",
        "--input-len", "1000", "--output-len", "500", "--concurrency", "16",
        "--speculative", "eagle", "--acceptance", "0",
    )  # fmt: skip
    assert result.code == 0, result.err
    assert (
        "note: with 16 requests running speculation gives a longer TPOT than plain decoding "
        "would, at every batch: it never pays\n" in result.err
    )
    out = " ".join(result.out.split())
    assert "never pays: plain decoding is faster from one request running" in out
    assert "from 1 requests" not in out


def test_an_eagle_head_under_pipeline_stages_runs_on_the_last(cli: Run) -> None:
    """Review s41 #7: Llama-3.1-70B in FP8 on TP 4 x PP 2 H100s with EAGLE ran into "pp 2
    must be ... from 1 to 1" (the one-layer head kept the target's stages). The head runs
    on the last stage: its room for cache holds the plain run's 1,550,272 tokens at 40 of
    80 layers x 8 KV heads x 128 x 2 x 2 B / 4 = 40,960 B a token (63,499,141,120 B).
    The head's layer at 1 B a weight over 4 GPUs: (2 x 8,192^2 + 2 x 8,192 x 1,024
    + 3 x 8,192 x 28,672) / 4 = 213,909,504 B, and its 2 norms 2 x 8,192 x 2 B =
    32,768 B (not split); its cache 1,024 B a token more. (63,499,141,120 - 213,942,272)
    / 41,984 = 1,507,364.7, 1,507,360 tokens in 16-token blocks."""
    args = ["serving", "-m", "llama-3.1-70b", "-g", "h100", "--tp", "4", "--pp", "2",
            "-w", "fp8", "--input-len", "1000", "--output-len", "500", "--concurrency", "16",
            "--engine", "roofline", "--json"]  # fmt: skip
    plain = cli(*args)
    eagle = cli(*args, "--speculative", "eagle", "--acceptance", "0.7")
    assert plain.code == 0 and eagle.code == 0, eagle.err
    assert json.loads(plain.out)["kv_pool_tokens"] == 1_550_272
    assert json.loads(eagle.out)["kv_pool_tokens"] == 1_507_360
