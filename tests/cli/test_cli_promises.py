"""What a new user tried and the CLI did not keep (issue 22): each finding run as the user
ran it, through the real entry point, at 80 columns where the width matters."""

from __future__ import annotations

import csv
import io
import json
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import Run

EST = ("estimate", "-m", "llama-3.1-8b", "-g", "h100-sxm", "-c", "1K,8K")


@pytest.fixture
def narrow(monkeypatch: pytest.MonkeyPatch) -> None:
    """An 80-column terminal, the width the user had."""
    monkeypatch.setenv("COLUMNS", "80")


class TestOutputFileFormat:
    """``-o FILE.json`` or ``FILE.csv`` without ``-f`` writes the format the name says."""

    @pytest.mark.parametrize(
        "command",
        [EST, ("gpus",), ("models",), ("compare", "-m", "llama-3.1-8b", "-g", "h100,h200")],
        ids=lambda c: c[0],
    )
    def test_json_by_extension(self, cli: Run, tmp_path: Path, command: tuple[str, ...]) -> None:
        target = tmp_path / "out.json"
        assert cli(*command, "-o", str(target)).code == 0
        assert json.loads(target.read_text())["schema_version"] == 3

    def test_csv_by_extension(self, cli: Run, tmp_path: Path) -> None:
        target = tmp_path / "out.csv"
        assert cli(*EST, "-o", str(target)).code == 0
        rows = list(csv.DictReader(io.StringIO(target.read_text())))
        assert [int(r["context"]) for r in rows] == [1024, 8192]

    def test_markdown_by_extension(self, cli: Run, tmp_path: Path) -> None:
        target = tmp_path / "out.md"
        assert cli(*EST, "-o", str(target)).code == 0
        assert "|---:" in target.read_text()

    def test_an_explicit_format_wins(self, cli: Run, tmp_path: Path) -> None:
        target = tmp_path / "out.json"
        assert cli(*EST, "-f", "csv", "-o", str(target)).code == 0
        assert target.read_text().startswith("model,gpu,")


class TestSweepJson:
    """sweep streams rows: ``-f json`` and ``--json`` give JSON Lines, as jsonl does."""

    ARGS = ("sweep", "-m", "llama-3.1-8b", "-g", "h100,h200", "-c", "1K,2K")

    @pytest.mark.parametrize("flags", [("-f", "json"), ("--json",), ("-f", "jsonl")])
    def test_json_lines(self, cli: Run, flags: tuple[str, ...]) -> None:
        r = cli(*self.ARGS, *flags)
        assert r.code == 0, r.err
        rows = [json.loads(line) for line in r.out.splitlines()]
        assert len(rows) == 4  # 2 GPUs x 2 contexts

    def test_output_name_picks_json_lines(self, cli: Run, tmp_path: Path) -> None:
        target = tmp_path / "grid.jsonl"
        assert cli(*self.ARGS, "-o", str(target)).code == 0
        assert len(target.read_text().splitlines()) == 4

    def test_json_with_csv_is_refused(self, cli: Run) -> None:
        r = cli(*self.ARGS, "--json", "-f", "csv")
        assert r.code == 2 and "jsonl" in r.err


class TestHelp:
    @pytest.mark.parametrize("command", ["estimate", "check", "sweep", "gpus"])
    def test_dash_h_is_help(self, cli: Run, command: str) -> None:
        r = cli(command, "-h")
        assert r.code == 0 and f"Usage: decodecalc {command}" in r.out

    def test_errors_point_to_the_subcommands_help(self, cli: Run) -> None:
        r = cli("estimate", "-m", "llama-3.1-8b", "--batch", "many")
        assert r.code == 2 and "(see 'decodecalc estimate --help')" in r.err

    def test_an_unknown_command_points_to_the_main_help(self, cli: Run) -> None:
        r = cli("estimat")
        assert r.code == 2 and "(see 'decodecalc --help')" in r.err


class TestEngineEfficiencyAtTheBound:
    """engines lists e_w 1.00 and explain says no GPU reaches the roofline: both say why."""

    def test_engines_says_the_fit_stopped_at_the_bound(self, cli: Run) -> None:
        out = " ".join(cli("engines").out.split())
        assert "e_w 1.00 (" in out and "cannot pass 1" in out

    def test_explain_says_so_for_the_profile(self, cli: Run) -> None:
        # torchao's nvidia-datacenter fit stops at e_w 1 (presets/engines/torchao.yaml).
        r = cli("explain", "-m", "llama-3.1-8b", "-g", "h100", "--engine", "torchao")
        assert "e_w 1.00 is where a fit stopped" in r.out

    def test_explain_says_why_the_band_is_wider(self, cli: Run) -> None:
        r = cli("explain", "-m", "llama-3.1-8b", "-g", "h100", "--engine", "typical")
        assert "the band is wider than the steps above" in " ".join(r.out.split())


