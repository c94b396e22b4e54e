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


TAKEN = {
    f"{SERVING} --prefix-len 500 --prefix-hit-rate 0.5": "500-token shared prefix, cached for 50%",
    f"{SERVING} --tp 2 --link nvlink4": "2 x NVIDIA H100 SXM (TP 2)",
    "compare -m llama-3.1-8b -g h100-sxm -c 1K --tp 1,2 --link nvlink4": "│ TP2 ",
    "estimate -m llama-3.1-8b -g h100-sxm -c 1K --pp 2 --link nvlink4": "pipeline: 2 stages",
    "check examples/vllm-serve.yaml --gpu h200": "1 deployment, all targets met",
    # asks for nothing sent
    "estimate -m llama-3.1-8b -g h100-sxm -c 1K --link none": "Llama-3.1-8B on NVIDIA H100 SXM",
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
