"""Every shipped preset loads, names a source, and counts its parameters right."""

from __future__ import annotations

from fractions import Fraction
from pathlib import Path

import pytest

from decodecalc.errors import InputError
from decodecalc.loading.catalog import Catalog, presets_dir
from decodecalc.units import GB, TB

REQUIRED_MODELS = """llama-2-7b llama-2-13b llama-2-70b llama-3.1-8b llama-3.1-70b llama-3.1-405b
llama-3.2-1b llama-3.2-3b mistral-7b qwen2.5-7b qwen2.5-32b qwen2.5-72b qwen3-8b qwen3-32b
phi-3-mini""".split()
ARCHITECTURE_MODELS = """mixtral-8x7b mixtral-8x22b qwen3-30b-a3b qwen3-235b-a22b qwen3-next-80b-a3b
deepseek-v3 kimi-k2 gpt-oss-20b gpt-oss-120b gemma-2-9b gemma-2-27b gemma-3-27b
mistral-7b-v0.1""".split()
REQUIRED_GPUS = """a100-40gb a100-80gb h100-pcie h100-sxm h100-nvl h200 b200 gb200 l4 l40s
rtx-3090 rtx-4080 rtx-4090 rtx-5090 rtx-6000-ada mi300x mi325x mi355x gaudi3 tpu-v5e tpu-v5p
tpu-v6e dgx-spark m1-max-64gb m2-ultra-192gb m3-max-48gb m4-max-48gb""".split()
REQUIRED_DTYPES = (
    "fp32 fp16 bf16 fp8 int8 int4 fp4 nvfp4 mxfp4 int4-g128 q8-0 q6-k q5-k-m q4-k-m q4-0".split()
)
# presets/kernels/ holds data for the step model, not presets a user picks by name:
# tests/model/test_kernel_rates.py checks those files.
ALL_FILES = sorted(p for p in presets_dir().glob("*/*.yaml") if p.parent.name != "kernels")


def test_presets_dir_is_the_top_level_folder() -> None:
    assert presets_dir() == Path(__file__).resolve().parents[2] / "presets"


@pytest.mark.parametrize("path", ALL_FILES, ids=lambda p: f"{p.parent.name}/{p.stem}")
def test_every_preset_loads_with_a_source(catalog: Catalog, path: Path) -> None:
    kind = path.parent.name
    lookups = {
        "models": catalog.model,
        "gpus": catalog.gpu,
        "dtypes": catalog.dtype,
        "links": catalog.link,
        "recipes": catalog.recipe,
        "engines": catalog.engine,
        "prices": catalog.price_list,
    }
    preset = lookups[kind](path.stem)
    assert preset.id == path.stem
    if kind == "engines":
        # An engine profile's source is the measured points it was fitted on, with the
        # engine versions they came from (none only for a profile carried over, no points).
        assert "validation/points.yaml" in preset.source
        fitted = sum(p.points for _, p in preset.families)
        assert preset.versions or not fitted
        return
    assert preset.source.startswith("https://")


@pytest.mark.parametrize(
    ("kind", "required"),
    [
        ("models", REQUIRED_MODELS + ARCHITECTURE_MODELS),
        ("gpus", REQUIRED_GPUS),
        ("dtypes", REQUIRED_DTYPES),
    ],
)
def test_required_presets_exist(kind: str, required: list[str]) -> None:
    present = {p.stem for p in (presets_dir() / kind).glob("*.yaml")}
    assert set(required) <= present


# Official counts: Hugging Face safetensors metadata of each model's repository, the figure
# its model page rounds (e.g. "70.6B params"). Typed here from those pages, independently of
# the presets, so a typo in either fails.
OFFICIAL = {
    "llama-2-7b": 6_738_415_616,
    "llama-2-13b": 13_015_864_320,
    "llama-2-70b": 68_976_648_192,
    "llama-3.1-8b": 8_030_261_248,
    "llama-3.1-70b": 70_553_706_496,
    "llama-3.1-405b": 405_853_388_800,
    "llama-3.2-1b": 1_235_814_400,
    "llama-3.2-3b": 3_212_749_824,
    "mistral-7b": 7_248_023_552,
    "qwen2.5-7b": 7_615_616_512,
    "qwen2.5-32b": 32_763_876_352,
    "qwen2.5-72b": 72_706_203_648,
    "qwen3-8b": 8_190_735_360,
    "qwen3-32b": 32_762_123_264,
    "phi-3-mini": 3_821_079_552,
}


@pytest.mark.parametrize("model_id", REQUIRED_MODELS)
def test_derived_params_match_official(catalog: Catalog, model_id: str) -> None:
    model = catalog.model(model_id)
    assert model.official_params == OFFICIAL[model_id]
    assert abs(model.total_params() - OFFICIAL[model_id]) <= 0.005 * OFFICIAL[model_id]


