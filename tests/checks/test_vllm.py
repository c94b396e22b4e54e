"""`decodecalc check` on vLLM serve configs: every key is a real vLLM argument, the ones that
change decoding are read or refused with a reason, and a config alone gets vLLM's own
start-up check."""

from __future__ import annotations

import io
import json
import shutil
import sys
from pathlib import Path
from typing import Any

import pytest

from decodecalc.checks import vllm
from decodecalc.checks.vllm import VLLM_SERVE_ARGS, VLLM_VERSION
from tests.conftest import Run

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "configs"

# Llama-3.1-70B in FP8 with an FP8 cache on one H100 SXM (81,559 MiB, as nvidia-smi reports
# it): vLLM's start-up leaves (85,520,809,984 - 450 MiB) x 0.9 = 76,544,055,705 bytes, less
# the 1,970,012,160-byte activation peak and the 268,435,456-byte reserve: 74,305,608,089
# (tests/step/test_memory.py). vLLM's FP8 leaves the embedding, LM head and norms in BF16
# (fp8-bf16-head): 70,553,706,496 parameters at one byte plus one more byte for
# 2 x 128,256 x 8,192 (embedding, head) + 80 x 2 x 8,192 + 8,192 (norms) = 2,102,665,216 of
# them: 72,656,371,712 bytes, leaving 1,649,236,377 (1.65 GB). A token of cache is 80
# layers x 8 KV heads x 128 x 2 (K and V) x 1 byte = 163,840 bytes: one sequence of 8,192
# tokens (1.34 GB) fits, one of 32,768 tokens (5.37 GB) does not.
LLAMA_70B_FP8 = """\
model: meta-llama/Llama-3.1-70B-Instruct
quantization: fp8
kv-cache-dtype: fp8
max-model-len: 8192
"""


def serve(tmp_path: Path, text: str, name: str = "serve.yaml") -> str:
    path = tmp_path / name
    path.write_text(text)
    return str(path)


def run_json(cli: Run, *args: str) -> dict[str, Any]:
    r = cli("check", *args, "-f", "json")
    assert r.code in (0, 1), r.err
    doc: dict[str, Any] = json.loads(r.out)
    return doc


def codes(doc: dict[str, Any]) -> set[str]:
    return {n["code"] for n in doc["notes"]}


class TestArgumentList:
    def test_holds_the_flags_vllm_serve_defines(self) -> None:
        # From `vllm serve --help` of 0.19.1: engine, frontend and serve-only flags.
        for name in (
            "max-num-seqs",
            "tensor-parallel-size",
            "max-model-len",
            "kv-cache-dtype",
            "gpu-memory-utilization",
            "speculative-config",
            "data-parallel-size",
            "enable-expert-parallel",
            "port",
            "api-key",
            "headless",
            "grpc",
        ):
            assert name in VLLM_SERVE_ARGS, name
        assert "max-num-seq" not in VLLM_SERVE_ARGS

    def test_is_plain_and_names_its_source(self) -> None:
        assert len(set(VLLM_SERVE_ARGS)) == len(VLLM_SERVE_ARGS)
        assert all(n == n.lower() and "_" not in n and n[0] != "-" for n in VLLM_SERVE_ARGS)
        source = Path(vllm.__file__).read_text()
        assert VLLM_VERSION == "0.19.1" and "the vllm-0.19.1 wheel on PyPI" in source
        assert "vllm/engine/arg_utils.py" in source and "cli_args.py" in source


