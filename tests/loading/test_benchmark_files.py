"""Benchmark result files read to measured points (loading/benchmarks.py), and the commands
that take them: calibrate and validate FILES..., check --measured, calibrate --save-engine.

Every fixture is verbatim from the tool or a published run (tests/fixtures/benchmarks/
SOURCES.md); each expected figure below is worked by hand from the file's own numbers."""

from __future__ import annotations

import json
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest
import yaml

from decodecalc.loading.benchmarks import read_benchmark
from tests.conftest import Run

FIXTURES = Path(__file__).parents[1] / "fixtures" / "benchmarks"
VLLM = FIXTURES / "vllm-bench-serve-llama-3.2-3b-l40s.json"
SGLANG = FIXTURES / "sglang-bench-serving-llama-3.3-70b-h200.jsonl"
GENAI_PERF = FIXTURES / "genai-perf-profile-export.json"
SGLANG_SETUP = ("-m", "llama-3.1-70b", "-g", "h200", "-w", "bf16", "--tp", "4")
"""What the SGLang file does not say: Llama-3.3-70B (llama-3.1-70b's tensors) in BF16 on
4 x H200 at TP 4 (its repository's launch line, SOURCES.md)."""
LLAMA_SETUP = ("-m", "qwen2.5-7b", "-g", "rtx-4080")
"""Qwen2.5-7B-Instruct Q4_K_M on an RTX 4080 (model_filename and gpu_info in the file)."""