@pytest.mark.parametrize(
    ("model_id", "params"),
    [
        # Llama-2-7B, MHA, untied: embed 32,000 x 4,096 = 131,072,000 (x2 with the LM head)
        # layer: 4 x 4,096^2 + 3 x 4,096 x 11,008 + 2 x 4,096 = 202,383,360; x 32 = 6,476,267,520
        # total: 6,476,267,520 + 262,144,000 + 4,096 = 6,738,415,616
        ("llama-2-7b", 6_738_415_616),
        # Qwen2.5-7B adds q/k/v biases: layer = 2 x 3,584 x 3,584 (q, o) + 2 x 3,584 x 512 (k, v)
        #   + 3,584 + 1,024 (biases) + 3 x 3,584 x 18,944 + 2 x 3,584 = 233,057,792; x 28
        #   = 6,525,618,176; + 2 x 152,064 x 3,584 = 1,089,994,752; + 3,584 = 7,615,616,512
        ("qwen2.5-7b", 7_615_616_512),
        # Llama-3.2-1B ties embeddings: counted once. layer: 2 x 2,048 x 2,048 + 2 x 2,048 x 512
        #   + 3 x 2,048 x 8,192 + 2 x 2,048 = 60,821,504; x 16 = 973,144,064
        #   + 128,256 x 2,048 = 262,668,288; + 2,048 = 1,235,814,400
        ("llama-3.2-1b", 1_235_814_400),
        # Gemma-2-9B: tied 256,000 x 3,584 = 917,504,000 embedding; per layer
        #   2 x 3,584 x 4,096 (q, o) + 2 x 3,584 x 2,048 (k, v) + 3 x 3,584 x 14,336 (MLP)
        #   + 4 x 3,584 (four norms) = 198,195,200; x 42 = 8,324,198,400; + 3,584 final norm
        ("gemma-2-9b", 9_241_705_984),
        # gpt-oss-20b, per layer: q 2,880 x 4,096 + 4,096, o 4,096 x 2,880 + 2,880,
        #   k, v 2 x (2,880 x 512 + 512), sinks 64 -> 26,550,144; 32 experts x
        #   (3 x 2,880 x 2,880 + 2 x 2,880 + 2,880 biases) = 796,538,880; router 2,880 x 32
        #   + 32 = 92,192; norms 5,760. 823,186,976 x 24 + 2 x 201,088 x 2,880 + 2,880
        ("gpt-oss-20b", 20_914_757_184),
        # Gemma-3-4B: tied 262,208 x 2,560 = 671,252,480 embedding; per layer q, o
        #   2 x 2,560 x 2,048 + k, v 2 x 2,560 x 1,024 + MLP 3 x 2,560 x 10,240 + four norms
        #   4 x 2,560 + q/k norms 2 x 256 = 94,382,592; x 34 = 3,209,008,128; + 2,560 final
        #   norm = 3,880,263,168 text. SigLIP tower, 27 layers of 4 x (1,152^2 + 1,152)
        #   + 2 x 1,152 x 4,304 + 4,304 + 1,152 + 4 x 1,152 = 15,239,504 -> 411,466,608;
        #   patch and position embeddings 3 x 14 x 14 x 1,152 + 1,152 + 4,096 x 1,152
        #   = 5,397,120; post-norm 2,304; projector 1,152 x 2,560 + 1,152 = 2,950,272.
        #   Total 4,300,079,472: the safetensors count of google/gemma-3-4b-it.
        ("gemma-3-4b", 4_300_079_472),
    ],
)
def test_param_count_by_hand(catalog: Catalog, model_id: str, params: int) -> None:
    assert catalog.model(model_id).total_params() == params


@pytest.mark.parametrize("path", sorted(presets_dir().glob("models/*.yaml")), ids=lambda p: p.stem)
def test_every_model_preset_is_within_1_percent_of_its_official_count(
    catalog: Catalog, path: Path
) -> None:
    model = catalog.model(path.stem)
    assert model.official_params > 0 and model.official_params_source
    assert abs(model.total_params() - model.official_params) <= 0.01 * model.official_params


def test_tied_embedding_is_read_every_step(catalog: Catalog) -> None:
    """docs/physics.md: with tied embeddings the matrix is the LM head, so it is streamed."""
    m = catalog.model("llama-3.2-1b")
    assert m.streamed_params_per_gpu() == m.total_params()