class TestUnknownKeys:
    def test_misspelt_keys_are_errors_with_the_nearest_argument(
        self, cli: Run, tmp_path: Path
    ) -> None:
        path = serve(
            tmp_path,
            "model: meta-llama/Llama-3.1-8B-Instruct\nmax-num-seq: 8\nkv-cach-dtype: fp8\n"
            "max_num_seqz: 4\nport: 8000\n",
        )
        r = cli("check", path, "--gpu", "h100", "-t", "max_ms_per_token=40")
        assert r.code == 2 and r.out == ""
        lines = r.err.splitlines()
        expected = [
            "serve.yaml:2:1: max-num-seq: unknown key, not a vllm serve argument "
            "(vLLM 0.19.1); did you mean 'max-num-seqs'",
            "serve.yaml:3:1: kv-cach-dtype: unknown key, not a vllm serve argument "
            "(vLLM 0.19.1); did you mean 'kv-cache-dtype'",
            "serve.yaml:4:1: max_num_seqz: unknown key",
        ]
        for fragment in expected:  # every problem at once, each at its line and column
            assert any(fragment in line for line in lines), (fragment, lines)
        assert len(lines) == 3

    def test_known_arguments_that_do_not_change_decoding_are_accepted(
        self, cli: Run, tmp_path: Path
    ) -> None:
        plain = "model: meta-llama/Llama-3.1-8B-Instruct\nmax-num-seqs: 8\nmax-model-len: 8192\n"
        extra = (
            "port: 8000\nhost: 0.0.0.0\nenable-prefix-caching: true\nserved-model-name: chat\n"
            "api_key: [secret]\ncompilation-config:\n  level: 3\ncompilation-config.mode: 3\n"
            "no-enable-log-requests: true\nenforce-eager: false\npipeline-parallel-size: 1\n"
            "enable-expert-parallel: false\ncpu-offload-gb: 0\nspeculative-config: null\n"
        )
        args = ("--gpu", "h100", "-t", "max_ms_per_token=40")
        with_extra = run_json(cli, serve(tmp_path, plain + extra, "a.yaml"), *args)
        without = run_json(cli, serve(tmp_path, plain, "b.yaml"), *args)
        assert with_extra["results"][0]["value"] == without["results"][0]["value"]
        assert with_extra["deployments"][0]["inputs"] == without["deployments"][0]["inputs"]

    def test_the_same_argument_twice_is_an_error(self, cli: Run, tmp_path: Path) -> None:
        path = serve(tmp_path, "model: llama-3.1-8b\nmax-num-seqs: 8\nmax_num_seqs: 16\n")
        r = cli("check", path, "--gpu", "h100")
        assert r.code == 2
        assert "serve.yaml:3:15: max_num_seqs: sets max-num-seqs again" in r.err

    def test_underscored_keys_are_vllm_arguments_too(self, cli: Run, tmp_path: Path) -> None:
        path = serve(tmp_path, "model: llama-3.1-8b\nmax_num_seqs: 8\ntensor_parallel_size: 2\n")
        doc = run_json(cli, path, "--gpu", "h100", "-t", "max_ms_per_token=40")
        inputs = doc["deployments"][0]["inputs"]
        assert (inputs["batch"], inputs["tp"]) == (8, 2)


