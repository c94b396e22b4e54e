"""`decodecalc check` with a workload: serving targets, vLLM scheduler flags, speculation."""

from __future__ import annotations

import json
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

from decodecalc.checks.deployments import DeploymentReader
from decodecalc.loading.catalog import Catalog
from tests.conftest import Run

# Llama-3.1-8B on an H100 SXM at the roofline, one request of 1 prompt token and 2 output
# tokens: each step streams every weight but the input embedding (decode reads one row of
# it), (8,030,261,248 - 128,256 x 4096) x 2 B = 15,009,849,344 B, at 3.35 TB/s:
# 4.4806 ms; the cache of a 2-token context (2 x 128 KiB) adds 0.08 us. So TPOT = 4.48 ms,
# TTFT (a 1-token prefill, a step like any other) 4.48 ms, and one token per step makes
# 1 / 4.4806 ms = 223.2 output tokens/s.
ONE_STREAM = """\
name: one
model: llama-3.1-8b
gpu: h100-sxm
engine: roofline
workload:
  concurrency: 1
  input_len: 1
  output_len: 2
targets:
"""


def write(tmp_path: Path, content: str, name: str = "d.yaml") -> str:
    path = tmp_path / name
    path.write_text(content)
    return str(path)


def results(cli: Run, path: str, *extra: str) -> tuple[int, dict[str, dict[str, object]]]:
    r = cli("check", path, "-f", "json", *extra)
    return r.code, {row["target"]: row for row in json.loads(r.out)["results"]}


class TestServingTargets:
    def test_met_targets_pass(self, cli: Run, tmp_path: Path) -> None:
        targets = (
            "  max_ttft_ms: 4.6\n  max_tpot_ms: 4.6\n  min_output_throughput_tokens_per_s: 220\n"
        )
        code, rows = results(cli, write(tmp_path, ONE_STREAM + targets))
        assert code == 0
        assert rows["max_tpot_ms"]["value"] == pytest.approx(4.4806, rel=1e-3)
        assert rows["max_ttft_ms"]["value"] == pytest.approx(4.4806, rel=1e-3)
        throughput = rows["min_output_throughput_tokens_per_s"]["value"]
        assert throughput == pytest.approx(223.2, rel=1e-3)
        assert all(row["passed"] and row["context"] is None for row in rows.values())

    def test_missed_targets_fail(self, cli: Run, tmp_path: Path) -> None:
        targets = (
            "  max_ttft_ms: 4.4\n  max_tpot_ms: 4.4\n  min_output_throughput_tokens_per_s: 230\n"
        )
        code, rows = results(cli, write(tmp_path, ONE_STREAM + targets))
        assert code == 1
        assert not any(row["passed"] for row in rows.values())

    def test_command_line_targets_reach_the_workload(self, cli: Run, tmp_path: Path) -> None:
        path = write(tmp_path, ONE_STREAM + "  max_tpot_ms: 4.6\n")
        code, rows = results(cli, path, "-t", "max_ttft_ms=4.4")
        assert code == 1
        assert (rows["max_tpot_ms"]["passed"], rows["max_ttft_ms"]["passed"]) == (True, False)

    def test_decode_and_serving_targets_together(self, cli: Run, tmp_path: Path) -> None:
        """max_ms_per_token holds the batch-1 decode step at the context (1 token here),
        max_tpot_ms the server under its workload: both 4.48 ms for one stream."""
        content = "context: 1\n" + ONE_STREAM + "  max_tpot_ms: 4.6\n  max_ms_per_token: 4.6\n"
        code, rows = results(cli, write(tmp_path, content))
        assert code == 0 and set(rows) == {"max_tpot_ms", "max_ms_per_token"}

    def test_junit_reports_each_serving_target(self, cli: Run, tmp_path: Path) -> None:
        path = write(tmp_path, ONE_STREAM + "  max_tpot_ms: 4.6\n  max_ttft_ms: 4.4\n")
        out = tmp_path / "report.xml"
        r = cli("check", path, "-f", "junit", "-o", str(out))
        assert r.code == 1 and "1 of 2 targets missed" in r.out, r.err  # the table, too
        root = ET.parse(out).getroot()
        assert (root.get("tests"), root.get("failures"), root.get("errors")) == ("2", "1", "0")
        cases = {case.get("name"): case for case in root.iter("testcase")}
        assert set(cases) == {
            "max_tpot_ms: <= 4.6 ms per output token",
            "max_ttft_ms: <= 4.4 ms to first token",
        }
        failure = cases["max_ttft_ms: <= 4.4 ms to first token"].find("failure")
        assert failure is not None and failure.get("message") == (
            "4.5 ms; wanted <= 4.4 ms to first token"
        )


