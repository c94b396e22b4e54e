"""A config.json whose torch_dtype (or transformers 5's dtype) names no dtype is refused
in one line by every door that reads one (-m FILE, import), not priced as BF16 in silence;
a real dtype, torch.-prefixed or not, reads as before."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from decodecalc.errors import InputError
from decodecalc.loading.quantization import read_config
from tests.conftest import Run

LLAMA = Path(__file__).parents[1] / "fixtures" / "configs" / "llama-3.1-8b.json"


def _config(tmp_path: Path, **fields: object) -> Path:
    data = {**json.loads(LLAMA.read_text()), **fields}
    path = tmp_path / "config.json"
    path.write_text(json.dumps(data))
    return path


@pytest.mark.parametrize(
    "fields",
    [{"torch_dtype": "<script>alert(1)</script>"}, {"torch_dtype": 16}, {"dtype": "bf17"}],
    ids=["markup", "a-number", "dtype-key"],
)
def test_a_torch_dtype_that_is_no_dtype_is_refused(tmp_path: Path, fields: dict) -> None:
    with pytest.raises(InputError, match="is not a dtype"):
        read_config(_config(tmp_path, **fields))


@pytest.mark.parametrize("value", ["bfloat16", "float32", "torch.float16", "auto", None])
def test_real_dtypes_read(tmp_path: Path, value: object) -> None:
    assert read_config(_config(tmp_path, torch_dtype=value)).data["torch_dtype"] == value


@pytest.mark.parametrize(
    "command",
    [["estimate", "-m", "{c}", "-g", "h100-sxm", "-c", "1K"], ["import", "{c}", "--name", "x"]],
)
def test_every_door_refuses_it_in_one_line(cli: Run, tmp_path: Path, command: list[str]) -> None:
    config = str(_config(tmp_path, torch_dtype="<script>alert(1)</script>"))
    result = cli(*(a.format(c=config) for a in command))
    assert result.code == 2 and result.out == ""
    assert result.err.count("\n") == 1 and "torch_dtype '<script>" in result.err
