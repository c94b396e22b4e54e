"""The command line: every format, every error path, help for every command."""

from __future__ import annotations

import csv
import io
import json

import pytest

from decodecalc.cli import COMMANDS
from decodecalc.views.report import SCHEMA_VERSION
from tests.conftest import Run, cli_group

Q70 = ("estimate", "-m", "llama-3.1-70b", "-g", "h100-sxm", "-w", "fp8", "-k", "fp8")


def test_table_shows_inputs_crossover_and_rows(cli: Run) -> None:
    r = cli(*Q70, "--batch", "32", "-c", "1K..64K")
    assert r.code == 0 and "note:" not in r.out  # notes go to stderr, tables to stdout
    assert "Llama-3.1-70B on NVIDIA H100 SXM 3.35 TB/s" in r.out
    assert "batch 32 · TP 1 · efficiency 1 (bandwidth roofline)" in r.out
    assert "crossover: 13,257 tokens" in r.out
    assert "69.50 GB" in r.out and "163.84 kB" in r.out
    crossover_line = next(line for line in r.out.splitlines() if "<- crossover" in line)
    assert "13,257" in crossover_line and "50.0%" in crossover_line
    assert "tok/s x32" in r.out  # aggregate column only when batch > 1
    assert "\x1b[" not in r.out  # NO_COLOR


def test_table_reproduces_section_6(cli: Run) -> None:
    r = cli(*Q70, "-c", "0,200000")
    assert "20.747" in r.out and "30.529" in r.out
    exact = cli(*Q70, "-c", "0,200000", "--exact")
    assert "69,503,033,344" in exact.out and "32,768,000,000" in exact.out


def test_json_document(cli: Run) -> None:
    r = cli(*Q70, "-c", "0,200000", "--json")
    assert r.code == 0
    doc = json.loads(r.out)
    assert doc["schema_version"] == SCHEMA_VERSION
    assert doc["inputs"] == {
        "model": "llama-3.1-70b",
        "gpu": "h100-sxm",
        "bandwidth_bytes_per_s": 3_350_000_000_000,
        "efficiency": 1.0,
        "effective_bandwidth_bytes_per_s": 3.35e12,
        "weights_dtype": "fp8",
        "weights_recipe": None,
        "weight_overrides": {},
        "kv_dtype": "fp8",
        "v_dtype": "fp8",  # no --v-dtype: V is stored like K
        "weights_bits_per_value": 8.0,
        "kv_bits_per_value": 8.0,
        "batch": 1,
        "tp": 1,
        "memory_bytes": 81_559 * 2**20,  # H100 as nvidia-smi reports it (test_gpu_capacity)
        "memory_utilization": 0.9,
        "peak_flops_per_s": 1_978_900_000_000_000,  # H100 SXM FP8 dense
        "link": None,
        "link_bandwidth_bytes_per_s": None,
        "overhead_ms": 0.0,
        "engine": "typical",
        "pp": 1,
        "ep": False,
        "dp_attention": False,
        "gpus_per_node": None,
        "node_link": None,
        "engine_line": None,  # typical: no one engine's line
    }
    assert doc["weight_bytes_per_step"] == 69_503_033_344
    assert doc["kv_bytes_per_token"] == 163_840
    assert doc["crossover_context"] == pytest.approx(424_212.85, abs=0.01)
    last = doc["rows"][-1]
    assert set(last) == {
        "context",
        "weight_bytes",
        "kv_bytes",
        "state_bytes",
        "total_bytes",
        "kv_share",
        "ms_per_token",
        "tokens_per_s",
        "throughput_tokens_per_s",
        "crossover",
        "fits",
        "bound",
        "memory_ms",
        "compute_ms",
        "comm_ms",
        "overhead_ms",
        "expected_ms_per_token",
        "expected_low_ms_per_token",
        "expected_high_ms_per_token",
        *("allreduce_ms", "all_to_all_ms", "handoff_ms"),  # comm_ms's parts
        *("joules_per_token", "kwh_per_million_tokens"),  # the H100's board power; no price
        *("expected_tokens_per_s", "expected_throughput_tokens_per_s"),
        *("roofline_ms_per_token", "roofline_tokens_per_s", "roofline_throughput_tokens_per_s"),
    }
    assert last["kv_bytes"] == 32_768_000_000 and isinstance(last["kv_bytes"], int)
    # (69,503,033,344 + 32,768,000,000) bytes / 3.35e12 B/s = 30.529 ms: the bound.
    assert round(last["roofline_ms_per_token"], 3) == 30.529
    assert last["ms_per_token"] == last["expected_ms_per_token"]  # the headline


