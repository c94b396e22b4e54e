"""Paths the user types with a ``~``: an unknown user (``~0``, ``~nosuchuser``) or no home
directory at all is a wrong name like any other (one line, exit 2), never a traceback.

``Path.expanduser`` raises RuntimeError for both; every entry point that takes a path or a
preset name is tried here, since each once expanded the name on its own.
"""

from __future__ import annotations

import os
import pwd
from pathlib import Path

import pytest

from decodecalc.errors import InputError
from decodecalc.loading import cache
from decodecalc.loading.saved import calibration_path
from decodecalc.paths import expand_user, xdg_dir
from tests.conftest import Result, Run

QUERY = ("-m", "llama-3.1-8b", "-g", "h100-sxm", "-c", "1K")
"""A valid estimate, to which each test adds the one path under test."""


def no_such_user() -> str:
    """A user name with no password entry on this machine (``~0``: no account is named 0)."""
    with pytest.raises(KeyError):
        pwd.getpwnam("0")
    return "~0"


def one_error(result: Result, message: str) -> None:
    assert result.code == 2, result.err
    assert result.err.splitlines() == [f"decodecalc: error: {message}"]


@pytest.fixture
def in_tmp(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """Run in an empty directory: a name left unexpanded is then a relative path that
    does not exist (and anything written under it lands in tmp_path)."""
    monkeypatch.chdir(tmp_path)
    return tmp_path


@pytest.fixture
def homeless(monkeypatch: pytest.MonkeyPatch) -> None:
    """No $HOME and no password entry for this account, as in some containers."""
    for variable in ("HOME", "XDG_CONFIG_HOME", "XDG_CACHE_HOME", "DECODECALC_CALIBRATION"):
        monkeypatch.delenv(variable, raising=False)

    def no_entry(uid: int) -> pwd.struct_passwd:
        raise KeyError(f"getpwuid(): uid not found: {uid}")

    monkeypatch.setattr(pwd, "getpwuid", no_entry)


class TestExpandUser:
    def test_an_unknown_user_is_left_as_typed(self) -> None:
        user = no_such_user()
        assert expand_user(user) == Path(user)
        assert expand_user(f"{user}/x.yaml") == Path(user, "x.yaml")

    def test_a_name_that_cannot_be_a_user_is_left_as_typed(self) -> None:
        # os.path.expanduser refuses to look up a name holding a NUL byte (ValueError).
        assert expand_user("~a\0b/x") == Path("~a\0b/x")

    def test_home_is_expanded(self, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
        monkeypatch.setenv("HOME", str(tmp_path))
        assert expand_user("~/m.yaml") == tmp_path / "m.yaml"
        assert expand_user(Path("~")) == tmp_path
        assert expand_user("models/~x") == Path("models/~x")  # only a leading ~

    @pytest.mark.usefixtures("homeless")
    def test_no_home_leaves_the_tilde(self) -> None:
        assert expand_user("~/m.yaml") == Path("~/m.yaml")
        assert xdg_dir("XDG_CACHE_HOME", ".cache") is None

    def test_xdg_variable_wins(self, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
        monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
        assert xdg_dir("XDG_CACHE_HOME", ".cache") == tmp_path
        monkeypatch.delenv("XDG_CACHE_HOME")
        monkeypatch.setenv("HOME", str(tmp_path))
        assert xdg_dir("XDG_CACHE_HOME", ".cache") == tmp_path / ".cache"


@pytest.mark.usefixtures("in_tmp")
class TestUnknownUser:
    def test_model_name(self, cli: Run) -> None:
        user = no_such_user()
        one_error(
            cli("estimate", *QUERY, "-m", user),
            f"unknown model {user!r} ('decodecalc models' lists them)",
        )

    def test_model_file(self, cli: Run) -> None:
        one_error(
            cli("estimate", *QUERY, "-m", "~nosuchuser/x.yaml"),
            "model file '~nosuchuser/x.yaml' does not exist",
        )

    def test_show(self, cli: Run) -> None:
        user = no_such_user()
        one_error(cli("show", user), f"unknown model {user!r} ('decodecalc models' lists them)")

    def test_presets_option(self, cli: Run) -> None:
        user = no_such_user()
        one_error(
            cli("estimate", *QUERY, "--presets", user), f"presets directory {user!r} does not exist"
        )

    def test_presets_variable(self, cli: Run, monkeypatch: pytest.MonkeyPatch) -> None:
        user = no_such_user()
        monkeypatch.setenv("DECODECALC_PRESETS", user)
        one_error(
            cli("estimate", *QUERY),
            f"presets directory {user!r} (from $DECODECALC_PRESETS) does not exist",
        )

    def test_import(self, cli: Run) -> None:
        config = f"{no_such_user()}/config.json"
        one_error(cli("import", config, "--name", "x"), f"config file {config!r} does not exist")

    def test_calibrate_points(self, cli: Run) -> None:
        points = f"{no_such_user()}/points.yaml"
        one_error(cli("calibrate", points), f"measured file {points!r} does not exist")

    def test_calibration_variable(self, cli: Run, monkeypatch: pytest.MonkeyPatch) -> None:
        user = no_such_user()
        monkeypatch.setenv("DECODECALC_CALIBRATION", user)
        one_error(
            cli("estimate", *QUERY, "-e", "calibrated"),
            f"no calibration at {user}: run 'decodecalc calibrate POINTS.yaml --save' first",
        )

    def test_check_file(self, cli: Run) -> None:
        file = f"{no_such_user()}/deploy.yaml"
        one_error(cli("check", file), f"{file}: no such file")

    @pytest.mark.parametrize("key", ["model", "vllm_config"])
    def test_deployment_references(self, cli: Run, in_tmp: Path, key: str) -> None:
        """A model or vLLM config named in a deployment file, by an unknown user's path."""
        reference = f"{no_such_user()}/x.yaml"
        deploy = in_tmp / "d.yaml"
        deploy.write_text(
            f"name: d\n{key}: {reference}\ngpu: h100-sxm\ntargets:\n  max_ms_per_token: 40\n"
        )
        result = cli("check", str(deploy))
        assert result.code == 2, result.err
        assert len(result.err.splitlines()) == 1
        assert result.err.startswith(f"decodecalc: error: {deploy}:2:")
        assert reference in result.err and "Traceback" not in result.err

    def test_deployment_model_name(self, cli: Run, in_tmp: Path) -> None:
        user = no_such_user()
        deploy = in_tmp / "d.yaml"
        deploy.write_text(
            f"name: d\nmodel: '{user}'\ngpu: h100-sxm\ntargets:\n  max_ms_per_token: 40\n"
        )
        one_error(
            cli("check", str(deploy)),
            f"{deploy}:2:8: model: unknown model {user!r} ('decodecalc models' lists them)",
        )

    @pytest.mark.parametrize(
        "args",
        [
            ("estimate", *QUERY, "--output", "~0/out.csv"),
            ("estimate", *QUERY, "--plot", "~0/out.svg"),
            ("import", "~0/config.json", "--name", "x", "--output", "~0/x.yaml"),
        ],
        ids=["output", "plot", "import-output"],
    )
    def test_output_files(self, cli: Run, args: tuple[str, ...]) -> None:
        """Writing under an unknown user's home: the directory does not exist."""
        result = cli(*args)
        assert result.code == 2, result.err
        # (--plot draws after the table and its notes: the typical band's extrapolation)
        errors = [x for x in result.err.splitlines() if not x.startswith("decodecalc: note:")]
        assert len(errors) == 1 and errors[0].startswith("decodecalc: error:")
        assert "~0/" in errors[0]


@pytest.mark.usefixtures("homeless", "in_tmp")
class TestNoHome:
    def test_home_model_file(self, cli: Run) -> None:
        one_error(cli("estimate", *QUERY, "-m", "~/m.yaml"), "model file '~/m.yaml' does not exist")

    def test_home_presets(self, cli: Run) -> None:
        one_error(cli("estimate", *QUERY, "--presets", "~"), "presets directory '~' does not exist")

    def test_saved_calibration_needs_a_place(self, cli: Run) -> None:
        """Not a relative ./~/.config/... in whatever directory the command runs in."""
        with pytest.raises(InputError, match="DECODECALC_CALIBRATION"):
            calibration_path()
        one_error(
            cli("estimate", *QUERY, "-e", "calibrated"),
            "no home directory to keep the calibration in: set $DECODECALC_CALIBRATION",
        )
        assert os.listdir() == []

    def test_cache_is_off(self, monkeypatch: pytest.MonkeyPatch, cli: Run) -> None:
        monkeypatch.delenv("DECODECALC_CACHE")
        assert cache.cache_dir() is None
        r = cli("estimate", *QUERY)
        assert r.code == 0 and "Llama-3.1-8B on NVIDIA H100 SXM" in r.out, r.err
        assert os.listdir() == []  # no ./~/.cache


def test_cache_variable_expands_home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HOME", str(tmp_path))
    monkeypatch.setenv("DECODECALC_CACHE", "~/c")
    assert cache.cache_dir() == tmp_path / "c"


def test_home_model_file_is_read(cli: Run, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The working case still works: ``~/`` is the home directory."""
    monkeypatch.setenv("HOME", str(tmp_path))
    preset = Path(__file__).resolve().parents[2] / "presets" / "models" / "llama-3.1-8b.yaml"
    (tmp_path / "m.yaml").write_text(preset.read_text())
    result = cli("estimate", *QUERY, "-m", "~/m.yaml")
    assert result.code == 0, result.err
