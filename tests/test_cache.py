"""The preset cache: a speed-up that can never change an answer."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from decodecalc.errors import InputError
from decodecalc.loading import cache
from decodecalc.loading.catalog import Catalog, presets_dir

L4 = (presets_dir() / "gpus" / "l4.yaml").read_text()


@pytest.fixture
def user_dir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("DECODECALC_CACHE", str(tmp_path / "cache"))
    (tmp_path / "gpus").mkdir()
    (tmp_path / "gpus" / "mine.yaml").write_text(L4)
    return tmp_path


def forbid_yaml(monkeypatch: pytest.MonkeyPatch) -> None:
    def refuse(path: Path) -> None:
        raise AssertionError(f"read {path} from YAML despite a fresh cache entry")

    monkeypatch.setattr("decodecalc.loading.catalog.read_yaml", refuse)


def test_second_load_comes_from_the_cache(user_dir: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    first = Catalog((user_dir,)).gpu("mine")
    forbid_yaml(monkeypatch)
    assert Catalog((user_dir,)).gpu("mine") == first


def test_edited_file_is_read_again(user_dir: Path) -> None:
    Catalog((user_dir,)).gpu("mine")
    path = user_dir / "gpus" / "mine.yaml"
    path.write_text(L4.replace("300GB/s", "250GB/s"))
    os.utime(path, ns=(1, 1))  # a different mtime even on coarse clocks
    assert Catalog((user_dir,)).gpu("mine").bandwidth_bytes_per_s == 250 * 10**9


def test_an_edit_that_breaks_the_file_is_reported(user_dir: Path) -> None:
    Catalog((user_dir,)).gpu("mine")
    path = user_dir / "gpus" / "mine.yaml"
    path.write_text(L4 + "bogus: 1\n")
    with pytest.raises(InputError, match="bogus: unknown field"):
        Catalog((user_dir,)).gpu("mine")


def test_corrupt_entry_falls_back_to_yaml(user_dir: Path) -> None:
    Catalog((user_dir,)).gpu("mine")
    for entry in (user_dir / "cache").iterdir():
        entry.write_text("{not json")
    assert Catalog((user_dir,)).gpu("mine").bandwidth_bytes_per_s == 300 * 10**9


def test_off_disables_it(user_dir: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("DECODECALC_CACHE", "off")
    assert cache.cache_dir() is None
    Catalog((user_dir,)).gpu("mine")
    assert not (user_dir / "cache").exists()


def test_unwritable_cache_is_ignored(user_dir: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    blocker = user_dir / "file"
    blocker.write_text("")
    monkeypatch.setenv("DECODECALC_CACHE", str(blocker / "sub"))
    assert Catalog((user_dir,)).gpu("mine").bandwidth_bytes_per_s == 300 * 10**9


def test_default_location(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.delenv("DECODECALC_CACHE")
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    assert cache.cache_dir() == tmp_path / "decodecalc"


def two_gpus(user_dir: Path) -> Path:
    (user_dir / "gpus" / "yours.yaml").write_text(L4.replace("NVIDIA L4", "Yours"))
    return user_dir


def test_a_listing_comes_from_one_entry(user_dir: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    first = Catalog((two_gpus(user_dir),)).gpus()
    forbid_yaml(monkeypatch)

    def refuse(path: Path) -> None:
        raise AssertionError(f"opened the entry of {path} despite a fresh entry for the set")

    monkeypatch.setattr(cache, "load", refuse)
    assert Catalog((user_dir,)).gpus() == first


def test_an_edit_refreshes_the_listing(user_dir: Path) -> None:
    Catalog((two_gpus(user_dir),)).gpus()
    path = user_dir / "gpus" / "mine.yaml"
    path.write_text(L4.replace("300GB/s", "250GB/s"))
    os.utime(path, ns=(1, 1))
    mine = [g for g in Catalog((user_dir,)).gpus() if g.id == "mine"]
    assert [g.bandwidth_bytes_per_s for g in mine] == [250 * 10**9]


def test_a_new_file_joins_the_listing(user_dir: Path) -> None:
    Catalog((two_gpus(user_dir),)).gpus()
    (user_dir / "gpus" / "third.yaml").write_text(L4)
    assert [g.id for g in Catalog((user_dir,)).gpus()] == ["mine", "third", "yours"]


def test_a_corrupt_set_entry_falls_back(user_dir: Path) -> None:
    Catalog((two_gpus(user_dir),)).gpus()
    for entry in (user_dir / "cache").glob("gpus-set-*"):
        entry.write_text('{"key": 1, "data": [')
    assert len(Catalog((user_dir,)).gpus()) == 2


def test_a_bad_family_is_refused_with_its_line_every_time(user_dir: Path) -> None:
    """An engine profile's families are parsed on first use, but one read from its file is
    checked whole, so it never reaches the cache and its error names the line."""
    text = (presets_dir() / "engines" / "vllm.yaml").read_text()
    amd = text.index("  amd-instinct:")
    bad = text[:amd] + text[amd:].replace("weight_efficiency: 0.", "weight_efficiency: 7", 1)
    (user_dir / "engines").mkdir()
    (user_dir / "engines" / "bad.yaml").write_text(bad)
    line = bad[: bad.index("weight_efficiency: 7")].count("\n") + 1
    for _ in range(2):
        with pytest.raises(InputError, match=f"bad.yaml:{line}:.*amd-instinct.weight_efficiency"):
            Catalog((user_dir,)).engine("bad")
