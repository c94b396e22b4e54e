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


@pytest.mark.parametrize(
    ("weights", "start"),
    [
        ("kivi-2", "kivi-2 is a KV-cache format: no checkpoint stores weights in it (try -"),
        ("int4-lmdeploy", "int4-lmdeploy is a KV-cache format"),
        ("fp8-flashmla", "fp8-flashmla is a KV-cache format"),
        ("fp8-ds-v4", "fp8-ds-v4 is a KV-cache format"),
        ("int64", "int64 is not a weight format: no checkpoint stores weights in it"),
    ],
)
def test_formats_no_checkpoint_stores_weights_in_are_refused_as_weights(
    cli: Run, weights: str, start: str
) -> None:
    """The dtype presets say what a format is for (weights: false): a KV-cache layout or an
    index table as --weights is one line and exit 2, as a weight-only format as -k is."""
    r = cli("estimate", "-m", "llama-3.1-8b", "-g", "h100", "-w", weights, "-c", "4K")
    assert r.code == 2 and r.out == ""
    assert r.err.startswith(f"decodecalc: error: {start}")
    assert len(r.err.splitlines()) == 1


def test_a_deepseek_v4_entry_is_refused_outside_deepseek_v4(cli: Run) -> None:
    """fp8-ds-v4 lays out DeepSeek-V4's compressed-attention entries (layer_kind), as
    fp8-flashmla lays out an MLA latent: each is refused on a model without such layers."""
    for model, kv, kind in (
        ("llama-3.1-8b", "fp8-ds-v4", "compressed attention"),
        ("deepseek-v4-flash", "fp8-flashmla", "mla"),
    ):
        r = cli("estimate", "-m", model, "-g", "h200", "-k", kv, "-c", "4K")
        assert r.code == 2 and r.out == ""
        assert r.err == (
            f"decodecalc: error: KV dtype '{kv}' lays out the cache of {kind} layers, and "
            f"{model} has no {kind} layers; try fp8 ('decodecalc show {model}' lists the KV "
            "dtypes it takes)\n"
        )
    assert cli("estimate", "-m", "deepseek-v4-flash", "-g", "h200", "-k", "fp8-ds-v4").code == 0


def test_show_lists_the_kv_formats_each_model_takes(cli: Run) -> None:
    def kv(model: str) -> set[str]:
        doc = json.loads(cli("show", model, "--json").out)
        return {r["kv_dtype"] for r in doc["kv_bytes_per_token"]}

    llama, v3, v4 = kv("llama-3.1-8b"), kv("deepseek-v3"), kv("deepseek-v4-flash")
    assert {"fp8", "kivi-2"} <= llama and not {"fp8-ds-v4", "fp8-flashmla"} & llama
    assert "fp8-flashmla" in v3 and "fp8-ds-v4" not in v3
    assert "fp8-ds-v4" in v4 and "fp8-flashmla" not in v4


def test_the_dtype_listing_says_what_each_format_holds(cli: Run) -> None:
    doc = {d["id"]: d for d in json.loads(cli("dtypes", "--json").out)["dtypes"]}
    assert (doc["kivi-2"]["weights"], doc["kivi-2"]["kv_cache"]) == (False, True)
    assert (doc["int64"]["weights"], doc["int64"]["kv_cache"]) == (False, False)
    assert (doc["q8-0"]["weights"], doc["q8-0"]["kv_cache"]) == (True, True)
    assert doc["fp8-flashmla"]["layer_kind"] == "mla" and doc["fp8"]["layer_kind"] is None


@pytest.mark.parametrize(
    ("model", "kv", "per_token", "noted"),
    [
        # Llama-3.2-1B: 16 layers x 8 KV heads x 64 x 2 (K, V) = 16,384 elements a token.
        # LMDeploy keeps an FP16 scale and an FP16 zero per head per token: 32 bits over 64
        # values, so 4 + 32/64 = 4.5 bits: 16,384 x 4.5 / 8 = 9,216 bytes (not 8,704 at
        # the 4.25 bits of a 128-wide head); int8: 8.5 bits, 16,384 x 8.5 / 8 = 17,408.
        ("llama-3.2-1b", "int4-lmdeploy", 9_216, True),
        ("llama-3.2-1b", "int8-lmdeploy", 17_408, True),
        # Llama-3.1-8B's heads are 128 wide: 32 x 8 x 128 x 2 = 65,536 elements x 4.25 / 8
        # = 34,816 bytes, the listed rate.
        ("llama-3.1-8b", "int4-lmdeploy", 34_816, False),
        # gpt-oss-20b: 24 layers x 8 KV heads x 64 x 2 = 24,576 elements x 4.5 / 8 = 13,824.
        ("gpt-oss-20b", "int4-lmdeploy", 13_824, True),
    ],
)
def test_lmdeploy_kv_is_priced_at_the_head_width(
    cli: Run, model: str, kv: str, per_token: int, noted: bool
) -> None:
    r = cli("estimate", "-m", model, "-g", "h100", "-k", kv, "-c", "1K", "--json")
    doc = json.loads(r.out)
    assert doc["kv_bytes_per_token"] == per_token
    assert ("kv-head-width" in {n["code"] for n in doc["notes"]}) is noted
    shown = json.loads(cli("show", model, "--json").out)["kv_bytes_per_token"]
    assert {x["kv_dtype"]: x["kv_bytes_per_token"] for x in shown}[kv] == per_token


def test_an_index_table_format_is_no_kv_cache_either(cli: Run) -> None:
    r = cli("estimate", "-m", "llama-3.1-8b", "-g", "h100", "-k", "int64", "-c", "4K")
    assert r.code == 2 and r.out == ""
    assert r.err == (
        "decodecalc: error: int64 is not a KV-cache dtype ('decodecalc dtypes' shows which "
        "formats hold a KV cache)\n"
    )
