"""The engine choice (engine/select.py choose_engine): every scenario carries an Engine,
whatever door built it, and the roofline is one kind of it, the only one without
parameters."""

from __future__ import annotations

import pytest

from decodecalc.engine.profile import ROOFLINE, Engine, EngineKind, EngineParams, roofline
from decodecalc.engine.select import choose_engine
from decodecalc.errors import InputError
from decodecalc.loading.catalog import Catalog
from decodecalc.resolving.resolve import resolve
from decodecalc.scenarios.scenario import Scenario
from decodecalc.scenarios.spec import ScenarioSpec


def test_a_scenario_built_by_hand_carries_the_roofline() -> None:
    catalog = Catalog()
    s = Scenario(
        model=catalog.model("llama-3.1-8b"),
        weights=catalog.dtype("bf16"),
        kv_dtype=catalog.dtype("bf16"),
        bandwidth_bytes_per_s=3_350_000_000_000,
    )
    assert s.engine is ROOFLINE and s.engine.kind is EngineKind.ROOFLINE


def test_only_the_roofline_has_no_parameters() -> None:
    params = EngineParams(weight_efficiency=0.8, kv_efficiency=0.7)
    with pytest.raises(ValueError, match="roofline"):
        Engine("vllm", ())
    with pytest.raises(ValueError, match="roofline"):
        Engine("roofline", (params,), kind=EngineKind.ROOFLINE)
    assert roofline("apple").family == "apple" and roofline().is_roofline


def test_every_door_gets_an_engine() -> None:
    """No spec is the typical band; 'roofline' is an Engine too, not a None."""
    catalog = Catalog()
    for spec, kind in ((None, EngineKind.TYPICAL), ("roofline", EngineKind.ROOFLINE)):
        engine, _ = choose_engine(catalog, spec, catalog.gpu("h100-sxm"))
        assert engine.kind is kind
    s = resolve(ScenarioSpec(model="llama-3.1-8b", gpu="h100-sxm", engine="roofline"), catalog)
    assert s.engine.is_roofline and s.engine.family == "nvidia-datacenter"


def test_an_unknown_release_line_is_refused_with_the_lines_there_are() -> None:
    catalog = Catalog()
    with pytest.raises(InputError, match=r"unknown release line '0\.44' of sglang; did you mean"):
        choose_engine(catalog, "sglang@0.44", catalog.gpu("h100-sxm"))


def test_one_answer_names_each_release_it_draws_on_once() -> None:
    """Issue 28: the step's parameters (vLLM's 0.11 line), its compute rates and TP 8's all-reduce
    (vLLM 0.24.0's kernel tables on the H200) and the scheduler defaults (vLLM 0.19.0) each named
    once: ``vllm@0.11`` in one note; --engine vllm names the scheduler's release in the note on the
    line it takes, so the releases note leaves it out (both once said it)."""
    for engine in ("vllm@0.11", "vllm"):
        spec = ScenarioSpec(
            model="deepseek-v3", gpu="h200", weights="fp8", tp=8, batch=16, engine=engine
        )
        notes = {n.code: n.message for n in resolve(spec, Catalog()).notes}
        releases = (
            "vllm@0.11: step parameters from the 0.11 line's points; compute rates and "
            "all-reduces from vllm 0.24.0 kernel tables on h200 (aiconfigurator-core)"
        )
        scheduler = "; scheduler defaults from 0.19.0"
        older = notes.get("engine-older-line", "")
        assert notes["engine-releases"] == releases + ("" if older else scheduler)
        assert older == ("" if engine == "vllm@0.11" else f"{older.split(';')[0]}{scheduler}")
        assert sum("0.19.0" in m for m in notes.values()) == 1
    roofline_spec = ScenarioSpec(model="deepseek-r1", gpu="h200", tp=8, engine="roofline")
    assert "engine-releases" not in {n.code for n in resolve(roofline_spec, Catalog()).notes}


