"""Counting the query-key pairs of causal attention, which prefill FLOPs of every
attention kind (softmax, MLA) are built from."""

from __future__ import annotations


def causal_pairs(tokens: int, window: int | None) -> int:
    """Sum over t = 0..tokens-1 of min(t, window): query-key pairs of causal attention.

    >>> causal_pairs(4, None), causal_pairs(4, 2)
    (6, 5)
    """
    if window is None or tokens - 1 <= window:
        return tokens * (tokens - 1) // 2
    return window * (window + 1) // 2 + (tokens - 1 - window) * window
