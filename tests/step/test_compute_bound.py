"""The compute roofline: the batch where a step turns compute-bound (the ridge), worked by
hand and by search."""

from __future__ import annotations

from pathlib import Path

import pytest

from decodecalc.answers.estimate import estimate
from decodecalc.loading.catalog import Catalog
from decodecalc.record import replace
from decodecalc.scenarios.scenario import Scenario
from decodecalc.step.ridge import ridge_batch
from tests.conftest import preset_scenario as h100

DATA = Path(__file__).parents[1] / "data" / "measured-decode.yaml"


class TestComputeRoofline:
    def test_ridge_batch_llama_8b_bf16_h100_at_zero_context(self, catalog: Catalog) -> None:
        # Memory time: 15,009,849,344 weight bytes / 3.35e12 = 4.480552 ms, whatever B.
        # Compute per sequence: 2 x 7,504,924,672 multiplied params = 15,009,849,344 FLOPs
        # / 989.4e12 = 15.17067 us. Compute-bound once B x 15.17067 us >= 4.480552 ms:
        # B >= 295.34 -> 296 (H100's ridge point, ~295 FLOPs per byte, at 2 FLOPs per byte).
        assert ridge_batch(h100(catalog, "llama-3.1-8b"), 0) == 296

    def test_ridge_batch_llama_8b_at_128_tokens(self, catalog: Catalog) -> None:
        # Each sequence adds 128 x 131,072 = 16,777,216 KV bytes (5.00812 us) to the memory time
        # and 15,009,849,344 + 32 x 4 x 128 x 32 x 128 = 15,076,958,208 FLOPs (15.23848 us):
        # B x (15.23848 - 5.00812) us >= 4.480552 ms -> B >= 437.97 -> 438.
        assert ridge_batch(h100(catalog, "llama-3.1-8b"), 128) == 438

    def test_long_context_never_turns_compute_bound(self, catalog: Catalog) -> None:
        # At 1,024 tokens a sequence's KV read (40.07 us) outlasts its compute (15.7 us).
        assert ridge_batch(h100(catalog, "llama-3.1-8b"), 1024) is None

    def test_rows_say_which_bound(self, catalog: Catalog) -> None:
        rows = [
            r
            for r in estimate(h100(catalog, "llama-3.1-8b", batch=512), [0, 1024]).rows
            if not r.is_crossover
        ]
        assert [r.bound for r in rows] == ["compute", "memory"]
        # At T=0, B=512: 512 x 15,009,849,344 / 989.4e12 = 7.7672 ms > 4.4806 ms of memory
        assert rows[0].seconds_per_token == pytest.approx(512 * 15_009_849_344 / 989.4e12)

    def test_unknown_rate_means_memory_only(self, catalog: Catalog) -> None:
        m1 = catalog.gpu("m1-max")
        s = Scenario(
            catalog.model("llama-3.2-1b"),
            catalog.dtype("bf16"),
            catalog.dtype("bf16"),
            m1.bandwidth_bytes_per_s,
            gpu=m1,
        )
        row = estimate(s, [1024]).rows[0]
        assert row.compute_seconds is None and row.bound == "memory"


@pytest.mark.parametrize("model", ["llama-3.1-8b", "qwen2.5-7b", "gemma-2-9b", "llama-3.2-1b"])
@pytest.mark.parametrize("context", [0, 64, 300])
def test_dense_ridge_closed_form_matches_the_search(
    catalog: Catalog, model: str, context: int
) -> None:
    from decodecalc.step.ridge import _dense_ridge, _searched_ridge

    s = h100(catalog, model)
    assert _dense_ridge(s, context, 989_400_000_000_000) == _searched_ridge(s, context)


def test_moe_ridge_uses_the_search(catalog: Catalog) -> None:
    # Mixtral FP8 at T=0: weights grow with B until every expert is read, so the crossing
    # batch comes from the search; at that batch compute is at least memory, one below not.
    s = h100(catalog, "mixtral-8x7b", "fp8", "fp8")
    ridge = ridge_batch(s, 0)
    assert ridge is not None
    at, below = (estimate(replace(s, batch=b), [0]).rows[0] for b in (ridge, ridge - 1))
    assert at.bound == "compute" or at.compute_seconds == at.memory_seconds
    assert below.bound == "memory"


@pytest.mark.parametrize(("model", "dtype"), [("llama-3.1-8b", "bf16"), ("mixtral-8x7b", "fp8")])
def test_ridge_reuses_the_scenarios_own_step(catalog: Catalog, model: str, dtype: str) -> None:
    """estimate hands ridge_batch the step it built; the answer is the one built anew."""
    from decodecalc.step.step import StepModel

    s = h100(catalog, model, dtype, dtype)
    for context in (0, 300):
        assert ridge_batch(s, context, StepModel.of(s)) == ridge_batch(s, context)
        # a step at another batch is never taken for the batch it was not built at
        assert ridge_batch(s, context, StepModel.at(s, 64)) == ridge_batch(s, context)
