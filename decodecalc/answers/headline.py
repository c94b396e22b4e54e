"""The headline figure of a step: what the scenario's engine is expected to measure, with
its band, or the roofline where the engine is 'roofline' (issue 19, "one headline figure").

Every figure a user acts on reads this one: tokens per second, compare's ratios, cost and
energy per token, plan's ranking and check's speed gates. The roofline stays beside it in
every table and document as the bound no engine beats, so a reader sees both and never
mistakes the bound for the forecast."""

from __future__ import annotations

from typing import TYPE_CHECKING

from decodecalc.record import record

if TYPE_CHECKING:
    from decodecalc.scenarios.scenario import Scenario
    from decodecalc.step.step import Row

EXPECTED = "expected"
ROOFLINE = "roofline"
BASES = (EXPECTED, ROOFLINE)
"""Which step a headline is: the engine's expected one, or the roofline (physics alone)."""


@record
class Headline:
    """One step as the figures users act on take it, with its band (a point: the roofline)."""

    seconds: float
    low_seconds: float
    high_seconds: float
    tokens_per_s: float
    """Per sequence: 1 / seconds."""
    throughput_tokens_per_s: float
    """All sequences of the batch: batch / seconds."""
    basis: str
    """One of BASES."""


def basis(s: Scenario) -> str:
    """Which step a scenario's figures take: its engine's expected step where the engine
    expects one (a profile, a fallback, the default 'typical' band), else the roofline."""
    return ROOFLINE if s.engine.is_roofline else EXPECTED


def headline(row: Row, s: Scenario) -> Headline:
    """A row's headline: its expected step where the scenario's engine expects one, else
    its roofline step (whose rates are the row's own)."""
    e = row.expected
    if e is None or basis(s) == ROOFLINE:
        t = row.seconds_per_token
        return Headline(t, t, t, row.tokens_per_s, row.throughput_tokens_per_s, ROOFLINE)
    return Headline(
        e.seconds, e.low_seconds, e.high_seconds, 1 / e.seconds, s.batch / e.seconds, EXPECTED
    )