class TestReaders:
    def test_vllm_bench_serve(self) -> None:
        (run,) = read_benchmark(VLLM) or []
        assert run.tool == "vllm-bench-serve"
        assert run.measured == "tpot_mean"
        assert run.ms_per_token == 25.75333956719501  # mean_tpot_ms as written
        assert run.model == "meta-llama/Llama-3.2-3B-Instruct"  # model_id
        assert run.input_len == 999  # total_input_tokens 899,100 / 900 completed
        assert run.output_len == 266  # total_output_tokens 239,813 / 900 = 266.46
        assert run.context == 999 + 133  # input + output / 2
        # max_concurrency null at 30 req/s: in flight = request_throughput x mean latency,
        # the latency TTFT + TPOT x (output - 1) = 84.293 + 25.7533 x 265 = 6,908.9 ms:
        # 22.2567 req/s x 6.9089 s = 153.8 requests over the gateway's replicas.
        assert run.batch == 154
        assert run.ttft_ms == 84.29259939554161
        assert (run.weights, run.kv_dtype, run.engine) == (None, None, None)

    def test_sglang_bench_serving_jsonl(self) -> None:
        runs = read_benchmark(SGLANG) or []
        assert len(runs) == 7  # one result per line
        first, fourth = runs[0], runs[3]
        assert first.where == f"{SGLANG}:1"
        assert first.tool == "sglang-bench-serving"
        # This SGLang wrote no TPOT: the median inter-token latency is the figure.
        assert (first.measured, first.ms_per_token) == ("itl_median", 13.638956006616354)
        assert first.input_len == 509  # 152,612 / 300 = 508.7
        assert first.output_len == 534  # 160,347 / 300 = 534.5
        assert first.context == 509 + 267
        # No concurrency in the file: completed / duration x mean E2E latency,
        # 300 / 298.368 s = 1.00547 req/s x 7.8406 s = 7.88 in flight.
        assert first.batch == 8
        assert first.model is None and first.ttft_ms is None  # neither is in the file
        # 2,400 requests: 1,222,995 / 2,400 = 509.6 in, 1,218,922 / 2,400 = 507.9 out;
        # 2,400 / 346.775 s = 6.9209 req/s x 52.0648 s = 360.3 in flight.
        assert (fourth.input_len, fourth.output_len, fourth.context) == (510, 508, 510 + 254)
        assert (fourth.batch, fourth.ms_per_token) == (360, 70.76324708759785)

    @pytest.mark.parametrize(
        ("name", "where", "tokens_per_s"),
        [
            ("llama-bench.json", "llama-bench.json[1]", 118.881588),
            ("llama-bench.jsonl", "llama-bench.jsonl:2", 119.844681),
            ("llama-bench.csv", "llama-bench.csv:3", 119.915244),
        ],
    )
    def test_llama_bench_records(self, name: str, where: str, tokens_per_s: float) -> None:
        # Two tests each: pp512 (prefill, left out) and tg128 from an empty cache.
        (run,) = read_benchmark(FIXTURES / name) or []
        assert run.where == str(FIXTURES / where)
        assert run.tool == "llama-bench" and run.measured == "step"
        assert run.ms_per_token == pytest.approx(1000 / tokens_per_s, rel=1e-12)
        assert run.context == 0 + 128 // 2  # n_depth + n_gen / 2
        assert run.batch == 1
        assert run.weights == "q4-k-m"  # model_type "qwen2 7B Q4_K - Medium"
        assert run.kv_dtype == "fp16"  # type_k f16
        assert run.engine == "llama.cpp"  # backends CUDA
        assert run.engine_version == "b5163 (8cf427ff)"  # build_number, build_commit
        assert run.hardware == "NVIDIA GeForce RTX 4080"
        assert run.model is None  # the file names a GGUF file, not a model id

    def test_llama_bench_markdown_with_depth(self) -> None:
        runs = read_benchmark(FIXTURES / "llama-bench-depth.md") or []
        # pp512, tg128, pp512 @ d512, tg128 @ d512: the two tg rows.
        assert [(r.where, r.context) for r in runs] == [
            (f"{FIXTURES / 'llama-bench-depth.md'}:4", 64),  # 0 + 128 / 2
            (f"{FIXTURES / 'llama-bench-depth.md'}:6", 576),  # 512 + 128 / 2
        ]
        assert [r.ms_per_token for r in runs] == pytest.approx([1000 / 120.60, 1000 / 116.71])
        # No type_k column: llama-bench shows it only where it is not the default f16.
        assert {(r.weights, r.kv_dtype, r.engine_version) for r in runs} == {
            ("q4-k-m", "fp16", None)
        }

    def test_genai_perf_export(self) -> None:
        (run,) = read_benchmark(GENAI_PERF) or []
        assert run.tool == "genai-perf"
        assert (run.measured, run.ms_per_token) == ("itl_mean", 21.0)  # ITL avg, in ms
        assert (run.input_len, run.output_len) == (61, 51)  # sequence length avgs
        assert run.context == 61 + 25
        assert run.batch == 1  # input_config.concurrency
        assert run.ttft_ms == 11.0
        assert run.model == "gpt2_vllm"  # input_config.model[0]

    def test_aiperf_names_its_load_and_model_elsewhere(self, tmp_path: Path) -> None:
        path = tmp_path / "profile_export_aiperf.json"
        path.write_text(
            json.dumps(
                {
                    "output_token_throughput_per_user": {"unit": "tokens/sec/user", "avg": 50.0},
                    "time_to_first_token": {"unit": "ms", "avg": 40.0},
                    "input_sequence_length": {"unit": "tokens", "avg": 1000.0},
                    "output_sequence_length": {"unit": "tokens", "avg": 200.0},
                    "input_config": {
                        "endpoint": {"model_names": ["Qwen/Qwen3-8B"]},
                        "loadgen": {"concurrency": 16},
                    },
                }
            )
        )
        (run,) = read_benchmark(path) or []
        # 1000 / 50 tokens per second per user = 20 ms between tokens.
        assert (run.ms_per_token, run.batch, run.context) == (20.0, 16, 1000 + 100)
        assert run.model == "Qwen/Qwen3-8B"

    @pytest.mark.parametrize(
        ("changes", "batch", "said"),
        [
            # vllm bench serve --max-concurrency 64: the cap, an upper bound.
            ({"max_concurrency": 64}, 64, "max_concurrency"),
            # A cap above the requests sent: no more than were sent run at once.
            ({"max_concurrency": 4096}, 900, "max_concurrency"),
            # Newer vLLM with e2el in its percentile metrics: 22.2567 x 5.0 s = 111.3.
            ({"mean_e2el_ms": 5000.0}, 111, "Little's law"),
        ],
    )
    def test_vllm_in_flight_rules(
        self, tmp_path: Path, changes: dict[str, float], batch: int, said: str
    ) -> None:
        path = tmp_path / "result.json"
        path.write_text(json.dumps({**json.loads(VLLM.read_text()), **changes}))
        (run,) = read_benchmark(path) or []
        assert run.batch == batch and said in run.how

    def test_sglang_with_tpot_and_its_own_concurrency(self, tmp_path: Path) -> None:
        # The later SGLang layout: mean TPOT and the mean in flight it measured.
        line = json.loads(SGLANG.read_text().splitlines()[0])
        line.update(mean_tpot_ms=14.5, concurrency=7.6, mean_ttft_ms=90.0)
        path = tmp_path / "result.jsonl"
        path.write_text(json.dumps(line) + "\n")
        (run,) = read_benchmark(path) or []
        assert (run.measured, run.ms_per_token, run.batch, run.ttft_ms) == (
            "tpot_mean",
            14.5,
            8,
            90.0,
        )

    def test_a_points_file_is_no_benchmark(self) -> None:
        assert read_benchmark(Path(__file__).parents[1] / "data" / "measured-decode.yaml") is None


