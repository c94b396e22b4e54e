"""An option that does not apply to the run it is given to is refused, with what it needs:
accepted and ignored, it reads as though it had been priced in (--acceptance alone always
was refused; these are its siblings)."""

from __future__ import annotations

import json
import shlex

import pytest

from tests.conftest import Run

SERVING = "serving -m llama-3.1-8b -g h100-sxm --input-len 1000 --output-len 100 --concurrency 8"


@pytest.mark.parametrize(
    ("command", "message"),
    [
        (f"{SERVING} --num-speculative-tokens -1", "--num-speculative-tokens needs --speculative"),
        (f"{SERVING} --num-speculative-tokens 4", "--num-speculative-tokens needs --speculative"),
        (f"{SERVING} --prefix-hit-rate 0.5", "--prefix-hit-rate needs --prefix-len"),
        (f"{SERVING} --prefix-hit-rate 0.5 --prefix-len 0", "--prefix-hit-rate needs --prefix-len"),
        (f"{SERVING} --link nvlink4", "--link prices what GPUs send each other"),
        ("estimate -m llama-3.1-8b -g h100-sxm -c 1K --link nvlink4", "--link prices"),
        ("estimate -m llama-3.1-8b -g h100-sxm -c 1K --link-bandwidth 450GB/s", "--link-bandwidth"),
        ("compare -m llama-3.1-8b -g h100-sxm,h200 -c 1K --link nvlink4", "--link prices"),
        ("sweep -m llama-3.1-8b -g h100-sxm -c 1K --link nvlink4", "--link prices"),
        ("check examples/chat-h100.yaml --gpu h200", "every file names its own GPU"),
    ],
)
def test_an_option_that_does_not_apply_is_refused(cli: Run, command: str, message: str) -> None:
    result = cli(*shlex.split(command))
    assert result.code == 2, result
    assert result.out == "" and result.err.count("\n") == 1
    assert message in result.err, result.err


ONE_NODE = (
    "--node-link prices what GPUs send between nodes, and every GPU group here fits in one "
    "node: give --tp x --pp above the GPUs a node joins (--gpus-per-node, by default the "
    "GPU's link's)"
)
ONE_GPU = (
    " prices what GPUs send each other, and every scenario here is one GPU: give --tp or --pp "
    "above 1"
)
PLAN = "plan -m llama-3.1-8b -g h100-sxm -c 8K --max-ms-per-token 30"


@pytest.mark.parametrize(
    "command",
    [
        "estimate -m llama-3.1-8b -g h100-sxm -c 1K",
        "compare -m llama-3.1-8b -g h100-sxm,h200 -c 1K",
        "sweep -m llama-3.1-8b -g h100-sxm -c 1K",
        SERVING,
        "generate -m llama-3.1-8b -g h100-sxm -p 10 -n 10",
        "explain -m llama-3.1-8b -g h100-sxm -c 1K",
        f"{PLAN} --tp 1",
    ],
)
@pytest.mark.parametrize(
    ("option", "message"),
    [
        ("--link nvlink4", "--link" + ONE_GPU),
        ("--link-bandwidth 100GB/s", "--link-bandwidth" + ONE_GPU),
        ("--gpus-per-node 4", "--gpus-per-node" + ONE_GPU),
        ("--node-link ib-xdr", ONE_NODE),
    ],
)
def test_an_interconnect_option_nothing_crosses_is_refused_by_every_command(
    cli: Run, command: str, option: str, message: str
) -> None:
    """One rule for the four interconnect options in every command (review s40 #17): on
    one GPU nothing is sent, so none of them prices anything."""
    result = cli(*shlex.split(command), *shlex.split(option))
    assert result.code == 2, result
    assert result.out == "" and result.err == f"decodecalc: error: {message}\n"


