"""DeepSeek-V4's compressed attention and its reader, against hand counts and the published
checkpoints (tests/fixtures/configs/SOURCES.md; docs/physics.md section 7 works the KV by
hand beside DeepSeek-V3.2's)."""

from __future__ import annotations

from fractions import Fraction
from pathlib import Path

import pytest

from decodecalc import api
from decodecalc.loading.catalog import Catalog
from decodecalc.model.compressed_attention import CompressedAttention
from decodecalc.step.step import StepModel
from tests.conftest import Run

CONFIGS = Path(__file__).parents[1] / "fixtures" / "configs"
M = 1_048_576

# The published safetensors totals (model.safetensors.index.json metadata.total_size).
FLASH_TOTAL_SIZE = 159_609_485_896  # deepseek-ai/DeepSeek-V4-Flash @ 60d8d707
PRO_TOTAL_SIZE = 864_704_792_696  # deepseek-ai/DeepSeek-V4-Pro @ b5968e91


def fp8(params: int) -> Fraction:
    """E4M3 with a UE8M0 byte per 128 x 128 block: 16,385 bytes per 16,384 values."""
    return Fraction(params * 16_385, 16_384)


def mtp_layer_bytes(d: int, heads: int, q: int, o: int, groups: int, e: int, i: int) -> int:
    """The checkpoint's mtp.0 (a window-only layer plus e_proj, h_proj, three norms and a
    head merge), which decodecalc does not count: written out from its tensor shapes."""
    attention = q * d + heads * 512 * q + 512 * d + o * heads * 512 + d * groups * o
    linear = attention + 3 * i * d + 2 * d * d  # + shared expert, e_proj, h_proj
    experts = Fraction(e * 3 * i * d * 17, 32)  # FP4 pairs + a UE8M0 byte per 32: 4.25 bits
    bf16 = 2 * (q + 512 + 2 * d + 3 * d + e * d)  # q/kv norms, 5 norms, gate
    hc = 2 * (24 * 4 * d + 27) + 4 + 16 * d + 1  # two mixes and the head merge
    fp32 = 4 * (heads + hc + e)  # sinks, hyper-connections, gate bias
    return int(fp8(linear) + experts) + bf16 + fp32


def test_flash_params_by_hand(catalog: Catalog) -> None:
    """Per layer (43): attention wq_a 1,024 x 4,096 + wq_b 32,768 x 1,024 + wkv 512 x 4,096
    + wo_a 8,192 x 4,096 + wo_b 4,096 x 8,192 + norms 1,536 + sinks 64 = 106,956,352;
    hyper-connections 2 x (24 x 16,384 + 27) = 786,486; two norms 8,192; experts
    256 x 3 x 2,048 x 4,096 = 6,442,450,944; shared 25,165,824; gate 1,048,576: 6,576,416,374,
    x 43 = 282,785,904,082. Gate biases 40 x 256 = 10,240 (3 hash layers have none). HCA
    compressors 20 x (2 x 512 x 4,096 + 128 x 512 + 512) = 85,207,040; CSA 21 x (compressor
    2 x 1,024 x 4,096 + 4 x 1,024 + 512 + indexer wq_b 8,192 x 1,024 + weights_proj
    64 x 4,096 + its compressor 2 x 256 x 4,096 + 4 x 256 + 128) = 401,987,712. Embedding and
    head 2 x 129,280 x 4,096 = 1,059,061,760, final norm 4,096, head merge 65,541, hash tables
    3 x 129,280 x 6 = 2,327,040: 284,334,567,511 (the card: 284B)."""
    model = catalog.model("deepseek-v4-flash")
    assert model.total_params() == 284_334_567_511
    from_fixture = api.load_model(str(CONFIGS / "deepseek-v4-flash-0731.json"))
    assert from_fixture.total_params() == 284_334_567_511  # the DSpark stages not counted


def test_pro_params_match_the_checkpoint_count(catalog: Catalog) -> None:
    """1,572,997,201,763 logical parameters in the main model (FP4 pairs as two, no scales,
    no hash tables: a count from the checkpoint's headers, SOURCES.md) + 3 x 129,280 x 6
    hash-table entries."""
    assert catalog.model("deepseek-v4-pro").total_params() == 1_572_997_201_763 + 2_327_040
    from_fixture = api.load_model(str(CONFIGS / "deepseek-v4-pro.json"))
    assert from_fixture.total_params() == 1_572_997_201_763 + 2_327_040


def stored(model: str) -> int:
    s = api.scenario(model, "b200")
    return StepModel.of(s).stages[0].stored_weight_bytes


def test_flash_bytes_by_format_match_the_published_total() -> None:
    """FP8 (attention q, o 4,328,521,728 + down-projections 270,532,608 + shared experts
    1,082,130,432 + indexer 176,160,768 = 5,857,345,536 params) x 16,385 / 16,384 =
    5,857,703,040; FP4 experts 277,025,390,592 x 4.25 / 8 = 147,169,738,752; BF16 (embedding,
    head, norms, router, compressors: 1,414,188,672) x 2 = 2,828,377,344; FP32 (hyper-
    connections, sinks, ape, gate biases: 35,315,671) x 4 = 141,262,684; int64 hash tables
    2,327,040 x 8 = 18,616,320. Sum 156,015,698,140; with mtp.0 the index's total_size."""
    assert stored("deepseek-v4-flash") == 156_015_698_140
    mtp = mtp_layer_bytes(4096, 64, 1024, 1024, 8, 256, 2048)
    assert mtp == 3_593_787_756
    assert stored("deepseek-v4-flash") + mtp == FLASH_TOTAL_SIZE


