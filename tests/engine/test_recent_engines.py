"""The typical band from today's engines (engine/select.py recent_on): each profile's
newest release line fitted on a GPU family's own points and dated within the twelve months
before AS_OF; older lines only under NAME@LINE. Where no line there is so dated, the twelve
months to the newest date known there (current_on), said in a note."""

from __future__ import annotations

import json
from datetime import date

import pytest

from decodecalc.engine.profile import EngineParams, EngineProfile, ReleaseLine
from decodecalc.engine.select import AS_OF, current_on, recent, recent_on, typical
from decodecalc.loading.catalog import Catalog
from decodecalc.record import replace
from tests.conftest import Run

FAMILY = "nvidia-datacenter"


def test_the_window_is_the_365_days_before_as_of() -> None:
    assert date(2026, 12, 2) == AS_OF
    assert recent(["2025-12-02"])  # 2026-12-02 less 365 days (2026 is no leap year)
    assert not recent(["2025-12-01"])  # 366 days
    assert recent(["2026-05"])  # a month counts from its first day: 215 days
    assert not recent(["2025-11"])  # 2025-11-01: 396 days
    assert not recent(["2027-01-05"])  # after AS_OF: not yet
    assert not recent([]) and not recent([""])
    assert recent(["2024-05", "2026-05-22"])  # any date of the line


def test_amd_instinct_takes_today_s_lines_alone() -> None:
    """On AMD Instinct: vLLM's 0.19 line (MI355X, May 2026) and ATOM's May 2026 nightly;
    not SGLang 0.4 (February 2025), vLLM's 2025 pooled fit or gpt-fast on MI250X (no
    dated line)."""
    found = dict(recent_on(Catalog().engines(), "amd-instinct"))
    assert set(found) == {"vllm@0.19", "atom@2026-05"}
    assert all(p.points and not p.transferred for p in found.values())


def test_apple_takes_mlx_s_2026_line() -> None:
    """On Apple: MLX's 0.31 line (mlx-lm 0.31.1 on an M4 Max, 2026-03-30,
    validation/points-apple.yaml); llama.cpp's Metal builds are older than the window."""
    found = dict(recent_on(Catalog().engines(), "apple"))
    assert set(found) == {"mlx@0.31"}


def test_nvidia_datacenter_takes_the_12_months_to_its_newest_dated_line() -> None:
    """No NVIDIA datacenter line is dated within the 12 months to 2026-12-02, so the band
    takes the 12 months to the newest date known there (current_on), from
    presets/engines/*.yaml: vllm's 0.11 line (7 points there) names no date, its older
    0.10 line is dated 2025-08-12, so 0.11 is no older: the window ends 2025-08-12 (sglang
    0.5 is no older than 0.4's 2025-02-12, earlier). llama.cpp's 2023-12 line is dated
    2023-12: 2023-12-01 to 2025-08-12 is 30 + 365 + 225 = 620 days > 365, left out.
    lmdeploy 0.1 and tensorrt-llm 1.2 carry no dates and no older line, gpt-fast and
    torchao no lines: no date places them, so they vote."""
    profiles = Catalog().engines()
    assert recent_on(profiles, "nvidia-datacenter") == []
    chosen, window = current_on(profiles, "nvidia-datacenter")
    assert {n for n, _ in chosen} == {
        "gpt-fast",
        "lmdeploy@0.1",
        "sglang@0.5",
        "tensorrt-llm@1.2",
        "torchao",
        "vllm@0.11",
    }
    assert window is not None
    assert (window.end, window.newest) == ("2025-08-12", "vllm@0.11")
    assert window.older == ("llama.cpp@2023-12",)
    assert set(window.undated) == {"gpt-fast", "lmdeploy@0.1", "tensorrt-llm@1.2", "torchao"}
    assert typical(profiles, "nvidia-datacenter").names == tuple(n for n, _ in chosen)


def test_nvidia_consumer_takes_llama_cpp_s_2025_builds_and_vllm() -> None:
    """On NVIDIA consumer GPUs the newest dated line is llama.cpp's 2025-11 (its own
    date, 37 points): the window is the 12 months to 2025-11. MLC's only line, 2023-08, is
    2023-08-01 to 2025-11-01 = 823 days older, left out; vllm's 0.15 line names no date
    but is no older than 0.10's 2025-08-12: it votes."""
    profiles = Catalog().engines()
    assert recent_on(profiles, "nvidia-consumer") == []
    chosen, window = current_on(profiles, "nvidia-consumer")
    assert {n for n, _ in chosen} == {"llama.cpp@2025-11", "vllm@0.15"}
    assert window is not None
    assert (window.end, window.newest) == ("2025-11", "llama.cpp@2025-11")
    assert window.older == ("mlc@2023-08",) and window.undated == ()


def _dated(name: str, lines: tuple[tuple[str, str, int], ...]) -> EngineProfile:
    """A profile on FAMILY with release lines (release, date or '', points there)."""
    params = EngineParams(0.8, 0.7, points=10)
    return EngineProfile(
        name,
        name,
        ((FAMILY, params),),
        lines=tuple(
            ReleaseLine(
                release,
                dates=(day,) if day else (),
                families=((FAMILY, replace(params, points=n)),) if n else (),
            )
            for release, day, n in lines
        ),
    )