class TestWhatTheReportsSayTargetsWereHeldTo:
    """Under a workload the JSON and JUnit say what the table says: the serving targets
    were held to the server (its steps the roofline's here), and no decode step at the
    file's contexts was checked, so no contexts, crossover or step figure is reported."""

    def test_json(self, cli: Run, tmp_path: Path) -> None:
        r = cli("check", write(tmp_path, ONE_STREAM + "  max_tpot_ms: 4.6\n"), "--json")
        deployment = json.loads(r.out)["deployments"][0]
        (result,) = json.loads(r.out)["results"]
        assert (result["basis"], result["held_to"]) == ("roofline", "workload")
        assert [deployment[k] for k in ("contexts", "crossover_context", "held_to")] == [None] * 3
        assert deployment["served_to"] == (
            "the server's steady state under its workload (decodecalc serving), its steps at "
            "the roofline"
        )

    def test_must_fit_keeps_the_files_contexts(self, cli: Run, tmp_path: Path) -> None:
        """must_fit stays at the file's batch and contexts: Llama-3.1-8B's maximum, 131,072
        (max_position_embeddings in its config.json)."""
        path = write(tmp_path, ONE_STREAM + "  must_fit: true\n  max_tpot_ms: 4.6\n")
        doc = json.loads(cli("check", path, "--json").out)
        held = {r["target"]: (r["basis"], r["held_to"]) for r in doc["results"]}
        assert held == {"must_fit": (None, "contexts"), "max_tpot_ms": ("roofline", "workload")}
        assert doc["deployments"][0]["contexts"] == [131072]
        assert doc["deployments"][0]["held_to"] is None  # no speed target at a context

    def test_junit_properties(self, cli: Run, tmp_path: Path) -> None:
        r = cli("check", write(tmp_path, ONE_STREAM + "  max_tpot_ms: 4.6\n"), "-f", "junit")
        names = [p.get("name") for p in ET.fromstring(r.out).iter("property")]
        assert names == ["one.served_to"]

    def test_no_target_held_to_the_server_says_none(self, cli: Run, tmp_path: Path) -> None:
        """Review s41 #13 (docs): with a workload whose only target is must_fit, held at
        the file's contexts, no target was held to the server: served_to is null, and JUnit
        has no property for it."""
        path = write(tmp_path, ONE_STREAM + "  must_fit: true\n")
        (deployment,) = json.loads(cli("check", path, "--json").out)["deployments"]
        assert deployment["served_to"] is None
        junit = ET.fromstring(cli("check", path, "-f", "junit").out)
        assert [p.get("name") for p in junit.iter("property")] == []


