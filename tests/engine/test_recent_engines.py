"""The typical band from today's engines (engine/select.py recent_on): each profile's
newest release line fitted on a GPU family's own points and dated within the twelve months
before AS_OF; older lines only under NAME@LINE."""

from __future__ import annotations

from datetime import date

import pytest

from decodecalc.engine.select import AS_OF, recent, recent_on
from decodecalc.loading.catalog import Catalog
from tests.conftest import Run


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


@pytest.mark.parametrize("family", ["nvidia-datacenter", "nvidia-consumer"])
def test_a_family_without_a_recent_line_keeps_every_profile(family: str) -> None:
    """No NVIDIA line carries a date within the window (vLLM 0.11 and SGLang 0.5 name
    none; llama.cpp's newest CUDA builds are of November 2025): the typical band there is
    every profile measured on the family, as before."""
    from decodecalc.engine.select import measured_on, typical

    profiles = Catalog().engines()
    assert recent_on(profiles, family) == []
    assert typical(profiles, family).names == tuple(n for n, _ in measured_on(profiles, family))


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