def test_json_null_crossover(cli: Run) -> None:
    doc = json.loads(cli("estimate", "-m", "phi-3-mini", "-g", "l4", "-c", "4K", "--json").out)
    assert doc["crossover_context"] is None


def test_format_json_equals_json_flag(cli: Run) -> None:
    assert cli(*Q70, "-c", "8K", "--json").out == cli(*Q70, "-c", "8K", "-f", "json").out


def test_csv_round_trips_every_json_field(cli: Run) -> None:
    doc = json.loads(cli(*Q70, "-c", "1K,8K", "--json").out)
    rows = list(csv.DictReader(io.StringIO(cli(*Q70, "-c", "1K,8K", "-f", "csv").out)))
    assert len(rows) == len(doc["rows"])
    for row, expected in zip(rows, doc["rows"], strict=True):
        assert int(row["context"]) == expected["context"]
        assert int(row["kv_bytes"]) == expected["kv_bytes"]
        # 12 significant digits, as every CSV float (views/report.py CSV_FLOAT)
        assert float(row["ms_per_token"]) == pytest.approx(expected["ms_per_token"], rel=1e-11)
        assert row["model"] == "llama-3.1-70b" and row["kv_dtype"] == "fp8"


def test_markdown(cli: Run) -> None:
    out = cli(*Q70, "-c", "1K,8K", "-f", "markdown").out
    assert "| Context (tokens) | Weights |" in out
    assert "| 8,192 | 69.50 GB |" in out


def test_bandwidth_overrides_gpu(cli: Run) -> None:
    doc = json.loads(cli(*Q70, "-b", "1.5TiB/s", "-c", "1K", "--json").out)
    assert doc["inputs"]["bandwidth_bytes_per_s"] == 1_649_267_441_664
    assert doc["inputs"]["gpu"] == "h100-sxm"


def test_default_kv_dtype_follows_compute_weights(cli: Run) -> None:
    fp16 = json.loads(
        cli("estimate", "-m", "llama-3.1-8b", "-g", "l4", "-w", "fp16", "-c", "1K", "--json").out
    )
    q4 = json.loads(
        cli("estimate", "-m", "llama-3.1-8b", "-g", "l4", "-w", "q4_k_m", "-c", "1K", "--json").out
    )
    assert fp16["inputs"]["kv_dtype"] == "fp16"
    assert q4["inputs"]["kv_dtype"] == "bf16"


def test_default_context_range_stops_at_model_maximum(cli: Run) -> None:
    doc = json.loads(cli("estimate", "-m", "llama-2-7b", "-g", "a100-80gb", "--json").out)
    assert [r["context"] for r in doc["rows"]] == [1024, 2048, 4096]


def test_context_beyond_model_maximum_is_a_note_on_stderr(cli: Run) -> None:
    r = cli("estimate", "-m", "llama-2-7b", "-g", "a100-80gb", "-c", "8K", "--json")
    assert r.code == 0 and json.loads(r.out)
    assert "exceed llama-2-7b's maximum context" in r.err
    assert "past-max-context" in [n["code"] for n in json.loads(r.out)["notes"]]


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (
            ("-m", "llama-70b", "-g", "h100"),
            "unknown model 'llama-70b'; did you mean 'llama-2-70b', 'llama-3.1-70b'",
        ),
        (("-m", "llama-3.1-8b", "-g", "h1000"), "unknown GPU 'h1000'; did you mean"),
        (
            ("-m", "llama-3.1-8b", "-g", "h100", "-w", "fp9"),
            "unknown dtype or weight recipe 'fp9'; did you mean",
        ),
        (("-m", "llama-3.1-8b", "-g", "h100", "-k", "q4-k-m"), "weight-only format"),
        (("-m", "llama-3.1-8b", "-b", "3TB"), "needs a unit per second"),
        (("-m", "llama-3.1-8b", "-b", "-3TB/s"), "greater than zero"),
        (("-m", "llama-3.1-8b", "-b", "0TB/s"), "greater than zero"),
        (("-m", "llama-3.1-8b"), "give --gpu NAME or --bandwidth VALUE"),
        (("-m", "llama-3.1-8b", "-g", "h100", "-c", "banana"), "not a token count"),
        (("-m", "llama-3.1-8b", "-g", "h100", "-c", "8K..1K"), "inverted"),
        (("-m", "llama-3.1-8b", "-g", "h100", "-c", "1..1M:1"), "at most 10,000"),
        (("-m", "llama-3.1-8b", "-g", "h100", "--batch", "0"), "batch 0 must be"),
        (("-m", "llama-3.1-8b", "-g", "h100", "--batch", "-4"), "batch -4 must be"),
        (("-m", "llama-3.1-8b", "-g", "h100", "--batch", "two"), "'two' is not a whole number"),
        (("-m", "llama-3.1-8b", "-g", "h100", "--tp", "0"), "tp 0 must be"),
        (("-m", "llama-3.1-8b", "-g", "h100", "--tp", "3"), "valid: 1, 2, 4, 8, 16, 32"),
        (("-m", "llama-3.1-8b", "-g", "h100", "-e", "1.5"), "from 0.001 to 1"),
        (("-m", "llama-3.1-8b", "-g", "h100", "-e", "0"), "from 0.001 to 1"),
        (("-m", "llama-3.1-8b", "-g", "h100", "-e", "nan"), "from 0.001 to 1"),
        (("-m", "llama-3.1-8b", "-g", "h100", "-f", "xml"), "'xml' is not one of"),
        (("-m", "llama-3.1-8b", "-g", "h100", "--colour"), "No such option: --colour"),
        (("-m", "no/such/file.yaml", "-g", "h100"), "does not exist"),
        (("-g", "h100"), "Missing option '--model'"),
    ],
)
def test_errors_are_one_line_exit_2(cli: Run, args: tuple[str, ...], message: str) -> None:
    r = cli("estimate", *args)
    assert r.code == 2
    assert r.out == ""
    assert r.err.count("\n") == 1 and r.err.startswith("decodecalc: error: ")
    assert message in r.err
    assert "Traceback" not in r.err


