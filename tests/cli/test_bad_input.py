"""Bad input is refused with one line on stderr and exit 2: never accepted in silence, never
filed as a skipped combination, never a traceback. Each row is a value once accepted or
crashed on (issue 21)."""

from __future__ import annotations

import shlex
from pathlib import Path

import pytest

from decodecalc.cli import COMMANDS
from tests.conftest import Run

ROOT = Path(__file__).parents[2]
SERVE = (ROOT / "examples" / "vllm-serve.yaml").read_text()
CHAT = ROOT / "examples" / "chat-h100.yaml"
CONFIG = ROOT / "tests" / "fixtures" / "configs" / "qwen3-next-80b-a3b.json"
HUGE = "1" + "0" * 310  # a TP of 311 digits: as a float it overflows (1e310 > 1.8e308)
DIGITS = "9" * 5000  # past Python's 4,300-digit limit on int()


def refused(result: object, message: str) -> None:
    code, out, err = result.code, result.out, result.err  # type: ignore[attr-defined]
    assert code == 2, err
    assert out == ""
    assert err.count("\n") == 1 and err.startswith("decodecalc: error: "), err
    assert "Traceback" not in err
    assert message in err, err


SWEEP = "sweep -m llama-3.1-8b -g h100 -c 1K,8K"


@pytest.mark.parametrize(
    ("command", "message"),
    [
        (f"{SWEEP} --bandwidth 0TB/s", "bandwidth"),
        (f"{SWEEP} --efficiency 1.5", "efficiency 1.5 must be from 0.001 to 1"),
        (f"{SWEEP} --overhead -1ms", "overhead '-1ms'"),
        (f"{SWEEP} --power -5W", "power"),
        (f"{SWEEP} --node-link nosuchnet", "unknown link 'nosuchnet'"),
        (f"{SWEEP} --tp 2 --link nosuchlink", "unknown link 'nosuchlink'"),
        (f"{SWEEP} --tp 2 --link-bandwidth nan", "bandwidth 'nan'"),
        (f"{SWEEP} --memory-utilization 2", "memory utilization 2.0 must be from 0.001 to 1"),
        (f"{SWEEP} --batch 1,2000000", "batch 2000000 must be a whole number from 1 to 1,000,000"),
        (f"{SWEEP} --pp 99999", "pp 99999 must be a whole number from 1 to 1,024"),
        (f"{SWEEP} --tp 1,{HUGE}", "must be a whole number from 1 to 1,024"),
        # every combination is valid values that cannot go together: nothing to write
        (f"{SWEEP} --tp 3", "no combination is a valid deployment; the first: "),
    ],
    ids=lambda v: v.replace(SWEEP, "sweep")[:60] if " " in v else None,
)
def test_sweep_refuses_a_bad_value_instead_of_skipping_it(
    cli: Run, command: str, message: str
) -> None:
    refused(cli(*shlex.split(command)), message)


def test_sweep_skips_only_valid_values_that_cannot_go_together(cli: Run) -> None:
    """TP 3 of Llama-3.1-8B's 32 heads is no deployment; TP 1 is: its rows, and a note."""
    r = cli(*shlex.split(SWEEP), "--tp", "3,1")
    assert r.code == 0
    assert len(r.out.splitlines()) == 1 + 2  # the header and TP 1 at two contexts
    assert "skipped 1 combination that is no valid deployment" in r.err
    assert "tp 3 does not split llama-3.1-8b's attention heads evenly" in r.err


PLAN = "plan -m llama-3.1-70b -c 8K --gpus h100,h200"


@pytest.mark.parametrize(
    ("command", "message"),
    [
        (f"{PLAN} --link nosuchlink", "unknown link 'nosuchlink'"),
        (f"{PLAN} --link-bandwidth nan", "bandwidth 'nan'"),
        (f"{PLAN} --link-bandwidth -1TB/s", "bandwidth '-1TB/s'"),
    ],
)
def test_plan_refuses_a_bad_link_instead_of_dropping_every_tp(
    cli: Run, command: str, message: str
) -> None:
    refused(cli(*shlex.split(command)), message)


