"""Prefill: max(compute, memory) + communication (+ the per-step overhead, once).

A prompt pass streams every weight once (for MoE, the experts B x P tokens touch), writes
the prompts' KV cache, and under TP all-reduces B x P tokens of activations twice a layer.
It multiplies every prompt token by every weight but the LM head, which only the last
position of each prompt meets (engines compute logits there alone: step/flops.py
pass_flops). Every figure below is worked by hand from the model's config and the GPU's
datasheet.
"""

from __future__ import annotations

import json

import pytest

from decodecalc.answers.generate import UNKNOWN_COMPUTE, generate
from decodecalc.errors import InputError
from decodecalc.loading.catalog import Catalog
from decodecalc.scenarios.scenario import Scenario
from decodecalc.views.generation import generation_report
from tests.conftest import Run
from tests.conftest import preset_scenario as h100

H100_BW = 3.35e12
H100_BF16 = 989.4e12
H100_FP8 = 1978.9e12


def test_short_prompt_is_memory_bound(catalog: Catalog) -> None:
    # Llama-3.1-70B, FP8 weights, BF16 KV, H100 SXM, B=1, P=16.
    # Weights read once: 69,503,033,344 bytes (physics.md section 2).
    # KV written: 16 tokens x 2 x 80 layers x 8 heads x 128 x 2 bytes = 16 x 327,680 = 5,242,880.
    # Memory: 69,508,276,224 bytes / 3.35e12 = 20.7487 ms.
    # Compute: LM head 128,256 x 8,192 = 1,050,673,152 params, met by the last token only;
    # 2 x (69,503,033,344 - 1,050,673,152) x 16 + 2 x 1,050,673,152
    # + 80 x 4 x 64 x 128 x (16 x 15 / 2 = 120)
    # = 2,190,475,526,144 + 2,101,346,304 + 314,572,800 = 2,192,891,445,248 FLOPs
    # / 1,978.9e12 = 1.1081 ms.
    p = generate(h100(catalog, "llama-3.1-70b", "fp8"), 16, 10).prefill
    assert p.bytes == 69_508_276_224
    assert p.flops == 2_192_891_445_248
    assert p.memory_seconds == pytest.approx(69_508_276_224 / H100_BW, rel=1e-12)
    assert p.compute_seconds == pytest.approx(2_192_891_445_248 / H100_FP8, rel=1e-12)
    assert p.bound == "memory"
    assert p.seconds == pytest.approx(69_508_276_224 / H100_BW, rel=1e-12)
    # Never less than one read of the weights (69,503,033,344 / 3.35e12 = 20.747 ms).
    assert p.seconds > 69_503_033_344 / H100_BW


def test_long_prompt_is_compute_bound(catalog: Catalog) -> None:
    # Llama-3.1-8B BF16, B=1, P=8,192. Memory: 15,009,849,344 weight bytes + 8,192 x 131,072
    # KV bytes = 15,009,849,344 + 1,073,741,824 = 16,083,591,168 bytes / 3.35e12 = 4.801 ms.
    # Compute: LM head 128,256 x 4,096 = 525,336,576 params at the last token only;
    # 2 x (7,504,924,672 - 525,336,576) x 8,192 + 2 x 525,336,576
    # + 32 x 4 x 32 x 128 x (8,192 x 8,191 / 2 = 33,550,336)
    # = 114,353,571,364,864 + 1,050,673,152 + 17,590,038,560,768
    # = 131,944,660,598,784 FLOPs / 989.4e12 = 133.358 ms: compute-bound.
    p = generate(h100(catalog, "llama-3.1-8b"), 8192, 1).prefill
    assert p.bytes == 16_083_591_168
    assert p.flops == 131_944_660_598_784
    assert p.memory_seconds == pytest.approx(16_083_591_168 / H100_BW, rel=1e-12)
    assert p.bound == "compute"
    assert p.seconds == pytest.approx(131_944_660_598_784 / H100_BF16, rel=1e-12)


