"""A whole answer: prefill and the decode of N tokens summed exactly (decodecalc generate)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from decodecalc.answers.generate import decode_seconds, generate
from decodecalc.loading.catalog import Catalog
from decodecalc.resolving.resolve import resolve
from decodecalc.scenarios.spec import ScenarioSpec
from decodecalc.step.step import StepModel
from tests.conftest import Run
from tests.conftest import preset_scenario as h100

DATA = Path(__file__).parents[1] / "data" / "measured-decode.yaml"


class TestGeneration:
    def test_linear_curve_closed_form(self, catalog: Catalog) -> None:
        # Llama-3.1-8B BF16, B=1, memory-bound: t(T) = (15,009,849,344 + 131,072 T) / 3.35e12.
        # The prefill yields token 1; steps at T = P+1 .. P+N-1, n = N - 1 of them:
        # n x 15,009,849,344 + 131,072 x (n P + n(n+1)/2), / 3.35e12.
        prompt, tokens = 8192, 1024
        n = tokens - 1
        closed = (n * 15_009_849_344 + 131_072 * (n * prompt + n * (n + 1) // 2)) / 3.35e12
        g = generate(h100(catalog, "llama-3.1-8b"), prompt, tokens)
        assert g.decode_seconds == pytest.approx(closed, rel=1e-12)
        assert g.last_step_seconds == pytest.approx((15_009_849_344 + 131_072 * 9215) / 3.35e12)

    @pytest.mark.parametrize(
        ("model", "batch", "prompt", "tokens"),
        [
            ("llama-3.1-8b", 400, 0, 3000),  # crosses from compute- to memory-bound
            ("gemma-3-27b", 8, 10, 5000),  # crosses the 1,024-token window
            ("gpt-oss-20b", 64, 0, 2000),  # 128-token windows and MoE
            ("qwen3-next-80b-a3b", 4, 100, 1000),
        ],  # constant recurrent state
    )
    def test_matches_brute_force(
        self, catalog: Catalog, model: str, batch: int, prompt: int, tokens: int
    ) -> None:
        step = StepModel.of(h100(catalog, model, "fp8", "fp8", batch=batch))
        brute = sum(step.row(t).seconds_per_token for t in range(prompt, prompt + tokens))
        assert decode_seconds(step, prompt, tokens) == pytest.approx(brute, rel=1e-12)

    def test_prefill_is_compute_bound(self, catalog: Catalog) -> None:
        # The LM head (128,256 x 4,096 = 525,336,576 params) meets the last token only:
        # 2 x (7,504,924,672 - 525,336,576) x 8,192 + 2 x 525,336,576
        # + 32 layers x 4 x 32 heads x 128 x (8,192 x 8,191 / 2)
        # = 114,353,571,364,864 + 1,050,673,152 + 17,590,038,560,768
        # = 131,944,660,598,784 FLOPs / 989.4e12
        g = generate(h100(catalog, "llama-3.1-8b"), 8192, 1)
        assert g.prefill_flops == 131_944_660_598_784
        assert g.prefill_seconds == pytest.approx(131_944_660_598_784 / 989.4e12)

    def test_cli_json(self, cli: Run) -> None:
        doc = json.loads(
            cli(
                "generate",
                "-m",
                "llama-3.1-8b",
                "-g",
                "h100",
                "--prompt",
                "8K",
                "--tokens",
                "1K",
                "--json",
            ).out
        )
        assert set(doc) >= {"decode_s", "mean_ms_per_token", "last_ms_per_token", "prefill_s"}
        assert doc["mean_ms_per_token"] == pytest.approx(doc["decode_s"] * 1000 / 1023)


class TestFirstTokenAndSteps:
    """N tokens take one prefill (it yields token 1) and N - 1 decode steps; the expected
    total prices the prefill as serving prices TTFT at concurrency 1."""

    ARGS = ("-m", "llama-3.1-8b", "-g", "h100-sxm", "--engine", "vllm")

    def test_generate_and_serving_agree_at_concurrency_1(self, cli: Run) -> None:
        gen = json.loads(
            cli("generate", *self.ARGS, "--prompt", "1000", "--tokens", "500", "--json").out
        )
        served = json.loads(
            cli(
                "serving", *self.ARGS, "--input-len", "1000", "--output-len", "500",
                "--concurrency", "1", "--json",
            ).out
        )  # fmt: skip
        (row,) = served["rows"]
        assert gen["expected_prefill_s"] * 1000 == pytest.approx(row["ttft_ms"], rel=1e-9)
        # serving's decode step sits at the mean context, generate's are summed: 1e-5
        assert gen["expected_total_s"] == pytest.approx(row["e2e_latency_s"], rel=1e-5)
        assert gen["expected_decode_s"] == pytest.approx(499 * row["tpot_ms"] / 1000, rel=1e-5)

    def test_the_engines_prefill_by_hand(self, catalog: Catalog, cli: Run) -> None:
        """Llama-3.1-8B, 1,000 prompt tokens on an H100 SXM (989.4 TFLOP/s BF16), the LM
        head (525,336,576 params) at the last token only:
        2 x (7,504,924,672 - 525,336,576) x 1,000 + 2 x 525,336,576
        + 32 layers x 4 x 32 heads x 128 x (1,000 x 999 / 2)
        = 13,959,176,192,000 + 1,050,673,152 + 261,881,856,000 = 14,222,108,721,152 FLOPs:
        14.3745 ms at peak (the roofline prefill). vLLM's nvidia-datacenter profile computes
        it at its e_p, pays its per_layer x 32 layers for the step and its per_request, plus
        the one decode token beside the chunk (about 2 x 7.5e9 FLOPs at peak, 0.015 ms).
        The profile's parameters are read from it, so a refit moves no assertion (fitted
        2026-12-02 after the LM-head change: see presets/engines/vllm.yaml)."""
        spec = ScenarioSpec(model="llama-3.1-8b", gpu="h100-sxm", engine="vllm")
        (params,) = resolve(spec, catalog).engine.params
        doc = json.loads(
            cli("generate", *self.ARGS, "--prompt", "1000", "--tokens", "500", "--json").out
        )
        roofline_ms = 14_222_108_721_152 / 989.4e12 * 1000
        assert doc["prefill_s"] * 1000 == pytest.approx(roofline_ms, rel=1e-6)
        per_request_ms = params.per_request_s * 1000
        engine_ms = (
            roofline_ms / params.prefill_efficiency
            + 32 * params.per_layer_s * 1000
            + per_request_ms
            + 0.015
        )
        assert doc["expected_prefill_s"] * 1000 == pytest.approx(engine_ms, rel=1e-3)
        assert doc["per_request_ms"] == pytest.approx(per_request_ms, rel=1e-6)
        assert doc["expected_total_s"] == pytest.approx(
            doc["expected_prefill_s"] + doc["expected_decode_s"], rel=1e-12
        )
        assert doc["roofline_total_s"] == pytest.approx(
            doc["prefill_s"] + doc["roofline_decode_s"], rel=1e-12
        )

    def test_one_token_is_the_prefill_alone(self, catalog: Catalog) -> None:
        g = generate(h100(catalog, "llama-3.1-8b"), 1000, 1)
        assert g.decode_seconds == 0.0
        assert g.total_seconds == g.prefill_seconds
        # No decode step: no step time and no decode rate (review item 11)
        assert g.mean_step_seconds is None and g.expected_mean_step_seconds is None
        assert g.expected_tokens_per_s is None


def test_one_new_token_has_no_step_figures_in_any_format(cli: Run) -> None:
    args = ("generate", "-m", "llama-3.1-8b", "-g", "h100", "-p", "100", "-n", "1")
    doc = json.loads(cli(*args, "--json").out)
    steps = ("mean_ms_per_token", "first_ms_per_token", "last_ms_per_token")
    for key in (*steps, *(f"roofline_{k}" for k in steps), "expected_tokens_per_s"):
        assert doc[key] is None, key
    assert doc["decode_s"] == 0.0 and doc["roofline_decode_s"] == 0.0
    table = cli(*args).out
    assert "tok/s" not in table and "none: one new token, which the prefill gives" in table


def test_an_empty_prompt_is_refused(cli: Run) -> None:
    """The prefill yields the first new token: with no prompt there is no pass to yield
    it, and the first token came free (review item 11)."""
    r = cli("generate", "-m", "llama-3.1-8b", "-g", "h100", "-p", "0", "-n", "10")
    assert r.code == 2 and r.out == "" and "Traceback" not in r.err
    assert "a prompt needs at least one token" in r.err


def test_a_prompt_past_what_serving_prices_is_one_line(cli: Run) -> None:
    """16,777,216 (2^24) prompt tokens is the most a serving request holds."""
    r = cli("generate", "-m", "llama-3.1-8b", "-g", "h100-sxm", "--engine", "vllm",
            "--prompt", "20M", "--tokens", "10")  # fmt: skip
    assert r.code == 2 and "16,777,216 prompt tokens" in r.err and "Traceback" not in r.err
    assert cli("generate", "-m", "llama-3.1-8b", "-g", "h100-sxm", "--engine", "roofline",
               "--prompt", "20M", "--tokens", "10").code == 0  # fmt: skip
