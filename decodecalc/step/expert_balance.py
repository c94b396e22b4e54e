"""What expert parallelism costs the busiest GPU (docs/physics.md, "Expert parallelism").

Under ``--ep`` every GPU holds whole experts, and a step waits for the GPU that reads the
most of them. With uniform routing the mean GPU reads E x (1 - (1 - k/E)^B) / N experts,
the same bytes as tensor parallelism's slices; the busiest reads more, since the experts a
batch touches fall unevenly on the GPUs. Redundant experts (DeepSeek's EPLB, SGLang's
``--ep-num-redundant-experts``, vLLM's ``num_redundant_experts``) add replicas of some
experts, each replica taking an even share of its expert's tokens.

The expected maximum is computed under one stated approximation: each expert slot is
touched independently with its exact marginal probability (the slots of one GPU are in
truth slightly negatively correlated, as a token's k experts are distinct), so a GPU's
touched slots are binomial and the GPUs independent. tests/step/test_expert_balance.py checks it
against exact enumeration and a simulation of routing.
"""

from __future__ import annotations

import math
from functools import lru_cache

from decodecalc.record import record


@record
class SlotKind:
    """Replicas of experts that have the same number of copies."""

    copies: int
    slots: int
    """Replicas of this kind over all GPUs (experts of this kind x copies)."""


def slot_kinds(experts: int, redundant: int) -> tuple[SlotKind, ...]:
    """The replicas of ``experts`` experts plus ``redundant`` more, spread as evenly as
    they go (every expert gets ``redundant // experts`` extra copies, the first
    ``redundant % experts`` one more). 256 experts + 32 redundant: 224 single, 32 doubled."""
    base, extra = divmod(redundant, experts)
    kinds = [SlotKind(1 + base, (experts - extra) * (1 + base))]
    if extra:
        kinds.append(SlotKind(2 + base, extra * (2 + base)))
    return tuple(kinds)


def touch_probability(choices: int, per_token: int, tokens: int, copies: int) -> float:
    """Chance one replica is sent at least one of ``tokens`` tokens: each token picks
    ``per_token`` of ``choices`` experts, and a replica receives 1/copies of its expert's."""
    return 1.0 - (1.0 - per_token / (choices * copies)) ** tokens


def _binomial(n: int, p: float) -> list[float]:
    if p >= 1.0:
        return [0.0] * n + [1.0]
    return [math.comb(n, j) * p**j * (1.0 - p) ** (n - j) for j in range(n + 1)]


def _convolve(a: list[float], b: list[float]) -> list[float]:
    out = [0.0] * (len(a) + len(b) - 1)
    for i, x in enumerate(a):
        if x:
            for j, y in enumerate(b):
                out[i + j] += x * y
    return out


def gpu_placements(kinds: tuple[SlotKind, ...], gpus: int) -> dict[tuple[int, ...], int]:
    """How many GPUs hold each mix of replicas (slots of each kind), every kind dealt out
    round-robin over the GPUs after the one before, so each holds as many slots as it can."""
    counts = [[0] * len(kinds) for _ in range(gpus)]
    position = 0
    for index, kind in enumerate(kinds):
        for _ in range(kind.slots):
            counts[position % gpus][index] += 1
            position += 1
    mixes: dict[tuple[int, ...], int] = {}
    for mix in counts:
        mixes[tuple(mix)] = mixes.get(tuple(mix), 0) + 1
    return mixes


@lru_cache(maxsize=4096)
def busiest_slots(
    experts: int, per_token: int, tokens: int, gpus: int, redundant: int = 0, zero: int = 0
) -> float:
    """Expected replicas the busiest of ``gpus`` GPUs reads in one MoE layer for a pass over
    ``tokens`` tokens (the expected maximum over GPUs of the replicas each is sent tokens
    for), under uniform routing over ``experts`` experts plus ``zero`` zero-compute choices
    and the independence approximation of this module's docstring:

        E[max] = sum over j >= 0 of (1 - prod over GPUs of P(GPU's count <= j))
    """
    kinds = slot_kinds(experts, redundant)
    choices = experts + zero
    probabilities = [touch_probability(choices, per_token, tokens, k.copies) for k in kinds]
    distributions = []
    for mix, count in gpu_placements(kinds, gpus).items():
        pmf = [1.0]
        for held, p in zip(mix, probabilities, strict=True):
            pmf = _convolve(pmf, _binomial(held, p))
        cdf, total = [], 0.0
        for x in pmf:
            total += x
            cdf.append(min(total, 1.0))
        distributions.append((cdf, count))
    most = max(len(cdf) for cdf, _ in distributions) - 1
    expected = 0.0
    for j in range(most):
        below = 1.0
        for cdf, count in distributions:
            below *= (cdf[j] if j < len(cdf) else 1.0) ** count
        expected += 1.0 - below
    return expected


def mean_slots(
    experts: int, per_token: int, tokens: int, gpus: int, redundant: int = 0, zero: int = 0
) -> float:
    """Expected replicas the mean GPU reads: every replica's touch probability added up,
    over the GPUs (with no redundant experts, the balanced E x (1 - (1 - k/E)^B) / N)."""
    choices = experts + zero
    return (
        sum(
            k.slots * touch_probability(choices, per_token, tokens, k.copies)
            for k in slot_kinds(experts, redundant)
        )
        / gpus
    )