def test_the_lm_head_meets_only_the_last_prompt_token(catalog: Catalog) -> None:
    # Review s39 #3: llama-3.2-1b and llama-3.1-8b, BF16, B=1, P=1,024 on an H100 SXM.
    # Llama-3.2-1B (config.json: hidden 2,048, 16 layers, 32 heads of 64, vocab 128,256,
    # tied): 1,235,814,400 params, all multiplied (the tied embedding is the LM head);
    # LM head 128,256 x 2,048 = 262,668,288.
    # Attention: 16 layers x 4 x 32 heads x 64 x (1,024 x 1,023 / 2 = 523,776 pairs)
    # = 16 x 8,192 x 523,776 = 68,652,367,872.
    # FLOPs: 2 x (1,235,814,400 - 262,668,288) x 1,024 + 2 x 262,668,288 + 68,652,367,872
    # = 1,993,003,237,376 + 525,336,576 + 68,652,367,872 = 2,062,180,941,824
    # (the LM head at every token gave 2 x 1,235,814,400 x 1,024 + 68,652,367,872
    # = 2,599,600,259,072, 26% more). Compute 2,062,180,941,824 / 989.4e12 = 2.0843 ms,
    # above memory (2,471,628,800 + 1,024 x 32,768 KV bytes) / 3.35e12 = 0.748 ms.
    one = generate(h100(catalog, "llama-3.2-1b"), 1024, 10).prefill
    assert one.flops == 2_062_180_941_824
    assert one.bound == "compute"
    assert one.seconds == pytest.approx(2_062_180_941_824 / H100_BF16, rel=1e-12)
    # Llama-3.1-8B: 7,504,924,672 multiplied params (8,030,261,248 less the untied input
    # embedding 525,336,576), LM head 128,256 x 4,096 = 525,336,576.
    # Attention: 32 layers x 4 x 32 heads x 128 x 523,776 = 274,609,471,488.
    # FLOPs: 2 x (7,504,924,672 - 525,336,576) x 1,024 + 2 x 525,336,576 + 274,609,471,488
    # = 14,294,196,420,608 + 1,050,673,152 + 274,609,471,488 = 14,569,856,565,248
    # (7% below 2 x 7,504,924,672 x 1,024 + 274,609,471,488 = 15,644,695,199,744).
    eight = generate(h100(catalog, "llama-3.1-8b"), 1024, 10).prefill
    assert eight.flops == 14_569_856_565_248
    assert eight.seconds == pytest.approx(14_569_856_565_248 / H100_BF16, rel=1e-12)
    # Two prompts: each pays its own LM head row, 2 x the above.
    two = generate(h100(catalog, "llama-3.1-8b", batch=2), 1024, 10).prefill
    assert two.flops == 2 * 14_569_856_565_248


def test_tp8_adds_all_reduces_over_every_prompt_token(catalog: Catalog) -> None:
    # Llama-3.1-70B FP8/FP8, TP 8 over NVLink 4 (450 GB/s, 10 us), B=1, P=1,024.
    # Weights per GPU: the 1,318,912 norm params stay whole, the rest splits 8 ways:
    # (69,503,033,344 - 1,318,912) / 8 + 1,318,912 = 8,689,033,216 bytes.
    # KV: one KV head per GPU, 2 x 80 x 1 x 128 = 20,480 bytes a token x 1,024 = 20,971,520.
    # Memory: 8,710,004,736 / 3.35e12 = 2.600 ms.
    # Compute: (2 x (69,503,033,344 - 1,050,673,152) x 1,024 + 2 x 1,050,673,152
    # + 80 x 4 x 64 x 128 x 523,776) / 8 / 1,978.9e12
    # = (140,190,433,673,216 + 2,101,346,304 + 1,373,047,357,440) / 8 / 1,978.9e12
    # = 141,565,582,376,960 / 8 / 1,978.9e12 = 8.9422 ms.
    # Communication: message 1,024 x 8,192 x 2 = 16,777,216 bytes; ring 2 x 7/8 x 16,777,216
    # / 450e9 = 65.2447 us; 2 x 80 all-reduces x (10 + 65.2447) us = 12.0392 ms.
    s = h100(catalog, "llama-3.1-70b", "fp8", "fp8", tp=8, link=catalog.link("nvlink4"))
    p = generate(s, 1024, 1).prefill
    assert p.bytes == 8_710_004_736
    assert p.flops == 141_565_582_376_960
    compute = 141_565_582_376_960 / 8 / H100_FP8
    comm = 160 * (10e-6 + 2 * 7 / 8 * 16_777_216 / 450e9)
    assert p.compute_seconds == pytest.approx(compute, rel=1e-12)
    assert p.comm_seconds == pytest.approx(comm, rel=1e-12)
    assert p.bound == "compute"
    assert p.seconds == pytest.approx(compute + comm, rel=1e-12)


def test_moe_prompt_reads_the_experts_its_tokens_touch(catalog: Catalog) -> None:
    # Mixtral-8x7B BF16, B=1, P=16: 16 tokens each pick 2 of 8 experts, so a layer reads
    # 8 x (1 - (6/8)^16) = 7.92 experts, not the 2 one decode step reads.
    # Routed: 32 layers x 8 experts x 3 x 4,096 x 14,336 = 45,097,156,608 params; read
    # 45,097,156,608 x (1 - 3^16 / 4^16) = 45,097,156,608 - 10.5 x 43,046,721
    # = 44,645,166,037.5 params = 89,290,332,075 bytes.
    # Always read: 32 x (q, o 2 x 4,096^2 + k, v 2 x 4,096 x 1,024 + router 4,096 x 8
    # + norms 2 x 4,096) + LM head 32,000 x 4,096 + final norm 4,096 = 1,474,564,096 params
    # = 2,949,128,192 bytes. KV: 16 x 2 x 32 x 8 x 128 x 2 = 2,097,152 bytes.
    # Memory: 92,241,557,419 bytes / 3.35e12 = 27.535 ms.
    # Compute: multiplied params 1,474,564,096 + 45,097,156,608 / 4 = 12,748,853,248, of
    # which the LM head 32,000 x 4,096 = 131,072,000 meets the last token only:
    # 2 x 12,617,781,248 x 16 + 2 x 131,072,000 + 32 x 4 x 32 x 128 x 120
    # = 403,768,999,936 + 262,144,000 + 62,914,560 = 404,094,058,496 FLOPs = 0.408 ms.
    p = generate(h100(catalog, "mixtral-8x7b"), 16, 1).prefill
    assert p.bytes == 89_290_332_075 + 2_949_128_192 + 2_097_152
    assert p.flops == 404_094_058_496
    assert p.bound == "memory"
    assert p.seconds == pytest.approx(92_241_557_419 / H100_BW, rel=1e-12)