@pytest.mark.usefixtures("narrow")
def test_explain_wraps_at_the_terminal_width(cli: Run) -> None:
    r = cli("explain", "-m", "llama-3.1-70b", "-g", "h100", "-w", "fp8", "-c", "200000")
    assert r.code == 0
    assert max(len(line) for line in r.out.splitlines()) <= 80
    # numbers are never broken across lines
    assert "69,503,033,344" in r.out


@pytest.mark.usefixtures("narrow")
class TestEightyColumns:
    """At 80 columns the columns asked for stay; empty and repeated ones go."""

    def test_estimate_keeps_price_and_energy(self, cli: Run) -> None:
        args = ("-m", "llama-3.1-70b", "-g", "h100-sxm", "-w", "fp8", "--tp", "4", "--batch", "32")
        r = cli("estimate", *args, "-c", "4K,16K", "--price", "2.5", "--power", "700")
        header = r.out.split("━")[0]
        assert "$ /" in header and "J /" in header

    def test_estimate_drops_the_empty_crossover_column(self, cli: Run) -> None:
        # 8K and 16K on a 70B at batch 1: the crossover (424,213 tokens, README) is in no row
        r = cli("estimate", "-m", "llama-3.1-70b", "-g", "h100-sxm", "-w", "fp8", "-c", "8K,16K")
        assert "crossover (" not in r.out and "<- crossover" not in r.out

    def test_compare_shows_only_the_axes_that_vary(self, cli: Run) -> None:
        r = cli("compare", "-m", "llama-3.1-70b", "-g", "h100-sxm,h200", "-w", "fp8", "-c", "128K")
        assert "every scenario: llama-3.1-70b fp8/bf16 B1 TP1" in r.out
        rows = [line for line in r.out.splitlines() if line.startswith(" 131,072")]
        assert [row.split("│")[1].strip() for row in rows] == ["h100-sxm", "h200"]

    def test_compare_keeps_price(self, cli: Run) -> None:
        r = cli(
            "compare", "-m", "llama-3.1-8b", "-g", "h100-sxm,h200", "-c", "8K,128K", "--price", "2"
        )
        assert "$ /" in r.out.split("━")[0]

    def test_check_keeps_target_and_result(self, cli: Run) -> None:
        r = cli("check", "examples/chat-h100.yaml", "examples/rag-long-context.yaml")
        header = r.out.split("━")[0]
        assert "Target" in header and "Result" in header and "Deployment" in header


class TestShippedExamples:
    def test_the_natural_ci_command_passes(self, cli: Run) -> None:
        """``check examples/*.yaml``: the vLLM config is checked through the side file that
        names its GPU (examples/vllm-targets.yaml), not refused for want of --gpu."""
        files = sorted(str(p) for p in Path("examples").glob("*.yaml"))
        r = cli("check", *files)
        assert r.code == 0, r.err
        assert "vllm-serve.yaml: checked through examples/vllm-targets.yaml" in r.err

    def test_a_vllm_config_alone_still_needs_a_gpu(self, cli: Run) -> None:
        r = cli("check", "examples/vllm-serve.yaml")
        assert r.code == 2 and "--gpu" in r.err

    def test_a_note_names_its_deployment_once(self, cli: Run) -> None:
        r = cli("check", "examples/vllm-serve.yaml", "examples/chat-h100.yaml", "-g", "h100")
        assert "vllm-serve: no targets given" in r.err
        assert "vllm-serve: vllm-serve:" not in r.err


def test_an_empty_context_is_refused(cli: Run) -> None:
    r = cli("estimate", "-m", "llama-3.1-8b", "-g", "h100", "-c", "")
    assert r.code == 2 and "--context" in r.err and "empty" in r.err


