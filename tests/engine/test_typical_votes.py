"""The typical band votes with each engine as ``--engine NAME`` takes it on the GPU's family
(engine/select.py as_named: its newest release line there, a transfer's where that line has
no points there), and says in one note when its votes extrapolate or were transferred
(issue 28: one answer, one release; every transferred or extrapolated prediction carries a
note)."""

from __future__ import annotations

import json
import re

import pytest

from decodecalc.engine.profile import Engine, EngineKind, EngineParams, EngineProfile, FitRange
from decodecalc.engine.select import (
    Facts,
    as_named,
    beyond,
    extrapolation,
    extrapolation_note,
    typical_engine,
)
from decodecalc.engine.transfer import for_kind
from decodecalc.loading.catalog import Catalog
from decodecalc.record import replace
from tests.conftest import Run
from tests.engine.test_lines_and_bands import RANGE as FITTED

SCENARIOS = {
    # the review's two (docs: /work/review.md item 2), NVIDIA datacenter (none has a line
    # dated in the last 12 months: those of the 12 months to 2025-08-12, current_on)
    "llama-70b-h100": ("-m", "llama-3.1-70b", "-g", "h100", "-w", "fp8", "--tp", "4",
                       "--batch", "8", "-c", "8K"),
    "deepseek-h200": ("-m", "deepseek-v3", "-g", "h200", "-w", "fp8", "--tp", "8",
                      "--batch", "8", "-c", "4K"),
    # AMD Instinct: today's lines (vllm@0.19, atom@2026-05)
    "gpt-oss-mi355x": ("-m", "gpt-oss-120b", "-g", "mi355x", "--batch", "16", "-c", "4K"),
    # NVIDIA consumer and Apple
    "llama-8b-4090": ("-m", "llama-3.1-8b", "-g", "rtx-4090", "-w", "int4-g128", "-c", "4K"),
    "llama-8b-m4": ("-m", "llama-3.1-8b", "-g", "m4-max-128gb", "-c", "4K"),
}  # fmt: skip

ROW = re.compile(r"^   (\S+): weights / .* -> ([\d.]+) ms$", re.M)


def votes(cli: Run, args: tuple[str, ...]) -> dict[str, float]:
    """explain's section 7 without --engine: each vote's name and step, as printed (its
    JSON lines, unwrapped)."""
    shown = "\n".join(json.loads(cli("explain", *args, "--json").out)["explanation"])
    return {name: float(ms) for name, ms in ROW.findall(shown)}


@pytest.mark.parametrize("scenario", SCENARIOS)
def test_each_vote_is_what_engine_name_prints(cli: Run, scenario: str) -> None:
    """Each engine row explain shows for the typical band is the expected figure
    ``--engine NAME`` prints for the same scenario, at the line it names; the headline is
    their median."""
    args = SCENARIOS[scenario]
    found = votes(cli, args)
    assert found
    for name, ms in found.items():
        engine, _, line = name.partition("@")
        doc = json.loads(cli("estimate", *args, "--engine", engine, "--json").out)
        assert doc["inputs"]["engine_line"] == (line or None), name
        assert round(doc["rows"][0]["expected_ms_per_token"], 3) == ms, name
    typical = json.loads(cli("estimate", *args, "--json").out)["rows"][0]
    ordered = sorted(found.values())
    middle = len(ordered) // 2
    median = ordered[middle] if len(ordered) % 2 else (ordered[middle - 1] + ordered[middle]) / 2
    assert typical["expected_ms_per_token"] == pytest.approx(median, abs=1e-3)


