"""One rule for every whole number typed or written in a file: ``1_6`` is refused, as
--batch always refused it, never read as 16 (Python's int() and YAML 1.1 would)."""

from __future__ import annotations

import shlex
from pathlib import Path

import pytest

from decodecalc.context import parse_context, parse_tokens
from decodecalc.errors import InputError
from tests.conftest import Run

SERVING = "serving -m llama-3.1-8b -g h100-sxm --concurrency 8"


@pytest.mark.parametrize("text", ["1_6", "1_000", "32_K", "1.5_k"])
def test_a_token_count_with_underscores_is_refused(text: str) -> None:
    with pytest.raises(InputError, match="underscores are not read in numbers"):
        parse_tokens(text)


@pytest.mark.parametrize("spec", ["1K..8K:x1_0", "1K..8K:1_0"])
def test_a_range_step_with_underscores_is_refused(spec: str) -> None:
    with pytest.raises(InputError):
        parse_context(spec)


def test_plain_counts_still_read() -> None:
    # 16; 1,000; 32 x 1,024 = 32,768; 1.5 x 1,000 = 1,500
    assert [parse_tokens(t) for t in ("16", "1000", "32K", "1.5k")] == [16, 1000, 32768, 1500]
    assert parse_context("1K..8K:x4") == (1024, 4096, 8192)


@pytest.mark.parametrize(
    "command",
    [
        "estimate -m llama-3.1-8b -g h100-sxm -c 1_6",
        "estimate -m llama-3.1-8b -g h100-sxm -c 1K --batch 1_6",
        "estimate -m llama-3.1-8b -g h100-sxm -c 1K --tp 1_6",
        "generate -m llama-3.1-8b -g h100-sxm --prompt 1_000 --tokens 100",
        "generate -m llama-3.1-8b -g h100-sxm --prompt 1000 --tokens 1_00",
        f"{SERVING} --input-len 1_000 --output-len 100",
        f"{SERVING} --input-len 1000 --output-len 1_00",
        f"{SERVING} --input-len 1000 --output-len 100 --prefix-len 1_00",
        "explain -m llama-3.1-8b -g h100-sxm -c 1_6",
    ],
)
def test_every_count_option_refuses_underscores(cli: Run, command: str) -> None:
    result = cli(*shlex.split(command))
    assert result.code == 2, result
    assert "underscores are not read in numbers" in result.err
    assert result.err.count("\n") == 1


@pytest.mark.parametrize("line", ["tp: 1_6", "batch: 1_6", "efficiency: 0.5_0", 'context: "1_6"'])
def test_deployment_files_refuse_underscores(cli: Run, tmp_path: Path, line: str) -> None:
    path = tmp_path / "d.yaml"
    path.write_text(f"model: llama-3.1-8b\ngpu: h100-sxm\n{line}\n")
    result = cli("check", str(path))
    assert result.code == 2
    assert "d.yaml:3:" in result.err and "underscores are not read" in result.err