ONE_GPU = "estimate -m llama-3.1-8b -g h100 -c 1K"
SERVING = "serving -m llama-3.1-8b -g h100 --input-len 100 --output-len 10"


@pytest.mark.parametrize(
    ("command", "message"),
    [
        (f"{ONE_GPU} --link-bandwidth nan", "bandwidth 'nan'"),
        # a power in another unit, or a price below zero, is out of range, not unreadable
        (f"{ONE_GPU} --power 1MW", "power '1MW' must be more than 0 and at most 100,000 watts"),
        (f"{ONE_GPU} --power=-5W", "power '-5W' must be more than 0 and at most 100,000 watts"),
        (
            f"{ONE_GPU} --price=-1",
            "price '-1' must be more than 0 and at most 10,000 dollars per GPU-hour",
        ),
        (f"{ONE_GPU} --link X", "unknown link 'X'"),
        (f"{ONE_GPU} --node-link X", "unknown link 'X'"),
        (f"{ONE_GPU} --gpus-per-node 0", "gpus per node 0 must be a whole number"),
        (f"{ONE_GPU} --pp １２", "'１２' is not a whole number"),
        (f"{ONE_GPU} --batch 1_0", "'1_0' is not a whole number"),
        (f"{ONE_GPU} --memory-utilization ０.５", "'０.５' is not a number"),
        ("compare -m llama-3.1-8b -g h100 -c 1K --tp １,2", "expected whole numbers"),
        ("plan -m llama-3.1-8b -c 1K --max-gpus ８", "'８' is not a whole number"),
        (f"{SERVING} --request-rate ０.５", "--request-rate '０.５': expected numbers"),
        (
            f"{SERVING} --concurrency 2 --speculative eagle --acceptance ０.５",
            "--acceptance '０.５': expected numbers",
        ),
        (f"check {CHAT} -t max_ms_per_token=４0", "expected a number, got '４0'"),
        (
            f"import {CONFIG} --name x --official-params 18446744073709551616",
            "--official-params 18446744073709551616 must be a count from 1 to 1,000,000,000,000,0",
        ),
        (f"check {CHAT} --gpu abc", "unknown GPU 'abc'"),
        (f"check {CHAT} --engine abc", "unknown engine 'abc'"),
    ],
    ids=lambda v: v[:60] if " " in v else None,
)
def test_a_value_nothing_uses_is_still_checked(cli: Run, command: str, message: str) -> None:
    refused(cli(*shlex.split(command)), message)


@pytest.mark.parametrize("rate", ["nanTB/s", "3.35TB/s", "1e400TB/s", "2.49USD/h"])
def test_a_rate_given_as_a_model_never_goes_to_the_hub(cli: Run, rate: str) -> None:
    """Only org/name shapes are Hub ids; a rate is an option's value in the wrong place."""
    r = cli("estimate", "-m", rate, "-g", "h100")
    refused(r, f"unknown model {rate!r}")
    assert "Hugging Face" not in r.err


@pytest.mark.parametrize(
    ("line", "message"),
    [
        ("enable-prefix-caching: 0.5", "a switch: expected true or false, got 0.5"),
        ("enable-prefix-caching: null", "a switch: expected true or false, got null"),
        ("gpu-memory-utilization: null", "gpu-memory-utilization: null: give a value"),
        ("tensor-parallel-size: null", "tensor-parallel-size: null: give a value"),
        ("max-num-seqs: abc", "max-num-seqs: expected a whole number, got 'abc'"),  # once
    ],
)
def test_a_vllm_config_value_vllm_would_refuse(
    cli: Run, tmp_path: Path, line: str, message: str
) -> None:
    key = line.partition(":")[0]
    kept = [kept for kept in SERVE.splitlines() if not kept.startswith(f"{key}:")]
    serve = tmp_path / "serve.yaml"
    serve.write_text("\n".join([*kept, line]) + "\n")
    refused(cli("check", str(serve), "--gpu", "h100", "-t", "max_ms_per_token=40"), message)


TOO_MANY_DIGITS = "a number of 5,000 digits; no decodecalc value has more than a few dozen"


