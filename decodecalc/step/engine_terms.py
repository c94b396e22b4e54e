"""What a real engine measures: the roofline's terms at the engine's own efficiencies, plus
the fixed costs no kernel streams bytes for (docs/physics.md section 7).

No engine reaches the bandwidth roofline. Its step is a list of operations, each priced
by a roofline of its own:

    t = sum over GEMMs g of max(W_g / (BW x e_w), F_g / (peak x e_mma))
        + KV_read / (BW x e_kv) + L x c_layer + c_step + TP communication
        + L_moe x c_moe + B x P x c_seq

where each tensor group's GEMM streams its weights at e_w or, past its ridge (a large
batch, or a grouped expert GEMM's rows padded to the kernel's tile), multiplies at e_mma
of peak (step/operations.py lists and prices every operation); attention reads the KV
cache at another efficiency, e_kv (flash-attention kernels about 0.85 of e_w, others much
less); KV_read is the cache as the kernel reads it (a GQA-unaware kernel reads each KV
head once per query head);
c_layer covers launches, norms, RoPE and small GEMV tails in every layer, c_step the
scheduler and sampler; TP all-reduces pay the engine's own latency per call. Two costs
only some points show: c_moe per MoE layer (routing, top-k, token permutation) and c_seq
per sequence and per pass P a token makes through the layers (a dense layer is one pass,
an MoE layer one per expert a token is routed to), fitted only from an engine's own batch
sweeps. The step is never shorter than its compute at the GPU's peak."""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import TYPE_CHECKING

from decodecalc.engine.profile import EngineParams
from decodecalc.record import record
from decodecalc.step.running import RunningCounts, feed_forward_passes

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
    for m, n in s.model.mixer_counts():
        elements = n * m.kv_elements_per_token(s.tp)
        cached += elements
        if isinstance(m, Attention):
            read += n * m.kv_dim * math.ceil(m.num_heads / s.tp)
        else:
            read += elements
    return read / cached if cached else 1.0


def moe_layers(model: Model) -> int:
    """Layers whose feed-forward block is a mixture of experts."""
    return sum(n for layer, n in model.layer_counts() if layer.ffn.routed)


def sequence_passes(model: Model) -> int:
    """Passes one token makes through the layers in a step: one per dense layer, one per
    routed expert in an MoE layer (each is its own slice of a grouped GEMM, gathered and
    scattered per token). Counted so, the published batch sweeps on 8 x MI300X grow, past
    their weight and KV bytes at peak bandwidth, by a similar time per pass: vLLM on
    Llama-3.1-70B 1.3 us, 405B 2.0 us, DeepSeek-V3 0.8 us, SGLang on DeepSeek-V3 1.5 us;
    counting each layer once, DeepSeek-V3's would be 6 and 11 us (docs/accuracy.md). A
    step's count is the busiest GPU's (step/running.py feed_forward_passes)."""
    return feed_forward_passes(model, 1)


@record
class StepCounts:
    """What a step's fixed costs are counted in."""

    layers: int
    moe_layers: int
    passes: int
    """Sequence passes: the busiest GPU's feed-forward passes (feed_forward_passes)."""
    running: RunningCounts | None = None
    """What the running costs are counted in (step/running.py); None: none counted."""

    @classmethod
    def of(
        cls, model: Model, batch: int, mixed: int | None = None, expert_ranks: int = 1
    ) -> StepCounts:
        """``mixed``: the sequences one GPU's token mixers run; ``expert_ranks``: the GPUs
        the routed experts are spread over (RunningCounts.of)."""
        return cls(
            len(model.layers),
            moe_layers(model),
            feed_forward_passes(model, batch, mixed, expert_ranks),
            RunningCounts.of(model, batch, mixed, expert_ranks),
        )

    def fixed_seconds(self, params: EngineParams) -> float:
        """The costs no byte count scales: per layer, per step, per MoE layer, per
        sequence pass, and those that grow with the running sequences (step/running.py):
        fixed_parts added up."""
        return sum(seconds for _, seconds in self.fixed_parts(params))

    def fixed_parts(self, params: EngineParams) -> tuple[tuple[str, float], ...]:
        """Each fixed cost by name with its seconds per step: what the step's operation
        list (step/operations.py) takes its fixed operations from."""
        return (
            ("per layer", self.layers * params.per_layer_s),
            ("per step", params.per_step_s),
            ("per MoE layer", self.moe_layers * params.per_moe_layer_s),
            ("per sequence pass", self.passes * params.per_sequence_s),
            *(() if self.running is None else self.running.parts(params)),
        )

    def count(self, part: str) -> int:
        """How many times a step pays a fixed part (fixed_parts' name): its layers, MoE
        layers, sequence passes or a running cost's count (step/running.py); once for any
        other."""
        counts = {
            "per layer": self.layers,
            "per MoE layer": self.moe_layers,
            "per sequence pass": self.passes,
        }
        if self.running is not None:
            counts |= self.running.counts()
        return counts.get(part, 1)


@record
class EngineTerms:
    """One engine's step at a scenario, reduced to what varies with the context: a step
    is max(constant + KV bytes x per_kv_byte, compute) + added. StepModel.of computes it
    (step.engine_terms)
    once per scenario, so a million-row sweep pays a few operations a row."""

    constant_s: float
    """The GEMMs (each the slower of its weights at e_w and its FLOPs at e_mma) and the
    recurrent state at e_kv."""
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
    EngineTerms.seconds written out on plain tuples; a sweep's rows take it a column at a
    time (fast.band_columns, the same figures: tests/step/test_band_columns.py)."""
    central = []
    low = high = floor_s
    first = True
    for constant, per_kv, added, band_low, band_high in terms:
        t = constant + kv_bytes * per_kv
        if t < compute_s:
            t = compute_s
        t += added
        if t < floor_s:
            t = floor_s
        central.append(t)
        lo, hi = t * band_low, t * band_high
        if first or lo < low:
            low = lo
        if first or hi > high:
            high = hi
        first = False
    central.sort()
    n = len(central)
    middle = central[n // 2] if n % 2 else (central[n // 2 - 1] + central[n // 2]) / 2
    low = max(low, floor_s)
    return middle, min(low, middle), max(high, middle)
