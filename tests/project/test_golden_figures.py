"""Every command's JSON on the examples and a grid of presets, held to what it printed before
the package was rearranged: a move of code must not move a figure.

The expected outputs live in tests/golden/figures.json, written by this module with
``DECODECALC_UPDATE_GOLDEN=1``; a change that is meant to move figures rewrites them and the
diff shows which. Floats compare to 1e-9 relative (a reordered sum may change the last bit),
everything else exactly; a field added since is no change (JSON grows by additions).
tests/golden/README.md says which of these figures other tests work out independently and
which only this file holds.
"""

from __future__ import annotations

import json
import math
import os
from pathlib import Path

import pytest

from tests.conftest import SHIPPED_POINTS, Run

GOLDEN = Path(__file__).parents[1] / "golden" / "figures.json"
UPDATE = bool(os.environ.get("DECODECALC_UPDATE_GOLDEN"))

SCENARIOS = [
    "-m llama-3.1-8b -g h100-sxm",
    "-m llama-3.1-70b -g h100-sxm -w fp8 -k fp8 --tp 4 --batch 32",
    "-m llama-3.1-70b -g mi300x -w fp8 --batch 8 --engine vllm",
    "-m llama-3.1-405b -g h200 -w fp8 -k fp8 --tp 8 --pp 2 --batch 16 --engine tensorrt-llm",
    "-m deepseek-v3 -g h200 -w fp8 -k fp8 --tp 8 --batch 64 --engine sglang",
    "-m deepseek-v3 -g b200 -k fp8 --tp 8 --ep --batch 64 --engine sglang",
    "-m deepseek-v3 -g h200 -w fp8 --tp 8 --ep --dp-attention --batch 128 --engine sglang",
    "-m deepseek-v3.2 -g h200 -w fp8 --tp 8 --batch 4",
    "-m gpt-oss-120b -g h100-sxm --batch 16 --engine vllm",
    "-m gpt-oss-20b -g rtx-4090 --engine llama.cpp",
    "-m qwen3-next-80b-a3b -g h100-sxm -w fp8 --tp 2 --batch 8",
    "-m qwen3-30b-a3b -g m4-max -w q4-k-m -k fp16 --engine llama.cpp-metal",
    "-m gemma-3-27b -g l40s -w int4-g128 -k fp8 --batch 4 --engine roofline",
    "-m nemotron-nano-9b-v2 -g a100-80gb --batch 32",
    "-m jamba-mini-1.5 -g h100-sxm --tp 2 --batch 8",
    "-m llama-4-scout -g h100-sxm -w fp8 --tp 4 --batch 4",
    "-m mixtral-8x7b -g a100-80gb -k int8 --v-dtype bf16 --batch 2 --engine tgi",
    "-m llama-3.1-8b -g h100-sxm --efficiency 0.8 --overhead 0.2ms --price 2.5 --engine roofline",
    "-m glm-4.5-air -g mi300x -w fp8 --tp 2 --batch 16 --engine typical",
    "-m minimax-m2 -g h200 -w fp8 --tp 4 --batch 32 --engine vllm",
]
CONTEXTS = "1K,8K,32K,128K"

COMMANDS: list[str] = [
    *(f"estimate {s} -c {CONTEXTS} --json" for s in SCENARIOS),
    *(f"explain {s} -c 16K --json" for s in SCENARIOS[::3]),
    *(f"generate {s} --prompt 2000 --tokens 500 --json" for s in SCENARIOS[::2]),
    "compare -m llama-3.1-70b -g h100-sxm,h200,mi300x -w fp8 -k fp8,bf16 -c 8K,128K --json",
    "compare -m deepseek-v3,kimi-k2 -g h200 -w fp8 --tp 8 --batch 1,32 -c 4K --engine sglang "
    "--json",
    "sweep -m llama-3.1-8b,qwen3-30b-a3b -g h100-sxm,m4-max -w bf16,int4-g128 --batch 1,8 "
    "-c 1K,64K -f jsonl",
    "serving -m llama-3.1-8b -g h100-sxm --engine vllm --input-len 1000 --output-len 500 "
    "--concurrency 1,32,128 --json",
    "serving -m deepseek-v3 -g h200 -w fp8 -k fp8 --tp 8 --engine sglang --input-len 4000 "
    "--output-len 1000 --concurrency 1,16,64 --json",
    "serving -m llama-3.1-70b -g mi300x -w fp8 --engine vllm --input-len 2000 --output-len 256 "
    "--request-rate 1,4 --json",
    "serving -m qwen3-30b-a3b -g h100-sxm --engine vllm --input-len 1000 --output-len 200 "
    "--concurrency 8 --prefix-len 600 --prefix-hit-rate 0.5 --json",
    "serving -m deepseek-v3 -g h200 -w fp8 -k fp8 --tp 8 --engine sglang --input-len 1000 "
    "--output-len 500 --concurrency 32 --speculative mtp --acceptance 0.7 --json",
    "plan -m llama-3.1-70b -c 4K --max-ms-per-token 30 --batch 64 --json",
    "plan -m deepseek-v3 -c 16K --max-ms-per-token 50 --json",
    # plan under a workload (its TPOT is serving's) and serving priced, both added in issue 22
    "plan -m llama-3.1-70b --gpus h100-sxm,b200,mi300x --input-len 2K --output-len 256 "
    "--concurrency 64 --max-ms-per-token 30 --min-throughput 5000 --json",
    "serving -m llama-3.1-8b -g h100-sxm --input-len 1K --output-len 200 --concurrency 8,64 "
    "--price 2.5 --json",
    "check examples/chat-h100.yaml examples/rag-long-context.yaml examples/deepseek-moe.yaml "
    "examples/vllm-targets.yaml -f json",
    "check examples/vllm-serve.yaml --gpu h100-sxm -t max_ms_per_token=30 -t must_fit=true -f json",
    # The figure kinds the grid lacked (issue 29): disaggregated serving, its deployment
    # file and its plan, a plan under a TTFT target, a fit, TP across nodes.
    "serving -m deepseek-r1 -g h200 -w fp8 --tp 8 --engine sglang --input-len 8K "
    "--output-len 1K --concurrency 16,64 --prefill-workers 1 --decode-workers 2 --json",
    "check examples/disaggregated-deepseek.yaml -f json",
    "plan -m llama-3.1-70b --gpus h200 -w fp8 --tp 4 --input-len 8K --output-len 1K "
    "--concurrency 64 --max-ttft-ms 2000 --disaggregated --json",
    "plan -m llama-3.1-8b --gpus h100-sxm --max-ms-per-token 30 --input-len 4K --output-len 256 "
    "--concurrency 64 --max-ttft-ms 100 --json",
    "calibrate tests/data/measured-decode.yaml --json",
    "estimate -m llama-3.1-405b -g h100-sxm -w fp8 -k fp8 --tp 16 --gpus-per-node 8 "
    "--node-link ib-ndr --batch 8 -c 1K,32K --json",
    "show deepseek-v3 --json",
    "show gpt-oss-120b --json",
    "engines --json",
    "validate validation/points.yaml --json",
]