class TestFormatsThatCannotBe:
    def test_a_flashmla_cache_on_a_gqa_model_is_refused(self, cli: Run) -> None:
        r = cli("estimate", "-m", "llama-3.1-8b", "-g", "h100", "-k", "fp8-flashmla", "-c", "8K")
        assert r.code == 2 and "no mla layers" in r.err and "fp8" in r.err

    def test_a_flashmla_cache_on_an_mla_model_is_taken(self, cli: Run) -> None:
        """FlashMLA's FP8 entry: 512 fp8 latent bytes, 4 float32 scales (16 bytes) and the
        64-wide RoPE key in bf16 (128 bytes) = 656 bytes a layer, x 61 layers = 40,016."""
        args = ("-m", "deepseek-v3", "-g", "h200", "--tp", "8", "-k", "fp8-flashmla", "-c", "8K")
        r = cli("estimate", *args)
        assert r.code == 0, r.err
        assert "KV fp8-flashmla" in r.out and "KV per token per sequence: 40.02 kB" in r.out

    def test_fp4_weights_on_a_gpu_without_fp4_are_noted(self, cli: Run) -> None:
        r = cli("estimate", "-m", "llama-3.1-8b", "-g", "h100", "-w", "nvfp4", "-c", "8K")
        assert r.code == 0
        assert "h100-sxm has no FP4 tensor cores" in r.err and "FP8 rate" in r.err

    def test_fp4_weights_on_a_blackwell_are_not(self, cli: Run) -> None:
        r = cli("estimate", "-m", "llama-3.1-8b", "-g", "b200", "-w", "nvfp4", "-c", "8K")
        assert "tensor cores" not in r.err


def test_a_local_model_folder_is_read_from_its_config_json(cli: Run, tmp_path: Path) -> None:
    """As check reads vLLM's model: a checkpoint folder, not only its config.json."""
    folder = tmp_path / "Llama-Local"
    folder.mkdir()
    config = Path("tests/fixtures/configs/llama-3.1-8b.json")
    (folder / "config.json").write_text(config.read_text())
    by_folder = json.loads(
        cli("estimate", "-m", str(folder), "-g", "h100", "-c", "8K", "--json").out
    )
    by_file = json.loads(cli("estimate", "-m", str(config), "-g", "h100", "-c", "8K", "--json").out)
    assert by_folder["rows"][0]["ms_per_token"] == by_file["rows"][0]["ms_per_token"]
    empty = tmp_path / "empty"
    empty.mkdir()
    r = cli("estimate", "-m", str(empty), "-g", "h100")
    assert r.code == 2 and "has no config.json" in r.err


class TestPricePerGpu:
    PRICES = "h100-sxm=2.5,mi300x=2"

    def test_each_gpu_its_own_price(self, cli: Run) -> None:
        doc = json.loads(
            cli(
                "compare", "-m", "llama-3.1-8b", "-g", "h100,mi300x", "-c", "8K",
                "--price", self.PRICES, "--json",
            ).out
        )  # fmt: skip
        prices = [s["cost"]["price_per_gpu_hour"] for s in doc["scenarios"]]
        assert prices == [2.5, 2.0]

    def test_a_gpu_left_out_is_said(self, cli: Run) -> None:
        r = cli("estimate", "-m", "llama-3.1-8b", "-g", "h200", "-c", "8K", "--price", self.PRICES)
        assert r.code == 2 and "add h200=DOLLARS" in r.err

    def test_a_bad_item_is_refused(self, cli: Run) -> None:
        r = cli("estimate", "-m", "llama-3.1-8b", "-g", "h100", "--price", "h100=cheap")
        assert r.code == 2 and "GPU=DOLLARS" in r.err


def test_sustained_says_why_not_and_which_gpus_have_it(cli: Run) -> None:
    r = cli("estimate", "-m", "llama-3.1-8b", "-g", "mi300x", "-c", "8K", "-e", "sustained")
    assert r.code == 2 and "public benchmark's measured bandwidth" in r.err
    assert "a100-80gb" in r.err  # the one figure shipped (presets/gpus/a100-80gb.yaml)
    shipped = cli(
        "estimate", "-m", "llama-3.1-8b", "-g", "a100-80gb", "-e", "sustained",
        "--engine", "roofline",
    )  # fmt: skip
    # 1,397 GB/s sustained over the datasheet's 2,039 GB/s: 0.68514 of peak
    assert shipped.code == 0 and "efficiency 0.68514 (0.68514 of peak bandwidth)" in shipped.out


