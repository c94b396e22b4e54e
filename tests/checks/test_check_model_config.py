"""A model's config.json given to check is said to be one, in one line with where it
belongs (-m), not as one "unknown key" line per config key (31 lines of 400 characters)."""

from __future__ import annotations

from pathlib import Path

from tests.conftest import Run

CONFIGS = Path(__file__).parents[1] / "fixtures" / "configs"


def test_a_model_config_is_named_for_what_it_is(cli: Run) -> None:
    config = str(CONFIGS / "qwen3-next-80b-a3b.json")
    result = cli("check", config)
    assert result.code == 2
    assert result.err.count("\n") == 1, result.err
    assert "a model's config.json" in result.err and f"-m {config}" in result.err


def test_a_deployment_with_a_bad_key_still_lists_its_problem(cli: Run, tmp_path: Path) -> None:
    path = tmp_path / "d.yaml"
    path.write_text("model: llama-3.1-8b\ngpu: h100-sxm\nbtach: 8\n")
    result = cli("check", str(path))
    assert result.code == 2 and "btach: unknown key; did you mean 'batch'?" in result.err
    assert "config.json" not in result.err
