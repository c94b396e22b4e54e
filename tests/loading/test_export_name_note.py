"""A quantized export whose config.json names no format: the name says FP8 or AWQ, the
config says nothing (NVIDIA's exports keep the format in hf_quant_config.json, which a user
may not have copied), so the weights are read as BF16, 2-4x the bytes. A note says so
and how to give the format; where the format is read or given, no note. And ``show -m``
names the model as every other command's ``-m`` does."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from tests.conftest import Run

CONFIGS = Path(__file__).parents[1] / "fixtures" / "configs"


def folder(tmp_path: Path, name: str) -> Path:
    where = tmp_path / name
    where.mkdir()
    shutil.copy(CONFIGS / "llama-3.1-8b.json", where / "config.json")
    return where


def notes(cli: Run, *args: str) -> list[str]:
    r = cli("estimate", *args, "--gpu", "h100-sxm", "--json")
    assert r.code == 0, r.err
    return [n["code"] for n in json.loads(r.out)["notes"]]


@pytest.mark.parametrize(
    ("name", "word", "suggested"),
    [
        ("Llama-3.1-8B-Instruct-FP8", "FP8", "fp8"),
        ("Llama-3.1-8B-Instruct-NVFP4", "NVFP4", "nvfp4"),
        ("Llama-3.1-8B-Instruct-AWQ-INT4", "AWQ", "int4-g128"),
        ("llama_3.1_8b_gptq", "GPTQ", "int4-g128"),
        ("Llama-3.1-8B-MXFP4", "MXFP4", "mxfp4"),
        ("Llama-3.1-8B-FP4", "FP4", "nvfp4"),
        ("Llama-3.1-8B-int4", "INT4", "int4-g128"),
    ],
)
def test_a_quantized_name_without_a_format_gets_a_note(
    cli: Run, tmp_path: Path, name: str, word: str, suggested: str
) -> None:
    r = cli("estimate", "-m", str(folder(tmp_path, name)), "--gpu", "h100-sxm")
    assert r.code == 0
    assert f"the name says {word}" in r.err
    assert "weights are read as bf16" in r.err and f"-w {suggested}" in r.err


def test_no_note_where_the_format_is_given_or_read(cli: Run, tmp_path: Path) -> None:
    where = folder(tmp_path, "Llama-3.1-8B-Instruct-FP8")
    assert "export-format-unread" in notes(cli, "-m", str(where))
    assert "export-format-unread" not in notes(cli, "-m", str(where), "-w", "fp8")
    # ModelOpt's hf_quant_config.json beside config.json names the format: read, no note.
    quant = {"quantization": {"quant_algo": "FP8", "kv_cache_quant_algo": None}}
    (where / "hf_quant_config.json").write_text(json.dumps(quant))
    assert "export-format-unread" not in notes(cli, "-m", str(where))


def test_no_note_for_a_name_without_a_format(cli: Run, tmp_path: Path) -> None:
    # "fp8" inside a word is not a format: only whole words of the name count.
    assert "export-format-unread" not in notes(cli, "-m", str(folder(tmp_path, "Llama-fp8x")))


def test_show_takes_the_model_as_m_does(cli: Run, tmp_path: Path) -> None:
    where = str(folder(tmp_path, "Llama-3.1-8B"))
    assert cli("show", "-m", where).out == cli("show", where).out
    assert cli("show", "--model", "llama-3.1-8b").out == cli("show", "llama-3.1-8b").out
    for args in ((), ("llama-3.1-8b", "-m", "llama-3.1-8b")):
        r = cli("show", *args)
        assert r.code == 2 and r.err.count("\n") == 1 and "show -m MODEL" in r.err
