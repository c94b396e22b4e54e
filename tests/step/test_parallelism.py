"""Parallelism beyond one TP group: pipeline stages, expert parallelism, data-parallel
attention and links between nodes, each held to hand arithmetic (docs/physics.md,
"Parallelism beyond one TP group").

Shapes used below, from the models' config.json files:
- Llama-3.1-70B: 80 layers, hidden 8,192, 64 heads, 8 KV heads x 128, intermediate 28,672,
  vocabulary 128,256, untied embeddings. Per layer: q and o 2 x 8,192 x 8,192 =
  134,217,728; k and v 2 x 8,192 x 1,024 = 16,777,216; MLP 3 x 8,192 x 28,672 =
  704,643,072; two norms 16,384: 855,654,400 parameters. Embedding and LM head 128,256 x
  8,192 = 1,050,673,152 each.
- DeepSeek-V3: 61 layers, the first 3 dense (58 MoE layers), hidden 7,168, 8 of 256 routed
  experts per token; MLA caches 512 + 64 = 576 elements per token per layer.
Links: NVLink 4 450 GB/s and 10 us per call; InfiniBand NDR 50 GB/s (400 Gb/s) and 20 us.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import yaml

import decodecalc
from decodecalc.answers.estimate import estimate
from decodecalc.step.parallelism import stage_groups, stage_layer_counts
from tests.conftest import Run, shared_catalog

CATALOG = shared_catalog()
NVLINK4 = (450e9, 10e-6)
IB_NDR = (50e9, 20e-6)
LAYER_70B = 855_654_400
EMBEDDING_70B = 128_256 * 8_192


def estimate_json(cli: Run, *args: str) -> Any:
    r = cli("estimate", *args, "--no-crossover-row", "--json")
    assert r.code == 0, r.err
    return json.loads(r.out)


@pytest.mark.parametrize(
    ("layers", "pp", "counts"),
    [
        # vLLM's get_pp_indices: the remainder goes to the stages before the last, from the
        # second-to-last backwards (its own examples: 7/3 and 43/10).
        (80, 2, (40, 40)),
        (7, 3, (2, 3, 2)),
        (43, 10, (4, 4, 4, 4, 4, 4, 5, 5, 5, 4)),
        (61, 4, (15, 15, 16, 15)),
    ],
)
def test_layers_split_over_stages_as_vllm_splits_them(
    layers: int, pp: int, counts: tuple[int, ...]
) -> None:
    assert stage_layer_counts(layers, pp) == counts


@pytest.mark.parametrize("pp", [2, 3, 4])
def test_stages_hold_every_parameter_once(pp: int) -> None:
    """Over every preset, the stages together hold each parameter once (a tied embedding
    twice: the first stage gathers from it, the last multiplies by it) and stream exactly
    what one GPU holding every layer streams."""
    for model in CATALOG.models():
        stages = stage_groups(model, pp)
        tied = model.vocab_size * model.hidden_size if model.tie_word_embeddings else 0
        held = sum(g.params for stage in stages for g in stage)
        streamed = sum(g.params for stage in stages for g in stage if g.streamed)
        assert held == model.total_params() + tied, model.id
        assert streamed == sum(g.params for g in model.tensor_groups() if g.streamed), model.id


def test_two_stages_add_their_bytes_and_one_hand_off(cli: Run) -> None:
    """Llama-3.1-70B, BF16, H100 SXM, batch 1, pp 2: 40 layers a stage.
    Stage 1 streams 40 x 855,654,400 x 2 = 68,452,352,000 bytes (its embedding is only
    gathered); stage 2 streams its layers, the final norm (8,192) and the LM head:
    (34,226,176,000 + 8,192 + 1,050,673,152) x 2 = 70,553,714,688. Together
    139,006,066,688, as one GPU holding all 80 layers streams. The hand-off sends the hidden
    state and the residual: 2 x 8,192 x 2 bytes = 32,768 over NVLink 4."""
    stage_one = 40 * LAYER_70B * 2
    stage_two = (40 * LAYER_70B + 8_192 + EMBEDDING_70B) * 2
    assert (stage_one, stage_two) == (68_452_352_000, 70_553_714_688)
    doc = estimate_json(cli, "-m", "llama-3.1-70b", "-g", "h100", "--pp", "2", "-c", "0")
    (row,) = doc["rows"]
    assert [s["weight_bytes"] for s in doc["stages"]] == [stage_one, stage_two]
    assert [s["layers"] for s in doc["stages"]] == [40, 40]
    assert row["weight_bytes"] == stage_one + stage_two
    bandwidth, latency = NVLINK4
    handoff = latency + 2 * 8_192 * 2 / bandwidth
    assert row["handoff_ms"] == pytest.approx(handoff * 1000, rel=1e-12)
    assert row["allreduce_ms"] == row["all_to_all_ms"] == 0
    memory = (stage_one + stage_two) / 3.35e12
    assert row["roofline_ms_per_token"] == pytest.approx((memory + handoff) * 1000, rel=1e-12)
    assert doc["inputs"]["pp"] == 2 and doc["inputs"]["link"] == "nvlink4"
    assert any(n["code"] == "pipeline-throughput" for n in doc["notes"])


def test_memory_per_gpu_holds_one_stage(cli: Run) -> None:
    """The same deployment's memory: stage 1 holds its layers and the embedding,
    (34,226,176,000 + 1,050,673,152) x 2 = 70,553,698,304 bytes; stage 2 70,553,714,688
    (the larger). H100 SXM: 85,520,809,984 bytes x 0.9 = 76,968,728,985 of budget; the
    room a server leaves is 74,305,608,089 (tests/step/test_memory.py: 450 MiB CUDA keeps,
    the 1,970,012,160-byte activation peak, the 268,435,456-byte reserve), so 3,751,893,401
    bytes are left on stage 2 for a KV cache of 40 layers x 2 x 8 x 128 x 2 = 163,840 bytes
    per token: 22,899.7 tokens, 1,431 whole 16-token blocks = 22,896. All 80 layers on one
    GPU (139 GB) do not fit."""
    doc = estimate_json(cli, "-m", "llama-3.1-70b", "-g", "h100", "--pp", "2", "-c", "8K")
    assert [s["stored_weight_bytes"] for s in doc["stages"]] == [70_553_698_304, 70_553_714_688]
    assert doc["stored_weight_bytes"] == 70_553_714_688
    assert doc["memory_budget_bytes"] == 76_968_728_985
    free = 74_305_608_089 - 70_553_714_688
    assert doc["max_context_that_fits"] == free // (16 * 163_840) * 16 == 22_896
    assert doc["rows"][0]["fits"] is True
    single = estimate_json(cli, "-m", "llama-3.1-70b", "-g", "h100", "-c", "8K")
    assert single["rows"][0]["fits"] is False


def test_deepseek_expert_parallel_all_to_all(cli: Run) -> None:
    """DeepSeek-V3 FP8 on 8 H200s, data-parallel attention with EP 8, batch 64: each GPU
    holds 8 sequences and sends each of its 8 tokens to 8 experts, 7/8 of them on other
    GPUs: 8 x 8 x 7/8 x 7,168 x 2 = 802,816 bytes per dispatch, the same back to combine,
    in each of the 58 MoE layers; no all-reduce. Its KV per GPU is 8 sequences' latents,
    8 x 61 x 576 x 2 = 562,176 bytes per token of context, where TP attention copies all
    64 sequences' latents to every GPU: 8 times as much."""
    args = ("-m", "deepseek-v3", "-g", "h200", "-w", "fp8", "--tp", "8", "--batch", "64")
    dp = estimate_json(cli, *args, "--ep", "--dp-attention", "-c", "1000")
    (row,) = dp["rows"]
    dispatch = 8 * 8 * 7 * 7_168 * 2 // 8
    assert dispatch == 802_816
    bandwidth, latency = NVLINK4
    assert row["all_to_all_ms"] == pytest.approx(
        2 * 58 * (latency + dispatch / bandwidth) * 1000, rel=1e-12
    )
    assert row["allreduce_ms"] == 0
    assert row["kv_bytes"] == 8 * 61 * 576 * 2 * 1000
    tp = estimate_json(cli, *args, "--ep", "-c", "1000")
    assert tp["rows"][0]["kv_bytes"] == 8 * row["kv_bytes"]
    assert tp["rows"][0]["all_to_all_ms"] == 0
    # TP attention with EP: every GPU has every token, so one all-reduce per block as
    # under TP: 2 x 61 x (10 us + 2 x 7/8 x 64 x 7,168 x 2 / 450 GB/s).
    ring = 2 * 7 / 8 * 64 * 7_168 * 2 / bandwidth
    assert tp["rows"][0]["allreduce_ms"] == pytest.approx(2 * 61 * (latency + ring) * 1000)
    # Expected experts per GPU: 256 x (1 - (248/256)^64) / 8.
    touched = 256 * (1 - (248 / 256) ** 64) / 8
    assert dp["experts_touched_per_gpu"] == pytest.approx(touched, rel=1e-12)
    assert {"expert-parallel", "dp-attention"} <= {n["code"] for n in dp["notes"]}