@pytest.mark.parametrize(
    "command",
    [
        "check {yaml}",
        "calibrate {yaml}",
        "validate {yaml}",
        "estimate -m {yaml} -g h100",
        "estimate -m {json} -g h100",
        "show {json}",
        "import {json} --name x",
        "models --presets {folder}",
    ],
)
def test_an_integer_past_pythons_digit_limit(cli: Run, tmp_path: Path, command: str) -> None:
    (tmp_path / "models").mkdir()
    yaml_file = tmp_path / "models" / "big.yaml"
    yaml_file.write_text(f"name: big\nbatch: {DIGITS}\n")
    json_file = tmp_path / "config.json"
    json_file.write_text(f'{{"model_type": "llama", "hidden_size": {DIGITS}}}')
    argv = command.format(yaml=yaml_file, json=json_file, folder=tmp_path)
    refused(cli(*shlex.split(argv)), TOO_MANY_DIGITS)


SCENARIO_COMMANDS = {
    "estimate": "estimate -m llama-3.1-8b -g h100",
    "generate": "generate -m llama-3.1-8b -g h100 -p 1K -n 10",
    "explain": "explain -m llama-3.1-8b -g h100",
    "serving": "serving -m llama-3.1-8b -g h100 --input-len 100 --output-len 10 --concurrency 1",
    "compare": "compare -m llama-3.1-8b -g h100 -c 1K",
    "sweep": "sweep -m llama-3.1-8b -g h100 -c 1K",
    "plan": "plan -m llama-3.1-8b -c 1K",
}


@pytest.mark.parametrize("command", sorted(SCENARIO_COMMANDS))
def test_a_tp_too_large_for_a_float(cli: Run, command: str) -> None:
    refused(
        cli(*shlex.split(SCENARIO_COMMANDS[command]), "--tp", HUGE),
        "must be a whole number from 1 to 1,024",
    )


def test_a_tp_too_large_for_a_float_in_a_deployment(cli: Run, tmp_path: Path) -> None:
    deployment = tmp_path / "d.yaml"
    deployment.write_text(
        f"name: d\nmodel: llama-3.1-8b\ngpu: h100\ntp: {HUGE}\ntargets:\n  max_ms_per_token: 40\n"
    )
    refused(cli("check", str(deployment)), "must be a whole number from 1 to 1,024")


NEEDS = {  # the least each command needs to get as far as reading --presets
    "calibrate": ["points.yaml"],
    "validate": ["points.yaml"],
    "check": ["d.yaml"],
    "show": ["llama-3.1-8b"],
    "report": ["estimate", "-m", "llama-3.1-8b", "-g", "h100", "-o", "page.html"],
    **{name: shlex.split(argv)[1:] for name, argv in SCENARIO_COMMANDS.items()},
}


@pytest.mark.parametrize(
    "command", sorted(c for c in COMMANDS if c not in ("schema", "import"))
)  # the two commands that take no --presets
def test_a_presets_directory_name_longer_than_a_file_system_allows(
    cli: Run, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, command: str
) -> None:
    monkeypatch.chdir(tmp_path)
    (tmp_path / "points.yaml").write_text(
        (ROOT / "tests" / "data" / "measured-decode.yaml").read_text()
    )
    (tmp_path / "d.yaml").write_text(CHAT.read_text())
    long_name = str(tmp_path / ("a" * 300))
    r = cli(command, *NEEDS.get(command, []), "--presets", long_name)
    refused(r, "presets directory")


SERVING = "serving -m llama-3.1-8b -g h100-sxm --input-len 1K --output-len 100 --concurrency 8"


@pytest.mark.parametrize(
    ("given", "hint"),
    [
        ("--speculative eagel --acceptance 0.7", "did you mean 'eagle'?"),
        ("--speculative mpt --acceptance 0.7", "did you mean 'mtp'?"),
        ("--price lambd", "did you mean 'lambda'?"),
        ("-e sustaind", "did you mean 'sustained'?"),
    ],
)
def test_a_misspelt_word_gets_a_did_you_mean(cli: Run, given: str, hint: str) -> None:
    refused(cli(*shlex.split(f"{SERVING} {given}")), hint)