class TestDecodingArguments:
    @pytest.mark.parametrize(
        ("line", "reason"),
        [
            ("speculative-config:\n  method: ngram", "speculative method 'ngram' is not modelled"),
            ("num-speculative-tokens: 3", "a flag of older vLLM releases"),
            ("decode-context-parallel-size: 2", "context parallelism is not modelled"),
            ("cpu-offload-gb: 10", "weight offloading is not modelled"),
            ("kv-cache-memory-bytes: 10G", "sizes the KV cache itself"),
            ("hf-overrides:\n  num_hidden_layers: 2", "decodecalc reads the model as published"),
        ],
    )
    def test_unmodelled_ones_are_refused_with_a_reason(
        self, cli: Run, tmp_path: Path, line: str, reason: str
    ) -> None:
        path = serve(tmp_path, f"model: llama-3.1-8b\nmax-num-seqs: 8\n{line}\n")
        r = cli("check", path, "--gpu", "h100", "-t", "max_ms_per_token=40")
        assert r.code == 2 and r.out == ""
        key = line.split(":")[0]
        assert "serve.yaml:" in r.err and f"{key}: {reason}" in r.err

    @pytest.mark.parametrize(
        ("line", "message"),
        [
            ("max-num-seqs: 0", "serve.yaml:2:15: max-num-seqs: must be at least 1, got 0"),
            ("max-num-seqs: -1", "serve.yaml:2:15: max-num-seqs: must be at least 1, got -1"),
            ("max-num-seqs: 2.5", "max-num-seqs: expected a whole number, got 2.5"),
            ("tensor-parallel-size: 0", "serve.yaml:2:23: tensor-parallel-size: must be at least"),
            ("data-parallel-size: 0", "serve.yaml:2:21: data-parallel-size: must be at least 1"),
            ("pipeline-parallel-size: 0", "pipeline-parallel-size: must be at least 1, got 0"),
            ("max-model-len: 0", "serve.yaml:2:16: max-model-len: must be at least 1, got 0"),
            ("max-model-len: auto", "max-model-len: 'auto' lets vLLM pick the longest context"),
            ("max-model-len: -1", "max-model-len: 'auto' lets vLLM pick"),
        ],
    )
    def test_counts_below_one_are_errors(
        self, cli: Run, tmp_path: Path, line: str, message: str
    ) -> None:
        path = serve(tmp_path, f"model: llama-3.1-8b\n{line}\n")
        r = cli("check", path, "--gpu", "h100", "-t", "max_ms_per_token=40")
        assert r.code == 2 and message in r.err

    def test_max_model_len_reads_as_vllm_does(self, cli: Run, tmp_path: Path) -> None:
        # vLLM's human_readable_int: 32k is 32,000 tokens, 32K is 32,768.
        for text, tokens in (("32k", 32_000), ("32K", 32_768)):
            path = serve(tmp_path, f"model: llama-3.1-8b\nmax-model-len: {text}\n")
            doc = run_json(cli, path, "--gpu", "h100", "-t", "max_ms_per_token=40")
            assert doc["deployments"][0]["contexts"] == [tokens]

    def test_data_parallel_replicas_are_checked_one_by_one(self, cli: Run, tmp_path: Path) -> None:
        plain = "model: llama-3.1-8b\nmax-num-seqs: 8\nmax-model-len: 8192\n"
        args = ("--gpu", "h100", "-t", "max_ms_per_token=40")
        replicas = run_json(cli, serve(tmp_path, plain + "data-parallel-size: 4\n"), *args)
        one = run_json(cli, serve(tmp_path, plain, "one.yaml"), *args)
        assert replicas["results"][0]["value"] == one["results"][0]["value"]
        assert "vllm-data-parallel" in codes(replicas)
        (note,) = [
            n for n in replicas["deployments"][0]["notes"] if n["code"] == "vllm-data-parallel"
        ]
        assert "4 replicas" in note["message"] and "4x" in note["message"]

    def test_enforce_eager_is_noted(self, cli: Run, tmp_path: Path) -> None:
        path = serve(
            tmp_path,
            "model: llama-3.1-8b\nmax-model-len: 8192\nmax-num-seqs: 8\nenforce-eager: true\n",
        )
        r = cli("check", path, "--gpu", "h100", "-t", "must_fit=true")
        assert r.code == 0 and "enforce-eager: without CUDA graphs" in r.err

    @pytest.mark.parametrize(
        ("cap", "valid"), [("8", False), ("15", False), ("16", True), ("2K", True)]
    )
    def test_max_num_batched_tokens_holds_vllm_s_rule(
        self, cli: Run, tmp_path: Path, cap: str, valid: bool
    ) -> None:
        """vLLM refuses to start with max-num-batched-tokens below max-num-seqs; at or above
        it, every running sequence's one decode token fits in a step."""
        path = serve(
            tmp_path,
            "model: llama-3.1-8b\nmax-model-len: 8192\nmax-num-seqs: 16\n"
            f"max-num-batched-tokens: {cap}\n",
        )
        r = cli("check", path, "--gpu", "h100", "-t", "must_fit=true")
        assert r.code == (0 if valid else 2)
        if not valid:
            assert "is below max-num-seqs (16); vLLM refuses to start" in r.err