class TestSaturatedServer:
    """A request rate the server cannot carry is a valid file whose serving targets are
    missed (exit 1, a JUnit failure), as plan counts it; the other deployments are checked.
    An 8,192-token prompt of Llama-3.1-8B is 2 x 8.03e9 x 8,192 = 1.32e14 FLOPs of prefill,
    0.133 s at the H100's 989.4 TFLOP/s: at most 7.5 requests/s, so 1,000/s is past any
    saturation rate, and 1/s keeps the server busy 13% of the time."""

    FILE = """\
defaults:
  model: llama-3.1-8b
  gpu: h100-sxm
  engine: roofline
  targets: {max_tpot_ms: 20, max_ttft_ms: 500, must_fit: true}
deployments:
  - name: flooded
    workload: {request_rate: 1000, input_len: 8K, output_len: 2}
  - name: calm
    workload: {request_rate: 1, input_len: 8K, output_len: 2}
"""

    def test_a_missed_target_not_an_invalid_file(self, cli: Run, tmp_path: Path) -> None:
        r = cli("check", write(tmp_path, self.FILE), "-f", "json")
        assert r.code == 1, r.err
        rows = [
            (x["deployment"], x["target"], x["value"], x["passed"])
            for x in json.loads(r.out)["results"]
        ]
        flooded = {t: (v, p) for d, t, v, p in rows if d == "flooded"}
        assert flooded == {
            "must_fit": (True, True),
            "max_ttft_ms": (None, False),
            "max_tpot_ms": (None, False),
        }
        assert all(p for d, _, _, p in rows if d == "calm")  # still checked
        assert "request rate 1000/s reaches the server's saturation rate" in r.err

    def test_junit_failure(self, cli: Run, tmp_path: Path) -> None:
        r = cli("check", write(tmp_path, self.FILE), "-f", "junit")
        root = ET.fromstring(r.out)
        assert (root.get("failures"), root.get("errors")) == ("2", "0")
        failure = next(root.iter("failure"))
        assert failure.get("message", "").startswith("saturated: the queue grows without bound")


def test_a_saturated_server_is_judged_on_what_it_still_gives(cli: Run, tmp_path: Path) -> None:
    """Review s41 #3: saturation makes TTFT unbounded, not the server's output, which every
    busy slot keeps at its saturation rate x the output tokens, nor its decode step. The
    rate is at most 7.5 requests/s (TestSaturatedServer), 2 output tokens each: under 15.1
    tokens/s, above the floor of 10. One decode step a request in 1 + its prompt's steps:
    the mean decode batch is 1, at the mean context 8,192 + 2 // 2 = 8,193 tokens, whose
    8,193 x 131,072 = 1,073,872,896 B of KV beside the 15,009,849,344 B of weights are a
    share of 1,073,872,896 / 16,083,722,240 = 6.68%."""
    text = """\
model: llama-3.1-8b
gpu: h100-sxm
engine: roofline
workload: {request_rate: 1000, input_len: 8K, output_len: 2}
targets: {max_ttft_ms: 500, min_output_throughput_per_gpu: 10, max_kv_share: 0.5}
"""
    r = cli("check", write(tmp_path, text), "-f", "json")
    assert r.code == 1, r.err
    found = {x["target"]: (x["value"], x["passed"]) for x in json.loads(r.out)["results"]}
    assert found["max_ttft_ms"] == (None, False)
    throughput, passed = found["min_output_throughput_per_gpu"]
    assert passed and 10 < throughput < 15.1
    serving = cli(
        "serving", "-m", "llama-3.1-8b", "-g", "h100-sxm", "--engine", "roofline",
        "--input-len", "8K", "--output-len", "2", "--request-rate", "1", "--json",
    )  # fmt: skip
    assert throughput == pytest.approx(2 * json.loads(serving.out)["saturation_rate_per_s"])
    share, passed = found["max_kv_share"]
    assert passed and share == pytest.approx(1_073_872_896 / 16_083_722_240)


