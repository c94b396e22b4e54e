"""Strict preset loading: positions in every message, user preset directories."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest

from decodecalc.errors import InputError
from decodecalc.loading.catalog import Catalog, presets_dir

GOOD_MODEL = (presets_dir() / "models" / "llama-3.1-8b.yaml").read_text()


def write(tmp_path: Path, kind: str, name: str, text: str) -> Path:
    folder = tmp_path / kind
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / f"{name}.yaml"
    path.write_text(text)
    return path


def load_error(tmp_path: Path, text: str) -> str:
    write(tmp_path, "models", "mine", text)
    with pytest.raises(InputError) as info:
        Catalog((tmp_path,)).model("mine")
    return str(info.value)


def test_user_preset_directory_adds_a_model(tmp_path: Path) -> None:
    write(tmp_path, "models", "my-llama", GOOD_MODEL.replace("aliases: [", "aliases: [mine, "))
    catalog = Catalog.with_user_dirs([tmp_path])
    assert catalog.model("my-llama").total_params() == 8_030_261_248
    assert catalog.model("MINE").id == "my-llama"
    assert catalog.model("llama-3.1-70b").id == "llama-3.1-70b"  # built-ins still there


def test_env_var_names_user_presets(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    write(tmp_path, "gpus", "my-gpu", (presets_dir() / "gpus" / "l4.yaml").read_text())
    monkeypatch.setenv("DECODECALC_PRESETS", str(tmp_path))
    assert Catalog().gpu("my-gpu").bandwidth_bytes_per_s == 300_000_000_000


def test_user_preset_overrides_builtin(tmp_path: Path) -> None:
    text = (presets_dir() / "gpus" / "l4.yaml").read_text().replace("300GB/s", "250GB/s")
    write(tmp_path, "gpus", "l4", text)
    assert Catalog((tmp_path, presets_dir())).gpu("l4").bandwidth_bytes_per_s == 250 * 10**9


def _h100_text(aliases: str, bandwidth: str = "2TB/s") -> str:
    """The shipped H100 SXM's file with other aliases and bandwidth (3.35 TB/s shipped)."""
    text = (presets_dir() / "gpus" / "h100-sxm.yaml").read_text()
    text = re.sub(r"(?m)^aliases: .*$", f"aliases: {aliases}", text)
    return re.sub(r"(?m)^bandwidth: \S+", f"bandwidth: {bandwidth}", text)


def test_a_built_in_replaced_by_id_keeps_its_aliases(tmp_path: Path) -> None:
    """Your h100-sxm.yaml (without aliases) still answers to the shipped file's h100."""
    write(tmp_path, "gpus", "h100-sxm", _h100_text("[]"))
    catalog = Catalog((tmp_path, presets_dir()))
    gpu = catalog.gpu("h100")
    assert (gpu.id, gpu.bandwidth_bytes_per_s) == ("h100-sxm", 2 * 10**12)
    assert catalog.shadowing("gpus", "h100") is None  # the same id: nothing taken over


def test_an_alias_taken_from_a_built_in_is_noted(tmp_path: Path) -> None:
    path = write(tmp_path, "gpus", "mygpu", _h100_text("[h100, h200]"))
    catalog = Catalog((tmp_path, presets_dir()))
    assert catalog.gpu("h100").id == "mygpu"
    note = catalog.shadowing("gpus", "h100")
    assert note is not None and note.code == "preset-shadows-built-in"
    assert note.message == (
        f"GPU 'h100' is your preset mygpu ({path}), which takes the name over from the "
        "built-in h100-sxm"
    )
    assert catalog.gpu("h200").id == "h200"  # a built-in id comes before your alias
    note = catalog.shadowing("gpus", "h200")
    assert note is not None and note.message == (
        "GPU 'h200' is the built-in h200: your preset mygpu's alias 'h200' is not used, "
        "since a built-in id comes before an alias"
    )
    assert catalog.gpu("mygpu").id == "mygpu"
    assert catalog.shadowing("gpus", "mygpu") is None  # your own id: nothing to say


def test_the_note_reaches_stderr_and_json(cli: Any, tmp_path: Path) -> None:
    write(tmp_path, "gpus", "mygpu", _h100_text("[h100]"))
    result = cli(
        "estimate", "-m", "llama-3.1-8b", "-g", "h100", "--presets", str(tmp_path), "--json"
    )
    codes = [n["code"] for n in json.loads(result.out)["notes"]]
    assert "preset-shadows-built-in" in codes
    assert "takes the name over from the built-in h100-sxm" in result.err
    plain = cli("estimate", "-m", "llama-3.1-8b", "-g", "h100", "--json")
    assert "preset-shadows-built-in" not in plain.out


def test_model_from_path(tmp_path: Path) -> None:
    path = write(tmp_path, "x", "custom", GOOD_MODEL)
    assert Catalog().model(str(path)).id == "custom"


def test_missing_presets_dir() -> None:
    with pytest.raises(InputError, match="does not exist"):
        Catalog.with_user_dirs(["/no/such/dir"])


