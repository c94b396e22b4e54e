"""Map ../shared/validation/measured-datacenter.yaml to validation/points-datacenter.yaml.

    python validation/map_datacenter.py [SOURCE [TARGET]]   # rewrites points-datacenter.yaml

SOURCE defaults to ../shared/validation/measured-datacenter.yaml beside the repository; the
same source gives the same bytes.

Each of the 84 rows takes the rule of its source (RULES: the first whose ``source`` prefix
and ``engine`` words match), which says what the engine ran: the preset model, GPU, weight
format, KV format, DP attention (SGLang's --enable-dp-attention), expert parallelism
(TensorRT-LLM's --ep_size), the node layout, the release line, and what the figure is.
The row's own batch, TP, context and ms_per_token are kept; a serving row's workload
(input, output, concurrency) is read from its ``context`` line (the concurrency from the
source's quoted words where that line names none: InferenceX PR #1092's "TP=8 conc=4" row is
a serving run at concurrency 4, as its batch says), and its batch is the mean
number of requests in flight where the row's notes give it, else the concurrency (an
upper bound, noted). The point's ``notes`` say which rule it took and how the source
described it. These points are not fitted (validation/README.md says why): validate
predicts them with the shipped profiles, fitted without them.
"""

from __future__ import annotations

import re
import sys
from pathlib import Path
from typing import Any

import yaml

ROOT = Path(__file__).resolve().parent.parent
SOURCE = ROOT.parent / "shared" / "validation" / "measured-datacenter.yaml"
TARGET = ROOT / "validation" / "points-datacenter.yaml"

STARTUP_BURST = (
    "the requests of one fixed length start together and stay in step, so each wave's "
    "prompts queue for their prefills at once: TTFT grows with the concurrency, a start-up "
    "burst the steady-state serving model does not describe; reported by validate, not fitted"
)

DSTACK_R1 = "dstackai/benchmarks@7f37e669"
DSTACK_405B_AMD = "dstackai/benchmarks@ac24b9d1"
DSTACK_405B_H100 = "dstackai/benchmarks@85a2fe17"
INFERENCEX_828 = "SemiAnalysisAI/InferenceX issue #828"
INFERENCEX_870 = "SemiAnalysisAI/InferenceX issue #870"
INFERENCEX_1092 = "SemiAnalysisAI/InferenceX PR #1092"
BUILDKITE = "https://buildkite.com/vllm/performance-benchmark/builds/9515"
TENSTORRENT = "tenstorrent/tt-inference-server issue #356"

R1 = {"model": "deepseek-r1", "weights": "fp8-block128", "kv_dtype": "bf16"}
R1_NOTE = (
    "DeepSeek-R1 -> deepseek-r1 (the DeepSeek-V3 architecture); the official FP8 checkpoint "
    "-> fp8-block128; KV: the BF16 MLA latent (engine default; not stated)"
)
GPT_OSS = {"model": "gpt-oss-120b", "weights": "gpt-oss-mxfp4", "kv_dtype": "bf16"}
GPT_OSS_NOTE = (
    "gpt-oss-120b's official MXFP4 MoE checkpoint -> gpt-oss-mxfp4; KV bf16 (vLLM default; "
    "not stated)"
)

