"""config.json import: real configs (tests/fixtures/configs, sources in SOURCES.md) give the
same numbers as the shipped presets, directly and through a written preset."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from decodecalc.loading.catalog import Catalog
from tests.conftest import Run

CONFIGS = Path(__file__).parents[1] / "fixtures" / "configs"

# fixture -> the preset of the same model
SAME_AS_PRESET = {
    "llama-3.1-8b": "llama-3.1-8b",
    "mistral-7b-v0.1": "mistral-7b-v0.1",
    "mixtral-8x7b": "mixtral-8x7b",
    "qwen2.5-7b": "qwen2.5-7b",
    "qwen3-8b": "qwen3-8b",
    "qwen3-30b-a3b": "qwen3-30b-a3b",
    "qwen3-next-80b-a3b": "qwen3-next-80b-a3b",
    "deepseek-v3": "deepseek-v3",
    "gpt-oss-20b": "gpt-oss-20b",
    "gemma-2-9b": "gemma-2-9b",
    "gemma-3-27b": "gemma-3-27b",
    "phi-3-mini": "phi-3-mini",
}
ESTIMATE = ("-g", "h100-sxm", "-w", "fp8", "-k", "fp8", "--batch", "8", "-c", "1K,32K", "--json")


def test_every_fixture_names_its_source() -> None:
    sources = (CONFIGS / "SOURCES.md").read_text()
    for path in CONFIGS.glob("*.json"):
        assert f"`{path.name}`" in sources


@pytest.mark.parametrize(("fixture", "preset"), SAME_AS_PRESET.items())
def test_config_equals_preset(catalog: Catalog, fixture: str, preset: str) -> None:
    from_config = catalog.model(str(CONFIGS / f"{fixture}.json"))
    shipped = catalog.model(preset)
    assert from_config.layers == shipped.layers
    assert from_config.total_params() == shipped.total_params()
    assert from_config.max_context_tokens == shipped.max_context_tokens


@pytest.mark.parametrize(("fixture", "preset"), SAME_AS_PRESET.items())
def test_model_flag_takes_a_config(cli: Run, fixture: str, preset: str) -> None:
    direct = json.loads(cli("estimate", "-m", str(CONFIGS / f"{fixture}.json"), *ESTIMATE).out)
    shipped = json.loads(cli("estimate", "-m", preset, *ESTIMATE).out)
    assert direct["rows"] == shipped["rows"]
    assert direct["crossover_context"] == shipped["crossover_context"]


@pytest.mark.parametrize(("fixture", "preset"), SAME_AS_PRESET.items())
def test_imported_preset_loads_and_matches(
    cli: Run, tmp_path: Path, fixture: str, preset: str
) -> None:
    out = tmp_path / "models" / f"{fixture}-imported.yaml"
    out.parent.mkdir()
    r = cli("import", str(CONFIGS / f"{fixture}.json"), "--name", fixture, "-o", str(out))
    assert r.code == 0, r.err
    imported = json.loads(
        cli("estimate", "-m", f"{fixture}-imported", "--presets", str(tmp_path), *ESTIMATE).out
    )
    shipped = json.loads(cli("estimate", "-m", preset, *ESTIMATE).out)
    assert imported["rows"] == shipped["rows"]


def test_import_writes_only_fields_it_reads(cli: Run) -> None:
    r = cli(
        "import",
        str(CONFIGS / "llama-3.1-8b.json"),
        "--name",
        "Llama",
        "--official-params",
        "8030261248",
    )
    assert r.code == 0
    assert "rope_scaling" not in r.out and "torch_dtype" not in r.out
    assert "official_params: 8030261248" in r.out
    assert "num_key_value_heads: 8" in r.out


def test_deepseek_v2_from_its_config(catalog: Catalog) -> None:
    """No preset: checked against the DeepSeek-V2 card (236B total, 21B activated).
    60 layers: 1 dense, then 59 MoE layers routing 6 of 160 experts plus 2 shared."""
    m = catalog.model(str(CONFIGS / "deepseek-v2.json"))
    assert abs(m.total_params() - 236e9) <= 1e9
    assert abs(m.active_params() - 21e9) <= 1e9
    # KV: 60 layers x (512 + 64) x 2 bytes = 69,120 per token (BF16)
    assert sum(x.kv_elements_per_token(1) for x in m.mixers()) * 2 == 69_120


def test_unknown_architecture_exits_2(cli: Run) -> None:
    r = cli("estimate", "-m", str(CONFIGS / "gpt2-unknown.json"), "-g", "h100")
    assert r.code == 2
    assert "unknown model_type 'gpt2' (architectures: GPT2LMHeadModel)" in r.err
    assert r.err.count("\n") == 1


@pytest.mark.parametrize(
    ("content", "message"),
    [
        ("{not json", "not valid JSON"),
        ("[1, 2]", "expected a JSON object"),
        ('{"model_type": "llama", "model_type": "llama"}', "duplicate key 'model_type'"),
        ('{"model_type": "llama"}', "missing required field 'num_attention_heads'"),
        ('{"model_type": "llama", "num_attention_heads": "big"}', "expected a whole number"),
    ],
)
def test_bad_configs_exit_2(cli: Run, tmp_path: Path, content: str, message: str) -> None:
    path = tmp_path / "config.json"
    path.write_text(content)
    r = cli("estimate", "-m", str(path), "-g", "h100")
    assert r.code == 2 and message in r.err and r.err.count("\n") == 1


def test_import_refuses_a_missing_file(cli: Run) -> None:
    r = cli("import", "/no/such/config.json", "--name", "x")
    assert r.code == 2 and "does not exist" in r.err


def test_import_takes_a_checkpoint_folder_and_a_card_count(cli: Run, tmp_path: Path) -> None:
    """As --model does: a folder holding config.json is read from it; --official-params
    takes a card's count as the numbers form does ("Counts take k, M, B and T"):
    8.03B = 8,030,000,000."""
    import shutil

    folder = tmp_path / "Llama-3.1-8B"
    folder.mkdir()
    shutil.copy(CONFIGS / "llama-3.1-8b.json", folder / "config.json")
    r = cli("import", str(folder), "--name", "Llama", "--official-params", "8.03B")
    assert r.code == 0, r.err
    assert "official_params: 8030000000" in r.out and "num_key_value_heads: 8" in r.out
    empty = tmp_path / "empty"
    empty.mkdir()
    r = cli("import", str(empty), "--name", "x")
    assert (
        r.code == 2
        and r.err == f"decodecalc: error: model folder '{empty}' has no config.json to read\n"
    )
    r = cli("import", str(folder), "--name", "x", "--official-params", "8x")
    assert r.err == (
        "decodecalc: error: --official-params '8x' is not a parameter count (e.g. 70.6B, "
        "8030261248)\n"
    )
