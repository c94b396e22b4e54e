"""Small things a user sees, each once wrong (issue 32, item 14): a KV format listed that
estimate refuses, price lists left out of the help, "1 engine profiles", the crossover
marker on a row of its own, a check problem without its line, serving targets with no word
on what they were held to, sources that are not links, and an install line without the
extra that `report` needs."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from decodecalc.loading.catalog import presets_dir
from decodecalc.views.html import linked
from tests.conftest import Run

ROOT = Path(__file__).parents[2]


def _kv(cli: Run, model: str) -> list[dict[str, object]]:
    return list(json.loads(cli("show", model, "--json").out)["kv_bytes_per_token"])


def test_show_lists_only_the_kv_formats_the_model_takes(cli: Run) -> None:
    """fp8-flashmla is FlashMLA's layout of an MLA latent: estimate refuses it for a model
    without MLA, so show does not list it there; deepseek-v3 (MLA) keeps it."""
    llama = {r["kv_dtype"] for r in _kv(cli, "llama-3.1-8b")}
    deepseek = {r["kv_dtype"] for r in _kv(cli, "deepseek-v3")}
    assert "fp8-flashmla" not in llama and "fp8" in llama
    assert "fp8-flashmla" in deepseek


@pytest.mark.parametrize("command", ["estimate", "plan"])
def test_the_help_names_every_price_list(cli: Run, command: str) -> None:
    text = " ".join(cli(command, "--help").out.split())
    for listing in sorted(p.stem for p in (presets_dir() / "prices").glob("*.yaml")):
        assert listing in text, listing


def test_one_engine_profile_is_singular(cli: Run) -> None:
    out = cli("estimate", "-m", "llama-3.1-8b", "-g", "m4-max", "-c", "1K").out
    assert "typical of 1 engine profile on apple" in " ".join(out.split())
    assert "1 engine profiles" not in out


@pytest.mark.parametrize("width", ["100", "120", "150"])
def test_the_crossover_marker_never_takes_a_row_of_its_own(
    cli: Run, monkeypatch: pytest.MonkeyPatch, width: str
) -> None:
    monkeypatch.setenv("COLUMNS", width)
    out = cli("estimate", "-m", "llama-3.1-8b", "-g", "h100-sxm", "--batch", "8").out
    rows = [line for line in out.splitlines() if "│" in line]
    assert all(line.split("│")[0].strip() for line in rows), "a row without its context"
    marked = [line for line in rows if "crossover" in line]
    assert not marked or "<- crossover" in marked[0]


def test_a_conflict_in_a_deployment_names_its_line(cli: Run, tmp_path: Path) -> None:
    path = tmp_path / "d.yaml"
    path.write_text("model: llama-3.1-8b\ngpu: h100-sxm\ntp: 3\ntargets: {max_ms_per_token: 50}\n")
    result = cli("check", str(path))
    assert result.code == 2
    assert f"{path}:3:5: tp: tp 3 does not split" in result.err


def test_serving_targets_say_what_they_were_held_to(cli: Run, tmp_path: Path) -> None:
    path = tmp_path / "d.yaml"
    path.write_text(
        "model: llama-3.1-8b\ngpu: h100-sxm\nengine: vllm\n"
        "workload: {input_len: 1000, output_len: 100, concurrency: 8}\n"
        "targets: {max_tpot_ms: 50}\n"
    )
    out = " ".join(cli("check", str(path)).out.split())
    assert "serving targets held to: the server's steady state under its workload" in out
    assert "its steps vllm's on nvidia-datacenter" in out


def test_sources_are_links_and_nothing_else_is_markup() -> None:
    cell = 'https://support.apple.com/en-us/117736; see "x" <b> https://a.example/p?q=1&r=2.'
    html = linked(cell)
    assert '<a href="https://support.apple.com/en-us/117736" rel="noopener noreferrer">' in html
    assert '<a href="https://a.example/p?q=1&amp;r=2" rel="noopener noreferrer">' in html
    assert "&lt;b&gt;" in html and "<b>" not in html and html.endswith("</a>.")


def test_the_install_line_names_the_report_extra() -> None:
    install = (ROOT / "README.md").read_text().split("## Install")[1].split("##")[0]
    assert "pip install '.[report]'" in install


def test_a_pipelines_headline_says_its_bytes_are_the_stages_added_up(cli: Run) -> None:
    """Review item 5: with PP the headline's weights are the stages' added up, which no GPU
    reads. Llama-3.1-70B FP8, TP 8 PP 4: a layer's GPU reads 855,638,016 / 8 matrix
    parameters plus 16,384 replicated norm ones, 106,971,136 B at 1 B each; a stage of 20
    layers 2,139,422,720 B (2.14 GB), the last one also the final norm's 8,192 and 1/8 of
    the 128,256 x 8,192 LM head, 2,270,765,056 B (2.27 GB); added up 8,689,033,216 B
    (8.69 GB). KV: 80 layers x 2 x 1 KV head x 128 x 1 B = 20,480 B (20.48 kB) a token."""
    flags = "-m llama-3.1-70b -g h100-sxm -w fp8 -k fp8 --tp 8 --pp 4 --batch 8 -c 8K"
    out = " ".join(cli("estimate", *flags.split()).out.split())
    assert (
        "weights read per step, summed over the 4 stages: 8.69 GB (each GPU reads its own "
        "stage's: 2.14 GB, 2.14 GB, 2.14 GB, 2.27 GB)"
    ) in out
    assert "KV per token per sequence, summed over the 4 stages: 20.48 kB" in out
    assert "the Weights, KV cache and Total columns are the stages' added up" in out
    assert "per GPU (TP 8): 8.69 GB" not in out
    doc = json.loads(cli("estimate", *flags.split(), "--json").out)
    assert doc["weight_bytes_per_step"] == 8_689_033_216
    assert [st["weight_bytes"] for st in doc["stages"]] == [2_139_422_720] * 3 + [2_270_765_056]
    explained = cli("explain", *flags.split()).out
    assert "1. Weights read per step (the 4 stages' GPUs added up, fp8" in explained
