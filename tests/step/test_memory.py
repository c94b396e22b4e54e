"""Memory fit: weights, KV and state against the room a server leaves, per GPU."""

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


# The room a server leaves on one H100 SXM (docs/serving.md, "The KV pool"):
# capacity as nvidia-smi reports it, 81,559 MiB = 85,520,809,984 B; CUDA reports 450 MiB
# (471,859,200 B) less, 85,048,950,784 B; x 0.9 = 76,544,055,705.6 -> 76,544,055,705 B.
# Llama-3.1-70B's activation peak at the H100's scheduler (8,192 tokens, 1,024 sequences):
# forward 8,192 x (3 x 8,192 + 3 x 28,672) x 2 = 1,811,939,328 B, sampler
# 1,024 x 128,256 x 15 = 1,970,012,160 B, the larger. Reserve 0.25 GiB = 268,435,456 B.
# Usable: 76,544,055,705 - 1,970,012,160 - 268,435,456 = 74,305,608,089 B.
# Stored weights, FP8, embedding included: 70,553,706,496 B; free for cache
# 74,305,608,089 - 70,553,706,496 = 3,751,901,593 B, at 163,840 B a token.
LLAMA_70B_FREE = 74_305_608_089 - 70_553_706_496


def test_llama_70b_fp8_on_one_h100_at_16k(catalog: Catalog) -> None:
    # One sequence at 16,384 tokens: 16,384 x 163,840 = 2,684,354,560 B, so
    # floor(3,751,901,593 / 2,684,354,560) = 1 sequence.
    # Longest context at batch 1: 3,751,901,593 / 163,840 = 22,899.8 -> 22,899 tokens,
    # in whole 16-token blocks 1,431 x 16 = 22,896: the pool serving sizes (floor(
    # 3,751,901,593 / (16 x 163,840)) = 1,431 blocks).
    est = estimate(scenario(catalog, "llama-3.1-70b", "fp8", "fp8", "h100-sxm"), [16_384])
    assert est.memory is not None
    # The budget reported stays capacity x utilization: 85,520,809,984 x 0.9 floored.
    assert est.memory.budget_bytes == 76_968_728_985
    assert est.memory.room.usable_bytes == 74_305_608_089
    assert est.memory.stored_weight_bytes == 70_553_706_496
    assert LLAMA_70B_FREE == 3_751_901_593
    assert est.memory.max_batch == 1
    assert est.memory.max_context == 22_896
    assert est.rows[0].fits is True


def test_no_sequence_of_32k_fits(catalog: Catalog) -> None:
    # 32,768 x 163,840 = 5,368,709,120 B > 3,751,901,593 B free.
    est = estimate(scenario(catalog, "llama-3.1-70b", "fp8", "fp8", "h100-sxm"), [32_768])
    assert est.memory is not None and est.memory.max_batch == 0
    assert est.rows[0].fits is False


def test_batch_two_does_not_fit_at_16k(catalog: Catalog) -> None:
    # 2 x 2,684,354,560 = 5,368,709,120 > 3,751,901,593 free
    est = estimate(scenario(catalog, "llama-3.1-70b", "fp8", "fp8", "h100-sxm", batch=2), [16_384])
    assert est.rows[0].fits is False
    # 3,751,901,593 / (2 x 163,840) = 11,449.9 -> 11,449 tokens -> 715 blocks = 11,440
    assert est.memory is not None and est.memory.max_context == 11_440


def test_a_context_holds_whole_blocks(catalog: Catalog) -> None:
    # At batch 1 a sequence of 22,897 tokens holds 1,432 blocks (22,912 tokens of room),
    # one more than the 1,431 that fit: 22,912 x 163,840 = 3,754,082,304 > 3,751,901,593.
    est = estimate(scenario(catalog, "llama-3.1-70b", "fp8", "fp8", "h100-sxm"), [22_896, 22_897])
    assert [r.fits for r in est.rows] == [True, False]


