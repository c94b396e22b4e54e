"""Pooled cache entries: DeepSeek-V4's layers keep, beside their window, one entry per
``ratio`` tokens of the whole past (model/compressed_attention.py); every other mixer
keeps none. Here on its own so that each mixer module can say so without importing another."""

from __future__ import annotations

PooledEntries = tuple[tuple[int, int, int | None], ...]
"""(ratio, elements per token, tokens a step reads of them or None for all), per kind."""

NO_POOLED: PooledEntries = ()
