"""Fuzzing the command line and every file it reads: whatever comes in, the answer is exit
0, 1 or 2, one clear story on stderr, no traceback, no hang, and JSON without NaN.

tests/fuzz_corpus holds the nastiest inputs found so far (its README says what each does).
"""

from __future__ import annotations

import json
import math
import os
import time
from pathlib import Path

import pytest
import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from decodecalc.cli import main
from decodecalc.loading.catalog import presets_dir

CORPUS = Path(__file__).parents[1] / "fuzz_corpus"
NASTY = [
    "",
    " ",
    "0",
    "-1",
    "1e308",
    "-1e308",
    "nan",
    "inf",
    "-inf",
    "1e-320",
    "10" * 10,
    str(10**15),
    "1K..1G",
    "0..1G:1",
    "1..1G:x2",
    "..",
    ",",
    "1K,,2K",
    "32KB",
    "1.5K",
    "∞",
    "llama-3.1-70b",
    "h100",
    "fp8",
    "none",
    "üñíçødé",
    "\x00",
    "a" * 300,
    "--json",
    "-",
    "3.35TB/s",
    "1e400TB/s",
    "1e999999999",
    "1e999999999TB/s",
    "1" * 5000,
    "0.5ms",
    "-1ms",
    "1e9h",
    "max_ms_per_token=nan",
    "=",
    # issue 32: one rule for whole numbers, and a preset GPU's memory and bandwidth overrides
    "1_6",
    "1_000",
    "m3-max,memory=36GB",
    "m3-max,memory=nan",
    "h100,bandwidth=1e999TB/s",
    "h100,memory=",
    "h100,bf16=1TFLOPS",
]
values = st.one_of(
    st.sampled_from(NASTY),
    st.text(max_size=12),
    st.integers(-(10**16), 10**16).map(str),
    st.floats(allow_nan=True, allow_infinity=True).map(repr),
)
BASE = ["-m", "llama-3.1-8b", "-g", "h100"]
ROOT = Path(__file__).parents[2]
TWO_POINTS = "points:\n" + "".join(
    f"- {{model: llama-3.1-8b, gpu: h100, weights: bf16, kv_dtype: bf16, batch: 1, tp: 1, "
    f"context: {context}, ms_per_token: {ms}, source: x}}\n"
    for context, ms in ((1000, 8.5), (64000, 10.1))
)
VALID = {  # the least each command needs to run: the fuzzer's options come on top
    "estimate": [*BASE, "-c", "1K"],
    "generate": [*BASE, "-p", "1K", "-n", "16"],
    "explain": BASE,
    "serving": [*BASE, "--input-len", "100", "--output-len", "10", "--concurrency", "2"],
    "compare": [*BASE, "-c", "1K"],
    "sweep": [*BASE, "-c", "1K"],
    "plan": ["-m", "llama-3.1-8b", "-c", "1K", "--gpus", "h100"],
    "check": [str(ROOT / "examples" / "chat-h100.yaml")],
    "calibrate": ["points.yaml"],
    "validate": ["points.yaml"],
    "show": ["llama-3.1-8b"],
    "import": [str(ROOT / "tests" / "fixtures" / "configs" / "qwen3-next-80b-a3b.json")],
}
WRITTEN = ("--output", "--plot", "--save-to", "--report")
"""Options naming a file the command writes: the fuzzer gives them names in a scratch
folder only (a generated absolute path could be anywhere)."""


def _options() -> dict[str, list[tuple[str, bool]]]:
    """Every option of every command, as its help declares it: (flag, takes no value)."""
    from decodecalc.cli import full_command

    group = full_command()
    return {
        name: [
            (param.opts[0], bool(getattr(param, "is_flag", False)))
            for param in command.params
            if param.param_type_name == "option" and param.opts[0] != "--help"
        ]
        for name, command in group.commands.items()
    }


OPTIONS = _options()
written_names = st.text(alphabet="abc.-_", min_size=1, max_size=8).map(lambda n: f"out/{n}")


