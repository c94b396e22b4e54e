"""TP all-reduces, the fixed overhead per step and the notes they bring, worked by hand."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from decodecalc.answers.estimate import estimate
from decodecalc.loading.catalog import Catalog
from tests.conftest import Run
from tests.conftest import preset_scenario as h100

DATA = Path(__file__).parents[1] / "data" / "measured-decode.yaml"


class TestCommunicationAndOverhead:
    def test_tp8_all_reduce(self, catalog: Catalog) -> None:
        # Llama-3.1-70B, TP 8 over NVLink 4 (450 GB/s one way, 10 us per all-reduce), B = 16:
        # message 16 x 8,192 x 2 bytes = 262,144; ring 2 x 7/8 x 262,144 / 450e9 = 1.019449 us;
        # 2 all-reduces x 80 layers x (10 + 1.019449) us = 1.763112 ms.
        s = h100(
            catalog, "llama-3.1-70b", "fp8", "fp8", tp=8, batch=16, link=catalog.link("nvlink4")
        )
        row = estimate(s, [8192]).rows[0]
        assert row.comm_seconds == pytest.approx(1.763112e-3, rel=1e-6)
        assert row.seconds_per_token == pytest.approx(row.memory_seconds + row.comm_seconds)

    def test_overhead_adds_to_every_step(self, catalog: Catalog) -> None:
        base = estimate(h100(catalog, "llama-3.1-8b"), [1024]).rows[0].seconds_per_token
        slow = estimate(h100(catalog, "llama-3.1-8b", overhead_s=0.0003), [1024]).rows[0]
        assert slow.seconds_per_token == pytest.approx(base + 0.0003)

    def test_cli_needs_a_link_for_tp(self, cli: Run) -> None:
        r = cli("estimate", "-m", "llama-3.1-8b", "-b", "3TB/s", "--tp", "2")
        assert r.code == 2 and "needs an interconnect" in r.err
        ok = cli(
            "estimate", "-m", "llama-3.1-8b", "-b", "3TB/s", "--tp", "2", "--link", "none", "--json"
        )
        assert ok.code == 0 and json.loads(ok.out)["rows"][0]["comm_ms"] == 0

    def test_tiny_model_note(self, cli: Run) -> None:
        # Llama-3.2-1B BF16 streams about 2.5 GB per step: 2.5e9 / 8e12 B/s = 0.31 ms on a B200.
        # With an engine's expected step (the default, typical) its fixed costs are in the
        # figures already, so the note is for the roofline alone.
        args = ("estimate", "-m", "llama-3.2-1b", "-g", "b200", "-c", "1K", "--engine", "roofline")
        assert "kernel launches and scheduling likely dominate" in cli(*args).err
        assert "launch" not in cli(*args[:-2]).err
        r = cli(*args, "--json")
        assert "launch-bound" in [n["code"] for n in json.loads(r.out)["notes"]]
        assert "kernel launches and scheduling likely dominate" in r.err

    def test_json_terms(self, cli: Run) -> None:
        doc = json.loads(
            cli(
                "estimate",
                "-m",
                "llama-3.1-8b",
                "-g",
                "h100",
                "-c",
                "0",
                "--batch",
                "512",
                "--json",
            ).out
        )
        row = doc["rows"][0]
        assert row["bound"] == "compute" and row["comm_ms"] == 0 and row["overhead_ms"] == 0
        assert row["compute_ms"] > row["memory_ms"]
        assert doc["ridge_batch"] == 296
