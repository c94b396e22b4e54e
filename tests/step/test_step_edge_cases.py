"""The step's edges, each pinned by a hand-worked number: attention FLOPs stop at a sliding
window (estimator and sweep alike), a sweep rounds fractional KV bytes up, and TP splits a
recurrent state. Each test fails on a copy of the code broken just there.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from decodecalc.answers.estimate import estimate
from decodecalc.loading.catalog import Catalog
from decodecalc.model.hardware import GpuSpec
from decodecalc.scenarios.scenario import Scenario
from decodecalc.step.fast import ROW_FIELDS, FastStep
from decodecalc.step.step import StepModel
from tests.conftest import Run

MS = ROW_FIELDS.index("ms_per_token")
KV = ROW_FIELDS.index("kv_bytes")
BOUND = ROW_FIELDS.index("bound")

SLOW = GpuSpec(
    "slow",
    "a GPU with 1 TFLOP/s",
    "test",
    bandwidth_bytes_per_s=3_350_000_000_000,
    memory_bytes=80 * 2**30,
    memory_kind="HBM",
    flops_per_s=(("bf16", 10**12),),
)
"""H100 bandwidth, a thousandth of its FLOP/s: every step below is compute-bound."""


def _mistral_on_slow_gpu(catalog: Catalog) -> Scenario:
    bf16 = catalog.dtype("bf16")
    model = catalog.model("mistral-7b-v0.1")
    return Scenario(model, bf16, bf16, SLOW.bandwidth_bytes_per_s, gpu=SLOW)


# Mistral-7B-v0.1: 32 layers, every one with a 4,096-token window; 32 heads x 128.
# Multiplied params: 32 x (2 x 4,096^2 + 2 x 4,096 x 1,024 + 3 x 4,096 x 14,336 + 2 x 4,096)
# + LM head 32,000 x 4,096 + final norm 4,096 = 7,110,660,096; 2 x that = 14,221,320,192 FLOPs.
# Attention at T = 8,192 reads only the 4,096 window: 32 x 4 x 4,096 x 32 x 128
# = 2,147,483,648 FLOPs (8,192 tokens would be 4,294,967,296).
# Step: 16,368,803,840 FLOPs / 1e12 = 16.3688 ms (unwindowed: 18.5163 ms).
# Memory: 14,221,320,192 + 4,096 x 131,072 = 14,758,191,104 bytes / 3.35e12 = 4.405 ms.
WINDOWED_STEP_S = 16_368_803_840 / 1e12


def test_estimator_attention_flops_stop_at_the_window(catalog: Catalog) -> None:
    step = StepModel.of(_mistral_on_slow_gpu(catalog))
    assert step.compute_seconds(8192) == pytest.approx(WINDOWED_STEP_S, rel=1e-12)
    assert step.compute_seconds(1_000_000) == pytest.approx(WINDOWED_STEP_S, rel=1e-12)
    row = step.row(8192)
    assert row.bound == "compute"
    assert row.seconds_per_token == pytest.approx(WINDOWED_STEP_S, rel=1e-12)


def test_sweep_attention_flops_stop_at_the_window(catalog: Catalog) -> None:
    fast = FastStep.of(_mistral_on_slow_gpu(catalog))
    for context in (8192, 1_000_000):
        row = fast.row(context)
        assert row[BOUND] == "compute"
        assert row[MS] == pytest.approx(WINDOWED_STEP_S * 1000, rel=1e-12)
    # Below the window attention still grows: at 2,048 tokens 32 x 4 x 2,048 x 4,096
    # = 1,073,741,824 FLOPs, so 15,295,062,016 / 1e12 = 15.2951 ms.
    assert fast.row(2048)[MS] == pytest.approx(15_295_062_016 / 1e12 * 1000, rel=1e-12)


def _third_of_a_nibble(tmp_path: Path) -> Path:
    """A KV format of 5 bytes per 12 values: 40/12 = 10/3 bits, so byte counts are
    fractional unless the element count is a multiple of 12."""
    (tmp_path / "dtypes").mkdir()
    (tmp_path / "dtypes" / "third.yaml").write_text(
        "name: Ten thirds\nblock_bytes: 5\nblock_size: 12\nkv_cache: true\n"
        "description: test format of 10/3 bits per value\nsource: tests\n"
    )
    return tmp_path


def test_sweep_rounds_fractional_kv_bytes_up(tmp_path: Path, cli: Run) -> None:
    # Llama-3.1-8B: 2 x 32 layers x 8 KV heads x 128 = 65,536 elements a token.
    # At 10/3 bits: 65,536 x 10/3 / 8 = 27,306.67 -> 27,307 bytes at T = 1;
    # at T = 5: 327,680 x 5/12 = 136,533.33 -> 136,534 bytes.
    presets = _third_of_a_nibble(tmp_path)
    catalog = Catalog.with_user_dirs([presets])
    third, bf16 = catalog.dtype("third"), catalog.dtype("bf16")
    s = Scenario(catalog.model("llama-3.1-8b"), bf16, third, 3_350_000_000_000)
    fast = FastStep.of(s)
    assert [fast.row(t)[KV] for t in (1, 5)] == [27_307, 136_534]
    assert [StepModel.of(s).kv_bytes(t) for t in (1, 5)] == [27_307, 136_534]
    r = cli(
        "sweep", "-m", "llama-3.1-8b", "-g", "h100", "-k", "third", "-c", "1,5",
        "--presets", str(presets), "-f", "jsonl",
    )  # fmt: skip
    assert r.code == 0, r.err
    assert [json.loads(line)["kv_bytes"] for line in r.out.splitlines()] == [27_307, 136_534]


def test_linear_attention_state_splits_across_tp(catalog: Catalog) -> None:
    # Qwen3-Next-80B-A3B: 36 of 48 layers are Gated DeltaNet (every 4th is full attention),
    # each with a state of 32 value heads x 128 x 128 = 524,288 elements plus the
    # convolution's last 3 inputs of (2 x 16 x 128 + 32 x 128 = 8,192) channels = 24,576:
    # 548,864 elements x 36 = 19,759,104 per sequence, 39,518,208 bytes in BF16 on one GPU.
    # TP 2 splits the heads and channels: 19,759,104 bytes per GPU.
    bf16 = catalog.dtype("bf16")
    model = catalog.model("qwen3-next-80b-a3b")
    one = Scenario(model, bf16, bf16, 3_350_000_000_000)
    two = Scenario(model, bf16, bf16, 3_350_000_000_000, tp=2)
    assert StepModel.of(one).state_bytes == 39_518_208
    assert StepModel.of(two).state_bytes == 19_759_104
    assert estimate(two, [0]).rows[0].state_bytes == 19_759_104