class TestServerWithoutRoom:
    """Review s41 #10: a workload deployment that cannot hold its model is, like a saturated
    one, a valid file whose serving targets are missed (exit 1), and the others are checked.
    Llama-3.1-70B's 70.55e9 BF16 parameters are 141.11 GB, past an H100's
    0.9 x (79.65 - 0.44) GiB = 76.54 GB budget: no KV cache, not one request runs."""

    FILE = """\
deployments:
  - name: big
    model: llama-3.1-70b
    gpu: h100-sxm
    engine: roofline
    workload: {input_len: 1000, output_len: 100, concurrency: 4}
    targets: {max_tpot_ms: 30}
  - name: plain
    model: llama-3.1-8b
    gpu: h100-sxm
    engine: roofline
    targets: {max_ms_per_token: 30}
"""

    def test_a_missed_target_not_an_invalid_file(self, cli: Run, tmp_path: Path) -> None:
        r = cli("check", write(tmp_path, self.FILE), "-f", "junit")
        assert r.code == 1, r.err
        root = ET.fromstring(r.out)
        assert (root.get("tests"), root.get("failures"), root.get("errors")) == ("2", "1", "0")
        failure = next(root.iter("failure"))
        assert failure.get("message") == (
            "does not fit: no room for a request; wanted <= 30 ms per output token"
        )
        assert "big: no room for a KV cache: 0.9 of the memory CUDA reports" in r.err
        assert "the weights take 141.11 GB" in r.err


class TestStepTargetsUnderAWorkload:
    """Under a workload min_throughput_tokens_per_s is the server's output tokens/s, and
    max_kv_share and min_crossover_context a decode step at its mean decode batch and the
    workload's mean context: never batch 1 at the model's maximum context (131,072)."""

    # 64 requests kept in flight, each of 1,024 prompt and 256 output tokens, below vLLM's
    # max-num-seqs: all 64 run, and each spends 1 of its 1 + 256 steps in prefill, so
    # 64 x 256 / 257 = 63.75 decode in a step: the mean decode batch is round(63.75) = 64.
    # The mean context is 1,024 + 256 // 2 = 1,152 tokens. At batch 64 the step streams
    # the weights, 15,009,849,344 B (above), and 64 x 1,152 x 131,072 B (a token's K and
    # V: 32 layers x 8 KV heads x 128 x 2 x 2 B) = 9,663,676,416 B of cache: a KV share of
    # 9,663,676,416 / 24,673,525,760 = 39.17%. The cache of 64 sequences overtakes the
    # weights at 15,009,849,344 / (64 x 131,072) = 1,789.31 tokens each.
    LOADED = """\
name: loaded
model: llama-3.1-8b
gpu: h100-sxm
engine: roofline
workload: {concurrency: 64, input_len: 1K, output_len: 256}
targets:
"""

    def test_throughput_is_the_servers(self, cli: Run, tmp_path: Path) -> None:
        # One stream (above): 1 / 4.4806 ms = 223.2 output tokens/s, where batch 1 at
        # 131,072 tokens ((15,009,849,344 + 131,072 x 131,072) B / 3.35 TB/s = 9.61 ms)
        # would give 104 and fail.
        path = write(tmp_path, ONE_STREAM + "  min_throughput_tokens_per_s: 220\n")
        r = cli("check", path, "-f", "json")
        assert r.code == 0, r.err
        (row,) = json.loads(r.out)["results"]
        assert row["value"] == pytest.approx(223.2, rel=1e-3)
        assert (row["context"], row["basis"], row["held_to"]) == (None, "roofline", "workload")
        assert "min_throughput_tokens_per_s is held to the server's output tokens" in r.err

    def test_the_same_figure_as_the_servers_output_throughput(
        self, cli: Run, tmp_path: Path
    ) -> None:
        targets = "  min_throughput_tokens_per_s: 1\n  min_output_throughput_tokens_per_s: 1\n"
        _, rows = results(cli, write(tmp_path, self.LOADED + targets))
        server = rows["min_output_throughput_tokens_per_s"]["value"]
        assert rows["min_throughput_tokens_per_s"]["value"] == server

    def test_kv_share_and_crossover_at_the_mean_batch_and_context(
        self, cli: Run, tmp_path: Path
    ) -> None:
        targets = "  max_kv_share: 0.4\n  min_crossover_context: 2K\n"
        path = write(tmp_path, self.LOADED + targets)
        r = cli("check", path, "-f", "json")
        assert r.code == 1, r.err
        rows = {row["target"]: row for row in json.loads(r.out)["results"]}
        share = rows["max_kv_share"]
        assert share["value"] == pytest.approx(9_663_676_416 / 24_673_525_760, rel=1e-9)
        assert (share["context"], share["passed"]) == (1152, True)
        crossover = rows["min_crossover_context"]
        assert crossover["value"] == pytest.approx(15_009_849_344 / (64 * 131_072), rel=1e-9)
        assert crossover["passed"] is False  # 1,789 < 2,048
        assert (
            "min_crossover_context and max_kv_share are held to a decode step at the "
            "server's mean decode batch (64 sequences) and the workload's mean context "
            "(1,152 tokens: the input and half the output)"
        ) in " ".join(r.err.split())
        table = cli("check", path).out
        assert "39.2% at 1,152 tokens, the workload's mean" in table
        assert "1,789 tokens at the workload's mean batch" in table