@st.composite
def invocations(draw: st.DrawFn) -> list[str]:
    """A command, its valid minimum (or not), and up to four of its options with nasty
    values: each option of each command can be drawn."""
    command = draw(st.sampled_from(sorted(OPTIONS)))
    argv = [command]
    if draw(st.integers(0, 3)):  # mostly valid, so the options are reached
        argv += VALID.get(command, [])
    for flag, bare in draw(st.lists(st.sampled_from(OPTIONS[command]), max_size=4)):
        if bare:
            argv.append(flag)
        elif flag in WRITTEN:
            argv += [flag, draw(st.one_of(written_names, written_names.map(lambda n: n + ".svg")))]
        else:
            argv += [flag, draw(values)]
    return argv


def run(argv: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, str, str]:
    start = time.monotonic()
    try:
        code = main(argv)
    except SystemExit as exc:  # Click's own exits (a closed pipe) are exits too
        code = exc.code if isinstance(exc.code, int) else 1
    captured = capsys.readouterr()
    assert time.monotonic() - start < 20, f"too slow: {argv}"
    return code, captured.out, captured.err


def assert_sane(argv: list[str], code: int, out: str, err: str, one_line: bool = False) -> None:
    """0 (1: a target missed), or 2 with every line on stderr an error (``one_line``: just
    one) and nothing on stdout; never a traceback, never NaN in JSON."""
    assert code in (0, 1, 2), (argv, code, err)
    assert "Traceback" not in err and "Traceback" not in out, (argv, err)
    if code == 2:
        lines = err.splitlines()
        assert lines and all(line.startswith("decodecalc: error: ") for line in lines), (argv, err)
        assert not one_line or len(lines) == 1, (argv, err)
        assert out == "", (argv, out[:200])
    if out.lstrip().startswith(("{", "[")) and code != 2:
        json.loads(out, parse_constant=lambda c: pytest.fail(f"{c} in JSON for {argv}"))