def test_dp_attention_without_ep_gathers_and_scatters(cli: Run) -> None:
    """TP-sharded experts under data-parallel attention: each MoE layer all-gathers the
    64 tokens and reduce-scatters the sums, each 10 us + 7/8 x 64 x 7,168 x 2 / 450 GB/s."""
    doc = estimate_json(
        cli, "-m", "deepseek-v3", "-g", "h200", "--tp", "8", "--batch", "64", "--dp-attention"
    )
    bandwidth, latency = NVLINK4
    one = latency + 7 / 8 * 64 * 7_168 * 2 / bandwidth
    assert doc["rows"][0]["allreduce_ms"] == pytest.approx(2 * 58 * one * 1000, rel=1e-12)


def test_a_tp_group_larger_than_a_node_takes_the_network(cli: Run) -> None:
    """TP 16 of H100s (8 to an NVLink board): the ring crosses InfiniBand NDR, so each of
    the 2 x 80 all-reduces of batch 1 takes 20 us + 2 x 15/16 x 8,192 x 2 / 50 GB/s."""
    doc = estimate_json(cli, "-m", "llama-3.1-70b", "-g", "h100", "--tp", "16", "-c", "0")
    bandwidth, latency = IB_NDR
    allreduce = 2 * 80 * (latency + 2 * 15 / 16 * 8_192 * 2 / bandwidth)
    assert doc["rows"][0]["allreduce_ms"] == pytest.approx(allreduce * 1000, rel=1e-12)
    assert doc["inputs"]["node_link"] == "ib-ndr" and doc["inputs"]["gpus_per_node"] == 8
    assert any(n["code"] == "tp-across-nodes" for n in doc["notes"])
    # A GB200 NVL72 rack joins 72 GPUs: the same group stays on NVLink 5 (900 GB/s, 10 us).
    rack = estimate_json(cli, "-m", "llama-3.1-70b", "-g", "gb200", "--tp", "16", "-c", "0")
    nvl = 2 * 80 * (10e-6 + 2 * 15 / 16 * 8_192 * 2 / 900e9)
    assert rack["rows"][0]["allreduce_ms"] == pytest.approx(nvl * 1000, rel=1e-12)
    assert rack["inputs"]["node_link"] is None
    assert all(n["code"] != "tp-across-nodes" for n in rack["notes"])