@pytest.mark.slow  # the whole shipped validation: 8 CPU-seconds, end to end
def test_accuracy_page_counts_what_validate_counts(shipped_validation: dict[str, Any]) -> None:
    """docs/accuracy.md's 232 measurements and validate's 226 points: the page says which
    six are excluded, and the numbers are the file's."""
    import yaml

    points = yaml.safe_load(Path("validation/points.yaml").read_text())["points"]
    excluded = [p for p in points if p.get("exclude")]
    assert shipped_validation["summary"]["n"] == len(points) - len(excluded)
    page = " ".join(Path("docs/accuracy.md").read_text().split())
    assert f"against {len(points)} published measurements" in page
    assert f"counts {len(points) - len(excluded)} points" in page
    assert len(excluded) == 6 and f"Six of the {len(points)} carry an `exclude:`" in page


def test_chart_axes_read_as_tokens(cli: Run) -> None:
    r = cli("estimate", "-m", "llama-3.1-8b", "-g", "h100", "-c", "1K..128K", "--chart")
    axis = next(line for line in r.out.splitlines() if "128K" in line and "│" not in line)
    assert "131072" not in r.out.split("context (tokens)")[0].splitlines()[-2]
    assert "K" in axis


def test_a_crossover_within_the_first_token_is_not_zero(cli: Run) -> None:
    """At batch 1,000,000 the KV of one token (32.77 kB x 10^6 = 32.8 GB per GPU at TP 4)
    outweighs 1.88 GB of weights: T* = 1.88e9 / 3.28e10 = 0.06 tokens."""
    args = ("-m", "llama-3.1-8b", "-g", "h100", "-w", "fp8", "--tp", "4", "--batch", "1000000")
    r = cli("estimate", *args, "-c", "4K")
    assert "crossover: under 1 tokens" in r.out and "crossover: 0 tokens" not in r.out


@pytest.mark.usefixtures("narrow")
def test_show_wraps_at_the_terminal_width(cli: Run) -> None:
    from rich.cells import cell_len

    r = cli("show", "deepseek-v3")
    assert r.code == 0 and max(cell_len(line) for line in r.out.splitlines()) <= 80


def test_a_batch_whose_cache_overflows_says_so_not_the_weights(cli: Run) -> None:
    """Llama-3.1-8B's 16 GB of weights fit an H100's 77 GB budget; a million sequences of
    KV do not: the line says the cache, and the crossover is under one token."""
    r = cli("estimate", "-m", "llama-3.1-8b", "-g", "h100-sxm", "--batch", "1000000", "-c", "8K")
    assert "not one token of cache fits beside the weights" in r.out
    assert "the weights alone overflow" not in r.out
    assert "crossover: under 1 tokens" in r.out


def test_serving_labels_its_median_step_as_what_it_is(cli: Run) -> None:
    """vllm bench's ITL is a distribution of gaps between tokens; the column is the median
    step, and says so (JSON keeps itl_ms, its meaning documented)."""
    r = cli(
        "serving", "-m", "llama-3.1-8b", "-g", "h100-sxm", "--input-len", "1000",
        "--output-len", "100", "--concurrency", "8",
    )  # fmt: skip
    assert "Median step ms" in r.out and "ITL ms" not in r.out


@pytest.mark.parametrize("fmt", [("--json",), ("-f", "csv")])
def test_a_chart_beside_data_goes_to_stderr(cli: Run, fmt: tuple[str, ...]) -> None:
    """--chart is drawn for people: beside JSON or CSV on stdout it goes to stderr, so the
    data still parses."""
    r = cli("estimate", "-m", "llama-3.1-8b", "-g", "h100", "-c", "1K,8K", *fmt, "--chart")
    assert r.code == 0 and "ms" in r.err
    if fmt == ("--json",):
        json.loads(r.out)
    else:  # every line a CSV row of the header's width
        rows = [line.count(",") for line in r.out.splitlines()]
        assert len(rows) == 3 and len(set(rows)) == 1


def test_a_whole_number_of_thousands_of_digits_is_one_line_exit_2(cli: Run) -> None:
    """int() refuses past 4,300 digits with a ValueError; the option refuses first (a
    fuzz-found case: plan --batch of 5,000 ones)."""
    huge = "1" * 5000
    for args in (
        ("plan", "-m", "llama-3.1-8b", "-c", "1K", "--gpus", "h100", "--batch", huge),
        ("estimate", "-m", "llama-3.1-8b", "-g", "h100", "--batch", huge),
    ):
        r = cli(*args)
        assert r.code == 2 and r.err.count("\n") == 1


OWN_STEP = ("-e", "0.3", "--overhead", "2ms")
"""Review items 8 and 17: an efficiency and an overhead state one's own engine's step."""