@pytest.mark.parametrize(
    ("command", "message"),
    [
        # --report is estimate's, compare's, serving's and plan's: sweep has nothing like it
        ("sweep -m llama-3.1-8b -g h100 -c 8K --report s.html", "No such option: --report ("),
        ("estimate -m llama-3.1-8b -g h100 --reprot s.html", "(did you mean --report, --plot?)"),
        ("estimate -m llama-3.1-8b -g h100 --batchh 2", "(did you mean --batch?)"),
        ("serving -m llama-3.1-8b --concurency 3", "(did you mean --concurrency?)"),
    ],
)
def test_an_unknown_option_suggests_only_options_that_look_like_it(
    cli: Run, command: str, message: str
) -> None:
    """Compared without their dashes: --report once drew --ep, --format and --power."""
    r = cli(*command.split())
    assert r.code == 2 and r.err.count("\n") == 1
    assert message in r.err, r.err
    assert "Possible options" not in r.err


def test_malformed_user_preset_is_exit_2(cli: Run, tmp_path: object) -> None:
    from pathlib import Path

    folder = Path(str(tmp_path)) / "gpus"
    folder.mkdir()
    (folder / "broken.yaml").write_text("name: x\nbandwidth: 3.35e12\n")
    r = cli("estimate", "-m", "llama-3.1-8b", "-g", "broken", "--presets", str(tmp_path))
    assert r.code == 2 and "broken.yaml" in r.err and r.err.count("\n") == 1


@pytest.mark.parametrize("command", ["models", "gpus", "dtypes"])
def test_listings_as_table_and_json(cli: Run, command: str) -> None:
    table = cli(command)
    assert table.code == 0 and table.out
    doc = json.loads(cli(command, "--json").out)
    assert doc["schema_version"] == SCHEMA_VERSION
    assert all(item["source"].startswith("https://") for item in doc[command])


def test_models_listing_figures(cli: Run) -> None:
    doc = json.loads(cli("models", "--json").out)
    by_id = {m["id"]: m for m in doc["models"]}
    # 2 x 80 x 8 x 128 x 2 bytes
    assert by_id["llama-3.1-70b"]["kv_bytes_per_token_bf16"] == 327_680
    assert by_id["llama-3.1-70b"]["params"] == 70_553_706_496


def test_show(cli: Run) -> None:
    r = cli("show", "llama-3.1-70b")
    assert r.code == 0
    assert "70,553,706,496 derived vs 70,553,706,496 official (+0.000%)" in r.out
    assert "163,840 elements per token" in r.out
    doc = json.loads(cli("show", "llama3.1-70b", "--json").out)
    kv = {d["kv_dtype"]: d["kv_bytes_per_token"] for d in doc["kv_bytes_per_token"]}
    assert kv["bf16"] == 327_680 and kv["fp8"] == 163_840 and kv["nvfp4"] == 92_160
    assert doc["params_read_per_step"] == 69_503_033_344


def test_show_sets_derived_against_official_with_its_source(cli: Run) -> None:
    r = cli("show", "kimi-k2")
    assert r.code == 0, r.err
    # 1,014,686,023,680 routed-expert + 11,722,208,768 other parameters, each counted by
    # hand in tests/model/test_checkpoint_recipes.py; the official count is the safetensors total.
    assert "1,026,408,232,448 derived vs 1,026,408,232,448 official (+0.000%)" in r.out
    assert "vs 32,000,000,000 official" in r.out  # the card's "32B activated"
    assert "official count: Hugging Face safetensors metadata" in r.out
    doc = json.loads(cli("show", "kimi-k2", "--json").out)
    assert doc["official_params"] == 1_026_408_232_448 and doc["params_difference"] == 0