# Datasheet bandwidths, typed independently of the presets. Capacities are what the
# device reports, not the datasheet figure: tests/model/test_gpu_capacity.py checks those.
@pytest.mark.parametrize(
    ("gpu", "bandwidth"),
    [
        ("h100-sxm", 3.35 * TB),
        ("h200", 4.8 * TB),
        ("a100-80gb", 2039 * GB),
        ("mi300x", 5.3 * TB),
        ("rtx-4090", 1008 * GB),
        ("tpu-v5e", 819 * GB),
        ("m2-ultra", 800 * GB),
        ("rtx-a6000", 768 * GB),
        ("mi250x-gcd", 1638.4 * GB),  # one of two GCDs: 3,276.8 GB/s / 2
    ],
)
def test_gpu_datasheet_figures(catalog: Catalog, gpu: str, bandwidth: float) -> None:
    assert catalog.gpu(gpu).bandwidth_bytes_per_s == round(bandwidth)


@pytest.mark.parametrize(
    ("dtype", "bits"),
    [
        ("fp32", Fraction(32)),
        ("bf16", Fraction(16)),
        ("fp8", Fraction(8)),
        ("int4", Fraction(4)),
        ("nvfp4", Fraction(9, 2)),  # 4 + 8/16
        ("mxfp4", Fraction(17, 4)),  # 4 + 8/32
        ("int4-g128", Fraction(33, 8)),  # 4 + 16/128
        ("q8-0", Fraction(17, 2)),  # 34 bytes per 32 values: 272/32
        ("q4-0", Fraction(9, 2)),  # 18 bytes per 32 values: 144/32
        ("q6-k", Fraction(105, 16)),  # 210 bytes per 256 values: 1,680/256 = 6.5625
        ("q4-k-m", Fraction(484, 100)),  # llama.cpp's Llama-2-7B average
        ("q5-k-m", Fraction(568, 100)),
    ],
)
def test_dtype_bits_include_scales(catalog: Catalog, dtype: str, bits: Fraction) -> None:
    assert catalog.dtype(dtype).bits_per_value == bits


@pytest.mark.parametrize(
    ("alias", "preset_id"),
    [
        ("LLAMA-3.1-70B", "llama-3.1-70b"),
        ("llama3.1-70b", "llama-3.1-70b"),
        ("meta-llama/Llama-3.1-70B-Instruct", "llama-3.1-70b"),
        ("e4m3", "fp8"),
        ("fp8_e5m2", "fp8"),
        ("Q4_K_M", "q4-k-m"),
        ("h100", "h100-sxm"),
    ],
)
def test_names_are_case_insensitive_with_aliases(
    catalog: Catalog, alias: str, preset_id: str
) -> None:
    found = [f(alias) for f in (catalog.model, catalog.gpu, catalog.dtype) if _finds(f, alias)]
    assert [p.id for p in found] == [preset_id]


def _finds(lookup: object, name: str) -> bool:
    try:
        lookup(name)  # type: ignore[operator]
    except ValueError:
        return False
    return True


def test_engine_families_read_whole_or_one_at_a_time_agree() -> None:
    """A preset's families are parsed one at a time on first use (EngineProfile.family);
    ``families`` still lists them all, the same objects."""
    for profile in Catalog().engines():
        names = profile.family_names
        whole = profile.families
        assert names == tuple(name for name, _ in whole)
        assert whole, profile.id
        assert all(profile.family(name) is params for name, params in whole)
        assert profile.family("no-such-family") is None


def test_engine_points_and_lines_read_unparsed_agree_with_the_parsed() -> None:
    """The typical band asks every profile's points and fitted lines on a family without
    parsing its parameters (ByFamily.points_on, fitted_lines, read from the document):
    they are the parsed parameters' own, for a profile's families and each line's."""
    for profile in Catalog().engines():
        for found in (profile, *profile.release_lines()):
            for family in (*found.family_names, "no-such-family"):
                params = found.family(family)
                lines = params.range.lines if params and params.range else ()
                assert found.points_on(family) == (params.points if params else 0), family
                assert found.fitted_lines(family) == lines, (profile.id, family)


@pytest.mark.parametrize("gpu", ["h100-sxm", "h100"])
def test_a_broken_file_of_yours_fails_every_look_up_of_its_kind(tmp_path: Path, gpu: str) -> None:
    """Review item 14: a broken gpus/bad.yaml failed -g h100 (an alias: every file read)
    but not -g h100-sxm (its own file read alone). Files are read strictly, by id or alias."""
    (tmp_path / "gpus").mkdir()
    (tmp_path / "gpus" / "bad.yaml").write_text("id: [bad\n")
    catalog = Catalog((tmp_path, presets_dir()))
    with pytest.raises(InputError, match=r"bad\.yaml:2:1: not valid YAML"):
        catalog.gpu(gpu)
    assert Catalog().gpu(gpu).id == "h100-sxm"  # without it, both name the same GPU
