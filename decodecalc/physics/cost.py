"""What a token costs in money and in energy (docs/physics.md, 'Cost and energy').

A deployment of N GPUs rented at P dollars per GPU-hour costs N x P / 3600 dollars a
second; in one step of t seconds it emits the batch's B tokens, so

    cost per million tokens = N x P / 3600 x t / B x 1e6
    joules per token        = W x N x t / B
    kWh per million tokens  = joules per token x 1e6 / 3.6e6

with W the board power of one GPU. The board's full TDP is an upper bound on what decode
draws (a memory-bound step leaves much of the chip idle), so the energy is a ceiling too.
Pure arithmetic with no imports from the rest of decodecalc: the serving and plan
commands call cost_and_energy directly.
"""

from __future__ import annotations

import math
import re

from decodecalc.errors import InputError
from decodecalc.record import record

SECONDS_PER_HOUR = 3600
JOULES_PER_KWH = 3_600_000
TOKENS_PER_MILLION = 1_000_000
MAX_PRICE = 10_000.0
"""Dollars per GPU-hour above which a figure is a typo (no GPU rents for $10,000 an hour)."""
MAX_POWER_W = 100_000.0
"""Watts per GPU above which a figure is a typo (the largest boards draw about 1.5 kW)."""


@record
class Rates:
    """What a GPU-hour costs and what a GPU draws, with where each figure came from
    (None: unknown, and the figures that need it are left out, never guessed)."""

    price_per_gpu_hour: float | None = None
    """US dollars per GPU per hour."""
    price_source: str = ""
    """The price list's id it came from, or 'given'."""
    price_date: str = ""
    """When the price list's prices were read (empty for a given price)."""
    power_w: float | None = None
    """Board power per GPU in watts (its TDP: an upper bound)."""
    power_source: str = ""
    """The GPU preset's id or 'given'."""


@record
class PriceList:
    """One cloud's on-demand list prices, per GPU preset, as read on one date."""

    id: str
    name: str
    source: str
    date: str
    """When the prices were read from the source (ISO date)."""
    prices: tuple[tuple[str, float], ...]
    """(GPU preset id, US dollars per GPU-hour)."""
    notes: str = ""
    aliases: tuple[str, ...] = ()

    def price(self, gpu_id: str) -> float | None:
        return dict(self.prices).get(gpu_id)


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


_PRICE = re.compile(
    r"^\$?(?P<number>[0-9]*\.?[0-9]+(?:e[+-]?[0-9]+)?)\s*(?:\$|usd)?\s*(?:/\s*(?:gpu-?)?(?:h|hr|hour))?$"
)
_POWER = re.compile(r"^(?P<number>[0-9]*\.?[0-9]+(?:e[+-]?[0-9]+)?)\s*(?P<unit>w|kw)?$")


def parse_price(text: str) -> float | None:
    """US dollars per GPU-hour from ``2.49``, ``2.49USD/h``, ``$2.49/hr`` or ``2.49/GPU-hour``;
    None when the text is no number (it may name a price preset instead)."""
    found = _PRICE.match(text.strip().lower())
    if found is None:
        return None
    return _checked(float(found["number"]), MAX_PRICE, f"price {text!r}", "dollars per GPU-hour")


def parse_power(text: str) -> float:
    """Watts from ``700``, ``700W`` or ``1.2kW``."""
    found = _POWER.match(text.strip().lower())
    if found is None:
        raise InputError(f"power {text!r} is not a number of watts, e.g. 700W or 1.2kW")
    scale = 1000 if found["unit"] == "kw" else 1
    return _checked(float(found["number"]) * scale, MAX_POWER_W, f"power {text!r}", "watts")


def checked_price(value: float, what: str) -> float:
    """A price given as a number (the Python API, a preset) held to the same bounds."""
    return _checked(float(value), MAX_PRICE, what, "dollars per GPU-hour")


def checked_power(value: float, what: str) -> float:
    return _checked(float(value), MAX_POWER_W, what, "watts")


def _checked(value: float, limit: float, what: str, unit: str) -> float:
    if not (math.isfinite(value) and 0 < value <= limit):
        raise InputError(f"{what} must be more than 0 and at most {limit:,.0f} {unit}")
    return value