class TestBadWorkloads:
    @pytest.mark.parametrize(
        ("workload", "message"),
        [
            ("{concurrency: 1, input_len: 1, output_len: 0}", "workload.output_len: must be"),
            ("{request_rate: 0, input_len: 9, output_len: 9}", "workload.request_rate: must be"),
            (
                "{concurrency: 1, request_rate: 1, input_len: 9, output_len: 9}",
                "give a concurrency or a request rate (one of them)",
            ),
            ("{concurrency: 1, output_len: 9}", "workload: give input_len (tokens per request)"),
            ("{concurency: 1, input_len: 9, output_len: 9}", "did you mean 'concurrency'?"),
            ("{concurrency: 2000000, input_len: 9, output_len: 9}", "concurrency 2000000 must"),
            ("32", "workload: expected a mapping, got 32"),
            (
                "{concurrency: 1, input_len: 9, output_len: 9, speculative: {method: eagle, "
                "num_speculative_tokens: 3}}",
                "needs workload.speculative.acceptance",
            ),
            (
                "{concurrency: 1, input_len: 9, output_len: 9, speculative: {method: ngram, "
                "num_speculative_tokens: 3, acceptance: 0.5}}",
                "speculative method 'ngram' is not modelled",
            ),
        ],
    )
    def test_one_line_and_exit_2(
        self, cli: Run, tmp_path: Path, workload: str, message: str
    ) -> None:
        content = (
            f"model: llama-3.1-8b\ngpu: h100-sxm\nworkload: {workload}\n"
            "targets: {max_tpot_ms: 20}\n"
        )
        r = cli("check", write(tmp_path, content))
        assert r.code == 2 and r.out == ""
        assert r.err.count("\n") == 1 and r.err.startswith("decodecalc: error: ")
        assert message in r.err

    def test_serving_targets_need_a_workload(self, cli: Run, tmp_path: Path) -> None:
        path = write(tmp_path, "model: llama-3.1-8b\ngpu: h100-sxm\ntargets: {max_ttft_ms: 500}\n")
        r = cli("check", path)
        assert r.code == 2
        assert "max_ttft_ms needs a workload: (concurrency or request_rate" in r.err


