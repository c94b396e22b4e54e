"""The one table of scenario fields (scenarios/fields.py) drives every door: a row is a CLI
option of every scenario command, a key of deployment files and of their JSON Schema, and
(where marked) a key of measured points, with nothing else to edit."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from decodecalc.checks.deployments import DEPLOYMENT_KEYS
from decodecalc.loading.catalog import Catalog
from decodecalc.record import field_names
from decodecalc.scenarios.fields import KINDS, PRESETS, SCENARIO_FIELDS
from decodecalc.scenarios.spec import ScenarioSpec
from tests.conftest import Run, cli_group


def test_every_spec_field_has_one_row() -> None:
    assert [f.name for f in SCENARIO_FIELDS] == list(field_names(ScenarioSpec))
    assert all(f.kind in KINDS and f.preset in (None, *PRESETS) for f in SCENARIO_FIELDS)


@pytest.mark.parametrize("field", SCENARIO_FIELDS, ids=lambda f: f.name)
def test_a_row_is_an_option_of_every_scenario_command(field: object) -> None:
    for command in ("estimate", "generate", "explain", "serving", "compare", "sweep"):
        params = {p.name: p for p in cli_group().commands[command].params}
        if command == "serving" and field.name == "batch":  # type: ignore[attr-defined]
            assert "batch" not in params  # the running requests are serving's batch
            continue
        assert set(field.flags) <= set(params[field.name].opts), (command, field.name)  # type: ignore[attr-defined]


def test_file_rows_are_deployment_keys_and_in_the_schema(cli: Run) -> None:
    schema = json.loads(cli("schema").out)["$defs"]["deployment"]["properties"]
    for field in SCENARIO_FIELDS:
        assert (field.name in DEPLOYMENT_KEYS) == field.in_files, field.name
        assert (field.name in schema) == field.in_files, field.name
        if field.in_files:
            assert schema[field.name]["description"] == field.help


def test_points_take_their_rows_and_refuse_the_others(tmp_path: Path) -> None:
    """ep, dp_attention and v_dtype included (a datacenter point runs them); efficiency and
    overhead never (a point is what the fit explains, not an input to it)."""
    from decodecalc.calibration.points import read_points

    point = (
        "points:\n- {model: deepseek-v3, gpu: h200, weights: fp8, kv_dtype: fp8, v_dtype: fp8, "
        "batch: 64, tp: 8, ep: true, dp_attention: true, context: 2000, ms_per_token: 30, "
        "source: x}\n"
    )
    path = tmp_path / "points.yaml"
    path.write_text(point)
    (read,) = read_points(path, Catalog())
    assert read.scenario.ep and read.scenario.dp_attention and read.scenario.tp == 8
    path.write_text(point.replace("source: x", "source: x, efficiency: 0.8"))
    with pytest.raises(Exception, match="efficiency"):
        read_points(path, Catalog())


@pytest.mark.parametrize(
    ("engine", "gpu", "kind"),
    [
        ("roofline", "h100-sxm", "roofline"),
        ("typical", "h100-sxm", "typical"),
        ("vllm", "h100-sxm", "profile"),
        ("llama.cpp-metal", "h100-sxm", "fallback"),  # measured on Apple only
    ],
)
def test_an_engine_says_how_it_was_chosen(engine: str, gpu: str, kind: str) -> None:
    """Engine.kind names the choice (engine/select.py); only the roofline expects nothing."""
    from decodecalc.resolving.resolve import resolve

    s = resolve(ScenarioSpec(model="llama-3.1-8b", gpu=gpu, engine=engine), Catalog())
    assert s.engine.kind.value == kind
    assert s.engine.is_roofline == (kind == "roofline")
    assert bool(s.engine.params) == (kind != "roofline")