class TestDefaultBatch:
    """No max-num-seqs: vLLM 0.19.1's `vllm serve` default (EngineArgs.get_batch_defaults)
    is 1,024 on a GPU of 70 GiB or more other than the A100, 256 otherwise, and twice that
    with performance-mode: throughput."""

    @pytest.mark.parametrize(
        ("gpu", "extra", "batch"),
        [
            ("h100", "", 1024),  # 79.65 GiB
            ("h200", "", 1024),
            ("a100-80gb", "", 256),  # the A100 is the exception
            ("l40s", "", 256),  # 45 GiB
            ("h100", "performance-mode: throughput\n", 2048),
            ("l40s", "performance-mode: throughput\n", 512),
        ],
    )
    def test_the_gpu_decides(
        self, cli: Run, tmp_path: Path, gpu: str, extra: str, batch: int
    ) -> None:
        path = serve(tmp_path, f"model: llama-3.1-8b\nmax-model-len: 1024\n{extra}")
        doc = run_json(cli, path, "--gpu", gpu, "-t", "max_ms_per_token=1000")
        assert doc["deployments"][0]["inputs"]["batch"] == batch
        assert "vllm-default-max-num-seqs" in codes(doc)


class TestMaxNumSeqsIsACap:
    """max-num-seqs caps the requests vLLM runs at once; vLLM starts whenever one sequence
    of max-model-len fits. Llama-3.1-8B in BF16 on one H100 SXM: the room a server leaves
    is 0.9 x (85,521,661,952 B - 450 MiB of CUDA context) = 76,544,822,476 B, less vLLM's
    activation peak 1,024 x 128,256 x 15 = 1,969,864,704 B and its 268,435,456 B reserve:
    74,306,522,316 B (74.31 GB); the weights take 8,030,261,248 x 2 = 16,060,522,496 B,
    leaving 58,245,999,820 B. A token of cache is 32 layers x 8 KV heads x 128 x 2 (K, V)
    x 2 B = 131,072 B, a sequence of 131,072 tokens 17,179,869,184 B: 3 fit (51.5 GB), 4
    do not (68.7 GB), far from vLLM's default 1,024."""

    CONFIG = "model: meta-llama/Llama-3.1-8B-Instruct\nmax-model-len: 131072\n"
    NOTE = (
        "1,024 sequences (max-num-seqs) at full length (131,072 tokens) would not fit in the "
        "74.31 GB per GPU a server leaves at 0.9 of memory; 3 would: max-num-seqs only caps "
        "the requests vLLM runs at once, so it starts and runs fewer"
    )

    def test_alone_it_is_no_does_not_fit(self, cli: Run, tmp_path: Path) -> None:
        r = cli("check", serve(tmp_path, self.CONFIG), "--gpu", "h100-sxm")
        assert r.code == 0, r.err
        assert self.NOTE in r.err and "cannot run" not in r.err
        doc = run_json(cli, serve(tmp_path, self.CONFIG), "--gpu", "h100-sxm")
        assert "vllm-fewer-at-once" in codes(doc) and "does-not-fit" not in codes(doc)

    @pytest.mark.parametrize("target", ["must_fit=true", "max_ms_per_token=1000"])
    def test_a_target_at_that_batch_keeps_does_not_fit(
        self, cli: Run, tmp_path: Path, target: str
    ) -> None:
        r = cli("check", serve(tmp_path, self.CONFIG), "--gpu", "h100-sxm", "-t", target)
        assert "does not fit: from 131,072 tokens at batch 1,024" in r.err
        assert "cannot run" in r.err and self.NOTE not in r.err


class TestModelDirectory:
    def test_a_local_directory_is_read_from_its_config_json(self, cli: Run, tmp_path: Path) -> None:
        model = tmp_path / "models" / "Llama-3.1-8B"
        model.mkdir(parents=True)
        shutil.copy(FIXTURES / "llama-3.1-8b.json", model / "config.json")
        (tmp_path / "conf").mkdir()
        path = serve(tmp_path / "conf", "model: ../models/Llama-3.1-8B\nmax-num-seqs: 8\n")
        doc = run_json(cli, path, "--gpu", "h100")  # run from elsewhere: relative to the file
        deployment = doc["deployments"][0]
        assert deployment["inputs"]["model"] == "llama-3.1-8b"  # the directory's name
        # No max-model-len: vLLM takes the model's, max_position_embeddings in config.json.
        assert deployment["contexts"] == [131_072]

    def test_through_a_deployment_file_elsewhere(self, cli: Run, tmp_path: Path) -> None:
        model = tmp_path / "models" / "Llama-3.1-8B"
        model.mkdir(parents=True)
        shutil.copy(FIXTURES / "llama-3.1-8b.json", model / "config.json")
        (tmp_path / "conf").mkdir()
        serve(tmp_path / "conf", "model: ../models/Llama-3.1-8B\nmax-model-len: 8192\n")
        (tmp_path / "deploy").mkdir()
        deployment = tmp_path / "deploy" / "d.yaml"
        deployment.write_text(
            "vllm_config: ../conf/serve.yaml\ngpu: h100\ntargets:\n  max_ms_per_token: 40\n"
        )
        doc = run_json(cli, str(deployment))
        assert doc["deployments"][0]["inputs"]["model"] == "llama-3.1-8b"