@pytest.mark.parametrize(
    ("spec", "named"),
    [
        # issue 28's own: SGLang 0.5 transferred to an MI355X, priced with aiter's tables
        (
            ScenarioSpec(
                model="deepseek-v3", gpu="mi355x", weights="fp8", tp=8, batch=8, engine="sglang"
            ),
            ("sglang@0.5:", "the 0.5 line's points", "aiter e4048607a535 kernel tables"),
        ),
        # vLLM's newest line on NVIDIA is 0.11, its scheduler block cites 0.19.0: the note
        # on the line taken names both
        (
            ScenarioSpec(model="llama-3.1-8b", gpu="h100", engine="vllm"),
            ("vllm@0.11:", "(0.15, 0.19 are not)", "scheduler defaults from 0.19.0"),
        ),
        # an older line asked for, where only 0.11 is fitted: the line that stands in
        (
            ScenarioSpec(model="llama-3.1-8b", gpu="h100", engine="vllm@0.10"),
            ("vllm@0.10:", "the 0.11 line's points (standing in for 0.10)", "0.19.0"),
        ),
    ],
)
def test_one_answer_one_release_or_a_note_naming_each(
    spec: ScenarioSpec, named: tuple[str, ...]
) -> None:
    """Issue 28: where the step's parameters, the kernel tables and the scheduler defaults
    come from different releases, one note names each."""
    notes = {n.code: n.message for n in resolve(spec, Catalog()).notes}
    said = notes.get("engine-releases") or notes["engine-older-line"]
    for words in named:
        assert words in said


def test_an_explicit_line_names_the_schedulers_release_without_kernel_tables() -> None:
    """``vllm@0.11`` on an H100, where the line's own fitted e_mma keeps the kernel tables
    out (loading/kernels.py): the step from the 0.11 line, the
    scheduler defaults from vLLM 0.19.0, said once (--engine vllm says it in the note on
    the line it takes, so no second note)."""
    catalog = Catalog()
    explicit = resolve(ScenarioSpec(model="llama-3.1-8b", gpu="h100", engine="vllm@0.11"), catalog)
    notes = {n.code: n.message for n in explicit.notes}
    assert notes["engine-releases"] == (
        "vllm@0.11: step parameters from the 0.11 line's points; scheduler defaults from 0.19.0"
    )
    named = resolve(ScenarioSpec(model="llama-3.1-8b", gpu="h100", engine="vllm"), catalog)
    said = [n.message for n in named.notes if "0.19.0" in n.message]
    assert len(said) == 1 and said[0].startswith("vllm@0.11: the newest line fitted")


@pytest.mark.parametrize("gpu", ["h100", "h200", "b200", "mi300x", "mi355x", "rtx-4090"])
def test_every_release_an_answer_draws_on_is_named(gpu: str) -> None:
    """Over every profile on each GPU: an answer whose scheduler defaults cite another
    release than its line, or that reads kernel tables, carries a note naming the
    scheduler's release (engine-releases, or the note on the line taken)."""
    catalog = Catalog()
    for model in ("llama-3.1-8b", "qwen3-30b-a3b"):
        for profile in catalog.engines():
            s = resolve(ScenarioSpec(model=model, gpu=gpu, engine=profile.id), catalog)
            e, notes = s.engine, {n.code: n.message for n in s.notes}
            if e.line is None:
                continue
            cited = profile.serving.source.split()[1] if profile.serving else e.line
            mixed = bool(e.params[0].kernel_source) or not cited.startswith(e.line)
            said = f"{notes.get('engine-releases', '')} {notes.get('engine-older-line', '')}"
            assert bool(said.strip()) >= mixed, (profile.id, model)
            if mixed and profile.serving:
                assert f"scheduler defaults from {cited}" in said


def test_tgi_says_which_vllm_fit_it_carries() -> None:
    """TGI has no points of its own: it carries vLLM's fit pooled over every release line
    on each family (vllm.yaml's families block), not the newest line --engine vllm takes;
    its note says exactly that (review s40 #21: it said only "vLLM's parameters carried
    over" while giving other figures than --engine vllm)."""
    from pathlib import Path
    from typing import Any

    import yaml

    root = Path(__file__).parents[2]

    def load(name: str) -> dict[str, Any]:
        found: dict[str, Any] = yaml.safe_load((root / f"presets/engines/{name}.yaml").read_text())
        return found

    tgi, vllm = load("tgi"), load("vllm")
    keys = ("weight_efficiency", "kv_efficiency", "per_layer", "per_step", "per_moe_layer")
    for family, params in tgi["families"].items():
        pooled = vllm["families"][family]
        assert {k: params.get(k) for k in keys} == {k: pooled.get(k) for k in keys}, family
    newest = vllm["lines"]["0.11"]["families"]["nvidia-datacenter"]
    assert newest["weight_efficiency"] != tgi["families"]["nvidia-datacenter"]["weight_efficiency"]
    assert "pooled on each GPU family" in tgi["notes"]
    assert "not the newest line alone that --engine vllm takes" in tgi["notes"]