EST = "estimate -m llama-3.1-8b -g h100 -c 4K"
EP = "-m deepseek-v3 -g h200 --tp 8 --ep"


@pytest.mark.parametrize(
    ("command", "message"),
    [
        # 0.1 B/s rounds to 0 bytes/s: the all-reduce's ring divided by it (review item 12)
        (f"{EST} --tp 2 --link-bandwidth 0.1B/s", "link bandwidth '0.1B/s' rounds to 0 bytes/s"),
        (
            "serving -m llama-3.1-8b -g h100 --tp 2 --link-bandwidth 0.4B/s --input-len 1K "
            "--output-len 100 --concurrency 4",
            "link bandwidth '0.4B/s' rounds to 0 bytes/s",
        ),
        (f"{EST} -b 0.1B/s", "bandwidth '0.1B/s' rounds to 0 bytes/s"),
        # 256 - 8 experts spread a share over 248: a division by zero further on; 100,000
        # overflowed a float; -1 was told its experts do not divide (review item 13)
        (f"estimate {EP} --eplb-redundant -8 -c 4K", "eplb redundant -8 must be a whole number"),
        (f"estimate {EP} --eplb-redundant -1 -c 4K", "from 0 to 1,024"),
        (f"estimate {EP} --eplb-redundant 100000 -c 4K", "eplb redundant 100000 must be"),
        (f"serving {EP} --eplb-redundant -8 --input-len 1K --output-len 100", "eplb redundant"),
        (f"sweep {EP} --eplb-redundant 1025 -c 4K", "eplb redundant 1025 must be"),
    ],
    ids=lambda v: v[:70] if " " in v else None,
)
def test_a_rate_that_rounds_to_zero_or_a_replica_count_out_of_range(
    cli: Run, command: str, message: str
) -> None:
    refused(cli(*shlex.split(command)), message)


def test_no_redundant_experts_is_a_choice_at_every_door(cli: Run, tmp_path: Path) -> None:
    """0 is the default: given on the command line or in a file it reads the same."""
    assert cli(*shlex.split(f"estimate {EP} --eplb-redundant 0 -c 4K --json")).code == 0
    deployment = tmp_path / "d.yaml"
    deployment.write_text(
        "model: deepseek-v3\ngpu: h200\ntp: 8\nep: true\neplb_redundant: 0\n"
        "targets: {max_ms_per_token: 1000}\n"
    )
    assert cli("check", str(deployment)).code == 0


def test_a_broken_json_file_is_called_json_by_every_command(cli: Run, tmp_path: Path) -> None:
    """check reads deployments with the YAML parser (JSON is YAML), estimate reads a
    config.json with JSON's: a cut-short .json file is "not valid JSON" to both, at JSON's
    position (review item 15). `{"a":` ends after 5 characters: column 6 of line 1."""
    bad = tmp_path / "bad.json"
    bad.write_text('{"a":')
    for command in (("check", str(bad)), ("estimate", "-m", str(bad), "-g", "h100")):
        refused(cli(*command), f"{bad}:1:6: not valid JSON: Expecting value")
    (tmp_path / "bad.yaml").write_text("a: [1\n")
    refused(cli("check", str(tmp_path / "bad.yaml")), "not valid YAML")


def test_calibrate_refuses_an_unknown_engine_before_showing_points(
    cli: Run, tmp_path: Path
) -> None:
    """The fuzz's case: --engine '' with --show-points printed the points, then the error;
    a refusal is one line on stderr and nothing before it."""
    points = tmp_path / "points.yaml"
    points.write_text(
        "- model: llama-3.1-8b\n  gpu: h100-sxm\n  context: 1000\n"
        "  ms_per_token: 8.1\n  source: x\n"
    )
    for name in ("", "vlm"):
        r = cli("calibrate", str(points), "--engine", name, "--show-points")
        assert r.code == 2 and r.out == "" and len(r.err.splitlines()) == 1, r.err
        assert r.err.startswith("decodecalc: error: unknown engine")
