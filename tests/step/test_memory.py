"""Memory fit: weights, KV and state against capacity x utilization, per GPU."""

from __future__ import annotations

import json

import pytest

from decodecalc.answers.estimate import estimate
from decodecalc.loading.catalog import Catalog
from decodecalc.model.hardware import GpuSpec
from decodecalc.model.layers import Attention, DenseMLP, Layer
from decodecalc.model.linear_attention import LinearAttention
from decodecalc.model.model import Model
from decodecalc.scenarios.scenario import Scenario
from decodecalc.views.estimate import estimate_report
from tests.conftest import Run
from tests.conftest import preset_scenario as scenario

MIB = 2**20


def test_llama_70b_fp8_on_one_h100_at_32k(catalog: Catalog) -> None:
    # Capacity as nvidia-smi reports it: 81,559 MiB = 81,559 x 1,048,576 = 85,520,809,984 B.
    # Budget: 85,520,809,984 x 0.9 = 76,968,728,985.6 -> 76,968,728,985 bytes (floored).
    # Stored weights, FP8, embedding included: 70,553,706,496 bytes.
    # Free for cache: 76,968,728,985 - 70,553,706,496 = 6,415,022,489. One sequence at
    # 32,768 tokens: 32,768 x 163,840 = 5,368,709,120 bytes, so
    # floor(6,415,022,489 / 5,368,709,120) = 1 sequence.
    # Longest context at batch 1: 6,415,022,489 / 163,840 = 39,154.2 -> 39,154 tokens.
    est = estimate(scenario(catalog, "llama-3.1-70b", "fp8", "fp8", "h100-sxm"), [32_768])
    assert est.memory is not None
    assert est.memory.budget_bytes == 76_968_728_985
    assert est.memory.stored_weight_bytes == 70_553_706_496
    assert est.memory.max_batch == 1
    assert est.memory.max_context == 39_154
    assert est.rows[0].fits is True


def test_batch_two_does_not_fit_at_32k(catalog: Catalog) -> None:
    # 2 x 5,368,709,120 = 10,737,418,240 > 6,415,022,489 free
    est = estimate(scenario(catalog, "llama-3.1-70b", "fp8", "fp8", "h100-sxm", batch=2), [32_768])
    assert est.rows[0].fits is False
    # 6,415,022,489 / (2 x 163,840) = 19,577.1 -> 19,577 tokens
    assert est.memory is not None and est.memory.max_context == 19_577


def test_weights_alone_overflow(catalog: Catalog) -> None:
    # BF16 70B: 141,107,412,992 stored bytes > 76,968,728,985 budget.
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
    # L4 as nvidia-smi reports it: 23,034 MiB; half of it is 11,517 MiB
    # = 11,517 x 1,048,576 = 12,076,449,792 bytes.
    est = estimate(
        scenario(catalog, "llama-3.1-8b", "bf16", "bf16", "l4", memory_utilization=0.5), [1]
    )
    assert est.memory is not None and est.memory.budget_bytes == 11_517 * MIB


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
    # Batch 2 at 8K needs 2 x 8,192 x 163,840 = 2,684,354,560 <= 6,415,022,489 free;
    # at 32K it does not (test above); longest context at batch 2 is 19,577 tokens.
    assert (doc["max_batch_that_fits"], doc["max_context_that_fits"]) == (1, 19_577)
    table = cli(*args, "--batch", "2").out
    assert "Fits" in table and "NO" in table


@pytest.mark.parametrize("value", ["0", "1.5", "nan"])
def test_bad_memory_utilization(cli: Run, value: str) -> None:
    r = cli("estimate", "-m", "llama-3.1-8b", "-g", "h100", "--memory-utilization", value)
    assert r.code == 2 and "memory utilization" in r.err


def _tiny(first_mixer: object) -> Model:
    """Two layers, hidden 64, vocab 100, untied: small enough to count by hand."""
    attention = Attention(num_heads=4, num_kv_heads=2, head_dim=16)
    mlp = DenseMLP(128)
    return Model(
        id="tiny",
        name="tiny",
        family="test",
        hidden_size=64,
        vocab_size=100,
        tie_word_embeddings=False,
        layers=(Layer(first_mixer, mlp), Layer(attention, mlp)),  # type: ignore[arg-type]
        max_context_tokens=1_000_000,
        official_params=0,
    )


def _on_a_megabyte(model: Model) -> Scenario:
    bf16 = Catalog().dtype("bf16")
    gpu = GpuSpec("mb", "1 MB", "test", 10**12, 1_000_000, "test")
    return Scenario(model, bf16, bf16, 10**12, gpu=gpu, memory_utilization=1.0)


def test_no_kv_and_no_state_means_any_batch_fits() -> None:
    # Per layer: q, o 2 x 64 x 64 = 8,192; k, v 2 x 64 x 32 = 4,096; MLP 3 x 64 x 128
    # = 24,576; norms 128: 36,992. Stored: 2 x 36,992 + embedding and LM head 2 x 6,400
    # + final norm 64 = 86,848 params = 173,696 bytes; free 1,000,000 - 173,696 = 826,304.
    model = _tiny(Attention(num_heads=4, num_kv_heads=2, head_dim=16))
    est = estimate(_on_a_megabyte(model), [0])
    assert est.memory is not None and est.memory.stored_weight_bytes == 173_696
    # At context 0 a sequence holds no byte: no batch is too big.
    assert est.memory.max_batch is None
    # KV: 2 layers x 2 (K, V) x 2 heads x 16 x 2 bytes = 256 bytes a token;
    # 826,304 / 256 = 3,227.75 -> 3,227 tokens at batch 1.
    assert est.memory.max_context == 3_227
    assert any("any batch fits at 0 tokens" in line for line in estimate_report(est).title)


def test_recurrent_state_bounds_the_batch_at_context_zero() -> None:
    # Layer 0 is Gated DeltaNet (2 key heads, 4 value heads, dims 8, conv kernel 4):
    # state 4 x 8 x 8 = 256 + conv (2 x 2 x 8 + 4 x 8 = 64) x 3 = 192 -> 448 elements
    # = 896 bytes per sequence in BF16. Its params: 64 x (2 x 16 + 2 x 32) = 6,144
    # + 64 x 2 x 4 = 512 + 32 x 64 = 2,048 + conv 64 x 4 = 256 + 2 x 4 = 8, + norm 8
    # = 8,976; with MLP 24,576 and norms 128: 33,680. Stored: 33,680 + 36,992 + 12,800 + 64
    # = 83,536 params = 167,072 bytes; free 832,928; 832,928 / 896 = 929.6 -> 929.
    model = _tiny(LinearAttention(2, 4, 8, 8, 4))
    est = estimate(_on_a_megabyte(model), [0])
    assert est.memory is not None and est.memory.stored_weight_bytes == 167_072
    assert est.memory.max_batch == 929
    assert any("929 sequences fit at 0 tokens" in line for line in estimate_report(est).title)
