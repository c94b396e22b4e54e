"""Speculative decoding: tokens per verify step, the drafter's scenario, bad settings."""

from __future__ import annotations

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
    target = preset_scenario(catalog, "llama-3.1-70b", tp=8, link=catalog.link("nvlink4"))
    qwen = catalog.model("qwen2.5-7b")  # 28 query heads, 4 KV heads: no even split over 8
    assert not qwen.supports_tp(8)
    drafter = draft_scenario(target, Speculation("draft", 4, (0.7,), qwen))
    assert (drafter.model.id, drafter.tp, drafter.link) == ("qwen2.5-7b", 1, None)
    small = catalog.model("llama-3.2-1b")
    assert draft_scenario(target, Speculation("draft", 4, (0.7,), small)).tp == 8


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