def test_a_group_of_pcie_gpus_across_nodes_runs_at_its_slowest_hop(cli: Run) -> None:
    """TP 16 of L40S (8 to a PCIe server): the ring's hops within a node stay on PCIe 4.0
    at 32 GB/s, slower than InfiniBand NDR's 50, and the network's 20 us a call is the
    larger latency (PCIe 10 us): each of the 2 x 80 all-reduces of batch 1 takes
    20 us + 2 x 15/16 x 8,192 x 2 / 32 GB/s (not / 50 GB/s, the network's alone)."""
    doc = estimate_json(
        cli, "-m", "llama-3.1-70b", "-g", "l40s", "-w", "fp8", "--tp", "16", "-c", "0"
    )
    allreduce = 2 * 80 * (IB_NDR[1] + 2 * 15 / 16 * 8_192 * 2 / 32e9)
    assert doc["rows"][0]["allreduce_ms"] == pytest.approx(allreduce * 1000, rel=1e-12)
    [note] = [n["message"] for n in doc["notes"] if n["code"] == "tp-across-nodes"]
    assert note == (
        "the 16-GPU group spans 2 nodes of 8 GPUs: its collectives run at 32 GB/s and 20 us "
        "a call, the slowest of its hops (a ring is as slow as its slowest): PCIe 4.0 x16's "
        "32 GB/s and 10 us within a node, InfiniBand NDR (400 Gb/s per GPU)'s 50 GB/s and "
        "20 us between nodes"
    )


