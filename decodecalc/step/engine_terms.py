"""What a real engine measures: the roofline's terms at the engine's own efficiencies, plus
the fixed costs no kernel streams bytes for (docs/physics.md section 7).

No engine reaches the bandwidth roofline. Its step is

    t = W / (BW x e_w) + KV_read / (BW x e_kv) + L x c_layer + c_step + TP communication
        + L_moe x c_moe + B x P x c_seq

where weight streaming runs at one efficiency e_w and attention reads the KV cache at
another, e_kv (flash-attention kernels about 0.85 of e_w, others much less); KV_read is the
cache as the kernel reads it (a GQA-unaware kernel reads each KV head once per query head);
c_layer covers launches, norms, RoPE and small GEMV tails in every layer, c_step the
scheduler and sampler; TP all-reduces pay the engine's own latency per call. Two costs
only some points show: c_moe per MoE layer (routing, top-k, token permutation and the
grouped-GEMM launches a dense MLP has none of) and c_seq per sequence and per pass P a
token makes through the layers (a dense layer is one pass, an MoE layer one per expert a
token is routed to). The step is never shorter than its compute at the GPU's peak."""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import TYPE_CHECKING

from decodecalc.engine.profile import EngineParams
from decodecalc.record import record

if TYPE_CHECKING:
    from decodecalc.model.model import Model
    from decodecalc.scenarios.scenario import Scenario


@record
class Expected:
    """A step as an engine would measure it: a central figure inside a band."""

    seconds: float
    low_seconds: float
    high_seconds: float


def kv_read_factor(s: Scenario) -> float:
    """KV elements a GQA-unaware kernel reads per element cached: each query head reads its
    KV head again, so attention layers cost heads / KV heads times their cache. MLA and
    linear attention read their cache once."""
    from decodecalc.model.layers import Attention

    cached = read = 0
    for m in s.model.mixers():
        elements = m.kv_elements_per_token(s.tp)
        cached += elements
        if isinstance(m, Attention):
            read += m.kv_dim * math.ceil(m.num_heads / s.tp)
        else:
            read += elements
    return read / cached if cached else 1.0


def moe_layers(model: Model) -> int:
    """Layers whose feed-forward block is a mixture of experts."""
    return sum(1 for layer in model.layers if layer.ffn.routed)


def sequence_passes(model: Model) -> int:
    """Passes one token makes through the layers in a step: one per dense layer, one per
    routed expert in an MoE layer (each is its own slice of a grouped GEMM, gathered and
    scattered per token). Counted so, the published batch sweeps on 8 x MI300X grow, past
    their weight and KV bytes at peak bandwidth, by a similar time per pass: vLLM on
    Llama-3.1-70B 1.3 us, 405B 2.0 us, DeepSeek-V3 0.8 us, SGLang on DeepSeek-V3 1.5 us;
    counting each layer once, DeepSeek-V3's would be 6 and 11 us (docs/accuracy.md)."""
    from decodecalc.model.moe import MoE

    return sum(
        layer.ffn.experts_per_token if isinstance(layer.ffn, MoE) else 1 for layer in model.layers
    )


@record
class StepCounts:
    """What a step's fixed costs are counted in."""

    layers: int
    moe_layers: int
    passes: int
    """Sequence passes: the batch x sequence_passes."""

    @classmethod
    def of(cls, model: Model, batch: int) -> StepCounts:
        return cls(len(model.layers), moe_layers(model), batch * sequence_passes(model))

    def fixed_seconds(self, params: EngineParams) -> float:
        """The costs no byte count scales: per layer, per step, per MoE layer and per
        sequence pass."""
        return (
            self.layers * params.per_layer_s
            + params.per_step_s
            + self.moe_layers * params.per_moe_layer_s
            + self.passes * params.per_sequence_s
        )


@record
class EngineTerms:
    """One engine's step at a scenario, reduced to what varies with the context: a step
    is max(constant + KV bytes x per_kv_byte, compute) + added. StepModel.of computes it
    (step.engine_terms)
    once per scenario, so a million-row sweep pays a few operations a row."""

    constant_s: float
    """Weights at e_w and the recurrent state at e_kv."""
    per_kv_byte_s: float
    """Seconds per cached KV byte: the kernel's read factor over bandwidth x e_kv."""
    added_s: float
    """The fixed costs (StepCounts.fixed_seconds) and the all-reduces at the engine's
    latency."""
    band: tuple[float, float]


Packed = tuple[tuple[float, float, float, float, float], ...]
"""EngineTerms as plain tuples (constant, per KV byte, added, band low, band high)."""


def packed(terms: Sequence[EngineTerms]) -> Packed:
    return tuple((t.constant_s, t.per_kv_byte_s, t.added_s, *t.band) for t in terms)


