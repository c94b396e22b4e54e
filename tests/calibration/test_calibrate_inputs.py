"""calibrate takes what its help says and writes where every output does: a missing
folder is refused (not created), a point's engine that is no profile (nor the one being
fitted) is said with validate's did-you-mean, and batch is optional, as the help now says."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.conftest import Run

POINT = (
    "- {{model: llama-3.1-8b, gpu: h100-sxm, weights: bf16, kv_dtype: bf16, tp: 1, "
    "context: {context}, ms_per_token: {ms}{extra}}}\n"
)


def _points(tmp_path: Path, extra: str = "") -> str:
    path = tmp_path / "points.yaml"
    path.write_text(
        POINT.format(context=1024, ms=7.0, extra=extra)
        + POINT.format(context=8192, ms=7.5, extra=extra)
    )
    return str(path)


def test_save_to_a_missing_folder_is_refused(cli: Run, tmp_path: Path) -> None:
    target = tmp_path / "x" / "y" / "z.json"
    result = cli("calibrate", _points(tmp_path), "--save-to", str(target))
    assert result.code == 2 and "no directory" in result.err
    assert not (tmp_path / "x").exists()


def test_save_to_an_existing_folder_writes(cli: Run, tmp_path: Path) -> None:
    """Two points 7.0 and 7.5 ms at 1,024 and 8,192 tokens; at H100's 3.35 TB/s the weights'
    15.01 GB take 4.4806 ms and the KV 0.0401 and 0.3205 ms. The 0.5 ms between them is KV:
    e_kv = 0.2804 / 0.5 = 0.561; then e_w = 4.4806 / (7.0 - 0.0401 / 0.561) = 0.647."""
    target = tmp_path / "fit.json"
    result = cli("calibrate", _points(tmp_path), "--save-to", str(target))
    assert result.code == 0, result.err
    assert "weights at 0.647 of peak bandwidth, KV at 0.561" in result.out
    assert "saved the roofline fit" in result.out and f"to {target}:" in result.out
    assert target.is_file()


def test_an_unknown_engine_is_noted_with_a_did_you_mean(cli: Run, tmp_path: Path) -> None:
    """calibrate fits points as measured (its own data names engines with no profile), so
    an unknown engine is said, with validate's did-you-mean, not refused."""
    result = cli("calibrate", _points(tmp_path, ", engine: vlm"))
    assert result.code == 0
    assert "note: points name unknown engine 'vlm'; did you mean 'vllm'?" in result.err


@pytest.mark.parametrize("engine", ["vllm", "my-engine"])
def test_a_known_engine_or_the_one_being_fitted_is_not_noted(
    cli: Run, tmp_path: Path, engine: str
) -> None:
    (tmp_path / "presets").mkdir()
    args = ["--save-engine", "my-engine", "--presets", str(tmp_path / "presets")]
    result = cli("calibrate", _points(tmp_path, f", engine: {engine}"), *args)
    assert result.code == 0 and "unknown engine" not in result.err


def test_batch_is_optional_and_the_help_says_so(cli: Run, tmp_path: Path) -> None:
    """The points above give no batch; the help named it among the required keys."""
    assert cli("calibrate", _points(tmp_path)).code == 0
    help_text = " ".join(cli("calibrate", "--help").out.split())
    assert "batch and tp, 1 when not given" in help_text