def test_stages_on_two_nodes_hand_off_over_the_network(cli: Run) -> None:
    """TP 8 x PP 2 on H100s: stage 2 is the next node, so its hand-off crosses XDR when
    asked (100 GB/s, 20 us): 20 us + 2 x 4 x 8,192 x 2 / 100 GB/s at batch 4; the
    all-reduces stay on NVLink."""
    doc = estimate_json(
        cli,
        *("-m", "llama-3.1-70b", "-g", "h100", "--tp", "8", "--pp", "2", "--batch", "4"),
        *("--node-link", "ib-xdr", "-c", "0"),
    )
    row = doc["rows"][0]
    assert row["handoff_ms"] == pytest.approx((20e-6 + 2 * 4 * 8_192 * 2 / 100e9) * 1000)
    bandwidth, latency = NVLINK4
    allreduce = 2 * 80 * (latency + 2 * 7 / 8 * 4 * 8_192 * 2 / bandwidth)
    assert row["allreduce_ms"] == pytest.approx(allreduce * 1000, rel=1e-12)
    assert any(n["code"] == "pp-across-nodes" for n in doc["notes"])
    # With 16 GPUs to a node (--gpus-per-node), nothing leaves it.
    one_node = estimate_json(
        cli,
        *("-m", "llama-3.1-70b", "-g", "h100", "--tp", "8", "--pp", "2", "--batch", "4"),
        *("--gpus-per-node", "16", "-c", "0"),
    )
    assert one_node["rows"][0]["handoff_ms"] == pytest.approx(
        (10e-6 + 2 * 4 * 8_192 * 2 / 450e9) * 1000
    )


def test_the_engine_never_expects_less_than_the_roofline(cli: Run) -> None:
    for extra in (("--pp", "4"), ("--ep", "--dp-attention"), ("--tp", "16")):
        args = ["-m", "deepseek-v3", "-g", "h200", "--tp", "8", "--batch", "32", *extra]
        doc = estimate_json(cli, *args, "-c", "0,32K")
        for row in doc["rows"]:
            assert row["expected_low_ms_per_token"] >= row["roofline_ms_per_token"] * (1 - 1e-12)


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (("-m", "llama-3.1-70b", "--pp", "81"), "pp 81 must be a whole number from 1 to 80"),
        (("-m", "llama-3.1-8b", "--ep"), "llama-3.1-8b has no experts"),
        (("-m", "llama-3.1-8b", "--tp", "2", "--dp-attention"), "llama-3.1-8b has no experts"),
        (("-m", "mixtral-8x7b", "--tp", "16", "--ep"), "8 experts do not divide evenly over 16"),
        (("-m", "deepseek-v3", "--dp-attention"), "give --tp > 1"),
        (("-m", "llama-3.1-70b", "--tp", "2", "--gpus-per-node", "0"), "gpus per node 0"),
        (("-m", "llama-3.1-70b", "--tp", "16", "--node-link", "carrier-pigeon"), "link"),
        # A misspelt network is refused even where the 2 GPUs stay on one board.
        (("-m", "llama-3.1-70b", "--tp", "2", "--node-link", "ib-nrd"), "unknown link 'ib-nrd'"),
        # A GPU's own link is no network between nodes: refused with the ones that are.
        (
            ("-m", "llama-3.1-70b", "--tp", "8", "--gpus-per-node", "4", "--node-link", "nvlink4"),
            "node link nvlink4: NVLink 4 (H100/H200 SXM, NVSwitch) joins the GPUs inside one "
            "node or rack (8 of them), not nodes; a network between nodes: ib-ndr, ib-xdr, "
            "roce-400g",
        ),
        (("-m", "llama-3.1-70b", "--tp", "16", "--node-link", "pcie4"), "node link pcie4: PCIe"),
    ],
)
def test_invalid_parallelism_is_one_line(cli: Run, args: tuple[str, ...], message: str) -> None:
    r = cli("estimate", "-g", "h100", *args)
    assert r.code == 2 and r.out == ""
    assert r.err.startswith("decodecalc: error: ") and r.err.count("\n") == 1
    assert message in r.err


