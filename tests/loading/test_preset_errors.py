"""Preset and config.json errors that point the right way: a misspelt key is reported
before the field it was meant to be is missed, a missing field is never "misspelt" as
another real field, a JSON file hears nothing of YAML, and every byte prefix reads."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.conftest import Run

GPU = """\
name: My GPU
vendor: Me
bandwidth: 3.35TB/s
memory: 80GiB
memory_kind: HBM3
source: https://example.com/datasheet
"""


def _estimate_on(cli: Run, tmp_path: Path, text: str, monkeypatch: pytest.MonkeyPatch) -> str:
    (tmp_path / "gpus").mkdir()
    (tmp_path / "gpus" / "my-gpu.yaml").write_text(text)
    monkeypatch.setenv("DECODECALC_PRESETS", str(tmp_path))
    r = cli("estimate", "-m", "llama-3.1-8b", "-g", "my-gpu", "-c", "1K")
    assert r.code == 2 and r.out == "" and len(r.err.splitlines()) == 1
    return r.err


def test_a_missing_field_is_not_called_a_misspelling_of_a_real_one(
    cli: Run, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    err = _estimate_on(cli, tmp_path, GPU.replace("memory_kind: HBM3\n", ""), monkeypatch)
    assert err.endswith("my-gpu.yaml:1:1: missing required field 'memory_kind'\n")


def test_a_misspelt_key_comes_before_the_missing_field(
    cli: Run, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    text = GPU.replace("memory_kind: HBM3\n", "") + "sustained_bandwith: 3TB/s\n"
    err = _estimate_on(cli, tmp_path, text, monkeypatch)
    assert err.endswith(
        "my-gpu.yaml:6:1: sustained_bandwith: unknown field; did you mean 'sustained_bandwidth'?\n"
    )


def test_a_json_boolean_is_not_called_a_yaml_one(cli: Run, tmp_path: Path) -> None:
    fixture = Path(__file__).parents[1] / "fixtures" / "configs" / "llama-3.1-8b.json"
    config = {**json.loads(fixture.read_text()), "hidden_size": True}
    path = tmp_path / "config.json"
    path.write_text(json.dumps(config))
    r = cli("estimate", "-m", str(path), "-g", "h100", "-c", "1K")
    assert r.code == 2
    assert r.err.endswith("hidden_size: expected a whole number, got true (a boolean)\n")


def test_petabytes_are_a_byte_unit(cli: Run) -> None:
    for memory, budget in (
        ("1PB", 900_000_000_000_000),  # 0.9 x 10^15
        ("1PiB", 1_013_309_916_158_361),  # 0.9 x 2^50 = 1,013,309,916,158,361.6, floored
    ):
        gpu = f"bandwidth=1TB/s,memory={memory}"
        r = cli("estimate", "-m", "llama-3.1-8b", "-g", gpu, "-c", "1K", "--json")
        assert r.code == 0, r.err
        assert json.loads(r.out)["memory_budget_bytes"] == budget


def test_an_unknown_size_unit_lists_the_units(cli: Run) -> None:
    r = cli("estimate", "-m", "llama-3.1-8b", "-g", "bandwidth=1TB/s,memory=1XB")
    assert r.code == 2 and len(r.err.splitlines()) == 1
    assert "needs a byte unit: B, kB, MB, GB, TB, PB or KiB, MiB, GiB, TiB, PiB" in r.err


@pytest.mark.parametrize(
    ("fields", "message"),
    [
        ("bits: 4\nscale_per: head\n", "scale_per: head needs bits with scale_bits per"),
        (
            "bits: 4\nscale_bits: 32\nblock_size: 64\nscale_per: heads\n",
            "scale_per: expected block or head, got 'heads'",
        ),
    ],
)
def test_a_per_head_scale_needs_its_bits(
    cli: Run, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, fields: str, message: str
) -> None:
    (tmp_path / "dtypes").mkdir()
    text = f"name: X\n{fields}kv_cache: true\ndescription: d\nsource: https://example.com\n"
    (tmp_path / "dtypes" / "x4.yaml").write_text(text)
    monkeypatch.setenv("DECODECALC_PRESETS", str(tmp_path))
    r = cli("estimate", "-m", "llama-3.1-8b", "-g", "h100", "-k", "x4", "-c", "1K")
    assert r.code == 2 and len(r.err.splitlines()) == 1 and message in r.err