def own_step(command: str) -> list[str]:
    """Llama-3.1-8B on an H100 SXM (plan's GPUs are --gpus) at efficiency 0.3 plus 2 ms."""
    gpu = "--gpus" if command == "plan" else "-g"
    return ["-m", "llama-3.1-8b", gpu, "h100-sxm", *OWN_STEP, *DOORS[command]]


SERVED = ("--input-len", "1K", "--output-len", "100", "--concurrency", "8")
DOORS = {
    "estimate": ("-c", "4K"),
    "compare": ("-c", "4K"),
    "explain": ("-c", "4K"),
    "generate": ("-p", "4K", "-n", "2"),
    "sweep": ("-c", "4K"),
    "serving": SERVED,
    "plan": ("--tp", "1", "-c", "4K", "--max-ms-per-token", "30"),
}
REFUSAL = (
    "efficiency 0.3 and overhead 2 ms shape only the roofline's step, and the figures are "
    "the {engine} engine's measured step: give --engine roofline to take them as your own "
    "engine's"
)


@pytest.mark.parametrize("engine", ["typical", "vllm"])
@pytest.mark.parametrize("command", DOORS)
def test_an_efficiency_and_overhead_are_refused_beside_an_engine(
    cli: Run, command: str, engine: str
) -> None:
    """An engine's step has its own efficiencies and costs: rather than leave the flags out
    of the headline (and move only the roofline, past the figure it bounds), every command
    refuses them with the same line."""
    named = [] if engine == "typical" else ["--engine", engine]
    r = cli(command, *own_step(command), *named)
    assert r.code == 2 and r.out == ""
    assert r.err.strip() == f"decodecalc: error: {REFUSAL.format(engine=engine)}"


def test_a_deployment_file_with_an_efficiency_and_an_engine_is_refused(
    cli: Run, tmp_path: Path
) -> None:
    path = tmp_path / "own.yaml"
    path.write_text(
        "model: llama-3.1-8b\ngpu: h100-sxm\nefficiency: 0.3\noverhead: 2ms\n"
        "targets: {max_ms_per_token: 30}\n"
    )
    r = cli("check", str(path))
    assert r.code == 2 and REFUSAL.format(engine="typical") in r.err


@pytest.mark.parametrize("command", DOORS)
def test_under_the_roofline_they_are_the_headline_and_said_to_be_assumed(
    cli: Run, command: str
) -> None:
    """Llama-3.1-8B BF16 on an H100 SXM at 4,096 tokens, batch 1: 15,009,849,344 B of
    weights + 4,096 x 131,072 B of KV = 15,546,720,256 B over 3.35 TB/s x 0.3 = 1.005e12
    B/s is 15.4694 ms, plus 2 ms of overhead: 17.4694 ms a token, the headline, and the
    roofline figure with it; a note says it is an assumption, not a bound."""
    r = cli(command, *own_step(command), "--engine", "roofline", "--json")
    assert r.code == 0, r.err
    assert "these figures are the roofline at efficiency 0.3 plus 2 ms a step" in r.err
    if command in ("serving", "plan"):
        return  # their steps run at other batches and contexts: the note is what is asked
    doc = json.loads(r.out.splitlines()[0]) if command == "sweep" else json.loads(r.out)
    if command == "generate":
        # The first decode step reads the 4,096-token prompt and the prefill's token:
        # 4,097 x 131,072 B more than the weights, 15,546,851,328 B: 15.4695 + 2 ms.
        assert doc["first_ms_per_token"] == pytest.approx(17.4695, abs=5e-5)
        assert doc["roofline_first_ms_per_token"] == doc["first_ms_per_token"]
        return
    row = doc if command == "sweep" else doc["rows"][0]
    assert row["ms_per_token"] == pytest.approx(17.4694, abs=5e-5)
    assert row["roofline_ms_per_token"] == row["ms_per_token"]


def test_without_them_the_roofline_bounds_the_expected_step(cli: Run) -> None:
    """Efficiency 1, no overhead: the roofline (15,546,720,256 B / 3.35e12 B/s = 4.6408 ms)
    is the bound, under the typical engine's expected step."""
    doc = json.loads(cli("estimate", "-m", "llama-3.1-8b", "-g", "h100-sxm", "-c", "4K",
                         "--json").out)  # fmt: skip
    (row,) = [r for r in doc["rows"] if r["context"] == 4096]
    assert row["roofline_ms_per_token"] == pytest.approx(4.6408, abs=5e-5)
    assert row["roofline_ms_per_token"] < row["ms_per_token"]