def test_every_door_reads_pipeline_and_expert_parallelism(cli: Run, tmp_path: Path) -> None:
    """A vLLM config with pipeline-parallel-size, or with data-parallel-size and
    enable-expert-parallel for a MoE model (vLLM's data-parallel attention: max-num-seqs
    per rank), a deployment file and the API give the estimate's step."""
    flags = ("-m", "llama-3.1-70b", "--tp", "4", "--pp", "2", "--batch", "8", "--engine", "vllm")
    row = estimate_json(cli, *flags, "-g", "h100", "-c", "8192")["rows"][0]
    serve = tmp_path / "serve.yaml"
    serve.write_text(
        yaml.safe_dump(
            {
                "model": "llama-3.1-70b",
                "tensor-parallel-size": 4,
                "pipeline-parallel-size": 2,
                "max-num-seqs": 8,
                "max-model-len": 8192,
            }
        )
    )
    checked = cli("check", str(serve), "--gpu", "h100", "-t", "max_ms_per_token=1e6", "-f", "json")
    assert checked.code == 0, checked.err
    (value,) = [r["value"] for r in json.loads(checked.out)["results"]]
    assert value == row["expected_ms_per_token"]

    moe = ("-m", "deepseek-v3", "-w", "fp8-bf16-head", "--tp", "8", "--ep", "--dp-attention")
    dp_row = estimate_json(cli, *moe, "--batch", "64", "-g", "h200", "--engine", "vllm", "-c", "4K")
    serve.write_text(
        yaml.safe_dump(
            {
                "model": "deepseek-v3",
                "quantization": "fp8",
                "data-parallel-size": 8,
                "enable-expert-parallel": True,
                "max-num-seqs": 8,
                "max-model-len": 4096,
            }
        )
    )
    checked = cli("check", str(serve), "--gpu", "h200", "-t", "max_ms_per_token=1e6", "-f", "json")
    assert checked.code == 0, checked.err
    result = json.loads(checked.out)
    (value,) = [r["value"] for r in result["results"]]
    assert value == dp_row["rows"][0]["expected_ms_per_token"]
    codes = {n["code"] for d in result["deployments"] for n in d.get("notes", [])}
    assert "vllm-data-parallel" not in codes

    deployment = tmp_path / "d.yaml"
    document = {
        "model": "deepseek-v3",
        "gpu": "h200",
        "weights": "fp8-bf16-head",
        "tp": 8,
        "batch": 64,
    }
    document |= {"ep": True, "dp_attention": True, "context": 4096, "engine": "vllm"}
    deployment.write_text(yaml.safe_dump({**document, "targets": {"max_ms_per_token": 1e6}}))
    checked = cli("check", str(deployment), "-f", "json")
    assert checked.code == 0, checked.err
    (value,) = [r["value"] for r in json.loads(checked.out)["results"]]
    assert value == dp_row["rows"][0]["expected_ms_per_token"]

    api = decodecalc.scenario(
        "deepseek-v3", "h200", weights="fp8-bf16-head", tp=8, batch=64, ep=True, dp_attention=True
    )
    ms = estimate(api, [4096], crossover_row=False).rows[0].seconds_per_token * 1000
    assert ms == pytest.approx(dp_row["rows"][0]["roofline_ms_per_token"], rel=1e-15)


