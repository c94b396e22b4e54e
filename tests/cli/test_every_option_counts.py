"""Every option of every command either changes what the command prints (or writes), or
is refused: none is accepted and ignored (issue 22: `serving --price` was).

Each command runs once as a baseline and once more per option, with a value that should
matter; the two runs must differ in exit code, stdout, stderr or the files written, or the
option's run must be refused (exit 2). Some options only matter beside another: ``BOTH``
adds those arguments to the baseline and the option's run alike (``--force`` matters over
a file decodecalc did not write, ``--presets`` when a model comes from it).
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from decodecalc.cli import full_command
from tests.conftest import Run

ROOT = Path(__file__).resolve().parents[2]

BASELINES: dict[str, tuple[str, ...]] = {
    "estimate": ("-m", "llama-3.1-8b", "-g", "h100-sxm", "-c", "8K"),
    "generate": ("-m", "llama-3.1-8b", "-g", "h100-sxm", "-p", "1K", "-n", "64"),
    "explain": ("-m", "llama-3.1-8b", "-g", "h100-sxm", "-c", "8K"),
    "compare": ("-m", "llama-3.1-8b", "-g", "h100-sxm,h200", "-c", "8K"),
    "sweep": ("-m", "llama-3.1-8b", "-g", "h100-sxm", "-c", "8K"),
    "serving": (
        "-m", "llama-3.1-8b", "-g", "h100-sxm",
        "--input-len", "1000", "--output-len", "100", "--concurrency", "1,8",
    ),
    # One GPU a replica (TP 1): a fifth of the search; trials that need more give --tp.
    "plan": (
        "-m", "llama-3.1-8b", "-c", "8K", "--gpus", "h100-sxm", "--tp", "1",
        "--max-ms-per-token", "30",
    ),
    "check": ("examples/chat-h100.yaml",),
    "schema": (),
    # A llama-bench file (what it does not say given): the points files' 14 points take 50
    # times as long, and the options count the same way on both.
    "validate": (
        "tests/fixtures/benchmarks/llama-bench-depth.md", "-m", "qwen2.5-7b", "-g", "rtx-4080",
    ),
    "models": (),
    "gpus": (),
    "dtypes": (),
    "recipes": (),
    "links": (),
    "engines": (),
    "show": ("llama-3.1-8b",),
    "import": ("tests/fixtures/configs/llama-3.1-8b.json",),
}  # fmt: skip
"""What each command runs with before an option is added (report and calibrate have
their own tests: report's option is its subcommand, calibrate needs measurements)."""


@dataclass(frozen=True)
class Trial:
    """An option's value (None: a flag given alone) and what both runs need beside it."""

    value: str | None = None
    both: tuple[str, ...] = ()
    baseline: tuple[str, ...] | None = None
    """Replaces the command's baseline for this option (None: the command's own)."""
    flag: str = ""
    """The spelling given, where it is not the option's first (--no-crossover-row)."""


LLAMA_BENCH = ("-m", "qwen2.5-7b", "-g", "rtx-4080")
"""What llama-bench's fixtures do not say (tests/fixtures/benchmarks/SOURCES.md)."""

TRIALS: dict[str, Trial] = {
    "--model": Trial("qwen3-8b"),
    "--gpu": Trial("h200"),
    "--bandwidth": Trial("2TB/s"),
    "--weights": Trial("fp8"),
    "--kv-dtype": Trial("fp8"),
    "--v-dtype": Trial("fp8"),
    "--batch": Trial("4"),
    "--tp": Trial("2"),
    "--pp": Trial("2"),
    "--ep": Trial(None, both=("-m", "mixtral-8x7b", "--tp", "2")),
    "--dp-attention": Trial(None, both=("-m", "deepseek-v3", "-g", "h200", "--tp", "8")),
    "--eplb-redundant": Trial("32", both=("-m", "deepseek-v3", "-g", "h200", "--tp", "8", "--ep")),
    "--efficiency": Trial("0.8"),
    "--memory-utilization": Trial("0.1"),  # 8 GB of an H100's 80: Llama-3.1-8B's 16 GB do not fit
    "--overhead": Trial("1ms"),
    "--link": Trial("nvlink3", both=("--tp", "2")),
    "--link-bandwidth": Trial("50GB/s", both=("--tp", "2")),
    "--gpus-per-node": Trial("1", both=("--tp", "2")),
    "--node-link": Trial("ib-xdr", both=("--tp", "2", "--gpus-per-node", "1")),
    "--engine": Trial("vllm"),
    "--price": Trial("2.5"),
    "--power": Trial("500W"),
    "--context": Trial("32K"),
    "--crossover-row": Trial(None, both=("-c", "1K..256K"), flag="--no-crossover-row"),
    "--format": Trial("csv"),
    "--json": Trial(None),
    "--output": Trial("{tmp}/out.txt"),
    "--force": Trial(None, both=("-o", "{tmp}/foreign.txt")),
    "--exact": Trial(None),
    "--chart": Trial(None),
    "--plot": Trial("{tmp}/chart.svg"),
    "--report": Trial("{tmp}/page.html"),
    "--presets": Trial("{tmp}/presets", both=("-m", "my-model")),
    "--prompt": Trial("4K"),
    "--tokens": Trial("256"),
    "--input-len": Trial("4000"),
    "--output-len": Trial("400"),
    "--concurrency": Trial("16"),
    "--request-rate": Trial("2"),
    "--max-num-batched-tokens": Trial("512"),
    "--max-num-seqs": Trial("4"),
    "--prefix-len": Trial("500"),
    "--prefix-hit-rate": Trial("0.5", both=("--prefix-len", "500")),
    "--shared-prefix-attention": Trial(None, both=("--prefix-len", "500")),
    "--speculative": Trial("ngram"),
    "--num-speculative-tokens": Trial("5", both=("--speculative", "ngram")),
    "--acceptance": Trial("0.5", both=("--speculative", "ngram")),
    "--prefill-workers": Trial("2", both=("--decode-workers", "1")),
    "--decode-workers": Trial("1", both=("--prefill-workers", "1")),
    "--prefill-tp": Trial("2", both=("--prefill-workers", "1", "--decode-workers", "1")),
    "--prefill-ep": Trial(
        None,
        both=("-m", "mixtral-8x7b", "--tp", "2", "--prefill-workers", "1", "--decode-workers", "1"),
    ),
    "--prefill-dp-attention": Trial(
        None,
        both=("-m", "deepseek-v3", "-g", "h200", "--tp", "8", *("--prefill-workers", "1")),
        baseline=(*BASELINES["serving"], "--decode-workers", "1"),
    ),
    "--kv-link": Trial("nvlink4", both=("--prefill-workers", "1", "--decode-workers", "1")),
    "--gpus": Trial("h200"),
    "--max-ms-per-token": Trial("10"),
    "--min-throughput": Trial("5000"),
    "--disaggregated": Trial(
        None,
        baseline=(  # Llama-3.1-70B at TP 4: the pools' search in a quarter of DeepSeek-R1's
            *("-m", "llama-3.1-70b", "--gpus", "h200", "-w", "fp8", "--tp", "4"),
            *("--input-len", "8K", "--output-len", "1K", "--concurrency", "64"),
        ),
    ),
    "--max-ttft-ms": Trial(
        "100",
        baseline=(
            *("-m", "llama-3.1-8b", "--gpus", "h100-sxm", "--max-ms-per-token", "30"),
            *("--input-len", "4K", "--output-len", "256", "--concurrency", "64"),
        ),
    ),
    "--max-gpus": Trial("1"),
    "--max-batch": Trial("4"),
    "--top": Trial("2"),
    "--all": Trial(None),
    "--why": Trial(None),
    "--target": Trial("max_ms_per_token=1"),
    "--family": Trial("qwen3"),
    "--vendor": Trial("amd"),
    "--name": Trial("my-llama"),
    "--source": Trial("https://example.org/config.json"),
    "--official-params": Trial("8000000000"),
    "--replicas": Trial("2"),
    "--measured": Trial(
        None,
        baseline=("tests/fixtures/benchmarks/llama-bench.json", *LLAMA_BENCH),
    ),
    "--show-points": Trial(None),
}
"""A value per option that should change a command's answer."""

SERVING_BENCH = (
    "tests/fixtures/benchmarks/sglang-bench-serving-llama-3.3-70b-h200.jsonl",
    *("-m", "llama-3.1-70b", "-g", "h200", "-w", "bf16", "--tp", "4"),
)

PER_COMMAND: dict[tuple[str, str], Trial] = {
    ("check", "--gpu"): Trial("h200", baseline=("examples/vllm-serve.yaml",)),
    ("check", "--engine"): Trial("sglang", baseline=("examples/vllm-targets.yaml",)),
    ("check", "--format"): Trial("json"),
    ("sweep", "--format"): Trial("jsonl"),
    ("explain", "--format"): Trial("json"),
    ("gpus", "--family"): Trial("amd-instinct"),
    ("plan", "--max-gpus"): Trial("1", both=("--tp", "1,2")),
    ("plan", "--tp"): Trial("2"),
    ("plan", "--why"): Trial(None, both=("--max-ms-per-token", "3", "--tp", "1,2")),
    ("plan", "--all"): Trial(None, both=("--tp", "1,2,4,8")),  # more than --top's 10 answers
    ("plan", "--pp"): Trial("2"),
    # The plan's best rows already keep values in fp8: a wider V format shows the option.
    ("plan", "--v-dtype"): Trial("bf16"),
    ("compare", "--tp"): Trial("1,2"),
    # The table leads with the expected step (one decimal), which nvlink3 moves by 0.6 us;
    # PCIe moves the roofline beside it by 15 us.
    ("compare", "--link"): Trial("pcie4", both=("--tp", "2")),
    ("sweep", "--tp"): Trial("1,2"),
    # A serving benchmark: the replicas count where requests are spread over them.
    ("validate", "--replicas"): Trial("2", baseline=SERVING_BENCH),
}
"""Where a command needs another value or baseline for an option."""

KNOWN: dict[tuple[str, str], str] = {}
"""Options still ignored, each with the work that makes them count."""


def cases() -> list[Any]:
    """Every (command, option) pair. The fast set tries each option once, on the first
    command that takes it; the slow set (CI) every other command that takes it too: 311
    runs of the whole CLI, end to end, are a sweep for CI more than a check while working."""
    command = full_command()
    pairs = [
        (name, param.opts[0])
        for name, cmd in command.commands.items()
        if name in BASELINES
        for param in cmd.params
        if param.param_type_name == "option" and param.opts[0] != "--help"
    ]
    first = {}
    for name, option in pairs:
        first.setdefault(option, name)
    return [
        pair if first[pair[1]] == pair[0] else pytest.param(*pair, marks=pytest.mark.slow)
        for pair in pairs
    ]


def _filled(args: tuple[str, ...], tmp: Path) -> list[str]:
    return [a.replace("{tmp}", str(tmp)) for a in args]


@dataclass
class Outcome:
    code: int
    out: str
    err: str
    files: dict[str, bytes] = field(default_factory=dict)


def _run(cli: Run, args: list[str], tmp: Path) -> Outcome:
    before = {p for p in tmp.rglob("*") if p.is_file()}
    r = cli(*args)
    files = {str(p): p.read_bytes() for p in tmp.rglob("*") if p.is_file() and p not in before}
    return Outcome(r.code, r.out, r.err, files)


@pytest.fixture(scope="module")
def tmp(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """One folder for every trial, so that two trials with the same baseline run the same
    command line: a presets folder with one model (for --presets) made once."""
    folder = tmp_path_factory.mktemp("options")
    models = folder / "presets" / "models"
    models.mkdir(parents=True)
    text = (ROOT / "presets/models/llama-3.1-8b.yaml").read_text()
    lines = [line for line in text.splitlines() if not line.startswith("aliases:")]
    (models / "my-model.yaml").write_text("\n".join(lines) + "\n")
    return folder


@pytest.fixture
def fresh(tmp: Path) -> Iterator[Path]:
    """The folder as every trial finds it: the presets and a foreign file (for --force),
    and nothing a trial wrote before."""
    kept = {p for p in tmp.rglob("*") if p.is_file()}
    (tmp / "foreign.txt").write_text("not written by decodecalc\n")
    yield tmp
    for path in [p for p in tmp.rglob("*") if p.is_file() and p not in kept]:
        path.unlink()


BASELINE_RUNS: dict[tuple[str, ...], Outcome] = {}
"""Each baseline run once: most options of a command share it (it runs in the same folder,
from a fresh start, so its outcome is the same every time)."""


@pytest.mark.parametrize(("command", "option"), cases(), ids=lambda v: v)
def test_the_option_changes_the_output_or_is_refused(
    cli: Run,
    fresh: Path,
    monkeypatch: pytest.MonkeyPatch,
    command: str,
    option: str,
) -> None:
    if (command, option) in KNOWN:
        pytest.xfail(KNOWN[command, option])
    monkeypatch.chdir(ROOT)
    trial = PER_COMMAND.get((command, option), TRIALS[option])
    base = trial.baseline if trial.baseline is not None else BASELINES[command]
    baseline = [command, *_filled(base, fresh), *_filled(trial.both, fresh)]
    given = [trial.flag or option] + ([] if trial.value is None else [trial.value])
    first = BASELINE_RUNS.get(tuple(baseline))
    if first is None:
        first = BASELINE_RUNS[tuple(baseline)] = _run(cli, baseline, fresh)
        for path in first.files:
            Path(path).unlink()
    second = _run(cli, [*baseline, *_filled(tuple(given), fresh)], fresh)
    if second.code == 2:
        return  # refused, with its one line
    assert (second.code, second.out, second.err, second.files) != (
        first.code,
        first.out,
        first.err,
        first.files,
    ), f"{command} {' '.join(given)} changed nothing"
