"""decodecalc explain: one step worked through with the numbers substituted."""

from __future__ import annotations

import re
from pathlib import Path

from tests.conftest import Run

DATA = Path(__file__).parents[1] / "data" / "measured-decode.yaml"


def test_explain_walks_through_the_numbers(cli: Run) -> None:
    out = cli(
        "explain", "-m", "llama-3.1-70b", "-g", "h100", "-w", "fp8", "-k", "fp8", "-c", "200000"
    ).out
    for fragment in (
        "69,503,033,344",
        "32,768,000,000",
        "30.529 ms",
        "424,212.8 tokens",
        "memory-bound",
    ):
        assert fragment in out


def test_the_answer_holds_each_kinds_cache_as_worked_by_hand() -> None:
    """Qwen3-Next-80B-A3B (its config.json, tests/fixtures/configs/): 48 layers, every 4th
    full attention (full_attention_interval 4), the rest Gated DeltaNet."""
    from decodecalc import api
    from decodecalc.answers.explain import explain

    x = explain(api.scenario("qwen3-next-80b-a3b", "h100-sxm", engine="roofline"), 32768)
    kinds = {terms.kind: (terms.shape, count) for terms, count in x.cache.layers}
    # attention: 2 KV heads x (256 K + 256 V) = 1,024 elements a token, 48 / 4 = 12 layers
    assert kinds["attention"] == ("2 (K,V) x 2 KV heads x 256 = 1,024 elements per token", 12)
    # Gated DeltaNet: 32 value heads x 128 x 128 = 524,288 state, plus the conv's last 3
    # inputs over 2 x 16 x 128 + 32 x 128 = 8,192 channels (24,576): 548,864; 36 layers
    assert kinds["linear attention"] == (
        "no KV; a constant state of 548,864 elements",
        36,
    )
    # 12 layers x 1,024 x 32,768 tokens = 402,653,184 elements, 2 bytes each (BF16)
    assert x.cache.elements == 402_653_184
    assert x.cache.kv_bytes == 805_306_368
    # the state: 36 x 548,864 elements x 2 bytes = 39,518,208 bytes
    assert x.cache.state_bytes == 39_518_208
    assert x.engines == ()  # the roofline: no profile to work through


def test_explain_text_words_the_answer_it_is_given(cli: Run) -> None:
    """The worked text states each kind as the kind describes itself, with its count."""
    out = cli("explain", "-m", "qwen3-next-80b-a3b", "-g", "h100-sxm", "-c", "32K").out
    assert "12 layers of attention: 2 (K,V) x 2 KV heads x 256 = 1,024 elements per token" in out
    assert "36 layers of linear attention: no KV; a constant state of 548,864 elements" in out
    assert "recurrent state: 39,518,208 bytes, the same at every context" in out


def test_explain_lists_the_step_operation_by_operation(cli: Run) -> None:
    """One engine's step as its priced operations (step/operations.py), which add up to the
    step explain prints. DeepSeek-R1 FP8 on 8 x H200, TP 8, batch 64 at 4K, BF16 KV:
    - the MLA cache: 64 sequences x 4,096 tokens x 61 layers x (512 + 64) x 2 bytes
      = 18,421,383,168 bytes, 18,421.4 MB;
    - the routed experts one GPU reads: 58 MoE layers x 256 experts / 8 GPUs = 1,856
      experts of 3 x 7,168 x 2,048 = 44,040,192 FP8 bytes, of which a step touches
      1 - (1 - 8/256)^64 = 0.86891: 71,023.6 MB (the tool's unrounded share: 71,024.0);
    - each expert touched gets 64 x 8 / (256 x 0.86891) = 2.3 rows, in 16-row tiles."""
    out = cli(
        "explain", "-m", "deepseek-r1", "-g", "h200", "-w", "fp8", "--tp", "8",
        "--batch", "64", "-c", "4K", "--engine", "sglang",
    ).out  # fmt: skip
    listed = [
        line.strip()
        for line in out.splitlines()
        if line.startswith("     ") and re.search(r" -> [\d.]+ ms( \(.*\))?$", line)
    ]  # (a line may end with how its all-reduces were priced)
    assert any(
        line.startswith("attention (MLA") and "18,421.4 MB of cache" in line for line in listed
    )
    experts = next(line for line in listed if line.startswith("grouped expert GEMM"))
    assert "x 58: 71,024.0 MB" in experts and "2.3 rows an expert in tiles of 16" in experts
    total = next(line for line in out.splitlines() if line.startswith("   sglang: weights"))
    step_ms = float(total.rsplit("-> ", 1)[1].split()[0])
    listed_ms = sum(float(line.rsplit("-> ", 1)[1].split()[0]) for line in listed)
    assert abs(listed_ms - step_ms) < 0.001 * len(listed)  # each line rounded to 1 us


def test_explain_prices_the_all_reduces_at_the_measured_rates(cli: Run) -> None:
    """Llama-3.1-70B at TP 4: 80 layers x 2 all-reduces = 160 calls, each at vLLM 0.24.0's
    custom all-reduce on 4 H100s as aiconfigurator-core measured it (presets/kernels/
    h100-sxm.yaml: 4.78 us, 241 GB/s of bus bandwidth), moving a ring's 2 x 3/4 of
    1 x 8,192 x 2 bytes = 24,576 bytes: 160 x (4.78 us + 0.102 us) = 0.781 ms."""
    args = ("explain", "-m", "llama-3.1-70b", "-g", "h100-sxm", "--tp", "4", "-c", "8K")
    own = [x for x in cli(*args, "--engine", "vllm").out.splitlines() if "all-reduce (" in x]
    assert len(own) == 1
    assert f"x 160 -> {160 * (4.78e-6 + 24_576 / 241e9) * 1e3:.3f} ms" in own[0]
    assert own[0].endswith(
        "(160 x 4.78 us + the bytes at 241 GB/s: the all-reduce on 4 GPUs as the kernel "
        "tables named below measured it)"
    )


def test_the_ep_experts_line_names_the_busiest_gpus_share(cli: Run) -> None:
    """DeepSeek-V3 (E = 256, k = 8) on 8 H200s at batch 64: under TP every GPU reads the
    share of experts touched, 1 - (1 - 8/256)^64 = 1 - (31/32)^64 = 0.8689; under --ep the
    busiest of the 8 GPUs expects 30.30 of its 32 experts (docs/physics.md, "Expert
    parallelism"), 30.30 / 32 = 0.947, which the TP formula does not give."""
    base = ("explain", "-m", "deepseek-v3", "-g", "h200", "-w", "fp8", "--tp", "8")
    rest = ("-c", "4K", "--batch", "64")
    tp_line = next(ln for ln in cli(*base, *rest).out.splitlines() if "routed experts" in ln)
    ep_line = next(ln for ln in cli(*base, "--ep", *rest).out.splitlines() if "routed" in ln)
    tp_share = float(tp_line.split(" x ")[1].split()[0])
    ep_share = float(ep_line.split(" x ")[1].split()[0])
    assert abs(tp_share - (1 - (31 / 32) ** 64)) < 1e-4
    assert "E(1-(1-k/E)^B) / E" in tp_line
    assert abs(ep_share - 30.30 / 32) < 1e-3
    assert "E(1-(1-k/E)^B)" not in ep_line
    assert "busiest of 8 GPUs" in ep_line and "docs/physics.md" in ep_line
