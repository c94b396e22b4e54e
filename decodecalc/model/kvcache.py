"""The KV-cache term as a function of context: what a step reads, and what memory holds.

A layer with a sliding window reads at most ``window`` tokens; a global layer reads all T.
A chunked layer (Llama 4) reads only the tokens of the current chunk: at context T (the
cache holds T tokens, the one being decoded included) that is T - c x floor((T - 1) / c),
a sawtooth that climbs to c and falls back to 1 at each chunk boundary. A top-k sparse
layer (DeepSeek-V3.2's MLA) reads min(T, k) tokens but keeps all T. So the elements read
per sequence at context T are

    sum_windows e * min(T, w) + sum_chunks e * saw_c(T) + (global) e * T

and what memory holds is the same sum with each chunk counted as a window of c (the
tokens of one chunk, what vLLM's hybrid KV cache allocates for such a layer) and each top-k
layer as global; a layer that reads another layer's cache (Gemma 3n's last layers) adds
to what is read and holds nothing. Without any of these the two curves are one, piecewise
linear and non-decreasing. With chunks the read curve is not monotone: 36 chunked layers dropping by
c - 1 tokens each outweigh 12 global layers gaining one, so solve() looks for the first
context that reaches a target, not the only one.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable
from fractions import Fraction
from typing import TYPE_CHECKING

from decodecalc.model.layers import chunk_tokens
from decodecalc.record import record

if TYPE_CHECKING:
    from decodecalc.model.layers import Mixer

Segments = tuple[tuple[int | None, int], ...]


def _ordered(by_window: dict[int | None, int]) -> Segments:
    return tuple(sorted(by_window.items(), key=lambda kv: (kv[0] is None, kv[0] or 0)))


def _add(into: dict[int | None, int], key: int | None, units: int) -> None:
    if units:
        into[key] = into.get(key, 0) + units


@record
class KVCurve:
    """Cached units per sequence on one GPU, grouped by how many tokens a step reads."""

    segments: Segments
    """(window in tokens or None, units per token summed over layers read that way)."""
    chunks: tuple[tuple[int, int], ...] = ()
    """(chunk size, units per token) of chunked layers: read as a sawtooth."""
    held_segments: Segments | None = None
    """What memory holds, by window, when it differs from what a step reads (chunks held
    one chunk each, top-k layers every token); None: the same as ``segments``."""

    @classmethod
    def for_layers(
        cls,
        mixers: Iterable[tuple[Mixer, int]],
        tp: int,
        weigh: Callable[[Mixer, int], int] | None = None,
        units_per_byte: Fraction | None = None,
    ) -> KVCurve:
        """``mixers``: each mixer with the layers it stands for (Model.mixer_counts).
        ``weigh`` turns a layer's elements into other whole units: the estimator counts
        bytes in units when K and V are stored in different formats. ``units_per_byte``
        converts caches of a fixed format (DeepSeek-V3.2's FP8 indexer keys, whatever the
        KV dtype) into the same units; without it, element counts leave them out."""
        read: dict[int | None, int] = {}
        held: dict[int | None, int] = {}
        chunks: dict[int, int] = {}
        for mixer, count in mixers:
            elements = count * mixer.kv_elements_per_token(tp)
            if elements and weigh is not None:
                elements = weigh(mixer, elements)
            window = mixer.sliding_window
            if mixer.attention_chunk:
                chunks[mixer.attention_chunk] = chunks.get(mixer.attention_chunk, 0) + elements
                _add(held, mixer.attention_chunk, elements)
            else:
                _add(read, window or mixer.kv_read_limit, elements)
                _add(held, window, elements)
            for _, per_token, read_tokens in mixer.compressed_kv:  # DeepSeek-V4's pooled entries
                pooled = count * per_token if weigh is None else weigh(mixer, count * per_token)
                _add(read, read_tokens, pooled)
                _add(held, None, pooled)
            reread = count * mixer.kv_reread_elements_per_token(tp)
            if reread:  # another layer's cache, read again: read, never held twice
                _add(read, window, reread if weigh is None else weigh(mixer, reread))
            fixed = mixer.fixed_kv_bytes_per_token
            if fixed and units_per_byte is not None:
                units = fixed * units_per_byte
                if units.denominator != 1:
                    raise ValueError(f"{fixed} bytes are not whole units of 1/{units_per_byte}")
                _add(read, None, count * int(units))
                _add(held, None, count * int(units))
        segments = _ordered(read)
        chunked = tuple(sorted((c, e) for c, e in chunks.items() if e))
        held_segments = _ordered(held)
        same = not chunked and held_segments == segments
        return cls(segments, chunked, None if same else held_segments)

    @property
    def regular(self) -> bool:
        """Read and held alike, each a min(T, window): the sweep's fast loop applies."""
        return not self.chunks and self.held_segments is None

    def held(self) -> KVCurve:
        """What memory holds as a curve of its own (non-decreasing, read as it is held)."""
        return self if self.held_segments is None else KVCurve(self.held_segments)

    @property
    def elements_per_token(self) -> int:
        """Slope below every window and chunk: each layer caches each new token."""
        return sum(e for _, e in self.segments) + sum(e for _, e in self.chunks)

    @property
    def growing_elements_per_token(self) -> int:
        """Slope past every window, averaged over chunks: only global reads keep growing."""
        return sum(e for w, e in self.segments if w is None)

    def elements(self, context_tokens: int | Fraction) -> int | Fraction:
        """Units read at context T: sum of e * min(T, window) plus the chunks' sawtooth."""
        total: int | Fraction = 0
        for w, e in self.segments:
            total += e * (context_tokens if w is None else min(context_tokens, w))
        for c, e in self.chunks:
            total += e * chunk_tokens(context_tokens, c)
        return total

    def breakpoints(self, low: int, high: int) -> list[int]:
        """Whole contexts in (low, high) where elements(T) leaves a straight line: each window
        end, and each chunk's first token c x k + 1 (the read falls back to one token), so a
        sum over contexts can go line by line."""
        cuts = {w for w, _ in self.segments if w is not None and low < w < high}
        for c, _ in self.chunks:
            cuts.update(range(c * (low // c + 1) + 1, high, c))
        return sorted(cuts)

    def _slope_after(self, t: Fraction) -> int:
        """d elements / dT just past T = t (between breakpoints)."""
        return sum(e for w, e in self.segments if w is None or w > t) + sum(
            e for _, e in self.chunks
        )

    def _value_after(self, t: Fraction) -> Fraction:
        """elements(T) as T falls to t from above: a chunk boundary reads nothing yet."""
        value = Fraction(0)
        for w, e in self.segments:
            value += e * (t if w is None else min(t, Fraction(w)))
        for c, e in self.chunks:
            value += e * (t - c * (t // c))
        return value

    def _next_break(self, t: Fraction) -> Fraction | None:
        """The next window end or chunk boundary after t (None: the curve is one line on)."""
        ends = [Fraction(w) for w, _ in self.segments if w is not None and w > t]
        ends += [Fraction(c * (t // c + 1)) for c, _ in self.chunks]
        return min(ends, default=None)

    def solve(self, target_elements: Fraction) -> Fraction | None:
        """Smallest T with elements(T) >= target, or None when the curve never gets there.

        Between breakpoints the curve is a line of non-negative slope, so the first piece
        whose end reaches the target holds the answer. Past every window the chunked part
        repeats with period P = lcm(chunks) while global layers add g x P a period, so the
        periods that stay below the target are skipped in one step."""
        if target_elements <= 0:
            return Fraction(0)
        start = Fraction(0)
        period = math.lcm(*(c for c, _ in self.chunks)) if self.chunks else 0
        last_window = max((w for w, _ in self.segments if w is not None), default=0)
        growing = self.growing_elements_per_token
        while True:
            if period and start >= last_window and start % period == 0:
                start = self._skip_periods(start, period, growing, target_elements)
                if start < 0:
                    return None
            value, slope = self._value_after(start), self._slope_after(start)
            end = self._next_break(start)
            if end is None:
                return None if slope == 0 else start + (target_elements - value) / slope
            if slope and value + slope * (end - start) >= target_elements:
                return start + max(Fraction(0), target_elements - value) / slope
            start = end

    def _skip_periods(
        self, start: Fraction, period: int, growing: int, target: Fraction
    ) -> Fraction:
        """The start of the first whole period whose highest point reaches the target (-1:
        none does, the curve being bounded). Each period's peak is the previous one's plus
        growing x period."""
        peak = max(self.elements(start + k) for k in self._period_peaks(period))
        if peak >= target:
            return start
        if growing == 0:
            return Fraction(-1)
        skipped = math.ceil((target - peak) / (growing * period))
        return start + skipped * period

    def _period_peaks(self, period: int) -> tuple[int, ...]:
        """Offsets within a period where the sawtooth may peak: each chunk's boundaries."""
        return tuple(sorted({k for c, _ in self.chunks for k in range(c, period + 1, c)}))


def fixed_kv_bytes_per_token(layers: Iterable[Mixer]) -> int:
    """Bytes per token of caches kept in a fixed format whatever the KV dtype (indexers)."""
    return sum(m.fixed_kv_bytes_per_token for m in layers)


def read_pattern(layers: Iterable[Mixer]) -> str:
    """How chunked and top-k layers read their cache, in words ("" when every layer reads
    min(T, window) of what it holds): reports say it beside the per-token figures."""
    mixers = tuple(layers)
    chunked: dict[int, int] = {}
    topk: dict[int, int] = {}
    for m in mixers:
        if m.attention_chunk:
            chunked[m.attention_chunk] = chunked.get(m.attention_chunk, 0) + 1
        elif m.kv_read_limit:
            topk[m.kv_read_limit] = topk.get(m.kv_read_limit, 0) + 1
    parts = [
        f"{n} chunked layers read the current {c:,}-token chunk, T - {c:,} x floor((T - 1) / "
        f"{c:,}) tokens (a sawtooth; memory holds one chunk)"
        for c, n in chunked.items()
    ]
    parts += [
        f"{n} sparse layers read the cache of min(T, {k:,}) tokens but hold all T"
        for k, n in topk.items()
    ]
    parts += _pooled_pattern(mixers)
    fixed = fixed_kv_bytes_per_token(mixers)
    if fixed:
        parts.append(
            f"their indexers read and hold {fixed:,} bytes per token in a fixed format, "
            "whatever the KV dtype"
        )
    return "; ".join(parts)


def _pooled_pattern(mixers: tuple[Mixer, ...]) -> list[str]:
    """DeepSeek-V4's pooled entries in words: per ratio, how many layers, and what they read."""
    by_ratio: dict[int, tuple[int, int | None]] = {}
    for m in mixers:
        for ratio, _, read_tokens in m.compressed_kv:
            n, _ = by_ratio.get(ratio, (0, read_tokens))
            by_ratio[ratio] = (n + 1, read_tokens)
    return [
        f"{n} layers also pool every {r} tokens into one entry and "
        + (
            f"read the top {read // r:,} entries (min(T, {read:,}) / {r} tokens' worth)"
            if read
            else "read them all"
        )
        + f" but hold T / {r}"
        for r, (n, read) in sorted(by_ratio.items())
    ]