def _hand_points() -> list[dict[str, object]]:
    """The SGLang file's seven results as a careful reader types them: context input +
    output / 2 and in flight = completed / duration x mean E2E latency (the arithmetic
    per line in test_sglang_bench_serving_jsonl's way)."""
    rows = [
        # input, output, in flight, median ITL ms
        (509, 534, 8, 13.638956006616354),  # 152612/300, 160347/300; 300/298.37 x 7.841
        (515, 515, 16, 14.830046566203237),  # 308748/600, 308712/600; 600/312.68 x 8.541
        (513, 507, 52, 19.419891061261296),  # 615860/1200, 607936/1200; 4.0424 x 12.896
        (510, 508, 360, 70.76324708759785),  # 1222995/2400, 1218922/2400; 6.9209 x 52.065
        (509, 513, 1245, 179.12118090316653),  # 1629242/3200, 1642637/3200; 8.3535 x 149.04
        (224, 189, 13, 13.841505162417889),  # 269081/1200, 226901/1200; 3.9457 x 3.2015
        (225, 192, 41, 17.667690059170127),  # 540779/2400, 461874/2400; 7.644 x 5.3026
    ]
    return [
        {
            "model": "llama-3.1-70b",
            "gpu": "h200",
            "weights": "bf16",
            "kv_dtype": "bf16",
            "batch": batch,
            "tp": 4,
            "context": i + o // 2,
            "ms_per_token": ms,
            "measured": "itl_median",
            "engine": "sglang",
            "input_len": i,
            "output_len": o,
            "concurrency": batch,
        }
        for i, o, batch, ms in rows
    ]


def _fit(doc: dict[str, object]) -> dict[str, object]:
    return {k: v for k, v in doc.items() if k != "points"}


