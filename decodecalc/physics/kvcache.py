"""The KV-cache term as a function of context: linear, or piecewise linear with windows.

A layer with a sliding window reads at most ``window`` tokens; a global layer reads all T.
So the cached elements per sequence at context T are sum_l e_l * min(T, w_l): a piecewise
linear, non-decreasing curve whose slope drops at each window size.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from fractions import Fraction
from typing import TYPE_CHECKING

from decodecalc.record import record

if TYPE_CHECKING:
    from decodecalc.physics.layers import Mixer


@record
class KVCurve:
    """Cached elements per sequence on one GPU, grouped by window (None = global)."""

    segments: tuple[tuple[int | None, int], ...]
    """(window in tokens or None, elements per token summed over layers with that window)."""

    @classmethod
    def for_layers(
        cls, layers: Iterable[Mixer], tp: int, weigh: Callable[[Mixer, int], int] | None = None
    ) -> KVCurve:
        """``weigh`` turns a layer's elements into other whole units: the estimator counts
        bytes in units when K and V are stored in different formats."""
        by_window: dict[int | None, int] = {}
        for mixer in layers:
            elements = mixer.kv_elements_per_token(tp)
            if elements and weigh is not None:
                elements = weigh(mixer, elements)
            if elements:
                w = mixer.sliding_window
                by_window[w] = by_window.get(w, 0) + elements
        ordered = sorted(by_window.items(), key=lambda kv: (kv[0] is None, kv[0] or 0))
        return cls(tuple(ordered))

    @property
    def elements_per_token(self) -> int:
        """Slope below every window: each layer caches K and V for each new token."""
        return sum(e for _, e in self.segments)

    @property
    def growing_elements_per_token(self) -> int:
        """Slope past every window: only global layers keep growing."""
        return sum(e for w, e in self.segments if w is None)

    def elements(self, context_tokens: int | Fraction) -> int | Fraction:
        """Elements read at context T: sum of e * min(T, window)."""
        return sum(
            (
                e * (context_tokens if w is None else min(context_tokens, w))
                for w, e in self.segments
            ),
            start=0,
        )

    def solve(self, target_elements: Fraction) -> Fraction | None:
        """Smallest T with elements(T) == target, or None when the curve never gets there."""
        if target_elements <= 0:
            return Fraction(0)
        start = Fraction(0)
        value = Fraction(0)
        slope = self.elements_per_token
        for window, e in self.segments:
            end = None if window is None else Fraction(window)
            if slope > 0 and (end is None or value + slope * (end - start) >= target_elements):
                return start + (target_elements - value) / slope
            if end is None:
                break
            value += slope * (end - start)
            start = end
            slope -= e
        return None
