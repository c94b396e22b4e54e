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
        raise AssertionError(f"looked up the entry of {path} despite a fresh entry for the set")

    monkeypatch.setattr(cache, "entry", refuse)
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


def test_a_link_pointed_at_another_file_with_the_same_times(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Size and modification time alone would take a same-sized file behind a re-pointed
    link (Nix stores, cp -p) for the one cached: the file's identity is in the key."""
    monkeypatch.setenv("DECODECALC_CACHE", str(tmp_path / "cache"))
    for version, bandwidth in (("v1", "300GB/s"), ("v2", "250GB/s")):
        (tmp_path / version / "gpus").mkdir(parents=True)
        (tmp_path / version / "gpus" / "mine.yaml").write_text(L4.replace("300GB/s", bandwidth))
        os.utime(tmp_path / version / "gpus" / "mine.yaml", ns=(1, 1))
    link = tmp_path / "current"
    link.symlink_to(tmp_path / "v1")
    assert Catalog((link,)).gpu("mine").bandwidth_bytes_per_s == 300 * 10**9
    link.unlink()
    link.symlink_to(tmp_path / "v2")
    assert Catalog((link,)).gpu("mine").bandwidth_bytes_per_s == 250 * 10**9


def test_an_unreadable_presets_folder_is_one_line(
    user_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    def refuse(self: Path) -> None:
        raise PermissionError(13, "Permission denied")

    monkeypatch.setattr(Path, "iterdir", refuse)
    with pytest.raises(InputError, match=r"presets directory .*gpus' cannot be read"):
        Catalog((user_dir,)).gpus()


def test_one_entry_per_listing_whatever_was_loaded_first(user_dir: Path) -> None:
    """A listing's entry covers every file of it, those a query named first included, so
    queries naming different presets share it."""
    two_gpus(user_dir)
    Catalog((user_dir,)).gpus()
    catalog = Catalog((user_dir,))
    catalog.gpu("yours")
    catalog.gpus()
    assert len(list((user_dir / "cache").glob("gpus-set-*"))) == 1


@pytest.mark.parametrize(
    ("block", "where"),
    [("  amd-instinct:", "families.amd-instinct"), ("\nlines:", "lines")],
)
def test_a_bad_family_or_line_is_refused_with_its_line_every_time(
    user_dir: Path, block: str, where: str
) -> None:
    """An engine profile's families and release lines are parsed on first use, but one
    read from its file is checked whole: the error names the line, and nothing is cached
    that a later query would trip on without it."""
    text = (presets_dir() / "engines" / "vllm.yaml").read_text()
    start = text.index(block)
    bad = text[:start] + text[start:].replace("weight_efficiency: 0.", "weight_efficiency: 9", 1)
    (user_dir / "engines").mkdir()
    (user_dir / "engines" / "bad.yaml").write_text(bad)
    line = bad[: bad.index("weight_efficiency: 9")].count("\n") + 1
    for _ in range(2):
        with pytest.raises(InputError, match=f"bad.yaml:{line}:.*{where}.*weight_efficiency"):
            Catalog((user_dir,)).engine("bad")


def test_an_unknown_config_field_is_refused_every_time(user_dir: Path) -> None:
    """A cached model skips the unknown-field check it passed when it was stored; a file
    that fails it never reaches the cache, so every read refuses it."""
    text = (presets_dir() / "models" / "llama-3.2-1b.yaml").read_text()
    (user_dir / "models").mkdir()
    (user_dir / "models" / "odd.yaml").write_text(
        text.replace("config:\n", "config:\n  odd_thing: 3\n")
    )
    for _ in range(2):
        with pytest.raises(InputError, match="odd_thing: not a field"):
            Catalog((user_dir,)).model("odd")
    assert not list((user_dir / "cache").glob("odd-*"))
