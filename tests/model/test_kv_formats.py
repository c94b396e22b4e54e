"""KV caches as engines store them: block-scaled KV formats (FlashMLA's FP8 latent, LMDeploy's
and KIVI's integer KV) and separate K and V dtypes, each checked by hand arithmetic."""

from __future__ import annotations

import json
from fractions import Fraction
from pathlib import Path
from typing import Any

import pytest

from decodecalc.resolving.resolve import resolve
from decodecalc.scenarios.spec import ScenarioSpec
from decodecalc.step.fast import ROW_FIELDS, FastStep
from decodecalc.step.step import StepModel
from tests.conftest import Run, shared_catalog

CATALOG = shared_catalog()

# bits per element, scales included, from each format's source:
KV_FORMATS = {
    # FlashMLA README: 512 FP8 bytes + 4 FP32 scales (16 bytes) + 64 BF16 RoPE values
    # (128 bytes) = 656 bytes for the 512 + 64 = 576 values of an MLA token
    "fp8-flashmla": Fraction(656 * 8, 576),
    # LMDeploy cache_engine.py: an FP16 scale and zero per head per token, head_dim 128
    "int8-lmdeploy": 8 + Fraction(2 * 16, 128),  # 8.25
    "int4-lmdeploy": 4 + Fraction(2 * 16, 128),  # 4.25
    # KIVI example.py: group_size 32, an FP16 scale and zero per group
    "kivi-2": 2 + Fraction(2 * 16, 32),  # 3
    "kivi-4": 4 + Fraction(2 * 16, 32),  # 5
}


@pytest.mark.parametrize(("dtype", "bits"), KV_FORMATS.items())
def test_kv_format_bits(dtype: str, bits: Fraction) -> None:
    d = CATALOG.dtype(dtype)
    assert d.bits_per_value == bits
    assert d.kv_cache and d.source.startswith("https://")


def test_dtypes_lists_them(cli: Run) -> None:
    r = cli("dtypes", "--json")
    assert r.code == 0
    listed = {d["id"]: d for d in json.loads(r.out)["dtypes"]}
    for dtype, bits in KV_FORMATS.items():
        assert listed[dtype]["kv_cache"] is True
        assert listed[dtype]["bits_per_value"] == pytest.approx(float(bits), rel=1e-12)


def _json(cli: Run, *args: str) -> Any:
    r = cli("estimate", *args, "--json")
    assert r.code == 0, r.err
    return json.loads(r.out)


def test_deepseek_v3_flashmla_kv_per_token(cli: Run) -> None:
    # 61 MLA layers x 656 bytes = 40,016 bytes per token, the whole latent on every GPU;
    # at 8,192 tokens: 40,016 x 8,192 = 327,811,072 bytes
    doc = _json(
        cli, "-m", "deepseek-v3", "-g", "h200", "--tp", "8", "-k", "fp8-flashmla", "-c", "8K"
    )
    assert doc["kv_bytes_per_token"] == 40_016
    assert [r["kv_bytes"] for r in doc["rows"]] == [327_811_072]


LLAMA_8B = ("-m", "llama-3.1-8b", "-g", "h100-sxm", "-k", "fp8", "--v-dtype", "bf16")


def test_fp8_keys_bf16_values(cli: Run) -> None:
    # Llama-3.1-8B: 32 layers x 8 KV heads x 128, K 1 byte + V 2 bytes:
    # 32 x 8 x 128 x (1 + 2) = 98,304 bytes per token; x 8,192 = 805,306,368 bytes
    doc = _json(cli, *LLAMA_8B, "-c", "8K")
    assert doc["inputs"]["v_dtype"] == "bf16"
    assert doc["kv_bytes_per_token"] == 98_304
    assert [r["kv_bytes"] for r in doc["rows"]] == [805_306_368]
    # crossover: BF16 weights read per step, 7,504,924,672 params (8,030,261,248 less the
    # 128,256 x 4,096 embedding a step only gathers rows of) x 2 = 15,009,849,344 bytes;
    # / 98,304 = 152,688.083 tokens
    assert doc["crossover_context"] == pytest.approx(15_009_849_344 / 98_304, rel=1e-12)
    # memory: the room a server leaves, (81,559 MiB - 450 MiB) x 0.9 = 76,544,055,705 bytes
    # less the sampler's activation peak 1,024 x 128,256 x 15 = 1,970,012,160 (over the
    # forward pass's 8,192 x (3 x 4,096 + 3 x 14,336) x 2 = 905,969,664) and the 268,435,456
    # reserve: 74,305,608,089; less 8,030,261,248 x 2 = 16,060,522,496 stored:
    # 58,245,085,593 free; / 98,304 = 592,499.6 tokens at batch 1, in whole 16-token blocks
    # 37,031 x 16 = 592,496; / 805,306,368 = 72 sequences at 8K
    assert doc["memory_budget_bytes"] == 76_968_728_985
    assert doc["memory_usable_bytes"] == 74_305_608_089
    assert doc["max_context_that_fits"] == 592_496
    assert doc["max_batch_that_fits"] == 72