def test_the_window_ends_at_the_newest_date_known_and_keeps_the_undated() -> None:
    """Four profiles, none dated within the 365 days before 2026-12-02: "new" has a line
    1.0 dated 2024-03-10 without points on the family and a 2.0 line without date, fitted
    there (its vote, no older than 2024-03-10: the window's end);
    "mid" a line dated 2023-04-01, 344 days before 2024-03-10 (2023 has 365 days, so
    2023-04-01 to 2024-03-10 is 274 + 70 = 344): in; "old" a line dated 2023-03-01, 375
    days before: out; "bare" a line without date: in, undated."""
    new = _dated("new", (("1.0", "2024-03-10", 0), ("2.0", "", 5)))
    mid = _dated("mid", (("1.0", "2023-04-01", 5),))
    old = _dated("old", (("1.0", "2023-03-01", 5),))
    bare = _dated("bare", (("1.0", "", 5),))
    chosen, window = current_on([new, mid, old, bare], FAMILY)
    assert [n for n, _ in chosen] == ["new@2.0", "mid@1.0", "bare@1.0"]
    assert window is not None
    assert (window.end, window.newest) == ("2024-03-10", "new@2.0")
    assert (window.older, window.undated) == (("old@1.0",), ("bare@1.0",))


def test_without_any_date_every_measured_profile_votes() -> None:
    """Where no line measured on the family is dated, none can be shown old: every
    profile measured there votes (measured_on), with no window."""
    bare = _dated("bare", (("1.0", "", 5),))
    other = _dated("other", (("0.1", "", 5),))
    chosen, window = current_on([bare, other], FAMILY)
    assert window is None and [n for n, _ in chosen] == ["bare@1.0", "other@0.1"]


def test_the_window_note_says_which_months_and_lines(cli: Run) -> None:
    """The default answer on an H100 says that no NVIDIA datacenter line is dated within
    the 12 months to 2026-12-02, the months taken instead, the line left out and those
    voting undated; on an MI300X (lines of May 2026) no such note."""
    doc = json.loads(cli("estimate", "-m", "llama-3.1-8b", "-g", "h100-sxm", "--json").out)
    (note,) = [n["message"] for n in doc["notes"] if n["code"] == "typical-window"]
    assert note == (
        "typical: no nvidia-datacenter line is dated in the 12 months to 2026-12-02; votes "
        "from the 12 months to 2025-08-12 (vllm@0.11), without llama.cpp@2023-12; undated: "
        "gpt-fast, lmdeploy@0.1, tensorrt-llm@1.2, torchao"
    )
    doc = json.loads(cli("estimate", "-m", "llama-3.1-8b", "-g", "mi300x", "--json").out)
    assert not [n for n in doc["notes"] if n["code"] == "typical-window"]


def test_the_h100_band_no_longer_reaches_llama_cpp_2023_s_top(cli: Run) -> None:
    """Issue 28: Llama-3.1-8B on an H100 at 8K had a typical band topped by llama.cpp's
    December 2023 profile times its outside band. Now its high end is below that vote's
    (as ``--engine llama.cpp@2023-12`` prints it), the band holds the expected figure, and
    the expected figure is at or above the bandwidth roofline: 16.08 GB (15.01 GB of
    weights + 1.07 GB of KV at 8,192 tokens) over 3.35 TB/s = 4.80 ms."""
    args = ("estimate", "-m", "llama-3.1-8b", "-g", "h100-sxm", "-c", "8K", "--json")
    row = json.loads(cli(*args).out)["rows"][0]
    old = json.loads(cli(*args, "--engine", "llama.cpp@2023-12").out)["rows"][0]
    assert row["expected_high_ms_per_token"] < old["expected_high_ms_per_token"]
    assert row["expected_low_ms_per_token"] <= row["expected_ms_per_token"]
    assert row["expected_ms_per_token"] <= row["expected_high_ms_per_token"]
    assert row["expected_ms_per_token"] >= 16.08e9 / 3.35e12 * 1e3


def test_the_preset_states_its_lines_dates_as_the_lines_hold_them() -> None:
    """loading/presets.py reads each family's latest line date without parsing the lines
    (so a default query parses none where none is recent): the same dates the parsed
    lines give, for every shipped profile."""
    for profile in Catalog().engines():
        parsed: dict[str, str] = {}
        for line in profile.release_lines():
            for family, params in line.families:
                if line.dates and not params.transferred:
                    parsed[family] = max([*line.dates, parsed.get(family, "")])
        stated = profile.latest_dates
        assert stated is None or dict(stated) == parsed, profile.id


def test_the_typical_band_names_its_lines(cli: Run) -> None:
    """explain names each profile of the typical band by its line."""
    shown = cli("explain", "-m", "llama-3.1-70b", "-g", "mi355x", "--tp", "8").out
    seven = shown.split("7. What a typical engine would measure")[1].split("Assumptions")[0]
    assert "atom@2026-05:" in seven and "vllm@0.19:" in seven and "sglang" not in seven


@pytest.mark.parametrize("gpu", ["h100-sxm", "a100-80gb", "rtx-4090", "mi300x", "m4-max-128gb"])
@pytest.mark.parametrize("batch", ["1", "64"])
def test_the_typical_band_holds_its_figure_above_the_roofline(
    cli: Run, gpu: str, batch: str
) -> None:
    """On each family, whichever months its votes come from, the band's low end is at or
    above the roofline and the expected figure lies inside the band, at every context
    asked (within_band's order: roofline <= low <= expected <= high)."""
    args = ("estimate", "-m", "llama-3.1-8b", "-g", gpu, "-c", "1K,32K", "--batch", batch)
    rows = json.loads(cli(*args, "--json").out)["rows"]
    assert len(rows) >= 2  # (and the crossover's row, where it lies between)
    for row in rows:
        low, mid = row["expected_low_ms_per_token"], row["expected_ms_per_token"]
        assert row["roofline_ms_per_token"] <= low <= mid <= row["expected_high_ms_per_token"]