@pytest.mark.slow
@settings(
    max_examples=400, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(invocations())
def test_every_option_of_every_command(
    capsys: pytest.CaptureFixture[str],
    tmp_path_factory: pytest.TempPathFactory,
    monkeypatch: pytest.MonkeyPatch,
    argv: list[str],
) -> None:
    """Exit 0 with output (on stdout, or in the file -o names), 1 for a check whose target
    is missed, or 2 with exactly one line on stderr; offline, in under 20 s."""
    folder = tmp_path_factory.mktemp("cli")
    (folder / "out").mkdir()
    (folder / "points.yaml").write_text(TWO_POINTS)
    monkeypatch.chdir(folder)
    monkeypatch.setenv("DECODECALC_CALIBRATION", str(folder / "calibration.json"))
    code, out, err = run(argv, capsys)
    assert_sane(argv, code, out, err, one_line=True)
    if code == 0 and "--help" not in argv:
        wrote = [p for p in (folder / "out").iterdir() if not p.name.endswith(".tmp")]
        assert out or wrote or (folder / "engines").exists(), (argv, err)
    assert not [p.name for p in (folder / "out").iterdir() if p.name.endswith(".tmp")]


@pytest.mark.slow
@settings(
    max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    st.sampled_from(
        ["batch", "tp", "context", "efficiency", "memory-utilization", "overhead", "gpu", "link"]
    ),
    st.sampled_from(NASTY),
)
def test_extreme_values_on_a_valid_query(
    capsys: pytest.CaptureFixture[str], flag: str, value: str
) -> None:
    argv = ["estimate", *BASE, f"--{flag}", value, "--json"]
    assert_sane(argv, *run(argv, capsys))


documents = st.recursive(
    st.one_of(
        st.none(), st.booleans(), st.integers(-(2**70), 2**70), st.floats(), st.text(max_size=10)
    ),
    lambda children: st.one_of(
        st.lists(children, max_size=4),
        st.dictionaries(
            st.sampled_from(
                [
                    "name",
                    "model",
                    "gpu",
                    "targets",
                    "deployments",
                    "context",
                    "batch",
                    "tp",
                    "config",
                    "model_type",
                    "hidden_size",
                    "max_ms_per_token",
                    "must_fit",
                    "points",
                    "ms_per_token",
                    "x",
                ]
            ),
            children,
            max_size=5,
        ),
    ),
    max_leaves=20,
)


@pytest.mark.slow
@settings(
    max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(documents)
def test_generated_files(
    tmp_path_factory: pytest.TempPathFactory, capsys: pytest.CaptureFixture[str], document: object
) -> None:
    folder = tmp_path_factory.mktemp("fuzz")
    as_yaml = folder / "file.yaml"
    as_yaml.write_text(yaml.safe_dump(document))
    as_json = folder / "config.json"
    as_json.write_text(json.dumps(document, allow_nan=True))
    for argv in (
        ["check", str(as_yaml)],
        ["estimate", "-m", str(as_yaml), "-g", "h100", "-c", "1K", "--json"],
        ["estimate", "-m", str(as_json), "-g", "h100", "-c", "1K", "--json"],
        ["calibrate", str(as_yaml), "--json"],
        ["import", str(as_json), "--name", "x"],
        ["estimate", "-m", "x", "-g", "h100", "--presets", str(folder)],
    ):
        assert_sane(argv, *run(argv, capsys))


VALID_DEPLOYMENT = {
    "name": "d",
    "model": "llama-3.1-8b",
    "gpu": "h100",
    "weights": "fp8",
    "kv_dtype": "fp8",
    "batch": 4,
    "tp": 2,
    "context": "1K..8K",
    "efficiency": 0.8,
    "memory_utilization": 0.9,
    "overhead": "0.1ms",
    "link": "nvlink4",
    "targets": {
        "max_ms_per_token": 30,
        "must_fit": True,
        "min_crossover_context": "4K",
        "max_kv_share": 0.5,
        "min_tokens_per_s": 10,
        "min_throughput_tokens_per_s": 10,
    },
}
CONFIG = json.loads(
    (Path(__file__).parents[1] / "fixtures" / "configs" / "qwen3-next-80b-a3b.json").read_text()
)
scalars = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(-(2**70), 2**70),
    st.floats(),
    st.text(max_size=8),
    st.sampled_from(NASTY),
    st.lists(st.integers(), max_size=3),
)


@pytest.mark.slow
@settings(
    max_examples=300, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    st.sampled_from(sorted(VALID_DEPLOYMENT)),
    st.sampled_from(sorted(VALID_DEPLOYMENT["targets"])),
    scalars,
)
def test_one_bad_field_in_a_valid_deployment(
    tmp_path_factory: pytest.TempPathFactory,
    capsys: pytest.CaptureFixture[str],
    key: str,
    target: str,
    value: object,
) -> None:
    deployment = json.loads(json.dumps(VALID_DEPLOYMENT))
    if key == "targets":
        deployment["targets"][target] = value
    else:
        deployment[key] = value
    path = tmp_path_factory.mktemp("dep") / "d.yaml"
    path.write_text(yaml.safe_dump({"deployments": [deployment]}))
    argv = ["check", str(path), "-f", "json"]
    assert_sane(argv, *run(argv, capsys))


@pytest.mark.slow
@settings(
    max_examples=300, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(st.sampled_from(sorted(CONFIG)), scalars, st.sampled_from(["1", "8", "64"]))
def test_one_bad_field_in_a_real_config(
    tmp_path_factory: pytest.TempPathFactory,
    capsys: pytest.CaptureFixture[str],
    key: str,
    value: object,
    batch: str,
) -> None:
    config = dict(CONFIG, **{key: value})
    path = tmp_path_factory.mktemp("cfg") / "config.json"
    path.write_text(json.dumps(config, allow_nan=True))
    for argv in (
        ["estimate", "-m", str(path), "-g", "h100", "-c", "1K,64K", "--batch", batch, "--json"],
        ["show", str(path), "--json"],
        ["generate", "-m", str(path), "-g", "h100", "-p", "1K", "-n", "100", "--json"],
    ):
        assert_sane(argv, *run(argv, capsys))


PRESETS = {  # one real preset of each kind, and a query that loads it from a user directory
    "models": ("qwen3-30b-a3b", ["estimate", "-m", "mine", "-g", "h100", "-c", "1K,32K"]),
    "gpus": ("h100-sxm", ["estimate", "-m", "llama-3.1-8b", "-g", "mine", "--tp", "2"]),
    "dtypes": ("nvfp4", ["estimate", "-m", "llama-3.1-8b", "-g", "b200", "-w", "mine"]),
    "links": ("nvlink4", ["estimate", "-m", "llama-3.1-8b", "-g", "h100", "--tp", "2"]),
    "engines": ("vllm", ["estimate", "-m", "llama-3.1-8b", "-g", "h100", "--engine", "mine"]),
    "recipes": (
        "fp8-block128",
        ["estimate", "-m", "llama-3.1-8b", "-g", "b200", "-w", "mine"],
    ),
    "prices": ("lambda", ["estimate", "-m", "llama-3.1-8b", "-g", "h100", "--price", "mine"]),
}


@pytest.mark.slow
@settings(
    max_examples=300, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(st.sampled_from(sorted(PRESETS)), st.data(), scalars)
def test_one_bad_field_in_a_real_preset(
    tmp_path_factory: pytest.TempPathFactory,
    capsys: pytest.CaptureFixture[str],
    kind: str,
    data: st.DataObject,
    value: object,
) -> None:
    name, argv = PRESETS[kind]
    preset = yaml.safe_load((presets_dir() / kind / f"{name}.yaml").read_text())
    fields = preset["config"] if kind == "models" and data.draw(st.booleans()) else preset
    fields[data.draw(st.sampled_from(sorted(fields)))] = value
    folder = tmp_path_factory.mktemp("presets")
    (folder / kind).mkdir()
    # Links are found by the name a GPU gives; the others by the name the query uses.
    stem = name if kind == "links" else "mine"
    (folder / kind / f"{stem}.yaml").write_text(yaml.safe_dump(preset))
    full = [*argv, "--presets", str(folder), "--json"]
    assert_sane(full, *run(full, capsys))


VLLM_CONFIG = yaml.safe_load((ROOT / "examples" / "vllm-serve.yaml").read_text())
VLLM_MORE = [  # keys decodecalc reads that the example leaves out
    "pipeline-parallel-size",
    "enable-expert-parallel",
    "max-num-batched-tokens",
    "data-parallel-size",
    "quantization",
    "speculative-config",
    "enforce-eager",
]


@pytest.mark.slow
@settings(
    max_examples=100, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    st.sampled_from([*sorted(VLLM_CONFIG), *VLLM_MORE]),
    scalars,
)
def test_one_bad_field_in_a_vllm_config(
    tmp_path_factory: pytest.TempPathFactory,
    capsys: pytest.CaptureFixture[str],
    key: str,
    value: object,
) -> None:
    path = tmp_path_factory.mktemp("vllm") / "serve.yaml"
    path.write_text(yaml.safe_dump({**VLLM_CONFIG, key: value}))
    argv = ["check", str(path), "--gpu", "h100", "-t", "max_ms_per_token=40", "-f", "json"]
    assert_sane(argv, *run(argv, capsys))


MEASURED_POINT = {
    "model": "llama-3.1-8b",
    "gpu": "h100",
    "weights": "bf16",
    "kv_dtype": "bf16",
    "batch": 1,
    "tp": 1,
    "context": 1000,
    "ms_per_token": 8.5,
    "source": "x",
}


@pytest.mark.slow
@settings(
    max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(st.sampled_from(sorted(MEASURED_POINT)), scalars)
def test_one_bad_field_in_measured_points(
    tmp_path_factory: pytest.TempPathFactory,
    capsys: pytest.CaptureFixture[str],
    key: str,
    value: object,
) -> None:
    points = [MEASURED_POINT, {**MEASURED_POINT, "context": 64000, key: value}]
    path = tmp_path_factory.mktemp("points") / "points.yaml"
    path.write_text(yaml.safe_dump({"points": points}))
    for argv in (["calibrate", str(path), "--json"], ["validate", str(path), "--json"]):
        assert_sane(argv, *run(argv, capsys))


CORPUS_FILES = sorted(p for p in CORPUS.iterdir() if p.suffix in (".yaml", ".json"))


@pytest.mark.parametrize("path", CORPUS_FILES, ids=lambda p: p.name)
def test_seed_corpus(capsys: pytest.CaptureFixture[str], path: Path) -> None:
    for argv in (
        ["check", str(path)],
        ["estimate", "-m", str(path), "-g", "h100", "-c", "1K", "--json"],
        ["calibrate", str(path)],
        ["import", str(path), "--name", "x"],
    ):
        assert_sane(argv, *run(argv, capsys))


def test_a_50_mb_file_is_refused_at_once(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    big = tmp_path / "big.yaml"
    with big.open("w") as out:
        line = "# " + "x" * 1022 + "\n"
        for _ in range(50 * 1024):
            out.write(line)
    for argv in (["check", str(big)], ["estimate", "-m", str(big), "-g", "h100"]):
        code, out, err = run(argv, capsys)
        assert code == 2 and "the limit is 1,000,000" in err


def test_binary_junk(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    junk = tmp_path / "junk.yaml"
    junk.write_bytes(bytes(range(256)) * 64)
    code, _, err = run(["check", str(junk)], capsys)
    assert code == 2 and "not a UTF-8 text file" in err


def test_no_float_nan_or_inf_in_any_json(capsys: pytest.CaptureFixture[str]) -> None:
    """The tiniest and largest values a valid query allows still give finite JSON."""
    for argv in (
        [
            "estimate",
            "-m",
            "llama-3.2-1b",
            "-b",
            "1B/s",
            "-c",
            "0,1G",
            "--batch",
            "1000000",
            "--json",
        ],
        [
            "generate",
            "-m",
            "llama-3.2-1b",
            "-b",
            "1B/s",
            "--prompt",
            "1",  # a prompt needs at least one token
            "--tokens",
            "1073741823",  # 2^30 - 1: the context ends at the limit
            "--json",
        ],
    ):
        code, out, err = run(argv, capsys)
        assert code == 0, err
        doc = json.loads(out, parse_constant=lambda c: pytest.fail(c))
        numbers = [v for v in _leaves(doc) if isinstance(v, float)]
        assert all(math.isfinite(v) for v in numbers)


def _leaves(value: object) -> list[object]:
    if isinstance(value, dict):
        return [leaf for v in value.values() for leaf in _leaves(v)]
    if isinstance(value, list):
        return [leaf for v in value for leaf in _leaves(v)]
    return [value]


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="named pipes are POSIX")
def test_named_pipes_and_symlink_loops_among_presets_never_block(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Opening a FIFO with no writer waits forever: presets are read only from plain files."""
    models = tmp_path / "models"
    models.mkdir()
    os.mkfifo(models / "pipe.yaml")
    (models / "loop.yaml").symlink_to(models / "loop.yaml")
    deployment = tmp_path / "serve.yaml"
    deployment.write_text("name: d\nvllm_config: models/pipe.yaml\ngpu: h100\n")
    for argv in (
        ["check", str(deployment)],
        ["models", "--presets", str(tmp_path), "--json"],
        ["estimate", "-m", "pipe", "-g", "h100", "--presets", str(tmp_path)],
        ["estimate", "-m", "loop", "-g", "h100", "--presets", str(tmp_path)],
        ["estimate", "-m", str(models / "pipe.yaml"), "-g", "h100"],
        ["check", str(models / "pipe.yaml")],
    ):
        code, out, err = run(argv, capsys)
        assert_sane(argv, code, out, err)
        assert code in (0, 2)