def test_pro_bytes_match_the_published_total() -> None:
    mtp = mtp_layer_bytes(7168, 128, 1536, 1024, 16, 384, 3072)
    assert stored("deepseek-v4-pro") + mtp == PRO_TOTAL_SIZE


FLASH_CSA = CompressedAttention(64, 512, 64, 1024, 1024, 8, 128, 4, 512, 64, 128)
FLASH_HCA = CompressedAttention(64, 512, 64, 1024, 1024, 8, 128, 128)
FLASH_SWA = CompressedAttention(64, 512, 64, 1024, 1024, 8, 128, 0)


@pytest.mark.parametrize(
    ("layer", "pooled", "index_bytes"),
    [
        # 512 elements per entry, one entry per 4 tokens: 128 a token; the top 512 entries
        # cover 2,048 tokens. Index keys: (128 FP8 + one FP32 scale) / 4 = 33 bytes a token.
        (FLASH_CSA, ((4, 128, 2048),), 33),
        (FLASH_HCA, ((128, 4, None),), 0),  # 512 / 128 = 4 a token, all read
        (FLASH_SWA, (), 0),
    ],
    ids=["csa", "hca", "window"],
)
def test_cache_per_token_by_layer_kind(
    layer: CompressedAttention, pooled: tuple[object, ...], index_bytes: int
) -> None:
    assert layer.kv_elements_per_token(8) == 512  # the window's entry, whole on every rank
    assert layer.sliding_window == 128
    assert layer.compressed_kv == pooled
    assert layer.fixed_kv_bytes_per_token == index_bytes


def flash(kv_dtype: str) -> StepModel:
    return StepModel.of(api.scenario("deepseek-v4-flash", "b200", kv_dtype=kv_dtype))


# Held per sequence, T >= 128: 43 x 128 x 512 window elements + (21 x 128 + 20 x 4) T pooled
# = 2,818,048 + 2,768 T elements, x bytes each, + 21 x 33 = 693 T index bytes.
#   BF16: 5,636,096 + 6,229 T. FP8: 2,818,048 + 3,461 T.
# Read per step, T >= 2,048: 2,818,048 + 21 x 2,048 x 128 = 8,323,072 elements + 80 T (HCA),
# x bytes, + 693 T. BF16: 16,646,144 + 853 T. FP8: 8,323,072 + 773 T.
@pytest.mark.parametrize(
    ("kv", "context", "held", "read"),
    [
        ("bf16", 8192, 56_664_064, 23_633_920),
        ("bf16", 131_072, 822_083_584, 128_450_560),
        ("bf16", M, 6_537_216_000, 911_081_472),
        ("fp8", 8192, 31_170_560, 14_655_488),
        ("fp8", 131_072, 456_458_240, 109_641_728),
        ("fp8", M, 3_631_939_584, 818_872_320),
        # SGLang's 584-byte entries: held 43 x 128 x 584 = 3,214,336 + (21 x 146 + 20 x 4.5625
        # + 693) T = 3,214,336 + 3,850.25 T; read 3,214,336 + 21 x 512 x 584 = 6,279,168 +
        # (20 x 4.5625 + 693) T = 784.25 T past 2,048 tokens.
        ("fp8-ds-v4", M, 4_040_494_080, 831_839_232),
    ],
)
def test_flash_store_and_read(kv: str, context: int, held: int, read: int) -> None:
    step = flash(kv)
    assert step.kv_bytes(context, held=True) == held
    assert step.kv_bytes(context) == read


def test_flash_crossover_is_past_ten_million_tokens() -> None:
    """Past 2,048 tokens only the HCA entries and the index keys grow: 853 bytes a token in
    BF16, so T* = (weights read - 16,646,144) / 853; FP8 KV: (weights - 8,323,072) / 773."""
    for kv, fixed, slope in (("bf16", 16_646_144, 853), ("fp8", 8_323_072, 773)):
        step = flash(kv)
        assert step.crossover() == Fraction(step.weight_bytes - fixed, slope)
    assert 13_000_000 < flash("bf16").crossover() < 13_200_000  # type: ignore[operator]


def test_flash_holds_8_percent_of_v32s_cache_at_1m() -> None:
    """DeepSeek-V3.2 holds 61 x (576 elements + 132 index bytes) a token: FP8 61 x 708 =
    43,188 bytes, 45,285,900,288 at 1M. V4-Flash's 3,631,939,584 is 8.0% of it (the card's
    "10%" is V4-Pro's: 11.5% by this count, docs/physics.md section 7)."""
    v32 = StepModel.of(api.scenario("deepseek-v3.2", "b200", kv_dtype="fp8"))
    assert v32.kv_bytes(M, held=True) == 43_188 * M
    share = flash("fp8").kv_bytes(M, held=True) / v32.kv_bytes(M, held=True)
    assert share == pytest.approx(0.0802, abs=0.0001)