@pytest.mark.parametrize(
    ("change", "message"),
    [
        (
            ("  hidden_size: 4096", "  hidden_size: 4096\n  hidden_size: 4096"),
            r"mine.yaml:\d+:3: config.hidden_size: duplicate key",
        ),
        (
            ("  hidden_size: 4096", "  hiden_size: 4096"),
            r"missing required field 'hidden_size' \(is 'hiden_size' a misspelling of it\?\)",
        ),
        (
            ("  hidden_size: 4096", "  hidden_size: big"),
            r"mine.yaml:\d+:16: config.hidden_size: expected a whole number",
        ),
        (("  hidden_size: 4096", "  hidden_size: 0"), r"config.hidden_size: must be at least 1"),
        (("tie_word_embeddings: false", "tie_word_embeddings: no way"), r"expected true or false"),
        (("model_type: llama", "model_type: gpt2"), r"unknown model_type 'gpt2'"),
        (("  vocab_size: 128256\n", ""), r"missing required field 'vocab_size'"),
        (("name: Llama-3.1-8B", "name: [oops"), r"mine.yaml:\d+:\d+: not valid YAML"),
    ],
)
def test_malformed_model_preset(tmp_path: Path, change: tuple[str, str], message: str) -> None:
    old, new = change
    assert old in GOOD_MODEL
    error = load_error(tmp_path, GOOD_MODEL.replace(old, new, 1))
    assert "\n" not in error.strip()
    assert re.search(message, error), error


def test_yaml_boolean_trap_in_aliases(tmp_path: Path) -> None:
    """YAML 1.1 reads an unquoted `no` as False: refused, with a hint to quote it."""
    error = load_error(tmp_path, GOOD_MODEL.replace("aliases: [", "aliases: [no, "))
    assert "quote it" in error


def test_unknown_field_is_refused(tmp_path: Path) -> None:
    error = load_error(tmp_path, GOOD_MODEL + "colour: blue\n")
    assert re.search(r"mine.yaml:\d+:1: colour: unknown field; valid: ", error), error


def test_empty_and_binary_files(tmp_path: Path) -> None:
    assert "empty" in load_error(tmp_path, "")
    path = write(tmp_path, "models", "bin", "")
    path.write_bytes(b"\xff\xfe\x00junk")
    with pytest.raises(InputError, match="not a UTF-8"):
        Catalog((tmp_path,)).model("bin")


def test_oversized_file(tmp_path: Path) -> None:
    assert "limit" in load_error(tmp_path, "# " + "x" * 1_100_000)


@pytest.mark.parametrize(
    ("kind", "preset", "change", "message"),
    [
        ("gpus", "l4", ("bandwidth: 300GB/s", ""), r"l4\.yaml:\d+:\d+: missing required field"),
        ("gpus", "l4", ("300GB/s", "300Gb/s"), r"l4\.yaml:\d+:\d+: bandwidth: bandwidth '300Gb/s'"),
        ("gpus", "l4", ("300GB/s", "1e999999999GB/s"), r"l4\.yaml:\d+:\d+: .*out of range"),
        (
            "links",
            "nvlink4",
            ("latency: ", "lag: "),
            r"nvlink4\.yaml:\d+:\d+: lag: unknown field; valid: ",
        ),
    ],
)
def test_gpu_and_link_errors_name_the_file_once(
    tmp_path: Path, kind: str, preset: str, change: tuple[str, str], message: str
) -> None:
    text = (presets_dir() / kind / f"{preset}.yaml").read_text()
    assert change[0] in text
    write(tmp_path, kind, preset, text.replace(*change))
    catalog = Catalog((tmp_path,))
    with pytest.raises(InputError) as info:
        catalog.gpu(preset) if kind == "gpus" else catalog.link(preset)
    assert re.match(message, str(info.value).removeprefix(str(tmp_path / kind) + "/"))
    assert str(info.value).count(".yaml") == 1


@pytest.mark.parametrize(
    ("change", "message"),
    [
        (("bits: 4", "bits: 65"), "bits: must be at most 64, got 65"),
        (("bits: 4", "bits: 1e300"), "bits: must be at most 64"),  # float overflow later
        (("bits: 4", "bits: .inf"), "bits: expected a number, got inf"),
        (("bits: 4", "bits: '1E999999999'"), "bits: out of range"),
        (("bits: 4", "bits: 64"), "bits: gives 64.5 bits per value; at most 64"),  # + 8/16
        (("bits: 4", "bits: 0"), "bits: must be greater than zero"),
    ],
)
def test_implausible_dtypes_are_refused(
    tmp_path: Path, change: tuple[str, str], message: str
) -> None:
    text = (presets_dir() / "dtypes" / "nvfp4.yaml").read_text()
    assert change[0] in text
    write(tmp_path, "dtypes", "mine", text.replace(*change))
    with pytest.raises(InputError, match=re.escape(message)):
        Catalog((tmp_path,)).dtype("mine")


def test_env_var_naming_a_missing_directory_is_an_error(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("DECODECALC_PRESETS", str(tmp_path / "nope"))
    with pytest.raises(InputError, match=r"nope' \(from \$DECODECALC_PRESETS\) does not exist"):
        Catalog.with_user_dirs()
