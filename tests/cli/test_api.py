"""The Python API, and the README's example of it."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

import decodecalc
from decodecalc import InputError, estimate, load_gpu, load_model, scenario, to_dict
from tests.conftest import Run

README = Path(__file__).resolve().parents[2] / "README.md"


def test_readme_example_runs(capsys: pytest.CaptureFixture[str]) -> None:
    (example,) = re.findall(r"```python\n(.*?)```", README.read_text(), re.DOTALL)
    exec(compile(example, "README.md", "exec"), {})
    printed = capsys.readouterr().out
    assert printed.splitlines()[0].startswith("1024 ")


def test_api_equals_cli_json(cli: Run) -> None:
    s = scenario("llama-3.1-70b", "h100-sxm", weights="fp8", kv_dtype="fp8", batch=8)
    doc = to_dict(estimate(s, "1K,32K"))
    printed = json.loads(
        cli(
            "estimate",
            "-m",
            "llama-3.1-70b",
            "-g",
            "h100-sxm",
            "-w",
            "fp8",
            "-k",
            "fp8",
            "--batch",
            "8",
            "-c",
            "1K,32K",
            "--json",
        ).out
    )
    assert doc == printed


def test_section_6_through_the_api() -> None:
    s = scenario(load_model("llama-3.1-70b"), load_gpu("h100-sxm"), weights="fp8", kv_dtype="fp8")
    rows = estimate(s, [0, 200_000]).rows
    assert [round(r.seconds_per_token * 1000, 3) for r in rows] == [20.747, 30.529]


def test_bad_input_raises_input_error() -> None:
    with pytest.raises(InputError, match="unknown model 'nope'"):
        load_model("nope")


def test_everything_exported_exists() -> None:
    for name in decodecalc.__all__:
        assert getattr(decodecalc, name) is not None
    with pytest.raises(AttributeError):
        decodecalc.nothing_here  # noqa: B018


def test_completion_lists_preset_ids() -> None:
    from decodecalc.cli import completer

    assert "llama-3.1-70b" in completer("models")("llama-3.1")
    assert completer("gpus")("H10") == ["h100-nvl", "h100-pcie", "h100-sxm"]