def test_indexer_and_window_flops() -> None:
    """A CSA layer at T = 1M: (128 window + 512 top) entries x 4 x 64 heads x 512 = 83,886,080
    and the indexer's 262,144 entries x 2 x 64 x 128 = 4,294,967,296."""
    assert FLASH_CSA.attention_flops(M) == 640 * 4 * 64 * 512 + (M // 4) * 2 * 64 * 128
    assert FLASH_HCA.attention_flops(M) == (128 + M // 128) * 4 * 64 * 512
    assert FLASH_SWA.attention_flops(M) == 128 * 4 * 64 * 512


def test_draft_entries_must_match_the_dspark_stages(cli: Run, tmp_path: Path) -> None:
    import json

    config = json.loads((CONFIGS / "deepseek-v4-flash-0731.json").read_text())
    config["compress_ratios"] = config["compress_ratios"][:-1]
    path = tmp_path / "config.json"
    path.write_text(json.dumps(config))
    r = cli("show", str(path))
    assert r.code == 2
    assert "has 45 entries; expected 43 layers + 3 draft layers" in r.err


@pytest.mark.parametrize("command", ["estimate", "explain"])
def test_cli_estimate_and_explain(cli: Run, command: str) -> None:
    contexts = "8K..1M" if command == "estimate" else "1M"
    r = cli(command, "-m", "deepseek-v4-flash", "-g", "b200", "-c", contexts)
    assert r.code == 0, r.err
    assert "1,048,576" in r.out


def test_compare_shows_the_kv_term_shrink(cli: Run) -> None:
    """At 1M on a B200 (BF16 KV, B = 1): V3.2 reads 8,587,051,008 KV bytes beside
    38,520,046,563 of weights (18.2%), V4-Flash 911,081,472 beside 11,217,572,060 (7.5%); the
    crossovers 4,766,037 and 13,131,214 tokens (docs/physics.md section 3)."""
    import json

    r = cli(
        "compare", "-m", "deepseek-v3.2,deepseek-v4-flash", "-g", "b200", "-c", "1M",
        "--format", "json",
    )  # fmt: skip
    assert r.code == 0, r.err
    rows = {row["model"]: row for row in json.loads(r.out)["rows"]}
    v32, v4 = rows["deepseek-v3.2"], rows["deepseek-v4-flash"]
    assert v32["kv_share"] == pytest.approx(8_587_051_008 / (8_587_051_008 + 38_520_046_563))
    assert v4["kv_share"] == pytest.approx(911_081_472 / (911_081_472 + 11_217_572_060))
    assert round(v32["crossover_context"]) == 4_766_037
    assert round(v4["crossover_context"]) == 13_131_214


def test_a_serving_pool_holds_the_pooled_entries() -> None:
    """vLLM-style KV pool for V4-Flash in BF16: 43 window slots of 1,024 bytes, 21 CSA
    layers of 128 x 2 + 33 = 289 bytes a token, 20 HCA layers of 4 x 2 = 8: 50,261 bytes a
    token, the same as the cache figure above, and a 1M-token request keeps every pooled
    entry while its window slots hold 128 - 1 + a chunk of tokens."""
    from decodecalc.engine.scheduler import scheduler_limits
    from decodecalc.step.kv_pool import kv_pool

    scenario = api.scenario("deepseek-v4-flash", "b200", engine="vllm")
    pool = kv_pool(scenario, scheduler_limits(scenario.engine, scenario.gpu))
    assert [(k.window, k.layers, k.slots, k.bytes_per_token) for k in pool.kinds] == [
        (128, 43, 43, Fraction(1024)),
        (None, 21, 21, Fraction(289)),
        (None, 20, 20, Fraction(8)),
    ]
    assert pool.kv_bytes_per_token == 50_261


def test_flash_bytes_by_format_group(cli: Run) -> None:
    """show's tensor groups summed by format, each worked above: FP8 5,857,345,536 params
    -> 5,857,703,040 bytes; FP4 experts 147,169,738,752; BF16 1,414,188,672 params ->
    2,828,377,344; FP32 35,315,671 -> 141,262,684; int64 2,327,040 -> 18,616,320."""
    import json

    r = cli("show", "deepseek-v4-flash", "--json")
    assert r.code == 0, r.err
    by_format: dict[str, list[int]] = {}
    for group in json.loads(r.out)["tensor_groups"]:
        params, size = by_format.setdefault(group["dtype"], [0, 0])
        by_format[group["dtype"]] = [params + group["params"], size + group["bytes"]]
    assert by_format == {
        "fp8-128x128-ue8m0": [5_857_345_536, 5_857_703_040],
        "mxfp4": [277_025_390_592, 147_169_738_752],
        "bf16": [1_414_188_672, 2_828_377_344],
        "fp32": [35_315_671, 141_262_684],
        "int64": [2_327_040, 18_616_320],
    }