RULES: list[tuple[str, str, dict[str, Any], str]] = [
    (
        DSTACK_R1,
        "SGLang",
        {**R1, "gpu": "h200", "dp_attention": True, "engine": "sglang", "release": "0.4"},
        f"{R1_NOTE}; --enable-dp-attention -> dp_attention (attention data-parallel, MoE TP)",
    ),
    (
        DSTACK_R1,
        "vLLM",
        {**R1, "gpu": "h200", "engine": "vllm", "release": "0.7"},
        f"{R1_NOTE}; vLLM 0.7.4 nightly with FlashMLA, TP 8",
    ),
    (
        DSTACK_R1,
        "TensorRT-LLM",
        {**R1, "gpu": "h200", "ep": True, "engine": "tensorrt-llm", "release": "0.17"},
        f"{R1_NOTE}; --tp_size 8 --ep_size 4 -> ep (experts spread over the TP group; the "
        "engine's EP 4 x MoE-TP 2 split is between EP 8 and none)",
    ),
    (
        DSTACK_405B_AMD,
        "vLLM",
        {"model": "llama-3.1-405b", "gpu": "mi300x", "weights": "bf16", "kv_dtype": "bf16"}
        | {"engine": "vllm", "release": "0.6"},
        "Llama-3.1-405B-Instruct bf16 -> llama-3.1-405b; a single request: its mean TPOT is "
        "the decode step",
    ),
    (
        DSTACK_405B_AMD,
        "TGI",
        {"model": "llama-3.1-405b", "gpu": "mi300x", "weights": "bf16", "kv_dtype": "bf16"}
        | {"engine": "tgi"},
        "Llama-3.1-405B-Instruct bf16 -> llama-3.1-405b; a single request: its mean TPOT is "
        "the decode step; TGI at a commit (no release line)",
    ),
    (
        DSTACK_405B_H100,
        "vLLM",
        {"model": "llama-3.1-405b", "gpu": "h100-sxm", "weights": "fp8-ffn-only"}
        | {"kv_dtype": "bf16", "engine": "vllm", "release": "0.6"},
        "Meta's Llama-3.1-405B-FP8 (FBGEMM row-wise FP8, Meta's fp8_mixed format) -> "
        "fp8-ffn-only: only the MLP is FP8, attention, embedding and LM head stay BF16 "
        "(meta-llama/llama-stack@c05fbf14 quantization/loader.py: convert_to_fp8_quantized_model); "
        "the first and last layers' MLP, BF16 there, counted in FP8 (1.1% of the bytes short); "
        "end-to-end latency / 2048 with one prefill of batch x input tokens inside",
    ),
    (
        INFERENCEX_828,
        "vLLM",
        {**GPT_OSS, "gpu": "h100-sxm", "engine": "vllm"},
        f"{GPT_OSS_NOTE}; lengths nominal (random range ratio 0.8); vLLM version not given",
    ),
    (
        INFERENCEX_870,
        "SGLang",
        {**R1, "gpu": "h200", "engine": "sglang", "release": "0.5"},
        f"{R1_NOTE}; SGLang v0.5.7, TP 8, EP 1; lengths nominal (random range ratio 0.8)",
    ),
    (
        INFERENCEX_1092,
        "vLLM",
        {**GPT_OSS, "gpu": "mi300x", "engine": "vllm", "release": "0.17"},
        f"{GPT_OSS_NOTE}; ms_per_token = 1000 / the quoted tokens/s per user (approximate)",
    ),
    (
        BUILDKITE,
        "vLLM",
        {"gpu": "h200", "weights": "bf16", "kv_dtype": "bf16", "engine": "vllm"},
        "bf16 -> bf16; Llama-3-70B -> llama-3.1-70b (the same tensors); end-to-end latency / "
        "128 with a prefill of 8 x 32 tokens inside; vLLM commit not visible",
    ),
    (
        TENSTORRENT,
        "vLLM",
        {"model": "deepseek-r1", "gpu": "h100-sxm", "weights": "int4-g128"}
        | {"kv_dtype": "bf16", "engine": "vllm"},
        "DeepSeek-R1-0528-AWQ -> int4-g128 (AWQ: 4-bit, one FP16 scale per 128; the repo is "
        "not named, so which layers stay BF16 is not known); H100 variant not stated -> "
        "h100-sxm; TP 8 assumed from 8 GPUs",
    ),
    (
        TENSTORRENT,
        "SGLang",
        {**R1, "gpu": "h100-sxm", "engine": "sglang", "gpus_per_node": 8, "node_link": "ib-ndr"},
        f"{R1_NOTE}; TP 16 over two 8-GPU nodes on InfiniBand (NDR assumed; not stated); "
        "H100 variant not stated -> h100-sxm",
    ),
]
"""(source prefix, a word of the engine line, the point's fields, the rule in words)."""

MODELS = {"Llama-3.1-8B": "llama-3.1-8b", "Llama-3-70B": "llama-3.1-70b"}
MODELS |= {"Mixtral-8x7B": "mixtral-8x7b"}
"""The Buildkite rows' models, by the start of their ``model`` line."""

EXCLUDED = {
    (INFERENCEX_870, 16): "the source says the concurrency-16 run was on a thermally "
    "throttled node",
}
"""(source, concurrency): why a row is kept for the record but not validated."""

