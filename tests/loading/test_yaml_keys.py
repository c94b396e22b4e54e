"""A YAML key that is a list or a mapping (``? [a, b]``) is refused with its line:column
by every reader, not turned into a traceback: the one strict loader (loading/datafile.py)
is what check, calibrate, validate, -m FILE, show and --presets all read through."""

from __future__ import annotations

from pathlib import Path

import pytest

from decodecalc.errors import InputError
from decodecalc.loading.datafile import parse_yaml
from tests.conftest import Run

LIST_KEY = "? [a, b]\n: 1\n"
MAPPING_KEY = "gpu: h100-sxm\nnested:\n  ? {x: 1}\n  : 2\n"


@pytest.mark.parametrize(
    ("text", "where", "kind"),
    [(LIST_KEY, "k.yaml:1:3", "a list"), (MAPPING_KEY, "k.yaml:3:5", "a mapping")],
    ids=["list-key", "mapping-key"],
)
def test_the_loader_names_the_key_and_its_place(text: str, where: str, kind: str) -> None:
    with pytest.raises(InputError, match=f"{where}: a key is {kind}"):
        parse_yaml(text, "k.yaml")


@pytest.mark.parametrize(
    "command",
    [
        "check {file}",
        "calibrate {file}",
        "validate {file}",
        "show {file}",
        "estimate -m {file} -g h100-sxm",
        "models --presets {dir}",
    ],
)
def test_every_reader_refuses_in_one_line(cli: Run, tmp_path: Path, command: str) -> None:
    (tmp_path / "models").mkdir()
    (tmp_path / "models" / "k.yaml").write_text(LIST_KEY)
    (tmp_path / "k.yaml").write_text(LIST_KEY)
    args = command.format(file=tmp_path / "k.yaml", dir=tmp_path).split()
    result = cli(*args)
    assert result.code == 2
    assert result.err.count("\n") == 1, result.err
    assert "k.yaml:1:3: a key is a list" in result.err
