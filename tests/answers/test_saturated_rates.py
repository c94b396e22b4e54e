"""serving --request-rate with some rates past saturation reports the rates the server
sustains and marks the others as saturated, with the replicas each would need; one rate
past saturation in a list no longer refuses the whole run."""

from __future__ import annotations

import json
import math

import pytest

from decodecalc.answers.serving import Saturated
from tests.conftest import Run

SERVING = [
    "serving", "-m", "llama-3.1-8b", "-g", "h100-sxm", "--input-len", "1000",
    "--output-len", "500",
]  # fmt: skip


@pytest.mark.parametrize(
    ("rate", "saturation", "replicas"),
    [
        (5.0, 4.03, 2),  # 5 / 4.03 = 1.24: two replicas take 2.5/s each
        (8.06, 4.03, 3),  # exactly twice: two would each sit at saturation, so three
        (4.03, 4.03, 2),  # at saturation the queue already grows without bound
        (50.0, 16.91, 3),  # 50 / 16.91 = 2.96
    ],
)
def test_replicas_needed(rate: float, saturation: float, replicas: int) -> None:
    assert Saturated(rate, saturation).replicas_needed == replicas


def test_the_sustained_rates_are_reported_and_the_others_marked(cli: Run) -> None:
    result = cli(*SERVING, "--request-rate", "1,3,50,90", "--json")
    assert result.code == 0, result.err
    doc = json.loads(result.out)
    saturation = doc["saturation_rate_per_s"]
    assert 3 < saturation < 50  # the case holds: two rates below it, two above
    assert [r["request_rate_per_s"] for r in doc["rows"]] == [1.0, 3.0]
    assert doc["saturated"] == [
        {
            "request_rate_per_s": rate,
            "saturation_rate_per_s": saturation,
            "replicas_needed": math.floor(rate / saturation) + 1,
        }
        for rate in (50.0, 90.0)
    ]
    codes = [n["code"] for n in doc["notes"]]
    assert codes.count("serving-saturated") == 2
    assert "request rate 50/s is saturated" in result.err


def test_the_table_shows_the_sustained_rates_and_notes_the_others(cli: Run) -> None:
    result = cli(*SERVING, "--request-rate", "1,50")
    assert result.code == 0
    assert "request rate 50/s is saturated" in result.err and "replicas" in result.err
    assert "saturated at 50 requests/s (no row: it would need" in " ".join(result.out.split())


def test_no_rate_sustained_is_still_refused(cli: Run) -> None:
    result = cli(*SERVING, "--request-rate", "50,90")
    assert result.code == 2 and result.out == ""
    assert "reaches the server's saturation rate" in result.err


DISAGGREGATED = [
    "serving", "-m", "llama-3.1-70b", "-g", "h100-sxm", "-w", "fp8", "--tp", "2",
    "--input-len", "4K", "--output-len", "500", "--prefill-workers", "1",
    "--decode-workers", "1",
]  # fmt: skip


def test_disaggregated_pools_skip_a_saturated_rate_as_one_server_does(cli: Run) -> None:
    """The same rate list in both modes: the sustained rates get rows, the others an entry
    with the replicas (of the whole deployment) each would need, and the run succeeds."""
    result = cli(*DISAGGREGATED, "--request-rate", "1,100", "--json")
    assert result.code == 0, result.err
    doc = json.loads(result.out)
    saturation = min(doc["prefill_saturation_rate_per_s"], doc["decode_saturation_rate_per_s"])
    assert 1 < saturation < 100  # the case holds: one rate below it, one above
    assert [r["request_rate_per_s"] for r in doc["rows"]] == [1.0]
    assert doc["saturated"] == [
        {
            "request_rate_per_s": 100.0,
            "saturation_rate_per_s": saturation,
            "replicas_needed": math.floor(100 / saturation) + 1,
        }
    ]
    assert [n["code"] for n in doc["notes"]].count("serving-saturated") == 1
    assert "request rate 100/s is saturated: it reaches the pools' saturation rate" in result.err


def test_disaggregated_pools_refuse_when_no_rate_is_sustained(cli: Run) -> None:
    result = cli(*DISAGGREGATED, "--request-rate", "100")
    assert result.code == 2 and result.out == ""
    assert "reaches the pools' saturation rate" in result.err
