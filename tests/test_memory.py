"""Memory fit: weights, KV and state against capacity x utilization, per GPU."""

from __future__ import annotations

import json

import pytest

from decodecalc.loading.catalog import Catalog
from decodecalc.physics.estimator import Scenario, estimate

from .conftest import Run

GIB = 2**30


def scenario(
    catalog: Catalog, model: str, weights: str, kv: str, gpu: str, **kw: object
) -> Scenario:
    g = catalog.gpu(gpu)
    return Scenario(
        catalog.model(model),
        catalog.dtype(weights),
        catalog.dtype(kv),
        g.bandwidth_bytes_per_s,
        gpu=g,
        **kw,  # type: ignore[arg-type]
    )


def test_llama_70b_fp8_on_one_h100_at_32k(catalog: Catalog) -> None:
    # Budget: 80 GiB x 0.9 = 85,899,345,920 x 0.9 = 77,309,411,328 bytes.
    # Stored weights, FP8, embedding included: 70,553,706,496 bytes.
    # Free for cache: 6,755,704,832. One sequence at 32,768 tokens: 32,768 x 163,840
    # = 5,368,709,120 bytes, so floor(6,755,704,832 / 5,368,709,120) = 1 sequence.
    # Longest context at batch 1: 6,755,704,832 / 163,840 = 41,233.3 -> 41,233 tokens.
    est = estimate(scenario(catalog, "llama-3.1-70b", "fp8", "fp8", "h100-sxm"), [32_768])
    assert est.memory is not None
    assert est.memory.budget_bytes == 77_309_411_328
    assert est.memory.stored_weight_bytes == 70_553_706_496
    assert est.memory.max_batch == 1
    assert est.memory.max_context == 41_233
    assert est.rows[0].fits is True


def test_batch_two_does_not_fit_at_32k(catalog: Catalog) -> None:
    # 2 x 5,368,709,120 = 10,737,418,240 > 6,755,704,832 free
    est = estimate(scenario(catalog, "llama-3.1-70b", "fp8", "fp8", "h100-sxm", batch=2), [32_768])
    assert est.rows[0].fits is False
    # 6,755,704,832 / (2 x 163,840) = 20,616.5 -> 20,616 tokens
    assert est.memory is not None and est.memory.max_context == 20_616


def test_weights_alone_overflow(catalog: Catalog) -> None:
    # BF16 70B: 141,107,412,992 stored bytes > 77,309,411,328 budget.
    est = estimate(scenario(catalog, "llama-3.1-70b", "bf16", "bf16", "h100-sxm"), [1024])
    assert est.memory is not None
    assert (est.memory.max_batch, est.memory.max_context, est.rows[0].fits) == (0, 0, False)


def test_tp_divides_the_memory_need(catalog: Catalog) -> None:
    # TP 2: every matrix (embedding and LM head vocab-parallel) is halved; the 1,318,912
    # norm params stay whole: (70,553,706,496 - 1,318,912) / 2 + 1,318,912 = 35,277,512,704.
    est = estimate(scenario(catalog, "llama-3.1-70b", "fp8", "fp8", "h100-sxm", tp=2), [1024])
    assert est.memory is not None
    assert est.memory.stored_weight_bytes == 1_318_912 + (70_553_706_496 - 1_318_912) // 2


def test_windowed_models_never_run_out_of_context(catalog: Catalog) -> None:
    # Mistral-7B-v0.1 FP8 on an H100: every layer keeps at most 4,096 tokens.
    est = estimate(scenario(catalog, "mistral-7b-v0.1", "fp8", "fp8", "h100-sxm"), [1_000_000])
    assert est.memory is not None and est.memory.max_context is None


def test_memory_utilization_changes_the_budget(catalog: Catalog) -> None:
    est = estimate(
        scenario(catalog, "llama-3.1-8b", "bf16", "bf16", "l4", memory_utilization=0.5), [1]
    )
    assert est.memory is not None and est.memory.budget_bytes == 12 * GIB


def test_no_gpu_means_no_fit(cli: Run) -> None:
    doc = json.loads(cli("estimate", "-m", "llama-3.1-8b", "-b", "1TB/s", "-c", "1K", "--json").out)
    assert doc["max_batch_that_fits"] is None and doc["rows"][0]["fits"] is None


def test_fit_in_json_and_table(cli: Run) -> None:
    args = (
        "estimate",
        "-m",
        "llama-3.1-70b",
        "-g",
        "h100",
        "-w",
        "fp8",
        "-k",
        "fp8",
        "-c",
        "8K,32K",
    )
    doc = json.loads(cli(*args, "--batch", "2", "--json").out)
    assert [r["fits"] for r in doc["rows"]] == [True, False]
    assert (doc["max_batch_that_fits"], doc["max_context_that_fits"]) == (1, 20_616)
    table = cli(*args, "--batch", "2").out
    assert "Fits" in table and "NO" in table


@pytest.mark.parametrize("value", ["0", "1.5", "nan"])
def test_bad_memory_utilization(cli: Run, value: str) -> None:
    r = cli("estimate", "-m", "llama-3.1-8b", "-g", "h100", "--memory-utilization", value)
    assert r.code == 2 and "memory utilization" in r.err