def test_vllm_attention_split_inside_data_parallel_ranks_is_refused(
    cli: Run, tmp_path: Path
) -> None:
    serve = tmp_path / "serve.yaml"
    serve.write_text(
        "model: deepseek-v3\ndata-parallel-size: 4\ntensor-parallel-size: 2\nmax-num-seqs: 8\n"
    )
    r = cli("check", str(serve), "--gpu", "h200", "-t", "max_ms_per_token=100")
    assert r.code == 2 and "serve.yaml:2:" in r.err and "not modelled" in r.err


def test_a_dense_model_data_parallel_is_still_replicas(cli: Run, tmp_path: Path) -> None:
    serve = tmp_path / "serve.yaml"
    serve.write_text("model: llama-3.1-8b\ndata-parallel-size: 4\nmax-num-seqs: 8\n")
    r = cli("check", str(serve), "--gpu", "h100", "-t", "max_ms_per_token=100", "-f", "json")
    assert r.code == 0, r.err
    codes = {n["code"] for d in json.loads(r.out)["deployments"] for n in d.get("notes", [])}
    assert "vllm-data-parallel" in codes


def test_pipeline_with_link_none_says_its_hand_offs_are_left_out(cli: Run) -> None:
    """--link none drops the hand-offs as it drops TP's all-reduces, and says so for pp as
    for tp: Llama-3.1-70B BF16 on H100s, pp 2, batch 1, context 0 streams the two stages'
    68,452,352,000 + 70,553,714,688 bytes at 3.35 TB/s, 41.4958 ms, and nothing else."""
    doc = estimate_json(
        cli, "-m", "llama-3.1-70b", "-g", "h100", "--pp", "2", "--link", "none", "-c", "0"
    )
    (row,) = doc["rows"]
    assert row["handoff_ms"] == row["comm_ms"] == 0
    memory = (68_452_352_000 + 70_553_714_688) / 3.35e12
    assert row["roofline_ms_per_token"] == pytest.approx(memory * 1000, rel=1e-12)
    (note,) = [n["message"] for n in doc["notes"] if n["code"] == "no-communication"]
    assert "hand-offs between the 2 pipeline stages" in note and "all-reduce" not in note
    both = estimate_json(
        cli, *("-m", "llama-3.1-70b", "-g", "h100", "--tp", "2", "--pp", "2", "--link", "none")
    )
    (note,) = [n["message"] for n in both["notes"] if n["code"] == "no-communication"]
    assert "TP 2 all-reduces" in note and "hand-offs" in note
    single = estimate_json(cli, "-m", "llama-3.1-8b", "-g", "h100", "--link", "none")
    assert all(n["code"] != "no-communication" for n in single["notes"])


def test_a_layer_without_an_mlp_all_reduces_once(cli: Run) -> None:
    """NVIDIA-Nemotron-Nano-9B-v2 at TP 2: 56 blocks (27 Mamba-2, 4 attention, 25 MLPs),
    each ending in one row-parallel projection, so 56 all-reduces a step as vLLM runs them,
    not 2 per layer of the 31 layers decodecalc reads them as. Batch 1 over NVLink 4:
    56 x (10 us + 2 x 1/2 x 4,480 x 2 / 450 GB/s). Llama keeps 2 x 80."""
    doc = estimate_json(cli, "-m", "nemotron-nano-9b-v2", "-g", "h100", "--tp", "2", "-c", "0")
    bandwidth, latency = NVLINK4
    assert doc["rows"][0]["allreduce_ms"] == pytest.approx(
        56 * (latency + 2 * 1 / 2 * 4_480 * 2 / bandwidth) * 1000, rel=1e-12
    )
    dense = estimate_json(cli, "-m", "llama-3.1-70b", "-g", "h100", "--tp", "2", "-c", "0")
    assert dense["rows"][0]["allreduce_ms"] == pytest.approx(
        2 * 80 * (latency + 2 * 1 / 2 * 8_192 * 2 / bandwidth) * 1000, rel=1e-12
    )


