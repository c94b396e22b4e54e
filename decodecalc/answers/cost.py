"""What a token costs in money and in energy (docs/physics.md, 'Cost and energy').

A deployment of N GPUs rented at P dollars per GPU-hour costs N x P / 3600 dollars a
second; in one step of t seconds it emits the batch's B tokens, so

    cost per million tokens = N x P / 3600 x t / B x 1e6
    joules per token        = W x N x t / B
    kWh per million tokens  = joules per token x 1e6 / 3.6e6

with W the board power of one GPU. The board's full TDP is an upper bound on what decode
draws (a memory-bound step leaves much of the chip idle), so the energy is a ceiling too."""

from __future__ import annotations

from typing import TYPE_CHECKING

from decodecalc.record import record

if TYPE_CHECKING:
    from decodecalc.scenarios.scenario import Scenario

SECONDS_PER_HOUR = 3600
JOULES_PER_KWH = 3_600_000
TOKENS_PER_MILLION = 1_000_000


@record
class CostEnergy:
    """Money and energy per output token of one step (None where the rate is unknown)."""

    cost_per_million_tokens: float | None
    """US dollars per million output tokens."""
    joules_per_token: float | None
    kwh_per_million_tokens: float | None


def cost_and_energy(
    seconds_per_step: float,
    tokens_per_step: float,
    gpus: int,
    price_per_gpu_hour: float | None,
    power_w: float | None,
) -> CostEnergy:
    """Cost per million output tokens and energy per token of a step that takes
    ``seconds_per_step`` on ``gpus`` GPUs and emits ``tokens_per_step`` tokens (the batch).

    >>> r = cost_and_energy(0.010, 1, 1, 3.6, 700)
    >>> round(r.cost_per_million_tokens, 6), r.joules_per_token
    (10.0, 7.0)
    """
    if not (seconds_per_step > 0 and tokens_per_step > 0 and gpus > 0):
        raise ValueError("a step needs positive seconds, tokens and GPUs")
    gpu_seconds_per_token = gpus * seconds_per_step / tokens_per_step
    cost = (
        None
        if price_per_gpu_hour is None
        else price_per_gpu_hour / SECONDS_PER_HOUR * gpu_seconds_per_token * TOKENS_PER_MILLION
    )
    joules = None if power_w is None else power_w * gpu_seconds_per_token
    kwh = None if joules is None else joules * TOKENS_PER_MILLION / JOULES_PER_KWH
    return CostEnergy(cost, joules, kwh)


def cost_factors(s: Scenario) -> CostEnergy | None:
    """Cost, joules and kWh per millisecond of step (None: neither a price nor a power is
    known): each figure is linear in the step, so a row's is its expected ms times these."""
    r = s.rates
    if r.price_per_gpu_hour is None and r.power_w is None:
        return None
    return cost_and_energy(0.001, s.batch, s.gpus, r.price_per_gpu_hour, r.power_w)


def scaled(factors: CostEnergy, scale: float) -> CostEnergy:
    """Each known figure times ``scale``: a step's, from cost_factors' per millisecond.

    >>> scaled(CostEnergy(2.0, None, 0.5), 3.0)
    CostEnergy(cost_per_million_tokens=6.0, joules_per_token=None, kwh_per_million_tokens=1.5)
    """
    return CostEnergy(
        *(
            None if value is None else value * scale
            for value in (
                factors.cost_per_million_tokens,
                factors.joules_per_token,
                factors.kwh_per_million_tokens,
            )
        )
    )