class TestVllmConfig:
    SERVE = (
        "model: meta-llama/Llama-3.1-8B-Instruct\n"
        "max-num-seqs: 64\n"
        "max-num-batched-tokens: 4K\n"
        "speculative-config:\n"
        "  method: eagle\n"
        "  model: yuhuili/EAGLE-LLaMA3.1-Instruct-8B\n"
        "  num_speculative_tokens: 3\n"
    )
    DEPLOYMENT = (
        "vllm_config: serve.yaml\ngpu: h100-sxm\n"
        "workload: {concurrency: 16, input_len: 1K, output_len: 256, "
        "speculative: {acceptance: 0.8}}\n"
        "targets: {max_tpot_ms: 20}\n"
    )

    def test_scheduler_flags_and_speculation_are_read(self, tmp_path: Path) -> None:
        write(tmp_path, self.SERVE, "serve.yaml")
        path = write(tmp_path, self.DEPLOYMENT)
        (d,) = DeploymentReader(Catalog()).read(Path(path))
        assert d.limits is not None and d.workload is not None
        assert (d.limits.max_num_batched_tokens, d.limits.max_num_seqs) == (4096, 64)
        assert (d.workload.concurrency, d.workload.input_len) == (16, 1024)
        speculation = d.workload.speculative
        assert speculation is not None
        assert (speculation.method, speculation.proposed) == ("eagle", 3)
        # (1 - 0.8^4) / (1 - 0.8) = 2.952 tokens per verify step
        assert speculation.tokens_per_step == pytest.approx(2.952)

    @pytest.mark.parametrize(
        "config",
        [
            "speculative-config.method: mtp\nspeculative-config.num_speculative_tokens: 2\n",
            'speculative-config: \'{"method": "deepseek_mtp", "num_speculative_tokens": 2}\'\n',
        ],
    )
    def test_dotted_and_json_forms(self, tmp_path: Path, config: str) -> None:
        write(tmp_path, "model: llama-3.1-8b\n" + config, "serve.yaml")
        path = write(tmp_path, self.DEPLOYMENT)
        (d,) = DeploymentReader(Catalog()).read(Path(path))
        assert d.workload is not None and d.workload.speculative is not None
        assert (d.workload.speculative.method, d.workload.speculative.proposed) == ("mtp", 2)

    def test_engine_defaults_without_flags(self, tmp_path: Path) -> None:
        """No max-num-seqs or max-num-batched-tokens: vLLM's defaults on an H100 (80 GiB,
        not an A100), 8,192 and 1,024."""
        write(tmp_path, "model: llama-3.1-8b\n", "serve.yaml")
        path = write(tmp_path, self.DEPLOYMENT.replace(", speculative: {acceptance: 0.8}", ""))
        (d,) = DeploymentReader(Catalog()).read(Path(path))
        assert d.limits is not None
        assert (d.limits.max_num_batched_tokens, d.limits.max_num_seqs) == (8192, 1024)

    def test_speculation_without_a_workload_is_noted(self, cli: Run, tmp_path: Path) -> None:
        path = write(tmp_path, self.SERVE, "serve.yaml")
        r = cli("check", path, "--gpu", "h100-sxm", "-f", "json")
        codes = {n["code"] for n in json.loads(r.out)["deployments"][0]["notes"]}
        assert r.code == 0 and "vllm-speculative-unpriced" in codes

    def test_checked_under_the_workload(self, cli: Run, tmp_path: Path) -> None:
        write(tmp_path, self.SERVE, "serve.yaml")
        code, rows = results(cli, write(tmp_path, self.DEPLOYMENT))
        assert code == 0 and rows["max_tpot_ms"]["passed"]


def test_a_files_draft_model_keeps_its_checkpoints_format(tmp_path: Path) -> None:
    """Review s41: the target in FP8 (weights: fp8), the draft Llama-3.2-1B, whose config has
    no quantization_config: vLLM loads it in BF16, and so it is charged."""
    path = write(
        tmp_path,
        "model: llama-3.1-8b\ngpu: h100-sxm\nweights: fp8\n"
        "workload: {concurrency: 1, input_len: 1K, output_len: 256, speculative: "
        "{method: draft, draft_model: llama-3.2-1b, num_speculative_tokens: 3, acceptance: 0.7}}\n"
        "targets: {max_tpot_ms: 20}\n",
    )
    (d,) = DeploymentReader(Catalog()).read(Path(path))
    assert d.workload is not None and d.workload.speculative is not None
    drafted = d.workload.speculative.draft_weights
    assert drafted is not None and drafted[0].id == "bf16" and drafted[1:] == ((), None)