def test_unknown_flops_is_memory_time_with_a_note(catalog: Catalog) -> None:
    # Llama-3.2-1B BF16 on an M1 Max (400 GB/s, no FLOP/s known), B=1, P=512.
    # Weights (tied: the embedding is the LM head, read): 128,256 x 2,048 + 16 x (2 x 2,048^2
    # + 2 x 2,048 x 512 + 3 x 2,048 x 8,192 + 2 x 2,048) + 2,048 = 1,235,814,400 params
    # = 2,471,628,800 bytes; KV 512 x 2 x 16 x 8 x 64 x 2 = 16,777,216 bytes.
    # Memory: 2,488,406,016 / 400e9 = 6.22101504 ms.
    m1 = catalog.gpu("m1-max")
    model, bf16 = catalog.model("llama-3.2-1b"), catalog.dtype("bf16")
    for s in (
        Scenario(model, bf16, bf16, m1.bandwidth_bytes_per_s, gpu=m1),
        Scenario(model, bf16, bf16, 400 * 10**9),  # --bandwidth alone
    ):
        g = generate(s, 512, 4)
        assert g.prefill.bytes == 2_488_406_016
        assert g.prefill.compute_seconds is None and g.prefill.bound == "memory"
        assert g.prefill_seconds == pytest.approx(6.22101504e-3, rel=1e-12)
        assert UNKNOWN_COMPUTE in g.notes  # with the step's own (roofline, no FLOP/s rate)
        doc = generation_report(g).document
        assert doc["prefill_compute_ms"] is None and doc["prefill_bound"] == "memory"
        assert {"code": "prefill-compute-not-counted", "message": UNKNOWN_COMPUTE.message} in (
            doc["notes"]
        )
        assert "compute not counted" in str(generation_report(g).records)


def test_overhead_once_and_an_empty_prompt_refused(catalog: Catalog) -> None:
    # The 70B FP8 pass above is 20.7487 ms of memory; 0.3 ms of overhead is paid once.
    plain = generate(h100(catalog, "llama-3.1-70b", "fp8"), 16, 1).prefill
    slow = generate(h100(catalog, "llama-3.1-70b", "fp8", overhead_s=0.0003), 16, 1).prefill
    assert slow.seconds == pytest.approx(plain.seconds + 0.0003, rel=1e-12)
    # The prefill yields the first new token, so a prompt of no tokens has nothing to run.
    with pytest.raises(InputError, match="at least one token"):
        generate(h100(catalog, "llama-3.1-70b", "fp8", overhead_s=0.0003), 0, 1)


def test_json_fields(catalog: Catalog) -> None:
    g = generate(h100(catalog, "llama-3.1-70b", "fp8"), 16, 10)
    doc = generation_report(g).document
    assert doc["prefill_bound"] == "memory"
    assert doc["prefill_memory_ms"] == pytest.approx(69_508_276_224 / H100_BW * 1000)
    assert doc["prefill_compute_ms"] == pytest.approx(2_192_891_445_248 / H100_FP8 * 1000)
    assert doc["prefill_comm_ms"] == 0
    assert doc["prefill_s"] == pytest.approx(69_508_276_224 / H100_BW)
    assert doc["total_s"] == pytest.approx(doc["prefill_s"] + doc["decode_s"])
    # Only the roofline note: nothing about compute, fit or the model's maximum context.
    assert [n["code"] for n in doc["notes"]] == ["roofline"]


def test_cli_example_from_the_issue(cli: Run) -> None:
    r = cli(
        "generate",
        "-m",
        "llama-3.1-70b",
        "-g",
        "h100-sxm",
        "-w",
        "fp8",
        "-p",
        "16",
        "-n",
        "10",
        "--json",
    )
    doc = json.loads(r.out)
    # 69,508,276,224 bytes / 3.35e12 = 20.7487 ms, not the 1.1 ms of FLOPs alone.
    assert doc["prefill_s"] == pytest.approx(69_508_276_224 / H100_BW)
    assert doc["prefill_bound"] == "memory"