def test_fractional_k_and_v_are_exact(cli: Run) -> None:
    # K int4-lmdeploy 17/32 byte, V q8_0 17/16 byte per element; 32,768 K and 32,768 V
    # elements per token: 17,408 + 34,816 = 52,224 bytes; at 1,000 tokens x batch 3:
    # 156,672,000 bytes, no rounding in between
    args = ("-m", "llama-3.1-8b", "-g", "h100-sxm", "-k", "int4-lmdeploy", "--v-dtype", "q8_0")
    doc = _json(cli, *args, "--batch", "3", "-c", "1000")
    assert doc["kv_bytes_per_token"] == 52_224
    assert [r["kv_bytes"] for r in doc["rows"]] == [156_672_000]


def test_mla_has_no_separate_v(cli: Run) -> None:
    """MLA caches one latent: the K dtype covers all of it, so --v-dtype changes nothing."""
    base = ("-m", "deepseek-v3", "-g", "h200", "--tp", "8", "-k", "fp8", "-c", "8K")
    same = _json(cli, *base)
    with_v = _json(cli, *base, "--v-dtype", "bf16")
    assert with_v["kv_bytes_per_token"] == same["kv_bytes_per_token"] == 61 * 576
    assert with_v["rows"] == same["rows"]


def test_v_dtype_must_hold_a_kv_cache(cli: Run) -> None:
    r = cli("estimate", *LLAMA_8B[:6], "--v-dtype", "q4-k")
    assert r.code == 2 and r.out == ""
    assert r.err.startswith("decodecalc: error: q4-k is a weight-only format")
    assert len(r.err.splitlines()) == 1


def test_explain_shows_k_and_v(cli: Run) -> None:
    r = cli("explain", *LLAMA_8B, "-c", "8K")
    assert r.code == 0
    # 268,435,456 = 8,192 x 32 x 8 x 128 K elements, as many V
    assert "K fp8 = 8 bits per element, V bf16 = 16 bits" in r.out
    assert "= 268,435,456 K x 1 + 268,435,456 V x 2 bytes, x batch 1 = 805,306,368 bytes" in r.out


def test_sweep_equals_the_estimator_with_two_dtypes() -> None:
    spec = ScenarioSpec("llama-3.1-8b", gpu="h100-sxm", kv_dtype="int4-lmdeploy", v_dtype="q8_0")
    scenario = resolve(spec, CATALOG)
    step, fast = StepModel.of(scenario), FastStep.of(scenario)
    for t in (1, 999, 8192):
        got = dict(zip(ROW_FIELDS, fast.row(t), strict=True))
        assert got["kv_bytes"] == step.kv_bytes(t) == t * 52_224


def test_compare_takes_v_dtypes(cli: Run) -> None:
    r = cli("compare", *LLAMA_8B[:6], "--v-dtype", "fp8,bf16", "-c", "8K", "--json")
    assert r.code == 0, r.err
    scenarios = json.loads(r.out)["scenarios"]
    assert [s["v_dtype"] for s in scenarios] == ["fp8", "bf16"]


def test_deployment_file_takes_v_dtype(cli: Run, tmp_path: Path) -> None:
    path = tmp_path / "deploy.yaml"
    path.write_text(
        "model: llama-3.1-8b\ngpu: h100-sxm\nkv_dtype: fp8\nv_dtype: bf16\ncontext: 8K\n"
        "targets:\n  min_crossover_context: 150000\n"
    )
    r = cli("check", str(path), "-f", "json")
    assert r.code == 0, r.err
    (result,) = json.loads(r.out)["results"]
    assert result["value"] == pytest.approx(15_009_849_344 / 98_304, abs=1)  # as above


def test_sweep_rows_name_k_and_v(cli: Run) -> None:
    """A sweep over V dtypes keeps its rows apart: kv_dtype is K's, v_dtype V's."""
    r = cli("sweep", *LLAMA_8B[:6], "--v-dtype", "fp8,bf16", "-c", "8K")
    assert r.code == 0, r.err
    header, *rows = r.out.splitlines()
    k, v = header.split(",").index("kv_dtype"), header.split(",").index("v_dtype")
    assert [(row.split(",")[k], row.split(",")[v]) for row in rows] == [
        ("fp8", "fp8"),
        ("fp8", "bf16"),
    ]
    kv = header.split(",").index("kv_bytes")
    # 32 x 8 x 128 x 8,192 x (1 + 1) and x (1 + 2) bytes
    assert [int(row.split(",")[kv]) for row in rows] == [536_870_912, 805_306_368]
