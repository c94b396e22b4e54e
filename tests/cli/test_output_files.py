"""Files decodecalc writes are whole or absent, never replace an input, and never replace a
file decodecalc did not write unless --force says so (decodecalc/writing.py)."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from decodecalc.errors import InputError
from decodecalc.writing import write_file
from tests.conftest import Run

DATA = Path(__file__).parents[1] / "data"
CONFIG = Path(__file__).parents[1] / "fixtures" / "configs" / "qwen3-next-80b-a3b.json"
DEPLOYMENT = Path(__file__).parents[2] / "examples" / "chat-h100.yaml"
POINTS = DATA / "measured-decode.yaml"
BENCH = Path(__file__).parents[1] / "fixtures" / "benchmarks" / "llama-bench-depth.md"
LISTING = ["models", "--format", "csv"]
BATCHES = ",".join(str(b) for b in range(1, 201))


@pytest.fixture
def here(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.chdir(tmp_path)
    return tmp_path


def leftovers(folder: Path) -> list[str]:
    return sorted(p.name for p in folder.iterdir() if p.name.endswith(".tmp"))


class TestWholeOrAbsent:
    """The target changes in one rename, after the whole output is on disk."""

    @pytest.mark.parametrize("stop", [RuntimeError, KeyboardInterrupt], ids=["an error", "ctrl-c"])
    def test_a_stopped_write_leaves_the_previous_file_and_no_temporary(
        self, tmp_path: Path, stop: type[BaseException]
    ) -> None:
        target = tmp_path / "out.csv"
        target.write_bytes(b"previous\r\n")

        def stopped_half_way() -> None:
            with write_file(target, force=True) as out:
                out.write("half a row")
                raise stop

        with pytest.raises(stop):
            stopped_half_way()
        assert target.read_bytes() == b"previous\r\n"
        assert leftovers(tmp_path) == []

    def test_a_replaced_file_keeps_its_permissions(self, tmp_path: Path) -> None:
        target = tmp_path / "out.txt"
        target.write_text("old")
        target.chmod(0o640)
        with write_file(target, force=True) as out:
            out.write("new")
        assert target.read_text() == "new"
        assert target.stat().st_mode & 0o777 == 0o640

    def test_a_new_file_gets_the_usual_permissions(self, tmp_path: Path) -> None:
        """0666 less the umask, like any file a program creates (a temporary file from
        tempfile would be 0600, and stay so after the rename)."""
        umask = os.umask(0o022)
        try:
            with write_file(tmp_path / "new.txt") as out:
                out.write("new")
        finally:
            os.umask(umask)
        assert (tmp_path / "new.txt").stat().st_mode & 0o777 == 0o644

    def test_a_symlink_keeps_pointing_at_the_replaced_file(self, tmp_path: Path) -> None:
        real = tmp_path / "real.txt"
        real.write_text("old")
        link = tmp_path / "link.txt"
        link.symlink_to(real)
        with write_file(link, force=True) as out:
            out.write("new")
        assert link.is_symlink() and real.read_text() == "new"

    def test_a_device_is_written_straight_through(self, cli: Run) -> None:
        r = cli(*LISTING, "-o", os.devnull)
        assert r.code == 0, r.err
        assert Path(os.devnull).is_char_device()

    def test_a_directory_is_refused(self, cli: Run, here: Path) -> None:
        r = cli(*LISTING, "-o", str(here))
        assert r.code == 2 and "is a directory" in r.err

    @pytest.mark.slow
    @pytest.mark.parametrize(
        "how", [signal.SIGKILL, signal.SIGINT, signal.SIGTERM], ids=["kill", "ctrl-c", "term"]
    )
    def test_a_sweep_stopped_mid_write_leaves_the_previous_file(
        self, here: Path, how: signal.Signals
    ) -> None:
        """A sweep of 2M rows streams for many seconds: stopped once its temporary file has
        rows in it, the CSV of an earlier run is still there, byte for byte."""
        base = [sys.executable, "-m", "decodecalc", "sweep", "-m", "llama-3.1-8b", "-g", "h100"]
        env = {**os.environ, "DECODECALC_CACHE": str(here / "cache")}
        subprocess.run([*base, "-c", "1K,2K", "-o", "grid.csv"], env=env, check=True)
        before = (here / "grid.csv").read_bytes()
        running = subprocess.Popen(
            [*base, "--batch", BATCHES, "-c", "1..10000:1", "-o", "grid.csv"],
            env=env,
            stderr=subprocess.DEVNULL,
        )
        try:
            deadline = time.monotonic() + 60
            while time.monotonic() < deadline and running.poll() is None:
                partial = [p for p in here.iterdir() if p.name.endswith(".tmp")]
                if partial and partial[0].stat().st_size > 100_000:
                    break
                time.sleep(0.05)
            assert running.poll() is None, "the sweep ended before it could be stopped"
            running.send_signal(how)
            code = running.wait(30)
        finally:
            running.kill()
        assert (here / "grid.csv").read_bytes() == before
        if how != signal.SIGKILL:
            assert code == (130 if how == signal.SIGINT else 143)
            assert leftovers(here) == []  # Ctrl-C and SIGTERM clean up; a kill cannot


class TestInputsAreNeverReplaced:
    """Writing the output over what the command reads loses the input: refused, even with
    --force."""

    @pytest.mark.parametrize(
        ("name", "source", "argv"),
        [
            ("pts.yaml", POINTS, ["calibrate", "pts.yaml", "-o", "pts.yaml"]),
            ("pts.yaml", POINTS, ["calibrate", "pts.yaml", "--save-to", "pts.yaml"]),
            (  # a benchmark file: it is read, fitted and validated in a hundredth of a second
                "bench.md",
                BENCH,
                ["validate", "bench.md", "-m", "qwen2.5-7b", "-g", "rtx-4080", "-o", "bench.md"],
            ),
            ("dep.yaml", DEPLOYMENT, ["check", "dep.yaml", "-f", "json", "-o", "dep.yaml"]),
            ("cfg.json", CONFIG, ["import", "cfg.json", "--name", "x", "-o", "cfg.json"]),
            ("cfg.json", CONFIG, ["show", "cfg.json", "-o", "cfg.json"]),
            ("cfg.json", CONFIG, ["estimate", "-m", "cfg.json", "-g", "h100", "-o", "cfg.json"]),
            (
                "cfg.json",
                CONFIG,
                ["compare", "-m", "llama-3.1-8b,cfg.json", "-g", "h100", "-o", "cfg.json"],
            ),
        ],
        ids=lambda v: " ".join(v) if isinstance(v, list) else None,
    )
    @pytest.mark.parametrize("force", [False, True], ids=["", "--force"])
    def test_refused(
        self, cli: Run, here: Path, name: str, source: Path, argv: list[str], force: bool
    ) -> None:
        (here / name).write_bytes(source.read_bytes())
        r = cli(*argv, *(["--force"] if force else []))
        assert r.code == 2
        assert r.err.count("\n") == 1 and "is an input of this command" in r.err
        assert (here / name).read_bytes() == source.read_bytes()

    def test_a_file_in_a_presets_directory_the_command_reads(self, cli: Run, here: Path) -> None:
        (here / "mine" / "models").mkdir(parents=True)
        model = here / "mine" / "models" / "x.yaml"
        assert cli("import", str(CONFIG), "--name", "x", "-o", str(model)).code == 0
        before = model.read_bytes()
        r = cli("models", "--presets", "mine", "-o", str(model), "--force")
        assert r.code == 2 and "a directory this command reads" in r.err
        assert model.read_bytes() == before


class TestOnlyItsOwnFilesWithoutForce:
    """An existing file decodecalc did not write (or that changed since) is the user's."""

    def test_a_rerun_replaces_its_own_output(self, cli: Run, here: Path) -> None:
        assert cli(*LISTING, "-o", "out.csv").code == 0
        (here / "out.csv").write_bytes((here / "out.csv").read_bytes())  # same bytes, new mtime
        r = cli(*LISTING, "-o", "out.csv")
        assert r.code == 2 and "--force" in r.err  # rewritten by someone else since

    def test_its_own_unchanged_output_is_replaced(self, cli: Run, here: Path) -> None:
        assert cli(*LISTING, "-o", "out.csv").code == 0
        assert cli("gpus", "--format", "csv", "-o", "out.csv").code == 0
        assert (here / "out.csv").read_text().startswith("id,")

    @pytest.mark.parametrize(
        "argv",
        [
            [*LISTING, "-o", "notes.txt"],
            ["schema", "-o", "notes.txt"],
            ["import", str(CONFIG), "--name", "x", "-o", "notes.txt"],
            ["check", str(DEPLOYMENT), "-f", "junit", "-o", "notes.txt"],
            ["calibrate", str(POINTS), "--save-to", "notes.txt"],
            ["estimate", "-m", "llama-3.1-8b", "-g", "h100", "-c", "1K", "-o", "notes.txt"],
            ["sweep", "-m", "llama-3.1-8b", "-g", "h100", "-c", "1K", "-o", "notes.txt"],
        ],
        ids=lambda argv: argv[0],
    )
    def test_a_file_it_did_not_write_needs_force(
        self, cli: Run, here: Path, argv: list[str]
    ) -> None:
        (here / "notes.txt").write_text("my notes\n")
        r = cli(*argv)
        assert r.code == 2 and r.err.count("\n") == 1
        assert "'notes.txt' exists and decodecalc did not write it" in r.err
        assert (here / "notes.txt").read_text() == "my notes\n"
        assert cli(*argv, "--force").code in (0, 1)  # check's JUnit: 1 when a target is missed
        assert (here / "notes.txt").read_text() != "my notes\n"

    def test_calibrate_save_over_a_calibration_from_elsewhere(
        self, cli: Run, here: Path, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        saved = here / "calibration.json"
        monkeypatch.setenv("DECODECALC_CALIBRATION", str(saved))
        theirs = json.dumps({"efficiency": 0.5, "overhead_ms": 0.1}) + "\n"
        saved.write_text(theirs)
        r = cli("calibrate", str(POINTS), "--save")
        assert r.code == 2 and "--force" in r.err
        assert saved.read_text() == theirs
        assert cli("calibrate", str(POINTS), "--save", "--force").code == 0
        assert json.loads(saved.read_text())["fitted_from"] == str(POINTS)
        assert cli("calibrate", str(POINTS), "--save").code == 0  # its own file now

    def test_save_engine_over_a_hand_edited_profile(self, cli: Run, here: Path) -> None:
        profile = here / "mine" / "engines" / "my-vllm.yaml"
        saving = ["calibrate", str(POINTS), "--save-engine", "my-vllm", "--presets", "mine"]
        (here / "mine").mkdir()
        assert cli(*saving).code == 0
        assert cli(*saving).code == 0  # its own, unchanged
        edited = profile.read_text().replace("name: my-vllm", "name: my vLLM, tuned by hand")
        profile.write_text(edited)
        r = cli(*saving)
        assert r.code == 2 and "'mine/engines/my-vllm.yaml' exists" in r.err
        assert profile.read_text() == edited

    def test_an_invalid_profile_in_the_way_is_blamed_not_the_points(
        self, cli: Run, here: Path
    ) -> None:
        (here / "mine" / "engines").mkdir(parents=True)
        (here / "mine" / "engines" / "my-vllm.yaml").write_text("name: [unclosed\n")
        r = cli("calibrate", str(POINTS), "--save-engine", "my-vllm", "--presets", "mine")
        assert r.code == 2 and r.err.count("\n") == 1
        assert r.err.startswith("decodecalc: error: mine/engines/my-vllm.yaml:")
        assert str(POINTS) not in r.err

    def test_plot_files_follow_the_same_rules(self, cli: Run, here: Path) -> None:
        pytest.importorskip("matplotlib")
        (here / "chart.svg").write_text("<svg>mine</svg>")
        argv = ["estimate", "-m", "llama-3.1-8b", "-g", "h100", "-c", "1K,8K", "--plot"]
        r = cli(*argv, "chart.svg")
        assert r.code == 2 and "--force" in r.err
        assert (here / "chart.svg").read_text() == "<svg>mine</svg>"
        assert cli(*argv, "chart.svg", "--force").code == 0
        assert (here / "chart.svg").read_text().startswith("<?xml")


def test_write_file_names_what_it_refuses(tmp_path: Path) -> None:
    """The message is the name as the user typed it."""
    target = tmp_path / "x.txt"
    target.write_text("mine")
    with (
        pytest.raises(InputError, match=r"^'typed/x\.txt' exists"),
        write_file(target, shown="typed/x.txt"),
    ):
        pass