class TestCommands:
    def test_calibrate_reproduces_the_fit_of_the_same_points_typed_by_hand(
        self, cli: Run, tmp_path: Path
    ) -> None:
        typed = tmp_path / "points.yaml"
        typed.write_text(yaml.safe_dump(_hand_points()))
        by_hand = cli("calibrate", str(typed), "--engine", "sglang", "--json")
        from_file = cli("calibrate", str(SGLANG), *SGLANG_SETUP, "--engine", "sglang", "--json")
        assert by_hand.code == from_file.code == 0, from_file.err
        hand, read = json.loads(by_hand.out), json.loads(from_file.out)
        assert _fit(read) == _fit(hand)
        assert [p["measured_ms"] for p in read["points"]] == [
            p["measured_ms"] for p in hand["points"]
        ]

    def test_show_points_prints_what_calibrate_reads_back(self, cli: Run, tmp_path: Path) -> None:
        r = cli("validate", str(SGLANG), *SGLANG_SETUP, "--engine", "sglang", "--show-points")
        assert r.code == 0, r.err
        shown = yaml.safe_load(
            r.err[: r.err.index("decodecalc:")] if "decodecalc:" in r.err else r.err
        )
        assert [(p["context"], p["batch"]) for p in shown][:2] == [(776, 8), (772, 16)]
        assert "Little's law" in shown[0]["source"]
        again = tmp_path / "shown.yaml"
        again.write_text(yaml.safe_dump(shown))
        assert cli("calibrate", str(again), "--json").code == 0

    def test_replicas_divide_the_requests_in_flight(self, cli: Run) -> None:
        r = cli("validate", str(VLLM), "-g", "l40s", "-w", "bf16", "--replicas", "4",
                "--engine", "vllm", "--show-points")  # fmt: skip
        assert r.code == 0, r.err
        (shown,) = yaml.safe_load(
            r.err[: r.err.index("\ndecodecalc")] if "\ndecodecalc" in r.err else r.err
        )
        # 153.8 in flight over the gateway's 4 decode replicas: 38.4 per replica.
        assert (shown["model"], shown["batch"], shown["concurrency"]) == ("llama-3.2-3b", 38, 38)
        assert "154 / 4 replicas = batch 38" in shown["source"]

    def test_globs_and_several_formats_at_once(self, cli: Run) -> None:
        r = cli(
            "calibrate",
            str(FIXTURES / "llama-bench.*"),
            str(FIXTURES / "llama-bench-depth.md"),
            *LLAMA_SETUP,
            "--json",
        )
        assert r.code == 0, r.err
        points = json.loads(r.out)["points"]
        # json, jsonl and csv one tg test each, the table two.
        assert sorted(p["context"] for p in points) == [64, 64, 64, 64, 576]

    def test_a_side_file_says_what_its_benchmarks_do_not(self, cli: Run, tmp_path: Path) -> None:
        side = tmp_path / "runs.yaml"
        side.write_text(
            f"benchmarks: [{SGLANG}]\nmodel: llama-3.1-70b\ngpu: h200\nweights: bf16\n"
            "tp: 4\nengine: sglang\n"
        )
        from_side = cli("calibrate", str(side), "--engine", "sglang", "--json")
        from_options = cli("calibrate", str(SGLANG), *SGLANG_SETUP, "--engine", "sglang", "--json")
        assert from_side.code == from_options.code == 0, from_side.err
        assert json.loads(from_side.out) == json.loads(from_options.out)
        side.write_text(f"benchmarks: {SGLANG}\ngpus: h200\n")
        r = cli("calibrate", str(side))
        assert r.code == 2 and "gpus: unknown field; did you mean 'gpu'?" in r.err

    def test_save_engine_writes_a_release_line_naming_files_and_versions(
        self, cli: Run, tmp_path: Path
    ) -> None:
        r = cli(
            "calibrate",
            str(SGLANG),
            *SGLANG_SETUP,
            "--engine",
            "sglang@0.4",
            "--save-engine",
            "my-sglang",
            "--presets",
            str(tmp_path),
        )
        assert r.code == 0, r.err
        saved = yaml.safe_load((tmp_path / "engines" / "my-sglang.yaml").read_text())
        assert str(SGLANG) in saved["source"]
        assert "0.4" in saved["lines"] and saved["lines"]["0.4"]["points"] == 7
        used = cli(
            "estimate", *SGLANG_SETUP, "--engine", "my-sglang@0.4", "-c", "1K",
            "--presets", str(tmp_path), "--json",
        )  # fmt: skip
        assert used.code == 0, used.err
        # A later release line of the same engine, from the first three runs alone: the
        # profile gains it and keeps 0.4; NAME alone uses the newest.
        first = tmp_path / "later.jsonl"
        first.write_text("".join(SGLANG.read_text().splitlines(keepends=True)[:3]))
        again = cli(
            "calibrate", str(first), *SGLANG_SETUP, "--engine", "sglang@0.5",
            "--save-engine", "my-sglang", "--presets", str(tmp_path),
        )  # fmt: skip
        assert again.code == 0, again.err
        both = yaml.safe_load((tmp_path / "engines" / "my-sglang.yaml").read_text())
        assert list(both["lines"]) == ["0.4", "0.5"]
        assert (both["lines"]["0.4"]["points"], both["lines"]["0.5"]["points"]) == (7, 3)
        assert both["families"] == both["lines"]["0.5"]["families"]
        assert str(SGLANG) in both["source"] and str(first) in both["source"]
        for line in ("my-sglang@0.4", "my-sglang@0.5", "my-sglang"):
            r = cli("estimate", *SGLANG_SETUP, "--engine", line, "-c", "1K",
                    "--presets", str(tmp_path), "--json")  # fmt: skip
            assert r.code == 0, r.err