@pytest.mark.parametrize(
    "command",
    [
        "estimate -m llama-3.1-70b -g h100-sxm -c 1K --tp 4",
        "compare -m llama-3.1-70b -g h100-sxm -c 1K --tp 2,4",
        "sweep -m llama-3.1-70b -g h100-sxm -c 1K --tp 2,4",
        "plan -m llama-3.1-8b -g h100-sxm -c 8K --max-ms-per-token 30 --tp 2,4",
    ],
)
def test_a_network_no_group_crosses_is_refused(cli: Run, command: str) -> None:
    """TP 2 and 4 of H100s stay on one 8-GPU NVLink board: nothing crosses --node-link."""
    result = cli(*shlex.split(command), "--node-link", "ib-xdr")
    assert result.code == 2, result
    assert result.err == f"decodecalc: error: {ONE_NODE}\n"


TAKEN = {
    f"{SERVING} --prefix-len 500 --prefix-hit-rate 0.5": "500-token shared prefix, cached for 50%",
    f"{SERVING} --tp 2 --link nvlink4": "2 x NVIDIA H100 SXM (TP 2)",
    "compare -m llama-3.1-8b -g h100-sxm -c 1K --tp 1,2 --link nvlink4": "│ TP2 ",
    "estimate -m llama-3.1-8b -g h100-sxm -c 1K --pp 2 --link nvlink4": "pipeline: 2 stages",
    "check examples/vllm-serve.yaml --gpu h200": "1 deployment, all targets met",
    # asks for nothing sent
    "estimate -m llama-3.1-8b -g h100-sxm -c 1K --link none": "Llama-3.1-8B on NVIDIA H100 SXM",
    # TP 4 on nodes of 2 GPUs crosses the network; a comparison where one group does
    "estimate -m llama-3.1-70b -g h100-sxm -c 1K --tp 4 --gpus-per-node 2 --node-link ib-xdr": (
        "TP 4"
    ),
    "compare -m llama-3.1-70b -g h100-sxm -c 1K --tp 2,16 --node-link ib-xdr": "│ TP16 ",
    # disaggregated serving's prompt KV crosses it, whatever the workers' size
    f"{SERVING} --prefill-workers 1 --decode-workers 1 --node-link ib-xdr": (
        "KV hand-over over InfiniBand XDR"
    ),
}
"""Each run where the option applies, and a line of what it prints that shows the run."""


@pytest.mark.parametrize("command", list(TAKEN))
def test_the_same_option_where_it_applies_is_taken(cli: Run, command: str) -> None:
    result = cli(*shlex.split(command))
    assert result.code == 0, result.err
    assert TAKEN[command] in result.out and "error" not in result.err


@pytest.mark.parametrize(
    ("model", "why"),
    [
        ("deepseek-v3", "deepseek-v3's MLA caches one latent per token, shared by K and V"),
        ("kimi-linear-48b-a3b", "MLA caches one latent per token"),
    ],
)
def test_a_v_dtype_on_a_model_with_no_v_cache_is_said_to_price_nothing(
    cli: Run, model: str, why: str
) -> None:
    """Review item 10: --v-dtype bf16 on DeepSeek-V3 was accepted in silence. Its KV per
    token stays pure FP8: 61 layers x (512 + 64) elements x 1 byte = 35,136 B."""
    args = ("estimate", "-m", model, "-g", "h200", "--tp", "8", "-k", "fp8", "-c", "1K")
    run = cli(*args, "--v-dtype", "bf16", "--json")
    notes = {n["code"]: n["message"] for n in json.loads(run.out)["notes"]}
    assert why in notes["v-dtype-unused"]
    assert "in the KV dtype (fp8)" in notes["v-dtype-unused"]
    assert "prices nothing" in run.err
    if model == "deepseek-v3":
        assert json.loads(run.out)["kv_bytes_per_token"] == 35_136
    plain = cli("estimate", "-m", "llama-3.1-8b", "-g", "h200", "-k", "fp8", "--v-dtype", "bf16")
    assert "prices nothing" not in plain.err  # attention caches V: --v-dtype prices it