def test_qwen_72b_fp8_holds_the_pool_serving_holds(catalog: Catalog) -> None:
    # The review's case (s39 #1). Qwen2.5-72B (config.json: hidden 8,192, intermediate
    # 29,568, 80 layers, 64 heads, 8 KV heads of 128, vocabulary 152,064, untied, q/k/v
    # biases). Per layer: q, o 2 x 8,192^2 = 134,217,728; k, v 2 x 8,192 x 1,024 =
    # 16,777,216; biases 8,192 + 2 x 1,024 = 10,240; MLP 3 x 8,192 x 29,568 = 726,663,168;
    # norms 16,384: 877,684,736; x 80 = 70,214,778,880; embedding and LM head
    # 2 x 152,064 x 8,192 = 2,491,416,576; final norm 8,192: 72,706,203,648 B in FP8.
    # Activation peak: forward 8,192 x (3 x 8,192 + 3 x 29,568) x 2 = 1,855,979,520 B,
    # sampler 1,024 x 152,064 x 15 = 2,335,703,040 B, the larger.
    # Usable 76,544,055,705 - 2,335,703,040 - 268,435,456 = 73,939,917,209 B; free
    # 73,939,917,209 - 72,706,203,648 = 1,233,713,561 B; KV 80 x 2 x 8 x 128 x 1 = 163,840
    # B a token: floor(1,233,713,561 / (16 x 163,840)) = 470 blocks = 7,520 tokens (not the
    # 26,016 that capacity x 0.9 alone gave), and floor(1,233,713,561 / (4,096 x 163,840))
    # = 1 sequence of 4,096 tokens (not 6).
    est = estimate(scenario(catalog, "qwen2.5-72b", "fp8", "fp8", "h100-sxm"), [4_096])
    assert est.memory is not None
    assert est.memory.stored_weight_bytes == 72_706_203_648
    assert est.memory.room.activation_bytes == 2_335_703_040
    assert est.memory.room.usable_bytes == 73_939_917_209
    assert (est.memory.max_batch, est.memory.max_context) == (1, 7_520)


def test_weights_alone_overflow(catalog: Catalog) -> None:
    # BF16 70B: 141,107,412,992 stored bytes > 74,305,608,089 usable.
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
    # Batch 2 at 8K needs 2 x 8,192 x 163,840 = 2,684,354,560 <= 3,751,901,593 free;
    # at 32K it does not, nor does one sequence (tests above); longest context at batch 2
    # is 11,440 tokens (11,449 rounded down to 16-token blocks).
    assert (doc["max_batch_that_fits"], doc["max_context_that_fits"]) == (0, 11_440)
    # The room the fits are solved in, added beside the budget (docs/json.md).
    assert doc["memory_budget_bytes"] == 76_968_728_985
    assert doc["memory_usable_bytes"] == 74_305_608_089
    assert doc["activation_peak_bytes"] == 1_970_012_160
    assert doc["runtime_reserve_bytes"] == 268_435_456
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
    """A GPU that leaves the tiny model's server exactly 1,000,000 B at utilization 1: the
    450 MiB CUDA keeps (471,859,200 B), the 0.25 GiB reserve (268,435,456 B) and the
    activation peak at vLLM's base defaults (a GPU under 70 GiB: 2,048 tokens, 256
    sequences): forward 2,048 x (3 x 64 + 3 x 128) x 2 = 2,359,296 B over the sampler's
    256 x 100 x 15 = 384,000 B."""
    bf16 = Catalog().dtype("bf16")
    memory = 1_000_000 + 471_859_200 + 268_435_456 + 2_359_296
    gpu = GpuSpec("mb", "1 MB free", "test", 10**12, memory, "test")
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
    # 826,304 / 256 = 3,227.75 -> 3,227 tokens at batch 1, 201 whole blocks = 3,216.
    assert est.memory.max_context == 3_216
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