PASSING = (str(FIXTURES / "llama-bench-depth.md"), *LLAMA_SETUP, "--engine", "llama.cpp")
"""llama-bench's two tg rows on its RTX 4080: 8.29 and 8.57 ms, inside llama.cpp's band."""
FAILING = (str(GENAI_PERF), "-m", "llama-3.2-1b", "-g", "h100-sxm", "-w", "bf16")
"""genai-perf's test export (21 ms between tokens) claimed for a 1B model on an H100, whose
step is a few ms: far outside any band."""


class TestCheckMeasured:
    @pytest.mark.parametrize(("args", "code"), [(PASSING, 0), (FAILING, 1)], ids=["in", "out"])
    def test_table(self, cli: Run, args: tuple[str, ...], code: int) -> None:
        r = cli("check", "--measured", *args)
        assert r.code == code, r.err
        rows = [line for line in r.out.splitlines() if " x" in line and "│" in line]
        assert rows and all(("FAIL" in row) == bool(code) for row in rows)
        assert ("outside the expected band" in r.out) == bool(code)

    @pytest.mark.parametrize(("args", "code"), [(PASSING, 0), (FAILING, 1)], ids=["in", "out"])
    def test_json(self, cli: Run, args: tuple[str, ...], code: int) -> None:
        r = cli("check", "--measured", *args, "-f", "json")
        assert r.code == code, r.err
        doc = json.loads(r.out)
        assert doc["passed"] is (code == 0)
        for m in doc["measured"]:
            inside = m["low_ms"] <= m["measured_ms"] <= m["high_ms"]
            assert m["passed"] is inside
            assert m["ratio"] == pytest.approx(m["measured_ms"] / m["expected_ms"])
        if code == 0:
            assert doc["measured"][0]["measured_ms"] == pytest.approx(1000 / 120.60)
        else:
            (m,) = doc["measured"]
            assert m["measured_ms"] == 21.0 and m["ratio"] > 2

    @pytest.mark.parametrize(("args", "code"), [(PASSING, 0), (FAILING, 1)], ids=["in", "out"])
    def test_junit(self, cli: Run, tmp_path: Path, args: tuple[str, ...], code: int) -> None:
        report = tmp_path / "measured.xml"
        r = cli("check", "--measured", *args, "-f", "junit", "-o", str(report))
        assert r.code == code, r.err
        root = ET.fromstring(report.read_text())
        assert root.get("failures") == ("0" if code == 0 else "1")
        (suite,) = root.iter("testsuite")
        assert suite.get("name") == args[0]
        for failure in root.iter("failure"):
            assert "expected; band" in (failure.get("message") or "")
        assert "measured point" in r.out  # the table still goes to stdout

    def test_targets_are_for_deployment_files(self, cli: Run) -> None:
        r = cli("check", "--measured", *PASSING, "-t", "max_ms_per_token=10")
        assert r.code == 2 and "give one or the other" in r.err

    def test_junit_on_stdout_per_file(self, cli: Run) -> None:
        r = cli("check", "--measured", str(SGLANG), *SGLANG_SETUP, "--engine", "sglang",
                "-f", "junit")  # fmt: skip
        root = ET.fromstring(r.out)
        assert root.get("tests") == "7"
        assert r.code == (1 if int(root.get("failures", "0")) else 0)


OUTSIDE_RANGE = {
    "date": "20250101-000000",
    "backend": "vllm",
    "model_id": "meta-llama/Llama-3.1-8B-Instruct",
    "tokenizer_id": "meta-llama/Llama-3.1-8B-Instruct",
    "num_prompts": 100,
    "request_rate": "inf",
    "max_concurrency": 16,
    "duration": 30.0,
    "completed": 100,
    "total_input_tokens": 100000,
    "total_output_tokens": 50000,
    "request_throughput": 3.33,
    "output_throughput": 1666.0,
    "mean_ttft_ms": 60.0,
    "median_ttft_ms": 55.0,
    "mean_tpot_ms": 11.0,
    "median_tpot_ms": 9.4,
    "mean_itl_ms": 9.6,
    "median_itl_ms": 9.3,
    "mean_e2el_ms": 4800.0,
}
"""A vllm bench serve result at 16 requests in flight: batch 16, past the batch 1-8 vLLM's
line on NVIDIA datacenter GPUs was fitted on (review s40 #6), at 1,000 + 500 / 2 = 1,250
tokens of context."""