WORKLOAD = re.compile(r"(?:input|ISL) (\d+)(?:,| /) (?:output|OSL) (\d+)")
CONCURRENCY = re.compile(r"concurrency (\d+)")
QUOTED_CONCURRENCY = re.compile(r"\bconc=(\d+)")
"""A quoted source's own words for its concurrency (InferenceX PR #1092's body: "TP=8 conc=4"),
read where the row's ``context`` line names none."""
IN_FLIGHT = re.compile(r"in-flight requests \([^)]*\) = (\d+(?:\.\d+)?)")


def rule_for(row: dict[str, Any]) -> tuple[dict[str, Any], str]:
    for prefix, word, fields, words in RULES:
        if row["source"].startswith(prefix) and word in row["engine"]:
            return fields, words
    raise SystemExit(f"no rule for {row['source'][:80]} ({row['engine']})")


def point(row: dict[str, Any]) -> dict[str, Any]:
    """One source row as a point."""
    fields, words = rule_for(row)
    out: dict[str, Any] = {"model": fields.get("model")} if "model" in fields else {}
    if not out:
        out["model"] = next(v for k, v in MODELS.items() if row["model"].startswith(k))
    out |= {k: v for k, v in fields.items() if k not in ("model", "engine", "release")}
    notes = [words]
    out["batch"], serving = _load(row, notes)
    out["tp"] = row["tp"]
    out["context"] = row["context_tokens"]
    out["ms_per_token"] = row["ms_per_token"]
    out |= serving
    out["measured"] = "e2e_over_tokens" if "end" in row["metric"].split("(")[0] else "tpot_mean"
    out["engine"] = fields["engine"]
    out["engine_version"] = row["engine"]
    if "release" in fields:
        out["release"] = fields["release"]
    reason = EXCLUDED.get((rule_source(row), serving.get("concurrency")))
    if reason:
        out["exclude"] = reason
    out["source"] = row["source"]
    published = f"{row['model']}; {row['gpu']}; {row['weights']}; KV {row['kv_dtype']}"
    out["notes"] = "; ".join([*notes, f"published as: {published}; {row['context']}"])
    return out


def rule_source(row: dict[str, Any]) -> str:
    return next(p for p, _, _, _ in RULES if row["source"].startswith(p))


def _load(row: dict[str, Any], notes: list[str]) -> tuple[int, dict[str, Any]]:
    """The live batch and, for a serving row, its workload (and TTFT where measured)."""
    workload = WORKLOAD.search(row["context"])
    concurrency = CONCURRENCY.search(row["context"]) or QUOTED_CONCURRENCY.search(row["source"])
    in_flight = IN_FLIGHT.search(row.get("notes", ""))
    batch = row["batch"]
    if in_flight:
        batch = max(1, round(float(in_flight.group(1))))
        notes.append(f"batch {batch}: the mean number of requests in flight ({in_flight[1]})")
    elif batch > 1 and concurrency:
        notes.append(f"batch {batch}: the concurrency, an upper bound")
    if not (workload and (concurrency or batch == 1)) or "offline" in row["context"]:
        return batch, {}
    serving: dict[str, Any] = {
        "input_len": int(workload[1]),
        "output_len": int(workload[2]),
        "concurrency": int(concurrency[1]) if concurrency else 1,
    }
    if "ttft_mean_ms" in row and serving["concurrency"] > 1:
        serving |= {"ttft_ms": row["ttft_mean_ms"], "ttft_exclude": STARTUP_BURST}
    return batch, serving


HEADER = """\
# The 84 datacenter decode measurements of ../shared/validation/measured-datacenter.yaml
# (NOTES-datacenter.md beside it), mapped to scenarios in the points format `decodecalc
# validate` reads, in the source file's order. Written by validation/map_datacenter.py from
# its rules per source (re-run it instead of editing). Not fitted: an out-of-sample set the
# shipped profiles predict (validation/README.md).
"""


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    source = Path(args[0]) if args else SOURCE
    target = Path(args[1]) if len(args) > 1 else TARGET
    rows = yaml.safe_load(source.read_text(encoding="utf-8"))["measured"]
    points = [point(r) for r in rows]
    text = yaml.safe_dump({"points": points}, sort_keys=False, width=100, allow_unicode=True)
    target.write_text(HEADER + text, encoding="utf-8")
    print(f"wrote {len(points)} points to {target}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
