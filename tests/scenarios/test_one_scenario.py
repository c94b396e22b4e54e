"""One scenario, every door: the same inputs through the command line's estimate, compare,
sweep, explain and generate, the Python API, a deployment file, a vLLM serve config and a
measured-points file must give the same figures, because all of them fill in one
ScenarioSpec and resolve it in one place."""

from __future__ import annotations

import contextlib
import io
import json
from pathlib import Path
from typing import Any

import pytest
import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import decodecalc
from decodecalc.answers.estimate import estimate
from decodecalc.calibration.points import read_points
from decodecalc.cli import main
from decodecalc.record import replace
from tests.conftest import shared_catalog

CATALOG = shared_catalog()
MODELS = ("llama-3.1-8b", "gemma-2-9b", "qwen3-30b-a3b", "deepseek-v3", "qwen3-next-80b-a3b")
GPUS = ("h100", "h200", "mi300x", "l40s", "m2-ultra")
WEIGHTS = ("bf16", "fp8", "fp32", "int4-g128", "q4_k_m")
KV = (None, "bf16", "fp8", "fp16")


def run(*args: str) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = main(list(args))
    return code, out.getvalue(), err.getvalue()


def json_of(*args: str) -> Any:
    code, out, err = run(*args)
    assert code == 0, err
    return json.loads(out)


@st.composite
def scenarios(draw: st.DrawFn) -> dict[str, Any]:
    model = draw(st.sampled_from(MODELS))
    tp = draw(st.sampled_from(CATALOG.model(model).valid_tp()[:4]))
    pp = draw(st.sampled_from([None, 2]))
    moe = CATALOG.model(model).moe()
    gpu = draw(st.sampled_from(GPUS))
    links = ["none", "pcie5", *([None] if CATALOG.gpu(gpu).link else [])]
    efficiency = draw(st.sampled_from(["1", "0.7"]))
    overhead = draw(st.sampled_from([None, "0.25ms"]))
    return {
        "model": model,
        "gpu": gpu,
        "weights": draw(st.sampled_from(WEIGHTS)),
        "kv_dtype": draw(st.sampled_from(KV)),
        "batch": draw(st.integers(1, 64)),
        "tp": tp,
        "pp": pp,
        # Experts placed whole: every drawn TP size divides these models' expert counts.
        "ep": draw(st.sampled_from([None, True])) if moe is not None else None,
        "efficiency": efficiency,
        "overhead": overhead,
        # An efficiency below 1 or an overhead is one's own engine: only the roofline's.
        "engine": "roofline" if efficiency != "1" or overhead else None,
        "link": draw(st.sampled_from(links)) if tp > 1 or pp else None,
        "context": draw(st.integers(0, 300_000)),
    }


def flags(case: dict[str, Any]) -> list[str]:
    given_ = [(k, v) for k, v in case.items() if v is not None and k != "context"]
    # A true flag (--ep) is given bare.
    return [
        text
        for k, v in given_
        for text in (f"--{k.replace('_', '-')}", *(() if v is True else (str(v),)))
    ]