def test_short_form_model_leaves_the_activation_peak_out(catalog: Catalog, cli: Run) -> None:
    # Review s40 #1. 'params=8B,kv_bytes_per_token=131072': one stand-in layer of width 1
    # holds every parameter in its MLP, so a peak counted from it was 8,192 tokens x
    # (3 + 3 x 2.67e9) x 2 B = 131 TB. It is left out (its note says so): usable is the
    # H100's 76,544,055,705 B (worked above) less the 268,435,456 B reserve =
    # 76,275,620,249 B. Weights 8e9 x 2 B = 16.00e9 B (within a millionth): free about
    # 60,275,620,249 B; a sequence of 8,192 tokens holds 8,192 x 131,072 = 1,073,741,824 B,
    # floor(60.28e9 / 1.074e9) = 56 fit; at batch 1, 60,275,620,249 / 131,072 = 459,866.5
    # tokens, in whole 16-token blocks 28,741 x 16 = 459,856.
    est = estimate(
        scenario(catalog, "params=8B,kv_bytes_per_token=131072", gpu="h100-sxm"), [8_192]
    )
    assert est.memory is not None
    assert est.memory.room.activation_bytes == 0
    assert est.memory.room.usable_bytes == 76_275_620_249
    assert est.memory.stored_weight_bytes == pytest.approx(16e9, rel=1e-6)
    assert (est.memory.max_batch, est.memory.max_context) == (56, 459_856)
    assert est.rows[0].fits is True
    served = cli(
        "serving", "-m", "params=8B,kv_bytes_per_token=131072", "-g", "h100", "--input-len",
        "1000", "--output-len", "100", "--concurrency", "1", "--json",
    )  # fmt: skip
    assert json.loads(served.out)["kv_pool_tokens"] == 459_856
    assert "activation peak" in served.err and "left out" in served.err


def test_no_room_reads_none_and_zero_never_a_negative_size(cli: Run) -> None:
    # Review s40 #14. A 1 GiB H100: (1,073,741,824 - 471,859,200) x 0.9 = 541,694,361 B of
    # budget; a GPU under 70 GiB takes vLLM's 2,048 tokens and 256 sequences, so the
    # sampler peaks at 256 x 128,256 x 15 = 492,503,040 B (the forward pass, 2,048 x
    # (3 x 4,096 + 3 x 14,336) x 2 = 226,557,952 B, is less); with the 268,435,456 B reserve
    # 760,938,496 B > 541,694,361 B: nothing is usable, 0 and not -219,244,135.
    doc = json.loads(
        cli("estimate", "-m", "llama-3.1-8b", "-g", "h100,memory=1GiB", "-c", "8K", "--json").out
    )
    assert doc["activation_peak_bytes"] == 492_503_040
    assert doc["memory_usable_bytes"] == 0
    assert (doc["max_batch_that_fits"], doc["rows"][0]["fits"]) == (0, False)
    # --memory-utilization 0.01 on an H100: floor(85,048,950,784 x 0.01) = 850,489,507 B
    # against 1,970,012,160 + 268,435,456 B: the table says none, as serving refuses it.
    r = cli("estimate", "-m", "llama-3.1-8b", "-g", "h100", "-c", "8K", "--memory-utilization",
            "0.01")  # fmt: skip
    assert "memory per GPU: none usable" in r.out
    assert "alone overflow" in r.out.replace("\n", "")
    assert "-" not in r.out.split("memory per GPU:")[1].split("usable")[0]
    assert "alone take the 0.85 GB per GPU" in r.err.replace("\n", "")


def test_a_mac_with_nominal_memory_says_so(cli: Run) -> None:
    # Review s40 #4. m3-max-64gb gives the nominal 64 GiB (no Metal working set was found
    # to cite), m1-max-64gb the 48 GiB Metal reports: the figures stay as fitted, and the
    # nominal one says it is generous. 64 GiB = 68,719,476,736 B - 471,859,200 = 68,247,617,536
    # x 0.9 -> 61,422,855,782 B; Gemma 3 27B under vLLM's small-GPU limits (2,048 tokens,
    # 256 sequences): sampler 256 x 262,208 x 15 = 1,006,878,720 B (the forward pass,
    # 2,048 x 3 x (5,376 + 21,504) x 2 = 330,301,440 B, is less); reserve 268,435,456 B:
    # usable 60,147,541,606 B.
    args = ["estimate", "-m", "gemma-3-27b", "-c", "8K", "--engine", "roofline"]
    doc = json.loads(cli(*args, "-g", "m3-max-64gb", "--json").out)
    assert doc["memory_usable_bytes"] == 60_147_541_606
    assert "memory-nominal-unified" in [n["code"] for n in doc["notes"]]
    table = cli(*args, "-g", "m3-max-64gb")
    assert "vLLM's deductions standing in" in table.out
    assert "sized as vLLM does" not in table.out and "Metal" in table.err
    for gpu in ("m1-max-64gb", "m3-max-64gb,memory=48GiB", "h100"):
        notes = json.loads(cli(*args, "-g", gpu, "--json").out)["notes"]
        assert "memory-nominal-unified" not in [n["code"] for n in notes], gpu