def _same(got: object, want: object, where: str) -> None:
    if isinstance(want, float) and isinstance(got, float):
        assert math.isclose(got, want, rel_tol=1e-9, abs_tol=1e-15), f"{where}: {got} != {want}"
    elif isinstance(want, dict) and isinstance(got, dict):
        # New fields are additions (docs/json.md): every field there was is still there.
        missing = sorted(set(want) - set(got))
        assert not missing, f"{where}: lost {missing}"
        for key in want:
            _same(got[key], want[key], f"{where}.{key}")
    elif isinstance(want, list) and isinstance(got, list):
        assert len(got) == len(want), f"{where}: {len(got)} items != {len(want)}"
        for i, (g, w) in enumerate(zip(got, want, strict=True)):
            _same(g, w, f"{where}[{i}]")
    else:
        assert got == want, f"{where}: {got!r} != {want!r}"


def _parse(out: str) -> object:
    lines = [line for line in out.splitlines() if line.strip()]
    if len(lines) > 1 and all(line.startswith("{") for line in lines):
        return [json.loads(line) for line in lines]  # JSON Lines
    return json.loads(out)


LONG = [
    " ".join(SHIPPED_POINTS),  # refits every profile: 8 CPU-seconds
    "plan -m deepseek-v3 -c 16K --max-ms-per-token 50 --json",  # every priced GPU: 3.4
    "plan -m llama-3.1-70b -c 4K --max-ms-per-token 30 --batch 64 --json",  # 2.5
    "plan -m llama-3.1-70b --gpus h100-sxm,b200,mi300x --input-len 2K --output-len 256 "
    "--concurrency 64 --max-ms-per-token 30 --min-throughput 5000 --json",  # 0.9
]
"""The grid's long end-to-end commands (a second or more each, most others a tenth of a
second or less): the slow set holds them (test_the_long_commands_print_the_figures_they_
printed), and every kind of figure stays in the fast set through the others (two plans
among them, both under a workload: a TTFT target's and a disaggregated one)."""


def _printed(cli: Run, command: str) -> dict[str, object]:
    result = cli(*command.split())
    return {"exit": result.code, "json": _parse(result.out) if result.out else None}


def test_every_command_prints_the_figures_it_printed(cli: Run) -> None:
    """One test over the whole grid but its long commands (a test per command would
    rebuild the same catalog). With DECODECALC_UPDATE_GOLDEN=1 it runs them too and
    rewrites the file."""
    assert set(LONG) <= set(COMMANDS)
    got = {command: _printed(cli, command) for command in COMMANDS if UPDATE or command not in LONG}
    if UPDATE:
        GOLDEN.write_text(json.dumps(got, indent=1, sort_keys=True) + "\n")
        pytest.skip("rewrote tests/golden/figures.json")
    want = json.loads(GOLDEN.read_text())
    assert sorted(want) == sorted(COMMANDS), "the golden grid changed: rewrite it deliberately"
    for command, printed in got.items():
        _same(printed, want[command], command)


@pytest.mark.slow
@pytest.mark.skipif(UPDATE, reason="the fast test rewrites every command's figures")
def test_the_long_commands_print_the_figures_they_printed(
    cli: Run, shipped_validation: dict[str, object]
) -> None:
    """The grid's long commands; the whole validation is the run's one (tests/conftest.py's
    shipped_validation, which exits 0)."""
    want = json.loads(GOLDEN.read_text())
    for command in LONG:
        if command == " ".join(SHIPPED_POINTS):
            printed: dict[str, object] = {"exit": 0, "json": shipped_validation}
        else:
            printed = _printed(cli, command)
        _same(printed, want[command], command)