def test_the_vllm_vote_by_hand(cli: Run) -> None:
    """The review's case: vLLM's vote on Llama-3.1-70B, FP8, TP 4 on an H100 SXM, batch 8
    at 8,192 tokens, is its 0.11 line on NVIDIA datacenter GPUs (the line --engine vllm
    takes), not the fit pooled over every line. From the line's parameters (e_w, e_kv and
    the cost per layer as fitted), vLLM 0.24.0's custom all-reduce on 4 H100s as
    aiconfigurator-core measured it (presets/kernels/h100-sxm.yaml: 4.78 us a call, 241
    GB/s of bus bandwidth) and the model's config (hidden 8,192, 80 layers, 8 KV heads of
    128, MLP 28,672, vocabulary 128,256):
      weights per GPU, 1 B each: 80 x (2 x 8192^2 + 2 x 8192 x 1024 + 3 x 8192 x 28672) / 4
        + 128256 x 8192 / 4 (LM head) + 161 x 8192 (norms, whole) = 17,376,747,520 B
      KV per GPU: 8 x 8192 tokens x 80 x 8 x 128 x 2 x 2 B / 4 = 5,368,709,120 B
      160 all-reduces x (4.78 us + 2 x 3/4 x 8 x 8192 x 2 B / 241 GB/s = 0.816 us) = 0.895 ms
    and the step their sum with 80 x c_layer and the two streams."""
    args = SCENARIOS["llama-70b-h100"]
    vllm = Catalog().engine("vllm")
    name, p = as_named(vllm, "nvidia-datacenter") or ("", None)
    assert name == "vllm@0.11" and p is not None and p.allreduce_latency_s is None
    bw = 3.35e12
    weights = 80 * (2 * 8192**2 + 2 * 8192 * 1024 + 3 * 8192 * 28672) / 4
    weights += 128256 * 8192 / 4 + 161 * 8192
    assert weights == 17_376_747_520
    kv = 8 * 8192 * 80 * 8 * 128 * 2 * 2 / 4
    allreduce = 4.78e-6 + 1.5 * 8 * 8192 * 2 / 241e9
    by_hand = (
        weights / (bw * p.weight_efficiency)
        + kv / (bw * p.kv_efficiency)
        + 80 * p.per_layer_s
        + 160 * allreduce
    )
    assert votes(cli, args)["vllm@0.11"] == round(by_hand * 1e3, 3)


RANGE = replace(FITTED, params_max=9_000_000_000, batch_max=8, lines=("0.5",))
"""A vote fitted on 7-9B dense models at batch 1-8 on an H100 SXM, at line 0.5."""


def voted(*ranges: FitRange | None) -> Engine:
    params = tuple(EngineParams(0.8, 0.7, band=(0.9, 1.2), range=r) for r in ranges)
    names = tuple(f"e{i}@0.5" for i in range(len(ranges)))
    return Engine("typical", params, "nvidia-datacenter", names, kind=EngineKind.TYPICAL)


def test_one_note_says_how_many_votes_extrapolate_and_mostly_why() -> None:
    """Three votes: one fitted up to batch 8 on the H100 SXM, one up to batch 4, one on
    an A100 only. Batch 6 on an H100 SXM lies outside the second (batch) and the third
    (GPU): 2 of 3, the first axis by count and then by order. Those two take their
    range's outside band (x0.6-x2.5), as --engine NAME and validate price them; the first
    keeps its own (x0.9-x1.2)."""
    small = replace(RANGE, batch_max=4)
    a100 = replace(RANGE, gpus=("a100-80gb",))
    engine = voted(RANGE, small, a100)
    facts = Facts(8_030_261_248, "dense", 6, "h100-sxm", None)
    fitted, axes = beyond(engine, facts)
    assert [p.band for p in fitted.params] == [(0.9, 1.2), (0.6, 2.5), (0.6, 2.5)]
    assert axes == (
        "2 of its 3 engines are outside their fitted range, most on batch (1; "
        "e1@0.5: batch above the fitted 1-4)",
    )
    note = extrapolation_note(fitted, axes)
    assert note.code == "engine-extrapolated"
    assert note.message.startswith("typical extrapolated: 2 of its 3 engines are outside")
    # each vote checked at its own line: a vote fitted on 0.4 alone is outside at 0.5
    old = replace(RANGE, lines=("0.4",))
    _, axes = beyond(voted(RANGE, old), facts)
    assert axes == (
        "1 of its 2 engines is outside their fitted range, most on release line (1; "
        "e1@0.5: line 0.5 (fitted 0.4))",
    )
    # inside every vote's range (or none recorded): no note
    assert beyond(voted(RANGE, RANGE, None), facts)[1] == ()