def test_version(cli: Run) -> None:
    from decodecalc import __version__

    r = cli("--version")
    assert r.code == 0 and r.out.strip() == f"decodecalc {__version__}"


@pytest.mark.parametrize("command", COMMANDS)
def test_every_command_has_help_and_a_readme_entry(cli: Run, command: str) -> None:
    from pathlib import Path

    r = cli(command, "--help")
    assert r.code == 0 and "Usage" in r.out
    assert "<str>" not in r.out and "<int>" not in r.out  # options say what they take
    command_obj = cli_group().commands[command]
    assert command_obj.help
    readme = (Path(__file__).resolve().parents[2] / "README.md").read_text()
    assert f"decodecalc {command}" in readme


@pytest.mark.parametrize(
    ("command", "said", "not_said"),
    [
        # plan refuses a list: "plan takes one --model and one --engine"
        ("plan", "The engine profile to expect (one;", "One or more engine profiles"),
        # under a workload plan holds the target to TPOT (answers/plan.py)
        ("plan", "the step at --context, or under a workload its TPOT.", "per sequence at the"),
        # serving's chart is views/charts.py's TPOT-against-throughput axes
        ("serving", "Draw TPOT against output throughput", "Draw latency against context"),
    ],
)
def test_help_says_what_the_option_does(cli: Run, command: str, said: str, not_said: str) -> None:
    r = cli(command, "--help")
    text = " ".join(r.out.split())
    assert said in text and not_said not in text


def test_no_arguments_prints_help(cli: Run) -> None:
    r = cli()
    assert "estimate" in r.out


@pytest.mark.parametrize("columns", ["abc", "", "-5"])
def test_a_columns_that_is_no_width_leaves_piped_tables_unwrapped(
    cli: Run, monkeypatch: pytest.MonkeyPatch, columns: str
) -> None:
    monkeypatch.setenv("COLUMNS", columns)
    lines = cli("estimate", "-m", "llama-3.1-8b", "-g", "h100", "-c", "1K").out.splitlines()
    assert any("1,024" in line and "ms" not in line and line.count("│") >= 8 for line in lines)
    assert max(len(line) for line in lines) > 80  # not Rich's 80-column fallback


def test_a_huge_argument_is_not_echoed_whole(cli: Run) -> None:
    r = cli("estimate", "-m", "a" * 100_000, "-g", "h100")
    assert r.code == 2 and r.out == ""
    assert len(r.err.splitlines()) == 1 and len(r.err) < 1100
    assert r.err.startswith("decodecalc: error: unknown model 'aaa")
    assert "... (100,000 characters)" in r.err  # a fragment of it (issue 32)
    assert r.err.rstrip().endswith("('decodecalc models' lists them)")


@pytest.mark.parametrize("command", ["estimate", "generate", "explain", "compare", "sweep"])
def test_scenario_commands_share_one_set_of_options(command: str) -> None:
    """Every command that builds a scenario takes every ScenarioSpec field, with the
    spec's own default (compare and sweep as the text of a one-item list)."""
    from decodecalc.record import field_defaults, field_names
    from decodecalc.scenarios.fields import SCENARIO_FIELDS
    from decodecalc.scenarios.spec import ScenarioSpec

    params = {p.name: p for p in cli_group().commands[command].params}
    assert [o.name for o in SCENARIO_FIELDS] == list(field_names(ScenarioSpec))
    axes = {o.name for o in SCENARIO_FIELDS if o.axis is not None and o.kind == "count"}
    for name, default in field_defaults(ScenarioSpec).items():
        listed = command in ("compare", "sweep") and name in axes
        assert params[name].default == (str(default) if listed else default), name
    assert "presets" in params and params["model"].required


def test_no_short_option_means_two_things() -> None:
    """-n is generate's --tokens; no command may give a letter another meaning. A
    letter's meaning is the option it stands for (its first long name; plan's GPU option,
    --gpus, is also --gpu, as -g is everywhere)."""
    meanings: dict[str, set[str]] = {}
    for command in cli_group().commands.values():
        for param in command.params:
            longs = sorted((o for o in param.opts if o.startswith("--")), key=lambda o: (len(o), o))
            for short in (o for o in param.opts if not o.startswith("--")):
                meanings.setdefault(short, set()).add(longs[0] if longs else short)
    assert {k: v for k, v in meanings.items() if len(v) > 1} == {}