class TestOneBandForAPointOutsideTheFittedRange:
    """check --measured, validate and estimate price the same point with one expected
    step and one band: the band widened outside the fitted range, with the note."""

    SETUP = ("-g", "h100-sxm", "--engine", "vllm", "-w", "bf16")

    def test_three_commands_agree(self, cli: Run, tmp_path: Path) -> None:
        path = tmp_path / "bench.json"
        path.write_text(json.dumps(OUTSIDE_RANGE))
        checked = cli("check", "--measured", str(path), *self.SETUP, "--json")
        (m,) = json.loads(checked.out)["measured"]
        scenario = ("-m", "llama-3.1-8b", *self.SETUP, "--batch", "16", "-c", "1250")
        est = cli("estimate", *scenario, "--json")
        (row,) = json.loads(est.out)["rows"]
        step = [row[f"expected{k}_ms_per_token"] for k in ("_low", "", "_high")]
        # check adds other requests' prefills to all three; validate takes them off the
        # measured figure: the same step and band either way.
        share = m["prefill_ms"]
        assert share > 0
        shown = [m["low_ms"] - share, m["expected_ms"] - share, m["high_ms"] - share]
        assert shown == pytest.approx(step, rel=1e-9)
        # Inside the range the band is x0.88-x1.20 (presets/engines/vllm.yaml): 11 ms
        # would lie above 1.20 x 7.86 + 0.28 = 9.7 ms; the band widened outside it holds it.
        assert step[2] / step[1] > 1.5 and m["passed"] and checked.code == 0
        # validate widens it by the same rule: the same band about its expected step (a
        # point naming no release is predicted by the pooled fit of every line there,
        # estimate's --engine vllm by the newest line: 0.8% apart here).
        (v,) = json.loads(cli("validate", str(path), *self.SETUP, "--json").out)["points"]
        ratios = [v[f"expected{k}_ms"] / v["expected_ms"] for k in ("_low", "_high")]
        assert ratios == pytest.approx([step[0] / step[1], step[2] / step[1]], rel=1e-3)
        extrapolated = "vllm extrapolated: batch above the fitted 1-8"
        assert extrapolated in checked.err and extrapolated in est.err


class TestBadFiles:
    @pytest.mark.parametrize(
        ("content", "message"),
        [
            ("hello, world\n", "not a file decodecalc reads"),
            ('{"rows": [1, 2, 3]}\n', "not a file decodecalc reads"),
            (VLLM.read_text()[:300], "not valid JSON"),
            (
                '{"tokenizer_id": "x", "completed": 10, "total_input_tokens": 100, '
                '"total_output_tokens": 100}\n',
                "without 'mean_tpot_ms'",
            ),
            (
                (FIXTURES / "llama-bench.csv").read_text().splitlines()[0]
                + "\n"
                + (FIXTURES / "llama-bench.csv").read_text().splitlines()[2][:80]
                + "\n",
                "fewer or more fields than the header",
            ),
            (GENAI_PERF.read_text()[:900], "is the file cut short?"),
            (SGLANG.read_text().splitlines()[0] + '\n{"rows": 3}\n', "as the rest are"),
            ('[{"n_prompt": 0, "n_gen": 128, "n_depth": 0}]', "without 'avg_ts'"),
        ],
        ids=[
            "text",
            "other-json",
            "truncated",
            "missing-figure",
            "truncated-csv",
            "truncated-pretty",
            "mixed",
            "llama-bench-no-rate",
        ],
    )
    def test_one_line_and_exit_2(
        self, cli: Run, tmp_path: Path, content: str, message: str
    ) -> None:
        path = tmp_path / "result.json"
        path.write_text(content)
        for command in ("calibrate", "validate"):
            r = cli(command, str(path), "-m", "llama-3.1-8b", "-g", "h100-sxm", "-w", "bf16")
            assert r.code == 2
            assert message in r.err and len(r.err.strip().splitlines()) == 1, r.err
        r = cli("check", "--measured", str(path), "-m", "llama-3.1-8b", "-g", "h100-sxm")
        assert r.code == 2 and message in r.err

    def test_what_the_file_does_not_say_is_asked_for(self, cli: Run) -> None:
        r = cli("calibrate", str(SGLANG), "-g", "h200", "-w", "bf16")
        assert r.code == 2 and "does not say the model: give -m" in r.err

    def test_no_such_file(self, cli: Run, tmp_path: Path) -> None:
        r = cli("calibrate", str(tmp_path / "runs-*.json"))
        assert r.code == 2 and "does not exist" in r.err


