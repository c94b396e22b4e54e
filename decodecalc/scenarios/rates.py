"""What a GPU-hour costs and what a GPU draws: the rates a scenario carries for cost and
energy per token (answers/cost.py), parsed and bounded where the user types them."""

from __future__ import annotations

import math
import re

from decodecalc.errors import InputError
from decodecalc.record import record

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


# Patterns compiled (and kept by re) on first use: compiled at import, they cost every
# query 0.3 ms, and few queries give a price or a power.
_PRICE = (
    r"^\$?(?P<number>[+-]?[0-9]*\.?[0-9]+(?:e[+-]?[0-9]+)?)\s*(?:\$|usd)?"
    r"\s*(?:/\s*(?:gpu-?)?(?:h|hr|hour))?$"
)
_POWER = r"^(?P<number>[+-]?[0-9]*\.?[0-9]+(?:e[+-]?[0-9]+)?)\s*(?P<unit>w|kw|mw|gw)?$"
_WATTS = {"w": 1.0, "kw": 1e3, "mw": 1e6, "gw": 1e9}
"""Each power unit's watts; mw is a megawatt whatever its case (no GPU draws milliwatts),
so that 1mW is refused as above the limit, not read as a thousandth of a watt."""


def parse_price(text: str) -> float | None:
    """US dollars per GPU-hour from ``2.49``, ``2.49USD/h``, ``$2.49/hr`` or ``2.49/GPU-hour``;
    None when the text is no number (it may name a price preset instead)."""
    found = re.match(_PRICE, text.strip().lower())
    if found is None:
        return None
    return _checked(float(found["number"]), MAX_PRICE, f"price {text!r}", "dollars per GPU-hour")


def parse_power(text: str) -> float:
    """Watts from ``700``, ``700W`` or ``1.2kW``; a number in another unit of power (1MW)
    or below zero is read, so that its error says what it is out of (the range)."""
    found = re.match(_POWER, text.strip().lower())
    if found is None:
        raise InputError(f"power {text!r} is not a number of watts, e.g. 700W or 1.2kW")
    scale = _WATTS[found["unit"] or "w"]
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