def within_band(
    terms: Packed, kv_bytes: float, compute_s: float, floor_s: float
) -> tuple[float, float, float]:
    """(expected, low, high), never below the physics: the roofline at efficiency 1 with
    no overhead (``floor``) bounds the low end, so roofline <= low <= expected <= high. With
    several profiles (typical) the centre is their median and the band spans all of theirs.
    One row of band_columns, which holds the one formula."""
    middle, low, high = _every_profile(terms, (kv_bytes,), (compute_s,), (floor_s,))
    return middle[0], low[0], high[0]


Column = Sequence[float]


def profile_seconds(
    term: tuple[float, ...], kv_bytes: Column, compute_s: Column, floor_s: Column
) -> list[float]:
    """One profile's step at each row: max(constant + KV bytes x per byte, compute) +
    added, never below the floor. Written as one comprehension (a sweep's rows spend
    their time here): each operation is non-decreasing in KV bytes, compute and floor
    while per_kv_byte >= 0, which band_columns relies on."""
    constant, per_kv, added = term[0], term[1], term[2]
    return [
        f if (t := (c if (t := constant + k * per_kv) < c else t) + added) < f else t
        for k, c, f in zip(kv_bytes, compute_s, floor_s, strict=True)
    ]


def band_columns(
    terms: Packed, kv_bytes: Sequence[int], compute_s: Column, floor_s: Column
) -> tuple[list[float], list[float], list[float]]:
    """within_band at every row, as columns (expected, low, high), computing only the
    profiles that can decide them: a sweep's million rows would otherwise each evaluate
    and sort every profile of a typical engine.

    Over a block of rows each profile is compared with each other (_Block.under): where
    that shows which profile is the median at every row, and which few can be the band's
    lowest and highest edge, only those are computed, with the same operations as
    within_band, so the figures are identical, not close. A block where it does not is
    halved until it does, or computed profile by profile."""
    if len(kv_bytes) < PINNED_ROWS or any(t[1] < 0 or t[3] < 0 or t[4] < 0 for t in terms):
        return _every_profile(terms, kv_bytes, compute_s, floor_s)
    inputs = (
        (min(kv_bytes), max(kv_bytes)),
        (min(compute_s), max(compute_s)),
        (min(floor_s), max(floor_s)),
    )
    picked = _pinned(terms, [_Block.of(t, inputs) for t in terms])
    if picked is not None:
        return _picked(terms, picked, kv_bytes, compute_s, floor_s)
    half = len(kv_bytes) // 2
    first = band_columns(terms, kv_bytes[:half], compute_s[:half], floor_s[:half])
    second = band_columns(terms, kv_bytes[half:], compute_s[half:], floor_s[half:])
    return first[0] + second[0], first[1] + second[1], first[2] + second[2]


PINNED_ROWS = 16
"""Blocks of fewer rows are computed profile by profile: pinning them costs more."""

MARGIN = 1e-12
"""Relative gap between two straight-line steps that rounding (a few parts in 1e16)
cannot close."""


class _Block:
    """One profile's step over a block of rows, as much as comparing it needs. The step
    is non-decreasing in KV bytes, compute and floor (profile_seconds), so it lies between
    ``low`` (at the block's smallest inputs) and ``high`` (at its largest); ``step`` says
    what decides it: () the floor alone, (added,) compute plus added where the memory side
    never reaches the compute (a large batch), else the profile's own terms; ``line`` is
    its memory side plus added at the block's smallest and largest KV bytes, with the
    margin that rounding cannot close, where compute never binds (a straight line in KV
    bytes, floored)."""

    __slots__ = ("high", "line", "low", "step")

    def __init__(
        self,
        low: float,
        high: float,
        step: tuple[float, ...],
        line: tuple[float, float, float] | None,
    ) -> None:
        self.low, self.high, self.step, self.line = low, high, step, line

    @classmethod
    def of(cls, term: tuple[float, ...], inputs: Sequence[tuple[float, float]]) -> _Block:
        constant, per_kv, added = term[0], term[1], term[2]
        (kv_lo, kv_hi), (compute_lo, compute_hi), (floor_lo, _) = inputs
        low, high = profile_seconds(term, *inputs)
        memory_lo, memory_hi = constant + kv_lo * per_kv, constant + kv_hi * per_kv
        step: tuple[float, ...] = (constant, per_kv, added)
        if (compute_hi if memory_hi < compute_hi else memory_hi) + added <= floor_lo:
            step = ()
        elif memory_hi <= compute_lo:
            step = (added,)
        line = None
        if memory_lo >= compute_hi:
            margin = MARGIN * (abs(constant) + abs(kv_hi * per_kv) + abs(added))
            line = (memory_lo + added, memory_hi + added, margin)
        return cls(low, high, step, line)

    def under(self, other: _Block) -> bool:
        """Whether this step is at most the other's at every row of the block."""
        if self.step == other.step or self.high <= other.low or self.step == ():
            return True  # the same step, intervals apart, or the floor no step is under
        if len(self.step) == 1 and len(other.step) == 1:
            return self.step[0] <= other.step[0]  # compute plus the smaller added
        if self.line is None or other.line is None:
            return False
        margin = self.line[2] + other.line[2]
        return other.line[0] - self.line[0] >= margin and other.line[1] - self.line[1] >= margin