class TestReadAsImpossible:
    """A point faster than its roofline is said to be impossible as read, and the replicas a
    vLLM result file names divide its requests in flight unless --replicas says otherwise.

    The fixture's run: Llama-3.2-3B BF16 on L40S, mean TPOT 25.75 ms, 153.8 requests in
    flight (TestReaders), the file saying "gpu": "4xNVIDIA_L40S", "decode_replicas": "4".
    Read as one replica, batch 154 at context 1,132: the roofline step streams the weights,
    3,212,749,824 params x 2 B = 6,425,499,648 B, and 154 x 1,132 = 174,328 tokens of KV at
    28 layers x 8 KV heads x 128 x 2 (K, V) x 2 B = 114,688 B = 19,993,329,664 B;
    26,418,829,312 B / 864 GB/s = 30.58 ms, above the 25.75 ms measured."""

    SETUP = ("-g", "l40s", "-m", "llama-3.2-3b", "-w", "bf16", "--engine", "vllm")

    def test_the_files_replicas_are_used_with_a_note(self, cli: Run) -> None:
        r = cli("check", "--measured", str(VLLM), *self.SETUP, "-f", "json")
        assert r.code == 0, r.err
        doc = json.loads(r.out)
        codes = [n["code"] for n in doc["notes"]]
        assert "replicas-from-file" in codes and "below-roofline" not in codes
        assert '"decode_replicas": 4' in r.err and "4 replicas" in r.err
        # 153.8 in flight over 4 replicas: batch round(38.45) = 38
        assert "batch 38" in doc["measured"][0]["deployment"]

    def test_weights_the_file_does_not_say_are_the_checkpoints(self, cli: Run) -> None:
        """As every command takes a model's weights: Llama-3.2-3B's checkpoint is BF16, so
        leaving -w out gives the run -w bf16 gives (review s40 #25: it was refused)."""
        given = cli("check", "--measured", str(VLLM), *self.SETUP, "-f", "json")
        bare = [a for a in self.SETUP if a not in ("-w", "bf16")]
        assumed = cli("check", "--measured", str(VLLM), *bare, "-f", "json")
        assert assumed.code == given.code == 0, assumed.err
        assert json.loads(assumed.out)["measured"] == json.loads(given.out)["measured"]

    def test_one_replica_is_below_the_roofline(self, cli: Run) -> None:
        r = cli("check", "--measured", str(VLLM), *self.SETUP, "--replicas", "1", "-f", "json")
        assert r.code == 1, r.err
        doc = json.loads(r.out)
        (below,) = [n for n in doc["notes"] if n["code"] == "below-roofline"]
        roofline_ms = (3_212_749_824 * 2 + 154 * 1_132 * 28 * 8 * 128 * 2 * 2) / 864e9 * 1000
        assert f"{roofline_ms:.2f}" == "30.58"
        assert (
            "measured 25.75 ms is below the roofline 30.58 ms at batch 154: as read the point "
            "is impossible (replicas, batch or GPU count?)"
        ) in below["message"]
        assert "below the roofline 30.58 ms" in r.err
        assert not [n for n in doc["notes"] if n["code"] == "replicas-from-file"]

    @pytest.mark.parametrize("command", ["calibrate", "validate"])
    def test_calibrate_and_validate_say_so_too(
        self, cli: Run, tmp_path: Path, command: str
    ) -> None:
        copies = [tmp_path / f"run-{i}.json" for i in (1, 2)]  # calibrate fits two or more
        for copy in copies:
            copy.write_text(VLLM.read_text())
        r = cli(command, *map(str, copies), *self.SETUP, "--replicas", "1", "--json")
        assert r.code == 0, r.err
        codes = [n["code"] for n in json.loads(r.out)["notes"]]
        assert "below-roofline" in codes
        assert "below the roofline 30.58 ms at batch 154" in r.err