def test_links_list_the_gpus_each_joins(cli: Run) -> None:
    """'decodecalc links' shows a link preset's domain (its `gpus`): 8 for an NVLink 4
    board, 72 for the GB200 NVL72 rack, none for a network between nodes."""
    r = cli("links", "--json")
    assert r.code == 0, r.err
    gpus = {link["id"]: link["gpus"] for link in json.loads(r.out)["links"]}
    assert (gpus["nvlink4"], gpus["nvl72"], gpus["ib-ndr"], gpus["roce-400g"]) == (
        8,
        72,
        None,
        None,
    )
    table = cli("links")
    assert "GPUs joined" in table.out


def test_measured_points_read_pipeline_stages(tmp_path: Path) -> None:
    """A measured point may say pp (vLLM's pipeline-parallel-size): its scenario runs the
    stages, and its gpu_count, if given, is at least tp x pp = 2 x 2 = 4."""
    from decodecalc.calibration.points import read_points
    from decodecalc.errors import InputError

    point = {"model": "llama-3.1-70b", "gpu": "h100", "weights": "bf16", "kv_dtype": "bf16"}
    point |= {"tp": 2, "pp": 2, "context": 1024, "ms_per_token": 30.0}
    path = tmp_path / "points.yaml"
    path.write_text(yaml.safe_dump({"points": [point]}))
    (read,) = read_points(path, CATALOG)
    assert (read.scenario.tp, read.scenario.pp) == (2, 2)
    path.write_text(yaml.safe_dump({"points": [{**point, "gpu_count": 3}]}))
    with pytest.raises(InputError, match=r"at least tp x pp \(4\), got 3"):
        read_points(path, CATALOG)


def test_the_table_header_names_the_link_a_spanning_group_runs_at(cli: Run) -> None:
    """TP 16 of H100s spans two 8-GPU boards: the header says the all-reduces run over
    InfiniBand NDR at 50 GB/s and 20 us, as the figures do, not over NVLink 4."""
    r = cli("estimate", "-m", "llama-3.1-405b", "-g", "h100", "--tp", "16", "-c", "8K")
    assert r.code == 0, r.err
    (line,) = [x for x in r.out.splitlines() if x.startswith("TP communication")]
    assert "InfiniBand NDR" in line and "50 GB/s, 20 us each" in line


DP_SERVER = "-m deepseek-v3 -g h200 -w fp8 --tp 8 --ep --dp-attention"


def test_the_dp_attention_note_names_the_batch_it_splits(cli: Run) -> None:
    # batch 16 over 8 ranks: ceil(16 / 8) = 2 sequences each
    r = cli(*f"estimate {DP_SERVER} -c 4K --batch 16".split())
    assert "each of the 8 ranks holds its own 2 of 16 sequences" in r.err


def test_the_dp_attention_note_says_how_an_uneven_batch_splits(cli: Run) -> None:
    """Review s41: batch 12 over 8 ranks is 12 = 4 x 2 + 4 x 1, and the step is priced at
    a rank of 2 (ceil(12 / 8)); batch 1 leaves 7 of the 8 ranks idle."""
    r = cli(*f"estimate {DP_SERVER} -c 4K --batch 12".split())
    assert "4 of the 8 ranks hold 2 of the 12 sequences each and the other 4 hold 1" in r.err
    assert "priced at its 2" in r.err
    one = cli(*f"estimate {DP_SERVER} -c 4K --batch 1".split())
    assert "1 of the 8 ranks holds the one sequence and the other 7 hold none" in one.err
    assert "1 of 1 sequences" not in one.err


def test_under_a_workload_the_dp_attention_note_names_no_batch(cli: Run) -> None:
    """serving sets no batch (its running requests come from the workload): the note must
    not speak of the default batch of 1."""
    load = "--input-len 4K --output-len 1K --concurrency 64"
    r = cli(*f"serving {DP_SERVER} {load}".split())
    assert r.code == 0, r.err
    assert "each of the 8 ranks holds its own share of the running requests" in r.err
    assert "1 of 1 sequences" not in r.err