Edges = tuple[tuple[int, float], ...]
"""(profile, band factor) pairs: the products that can make a band edge."""
Picked = tuple[tuple[int, ...], Edges, Edges]
"""The profiles (by index) whose steps make the median, and the products that can be the
band's low edge and its high one."""


def _pinned(terms: Packed, blocks: Sequence[_Block]) -> Picked | None:
    """The profiles a block's figures come from, or None where the comparisons do not pin
    the median. A profile is the k-th smallest at every row when at least k others are
    never above it and all the rest never below it."""
    n = len(terms)
    under = [[i != j and blocks[i].under(blocks[j]) for j in range(n)] for i in range(n)]
    median = []
    for rank in (n // 2,) if n % 2 else (n // 2 - 1, n // 2):
        found = [
            p
            for p in range(n)
            if sum(under[j][p] for j in range(n)) >= rank
            and sum(under[p][j] for j in range(n)) >= n - 1 - rank
        ]
        if not found:
            return None
        median.append(found[0])
    # Profiles with the same step share one column; each edge keeps the products no
    # other kept one is certainly past.
    first = {blocks[i].step: i for i in reversed(range(n))}
    one = [first[b.step] for b in blocks]
    low = _edge([(one[i], t[3]) for i, t in enumerate(terms)], blocks, under, lowest=True)
    high = _edge([(one[i], t[4]) for i, t in enumerate(terms)], blocks, under, lowest=False)
    return tuple(one[p] for p in median), low, high


def _edge(
    products: list[tuple[int, float]],
    blocks: Sequence[_Block],
    under: list[list[bool]],
    lowest: bool,
) -> Edges:
    """The (profile, band factor) products whose minimum (lowest) or maximum is the
    band's edge at every row: each product left out is past one that is kept."""

    def past(a: tuple[int, float], b: tuple[int, float]) -> bool:  # b's never beyond a's
        (i, f), (j, g) = (a, b) if lowest else (b, a)
        if f == g and (i == j or under[j][i]):
            return True
        return blocks[j].high * g <= blocks[i].low * f

    kept: list[tuple[int, float]] = []
    start = (lambda p: blocks[p[0]].low * p[1]) if lowest else (lambda p: -blocks[p[0]].high * p[1])
    for product in sorted(set(products), key=start):
        if not any(past(product, k) for k in kept):
            kept.append(product)
    return tuple(kept)


def _picked(
    terms: Packed, picked: Picked, kv_bytes: Column, compute_s: Column, floor_s: Column
) -> tuple[list[float], list[float], list[float]]:
    """The block's columns from the profiles _pinned picked: the others cannot change them."""
    median, low_edge, high_edge = picked
    seconds = {
        i: profile_seconds(terms[i], kv_bytes, compute_s, floor_s)
        for i in {*median, *(i for i, _ in low_edge), *(i for i, _ in high_edge)}
    }
    if len(median) == 1:
        middle = seconds[median[0]]
    else:
        middle = [(a + b) / 2 for a, b in zip(seconds[median[0]], seconds[median[1]], strict=True)]
    lows = [[t * f for t in seconds[i]] for i, f in low_edge]
    highs = [[t * f for t in seconds[i]] for i, f in high_edge]
    low = lows[0] if len(lows) == 1 else [min(r) for r in zip(*lows, strict=True)]
    high = highs[0] if len(highs) == 1 else [max(r) for r in zip(*highs, strict=True)]
    return _clamped(middle, low, high, floor_s)


def _every_profile(
    terms: Packed, kv_bytes: Column, compute_s: Column, floor_s: Column
) -> tuple[list[float], list[float], list[float]]:
    """Every profile at every row: the centre their median, the band all of theirs."""
    seconds = [profile_seconds(t, kv_bytes, compute_s, floor_s) for t in terms]
    n = len(terms)
    rows = [sorted(r) for r in zip(*seconds, strict=True)]
    middle = [r[n // 2] for r in rows] if n % 2 else [(r[n // 2 - 1] + r[n // 2]) / 2 for r in rows]
    lows = [[s * t[3] for s in column] for t, column in zip(terms, seconds, strict=True)]
    highs = [[s * t[4] for s in column] for t, column in zip(terms, seconds, strict=True)]
    low = [min(r) for r in zip(*lows, strict=True)]
    high = [max(r) for r in zip(*highs, strict=True)]
    return _clamped(middle, low, high, floor_s)


def _clamped(
    middle: list[float], low: list[float], high: list[float], floor_s: Column
) -> tuple[list[float], list[float], list[float]]:
    """The band around its centre and never below the floor: low between the floor and the
    centre (the floor wins where it is above the centre), high at least the centre."""
    low = [
        m if m < (x := (f if f > lo else lo)) else x
        for lo, f, m in zip(low, floor_s, middle, strict=True)
    ]
    return middle, low, [m if m > h else h for h, m in zip(high, middle, strict=True)]
