"""What a message may quote of a file: at most a short, escaped fragment of what failed to
parse, and a preset that is a link out of its --presets folder named as one. A
models/x.yaml linked to a private key or /etc/passwd had up to 1,000 characters of it
quoted on stderr, and in CI logs."""

from __future__ import annotations

from pathlib import Path

import pytest

from decodecalc.loading.datafile import FRAGMENT_CHARS, fragment, key_label
from tests.conftest import Run

SECRET = "-----BEGIN OPENSSH PRIVATE KEY----- b3BlbnNzaC1rZXktdjEAAAAABG5vbmUAAAAEbm9uZQ"


@pytest.mark.parametrize(
    ("value", "quoted"),
    [
        ("fp8", "'fp8'"),
        ("a\tb\x1b[31m", "'a\\tb\\x1b[31m'"),  # control characters escaped, never sent raw
        ("é", "'\\xe9'"),
        ("x" * 60, "'" + "x" * 39 + "... (60 characters)"),
    ],
    ids=["short", "control", "non-ascii", "long"],
)
def test_a_fragment_is_short_and_escaped(value: str, quoted: str) -> None:
    assert fragment(value) == quoted


def test_a_long_key_is_a_fragment_too() -> None:
    assert key_label("batch") == "batch"
    assert key_label("k" * 100).endswith("... (100 characters)")


def _linked(tmp_path: Path, text: str) -> Path:
    outside = tmp_path / "secret.txt"
    outside.write_text(text)
    presets = tmp_path / "presets"
    (presets / "models").mkdir(parents=True)
    (presets / "models" / "x.yaml").symlink_to(outside)
    return presets


@pytest.mark.parametrize(
    "text",
    [f"{SECRET}\n" * 20, f"name: x\nsource: y\n{SECRET.replace(' ', '_')}: 1\n"],
    ids=["plain-text", "a-key"],
)
def test_a_link_out_of_the_folder_is_named_and_never_quoted_whole(
    cli: Run, tmp_path: Path, text: str
) -> None:
    presets = _linked(tmp_path, text)
    result = cli("models", "--presets", str(presets))
    assert result.code == 2
    assert f"x.yaml is a link to {tmp_path / 'secret.txt'}, outside the presets folder" in (
        result.err
    )
    assert SECRET not in result.err
    assert "b3BlbnNzaC1rZXktdjEAAAAABG5vbmUAAAAEbm9uZQ" not in result.err
    assert len(result.err) < 400 + FRAGMENT_CHARS + len(str(tmp_path)) * 3


def test_a_link_inside_the_folder_is_not_named(cli: Run, tmp_path: Path) -> None:
    presets = tmp_path / "presets"
    (presets / "models").mkdir(parents=True)
    (presets / "shared.yaml").write_text("just text\n")
    (presets / "models" / "x.yaml").symlink_to(presets / "shared.yaml")
    result = cli("models", "--presets", str(presets))
    assert result.code == 2 and "is a link" not in result.err


def test_an_unknown_name_from_a_file_is_a_fragment(cli: Run, tmp_path: Path) -> None:
    path = tmp_path / "d.yaml"
    path.write_text(f"model: '{SECRET}'\ngpu: h100-sxm\n")
    result = cli("check", str(path))
    assert result.code == 2
    assert SECRET not in result.err and "characters)" in result.err