class TestStartupCheck:
    def test_a_config_alone_is_held_to_vllm_s_start_up_check(
        self, cli: Run, tmp_path: Path
    ) -> None:
        path = serve(tmp_path, LLAMA_70B_FP8)
        r = cli("check", path, "--gpu", "h100-sxm")
        assert r.code == 0, r.err
        assert "vllm_startup_fit" in r.out and "fits" in r.out
        assert "1 sequence of 8,192 tokens" in r.out
        doc = run_json(cli, path, "--gpu", "h100-sxm")
        (result,) = doc["results"]
        assert (result["target"], result["value"], result["context"]) == (
            "vllm_startup_fit",
            True,
            8_192,
        )
        assert "vllm-startup-fit" in codes(doc)
        assert "check-roofline" not in codes(doc)  # nothing was held to a speed
        assert doc["deployments"][0]["inputs"]["batch"] == 1024  # as vLLM would run it

    def test_a_context_that_does_not_fit_fails(self, cli: Run, tmp_path: Path) -> None:
        path = serve(tmp_path, LLAMA_70B_FP8.replace("8192", "32768"))
        r = cli("check", path, "--gpu", "h100-sxm")
        assert r.code == 1 and "does not fit at 32,768 tokens" in r.out

    def test_a_context_that_does_not_fit_keeps_the_does_not_fit_note(
        self, cli: Run, tmp_path: Path
    ) -> None:
        # Not one sequence of 65,536 tokens fits (above): vLLM refuses to start.
        path = serve(tmp_path, LLAMA_70B_FP8.replace("8192", "65536"))
        found = codes(run_json(cli, path, "--gpu", "h100-sxm"))
        assert "does-not-fit" in found and "vllm-fewer-at-once" not in found

    def test_targets_replace_it(self, cli: Run, tmp_path: Path) -> None:
        doc = run_json(
            cli, serve(tmp_path, LLAMA_70B_FP8), "--gpu", "h100-sxm", "-t", "max_ms_per_token=40"
        )
        assert [r["target"] for r in doc["results"]] == ["max_ms_per_token"]

    def test_it_needs_a_gpu(self, cli: Run, tmp_path: Path) -> None:
        r = cli("check", serve(tmp_path, LLAMA_70B_FP8))
        assert r.code == 2 and "missing gpu (or bandwidth); vLLM configs take --gpu" in r.err

    def test_from_standard_input(self, cli: Run, monkeypatch: pytest.MonkeyPatch) -> None:
        monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(LLAMA_70B_FP8.encode())))
        doc = run_json(cli, "-", "--gpu", "h100-sxm")
        (result,) = doc["results"]
        assert (result["file"], result["target"]) == ("<stdin>", "vllm_startup_fit")


def test_a_config_of_model_alone_is_a_vllm_config(cli: Run, tmp_path: Path) -> None:
    """`model:` alone is the smallest `vllm serve --config` file: it is held to vLLM's
    start-up check (a deployment file of model alone would have no targets)."""
    path = tmp_path / "serve.yaml"
    path.write_text("model: meta-llama/Llama-3.1-8B-Instruct\n")
    r = cli("check", str(path), "--gpu", "h100", "--format", "json")
    assert r.code == 0, r.err
    assert [x["target"] for x in json.loads(r.out)["results"]] == ["vllm_startup_fit"]
