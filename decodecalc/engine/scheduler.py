"""A serving engine's scheduler limits (chunked-prefill budget, sequence cap, memory
utilization) as its defaults and the user's settings give them for one GPU."""

from __future__ import annotations

import math
from typing import TYPE_CHECKING

from decodecalc.engine.limits import MAX_SCHEDULER_LIMIT
from decodecalc.engine.profile import VLLM_DEFAULTS
from decodecalc.errors import InputError
from decodecalc.record import field_names, record, replace

if TYPE_CHECKING:
    from decodecalc.engine.profile import Engine
    from decodecalc.model.hardware import GpuSpec


@record
class SchedulerLimits:
    """The scheduler settings that size a server's KV pool and its batches."""

    max_num_batched_tokens: int
    """Tokens one step may carry: the chunked-prefill budget."""
    max_num_seqs: int
    """Sequences one step may carry."""
    block_size: int
    """Tokens per KV block (vLLM 16)."""
    memory_utilization: float
    reserve_bytes: int
    """Per GPU: memory outside weights, activations and cache (cuBLAS, runtime)."""
    source: str
    """Where the values come from, for reports."""
    tp_reserve_bytes: int = 0
    """Per GPU, added when TP > 1: all-reduce buffers."""

    def __post_init__(self) -> None:
        for name in ("max_num_batched_tokens", "max_num_seqs", "block_size"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int):
                raise InputError(f"{name.replace('_', '-')} must be a whole number")
            if not 1 <= value <= MAX_SCHEDULER_LIMIT:
                label = name.replace("_", "-")
                raise InputError(
                    f"{label} {value} must be a whole number from 1 to {MAX_SCHEDULER_LIMIT:,}"
                )
        if not 0 < self.memory_utilization <= 1 or math.isnan(self.memory_utilization):
            raise InputError(
                f"memory utilization {self.memory_utilization} must be above 0 and at most 1"
            )
        if self.reserve_bytes < 0 or self.tp_reserve_bytes < 0:
            raise InputError("the runtime reserve must be zero or more bytes")


def scheduler_limits(
    engine: Engine, gpu: GpuSpec | None, **overrides: int | float | str | None
) -> SchedulerLimits:
    """The engine's scheduler defaults on this GPU (vLLM's when it has none), with any
    setting the caller gives (``max_num_seqs=64``; None keeps the default) in its place."""
    defaults = VLLM_DEFAULTS if engine.serving is None else engine.serving
    batched, seqs = defaults.max_num_batched_tokens, defaults.max_num_seqs
    source = defaults.source
    rule = defaults.large_gpu
    if rule is not None and gpu is not None and rule.applies(gpu):
        batched, seqs = rule.max_num_batched_tokens, rule.max_num_seqs
        source += f"; {gpu.name}: the large-GPU defaults"
    limits = SchedulerLimits(
        max_num_batched_tokens=batched,
        max_num_seqs=seqs,
        block_size=defaults.block_size,
        memory_utilization=defaults.memory_utilization,
        reserve_bytes=defaults.reserve_bytes,
        tp_reserve_bytes=defaults.tp_reserve_bytes,
        source=source,
    )
    given = {k: v for k, v in overrides.items() if v is not None}
    unknown = sorted(set(given) - set(field_names(SchedulerLimits)))
    if unknown:
        raise TypeError(f"no scheduler limit named {', '.join(unknown)}")
    if not given:
        return limits
    named = ", ".join(k.replace("_", "-") for k in given if k != "source")
    limits = replace(limits, **given)
    if named and "source" not in given:
        limits = replace(limits, source=f"{limits.source}; {named} given")
    return limits
