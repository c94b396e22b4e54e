"""A whole answer: prefill and the decode of N tokens summed exactly (decodecalc generate)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from decodecalc.answers.generate import decode_seconds, generate
from decodecalc.loading.catalog import Catalog
from decodecalc.step.step import StepModel
from tests.conftest import Run
from tests.conftest import preset_scenario as h100

DATA = Path(__file__).parents[1] / "data" / "measured-decode.yaml"


class TestGeneration:
    def test_linear_curve_closed_form(self, catalog: Catalog) -> None:
        # Llama-3.1-8B BF16, B=1, memory-bound: t(T) = (15,009,849,344 + 131,072 T) / 3.35e12.
        # Sum over T = P .. P+N-1: N x 15,009,849,344 + 131,072 x (N P + N(N-1)/2), / 3.35e12.
        prompt, tokens = 8192, 1024
        closed = (
            tokens * 15_009_849_344 + 131_072 * (tokens * prompt + tokens * (tokens - 1) // 2)
        ) / 3.35e12
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
        # 2 x 7,504,924,672 x 8,192 + 32 layers x 4 x 32 heads x 128 x (8,192 x 8,191 / 2)
        # = 122,960,685,826,048 + 17,590,038,560,768 = 140,550,724,386,816 FLOPs / 989.4e12
        g = generate(h100(catalog, "llama-3.1-8b"), 8192, 1)
        assert g.prefill_flops == 140_550_724_386_816
        assert g.prefill_seconds == pytest.approx(140_550_724_386_816 / 989.4e12)

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
        assert doc["mean_ms_per_token"] == pytest.approx(doc["decode_s"] * 1000 / 1024)