@settings(
    max_examples=8, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(case=scenarios())
def test_every_door_gives_the_same_step(case: dict[str, Any], tmp_path: Path) -> None:
    context = str(case["context"])
    row = json_of("estimate", *flags(case), "-c", context, "--no-crossover-row", "--json")
    (expected,) = row["rows"]
    ms = expected["ms_per_token"]

    compared = json_of("compare", *flags(case), "-c", context, "--json")["rows"]
    assert [r["ms_per_token"] for r in compared] == [ms]
    assert compared[0]["kv_dtype"] == row["inputs"]["kv_dtype"]

    code, out, err = run("sweep", *flags(case), "-c", context, "-f", "jsonl")
    assert code == 0, err
    (swept,) = [json.loads(line) for line in out.splitlines()]
    for key in ("weight_bytes", "kv_bytes", "state_bytes", "total_bytes", "bound", "fits"):
        assert swept[key] == expected[key], key
    assert swept["ms_per_token"] == pytest.approx(ms, rel=1e-12)
    assert swept["kv_dtype"] == row["inputs"]["kv_dtype"]
    assert swept["crossover_context"] == row["crossover_context"]
    assert (swept["pp"], swept["ep"]) == (case["pp"] or 1, bool(case["ep"]))

    explained = json_of("explain", *flags(case), "-c", context, "--json")
    assert explained["rows"] == row["rows"]

    if case["context"] > 1:  # the prefill yields token 1: the first decode step reads P + 1
        # (a prompt of at least one token: generate refuses -p 0)
        earlier = str(case["context"] - 1)
        generated = json_of("generate", *flags(case), "-p", earlier, "-n", "2", "--json")
        assert generated["first_ms_per_token"] == ms

    options = {k: v for k, v in case.items() if v is not None and k not in ("context",)}
    api = decodecalc.scenario(options.pop("model"), options.pop("gpu"), **options)
    result = estimate(api, [case["context"]], crossover_row=False)
    assert result.headlines[0].seconds * 1000 == pytest.approx(ms, rel=1e-15)
    assert result.rows[0].seconds_per_token * 1000 == pytest.approx(
        expected["roofline_ms_per_token"], rel=1e-15
    )

    deployment = tmp_path / "deployment.yaml"
    document = {k: v for k, v in case.items() if v is not None}
    document["efficiency"] = float(case["efficiency"])
    document["targets"] = {"max_ms_per_token": 3_600_000}
    deployment.write_text(yaml.safe_dump(document))
    checked = json_of("check", str(deployment), "--format", "json")["results"]
    # The gate holds the headline: the default selection's expected step, or the roofline.
    held = [r["value"] for r in checked if r["target"] == "max_ms_per_token"]
    assert held == [expected["expected_ms_per_token"]]


# vLLM's fp8 quantizes the linear layers only: the LM head and embedding stay BF16
# (checks/vllm.py _QUANTIZATION), the fp8-bf16-head recipe.
VLLM_WEIGHTS = {"bf16": {"dtype": "bfloat16"}, "fp8-bf16-head": {"quantization": "fp8"}}
VLLM_KV = {None: "auto", "fp8": "fp8"}


@settings(
    max_examples=10, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    model=st.sampled_from(("llama-3.1-8b", "llama-3.1-70b", "qwen3-30b-a3b")),
    weights=st.sampled_from(sorted(VLLM_WEIGHTS)),
    kv=st.sampled_from(sorted(VLLM_KV, key=str)),
    batch=st.integers(1, 256),
    context=st.integers(1, 32_768),
)
def test_a_vllm_config_is_the_same_scenario(
    tmp_path: Path, model: str, weights: str, kv: str | None, batch: int, context: int
) -> None:
    """vLLM's flags name the same deployment: --model, --dtype/--quantization,
    --kv-cache-dtype, --max-num-seqs, --max-model-len; the GPU comes from --gpu, and the
    engine is vLLM, so the speed target is held to vLLM's expected step."""
    config = tmp_path / "serve.yaml"
    config.write_text(
        yaml.safe_dump(
            {
                "model": model,
                **VLLM_WEIGHTS[weights],
                "kv-cache-dtype": VLLM_KV[kv],
                "max-num-seqs": batch,
                "max-model-len": context,
            }
        )
    )
    checked = json_of(
        "check", str(config), "--gpu", "h100", "-t", "max_ms_per_token=3600000", "-f", "json"
    )
    case = {"model": model, "gpu": "h100", "weights": weights, "kv_dtype": kv, "batch": batch}
    args = ("-c", str(context), "--no-crossover-row", "--engine", "vllm", "--json")
    row = json_of("estimate", *flags(case), *args)
    (value,) = [r["value"] for r in checked["results"] if r["target"] == "max_ms_per_token"]
    assert value == row["rows"][0]["expected_ms_per_token"]


def test_a_measured_point_is_the_same_scenario(tmp_path: Path) -> None:
    """A points file's scenario is the estimate's at efficiency 1 and no overhead."""
    points = tmp_path / "points.yaml"
    point = {"model": "qwen3-30b-a3b", "gpu": "h200", "weights": "fp8", "kv_dtype": "fp8"}
    points.write_text(
        yaml.safe_dump(
            [{**point, "batch": 4, "context": 9000, "ms_per_token": 5.0, "source": "test"}]
        )
    )
    (measured,) = read_points(points, CATALOG)
    api = decodecalc.scenario("qwen3-30b-a3b", "h200", weights="fp8", kv_dtype="fp8", batch=4)
    assert measured.scenario == api
    assert measured.context_tokens == 9000


def test_fp32_weights_compare_and_sweep_agree() -> None:
    """Regression: compare defaulted the KV dtype like vLLM's 'auto' (FP32 for FP32
    weights) and sweep to BF16, so one case gave 11.53 and 10.24 ms per token. Now both
    take ScenarioSpec's default: FP32 KV.
    Llama-3.1-8B, 8,192 tokens, FP32 KV: 32 layers x 2 x 8 heads x 128 x 4 bytes = 262,144
    bytes per token, x 8,192 = 2,147,483,648 bytes of KV."""
    args = ("-m", "llama-3.1-8b", "-g", "h100", "-w", "fp32", "-c", "8K")
    compared = json_of("compare", *args, "--json")["rows"][0]
    code, out, err = run("sweep", *args, "-f", "jsonl")
    assert code == 0, err
    swept = json.loads(out)
    assert compared["kv_dtype"] == swept["kv_dtype"] == "fp32"
    assert swept["kv_bytes"] == 2_147_483_648
    assert swept["ms_per_token"] == pytest.approx(compared["ms_per_token"], rel=1e-12)


def test_the_api_keeps_a_gpu_spec_it_was_given() -> None:
    """Regression: scenario(model, gpu_spec) looked the id up again and estimated a 4 TB/s
    H100 at the preset's 3.35 TB/s. Llama-3.1-8B streams its 8,030,261,248 parameters less
    the input embedding it only gathers rows of (128,256 x 4,096 = 525,336,576):
    7,504,924,672 x 2 bytes = 15,009,849,344 bytes, / 4e12 B/s = 3.752 ms (4.481 ms at
    3.35 TB/s)."""
    faster = replace(decodecalc.load_gpu("h100"), bandwidth_bytes_per_s=4_000_000_000_000)
    s = decodecalc.scenario("llama-3.1-8b", faster)
    assert s.bandwidth_bytes_per_s == 4_000_000_000_000 and s.gpu is faster
    step = decodecalc.estimate(s, [0]).rows[0]
    assert step.weight_bytes == 15_009_849_344
    assert step.seconds_per_token == pytest.approx(15_009_849_344 / 4e12, rel=1e-12)


def test_the_api_refuses_an_unknown_option() -> None:
    with pytest.raises(decodecalc.InputError, match="no option 'batches'; did you mean 'batch'"):
        decodecalc.scenario("llama-3.1-8b", "h100", batches=4)


@pytest.mark.parametrize(
    ("field", "value", "message"),
    [
        ("batch", 0, "batch: must be at least 1"),
        ("tp", 0, "tp: must be at least 1"),
        ("efficiency", 0, "efficiency: expected a fraction in (0, 1]"),
    ],
)
def test_zero_in_a_deployment_file_is_an_error(
    tmp_path: Path, field: str, value: int, message: str
) -> None:
    """Regression: 'batch: 0' and 'tp: 0' silently became 1 (falsy values took the default)."""
    path = tmp_path / "d.yaml"
    path.write_text(
        yaml.safe_dump(
            {"model": "llama-3.1-8b", "gpu": "h100", field: value, "targets": {"must_fit": True}}
        )
    )
    code, out, err = run("check", str(path))
    assert code == 2 and out == "" and message in err


def test_a_deployment_file_takes_the_efficiency_words_the_cli_takes(tmp_path: Path) -> None:
    """'sustained' on an A100-80GB: gpt-fast's measured 1,397 GB/s over the 2,039 GB/s peak,
    the same scenario through --efficiency and through a deployment file."""
    path = tmp_path / "d.yaml"
    document = {
        "model": "llama-3.1-8b", "gpu": "a100-80gb", "efficiency": "sustained", "engine": "roofline"
    }  # fmt: skip
    path.write_text(yaml.safe_dump({**document, "targets": {"max_ms_per_token": 1000}}))
    (checked,) = json_of("check", str(path), "-f", "json")["deployments"]
    flag = json_of(
        "estimate", "-m", "llama-3.1-8b", "-g", "a100-80gb", "-e", "sustained", "--engine",
        "roofline", "--json",
    )  # fmt: skip
    assert checked["inputs"]["efficiency"] == flag["inputs"]["efficiency"]
    assert flag["inputs"]["efficiency"] == pytest.approx(1397 / 2039, rel=1e-3)