def test_the_shipped_typical_notes_an_extrapolation_and_only_then(cli: Run) -> None:
    """Llama-3.1-8B on an H100 at batch 128: every NVIDIA datacenter vote (six: the 12
    months to 2025-08-12 leave llama.cpp's 2023-12 line out) was fitted at batch 8 or
    below (the review's item 7: each --engine NAME says it extrapolates, the default said
    nothing), in the table's stderr and the JSON alike. gpt-oss-120b (116.8B, MoE) on an
    MI355X at batch 16 lies inside both AMD votes' ranges (ATOM 2026-05: 70.6B-671B, dense
    and MoE, batch 4-256, MI355X; vLLM 0.19: 116.8B-352.8B MoE, batch 4-256, MI355X): no
    note."""
    args = ("estimate", "-m", "llama-3.1-8b", "-g", "h100", "-c", "4K", "--batch", "128")
    doc = json.loads(cli(*args, "--json").out)
    (note,) = [n["message"] for n in doc["notes"] if n["code"] == "engine-extrapolated"]
    assert note.startswith("typical extrapolated: 6 of its 6 engines are outside their fitted")
    assert "most on batch (6;" in note
    assert f"decodecalc: note: {note}" in cli(*args).err
    quiet = ("estimate", "-m", "gpt-oss-120b", "-g", "mi355x", "--batch", "16", "-c", "4K")
    doc = json.loads(cli(*quiet, "--json").out)
    assert doc["inputs"]["engine"] == "typical"
    assert not [n for n in doc["notes"] if n["code"] == "engine-extrapolated"]


class Two:
    """The shipped SGLang and gpt-fast profiles alone (engine/select.py Profiles): on AMD
    Instinct neither has a line of the last 12 months, so the typical band is every profile
    measured there, and SGLang's is its 0.5 line, transferred from NVIDIA (its own MI300X
    points are of 0.4)."""

    def __init__(self) -> None:
        catalog = Catalog()
        self.found = [catalog.engine("sglang"), catalog.engine("gpt-fast")]

    def engine(self, name: str) -> EngineProfile:
        return next(p for p in self.found if p.id == name)

    def engines(self) -> list[EngineProfile]:
        return list(self.found)


def test_a_transferred_vote_is_the_transfer_engine_name_takes_and_says_so() -> None:
    """The typical band's SGLang vote on AMD Instinct is --engine sglang there (0.5's
    NVIDIA rates with AMD's vendor factors, the MoE one for an MoE model), with one
    note naming it."""
    from decodecalc.engine.select import choose_engine

    profiles = Two()
    gpu = Catalog().gpu("mi300x")
    model = Catalog().model("qwen3-30b-a3b")
    engine, notes = typical_engine(profiles.engines(), "amd-instinct")
    assert engine.names == ("sglang@0.5", "gpt-fast")
    (moved,) = [n.message for n in notes if n.code == "engine-transferred"]
    assert moved.startswith("1 of the 2 profiles voting on amd-instinct GPUs (sglang@0.5) has")
    named, _ = choose_engine(profiles, "sglang", gpu)
    typical, _ = extrapolation(engine, model, 8, gpu)
    alone, _ = extrapolation(named, model, 8, gpu)
    assert engine.params[0].transferred
    assert typical.params[0] == alone.params[0]
    # a transfer's MoE factor (AMD's is 1 today) is applied to the vote as --engine does
    doubled = replace(engine, params=(replace(engine.params[0], moe_factor=2.0),))
    facts = Facts(model.total_params(), "moe", 8, "mi300x", None)
    (vote,) = beyond(replace(doubled, names=("sglang@0.5",)), facts)[0].params
    assert vote == for_kind(doubled.params[0], "moe") and vote.moe_factor == 1
    assert vote.weight_efficiency == pytest.approx(engine.params[0].weight_efficiency / 2)
