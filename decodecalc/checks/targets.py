"""Deployment targets and how an estimate meets them: the logic behind `decodecalc check`.

A target holds at every context a deployment names, so the verdict uses the worst of them:
the slowest step, the largest KV share, any context that does not fit.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from decodecalc.answers.estimate import Estimate
from decodecalc.answers.headline import EXPECTED, basis
from decodecalc.errors import InputError
from decodecalc.record import field_names, record, replace
from decodecalc.step.memory import MemoryFit
from decodecalc.step.step import Row

if TYPE_CHECKING:
    from decodecalc.answers.disaggregated import DisaggregatedResult
    from decodecalc.answers.serving import ServingResult

SPEED_TARGETS = ("max_ms_per_token", "min_tokens_per_s", "min_throughput_tokens_per_s")
"""The targets held to the estimate's headline step (answers/headline.py), not to memory."""
SERVING_TARGETS = (
    "max_ttft_ms",
    "max_tpot_ms",
    "min_output_throughput_tokens_per_s",
    "min_output_throughput_per_gpu",
)
"""The targets held to a server under the deployment's workload (answers/serving.py)."""
TPOT_TARGETS = ("max_ms_per_token", "min_tokens_per_s")
"""The per-sequence speed targets that, under a workload, are held to the server's TPOT."""
STARTUP_FIT = "vllm_startup_fit"
"""The check a vLLM config gets when it is given no targets: not a target one can ask for."""


@record
class Targets:
    """What a deployment must achieve; None means not asked."""

    max_ms_per_token: float | None = None
    """The slowest decode step, per token of a sequence."""
    min_tokens_per_s: float | None = None
    """Per sequence."""
    min_throughput_tokens_per_s: float | None = None
    """All sequences of the batch together."""
    must_fit: bool | None = None
    """Weights, KV cache and state within the GPU's memory times its utilization."""
    min_crossover_context: int | None = None
    """The KV cache may not overtake the weights before this context."""
    max_kv_share: float | None = None
    max_ttft_ms: float | None = None
    """Mean time to first token under the workload."""
    max_tpot_ms: float | None = None
    """Mean time per output token after the first, under the workload."""
    min_output_throughput_tokens_per_s: float | None = None
    """Output tokens per second of the whole server under the workload."""
    min_output_throughput_per_gpu: float | None = None
    """The same per GPU (every GPU of both pools, when disaggregated)."""

    @classmethod
    def names(cls) -> tuple[str, ...]:
        return field_names(cls)

    def asked(self) -> tuple[str, ...]:
        return tuple(name for name in self.names() if getattr(self, name) is not None)


@record
class TargetResult:
    """One target checked: the limit, the worst value found, and where."""

    target: str
    limit: float | int | bool
    value: float | int | bool | None
    context: int | None
    """The context the worst value occurs at (None for context-free targets)."""
    passed: bool
    served: bool = False
    """Held to the server under the deployment's workload (check_serving), not to a step."""
    unserved: str | None = None
    """Why the server under the workload gives no value, where it is missed for that
    (checks/run.py): its request rate reaches its saturation rate ('saturated: the queue
    grows without bound'), or it has no room for a request ('does not fit: ...')."""

    @property
    def timed(self) -> bool:
        """A speed or serving target: held to step times priced on the engine's expected
        step (or the roofline), a decode step's or the server's, where memory, KV share and
        crossover targets take no step time."""
        return self.target in SPEED_TARGETS or self.target in SERVING_TARGETS

    @property
    def held_to(self) -> str:
        """'workload': the server under the deployment's workload; 'contexts': a decode
        step at the file's batch and contexts."""
        return "workload" if self.served else "contexts"


def _worst(rows: list[Row], key: str, highest: bool) -> tuple[float, int]:
    pick = max if highest else min
    row = pick(rows, key=lambda r: float(getattr(r, key)))
    return float(getattr(row, key)), row.context_tokens


def held_to_engine(estimate: Estimate) -> bool:
    """Speed targets are held to the step the deployment's engine is expected to measure
    wherever its engine expects one: a profile named by the file, --engine or a vLLM
    config, and the default 'typical' band when none is named (the figure users act on,
    answers/headline.py); to the roofline under 'engine: roofline'."""
    return basis(estimate.scenario) == EXPECTED


def _speed_rows(estimate: Estimate) -> list[Row]:
    """The rows of the contexts the deployment named (the crossover row the estimator adds
    for tables is not one of them) as the speed targets see them: each step its headline,
    the expected one where the engine expects one, else the roofline itself."""
    pairs = list(zip(estimate.rows, estimate.headlines, strict=True))
    named = [(r, h) for r, h in pairs if not r.is_crossover] or pairs
    return [
        replace(
            r,
            seconds_per_token=h.seconds,
            tokens_per_s=h.tokens_per_s,
            throughput_tokens_per_s=h.throughput_tokens_per_s,
        )
        for r, h in named
    ]


def check(estimate: Estimate, targets: Targets) -> tuple[TargetResult, ...]:
    """Every asked target against the rows of the contexts the deployment named (the
    crossover row the estimator adds for tables is not one of them)."""
    rows = [r for r in estimate.rows if not r.is_crossover] or list(estimate.rows)
    speed = _speed_rows(estimate)
    results = []
    if targets.max_ms_per_token is not None:
        seconds, at = _worst(speed, "seconds_per_token", highest=True)
        limit_ms = targets.max_ms_per_token
        results.append(
            TargetResult(
                "max_ms_per_token", limit_ms, seconds * 1000, at, seconds * 1000 <= limit_ms
            )
        )
    for name, attribute in (
        ("min_tokens_per_s", "tokens_per_s"),
        ("min_throughput_tokens_per_s", "throughput_tokens_per_s"),
    ):
        limit = getattr(targets, name)
        if limit is not None:
            value, at = _worst(speed, attribute, highest=False)
            results.append(TargetResult(name, limit, value, at, value >= limit))
    if targets.must_fit is not None:
        results.append(_fit(estimate, rows, targets.must_fit))
    if targets.min_crossover_context is not None:
        crossover = estimate.crossover_context
        limit = targets.min_crossover_context
        passed = crossover is None or crossover >= limit
        results.append(TargetResult("min_crossover_context", limit, crossover, None, passed))
    if targets.max_kv_share is not None:
        share, at = _worst(rows, "kv_share", highest=True)
        results.append(
            TargetResult(
                "max_kv_share", targets.max_kv_share, share, at, share <= targets.max_kv_share
            )
        )
    return tuple(results)


def _fit(estimate: Estimate, rows: list[Row], must_fit: bool) -> TargetResult:
    _memory(estimate, "must_fit")
    failing = [r for r in rows if not r.fits]
    at = failing[0].context_tokens if failing else rows[-1].context_tokens
    return TargetResult("must_fit", must_fit, not failing, at, not failing or not must_fit)


def startup_fit(estimate: Estimate) -> TargetResult:
    """What vLLM checks when it starts, held for a vLLM config given no targets: the
    weights and the KV cache of one sequence at max-model-len (the deployment's context)
    fit in gpu-memory-utilization x the GPU's memory. vLLM refuses to start otherwise."""
    memory = _memory(estimate, STARTUP_FIT)
    context = max(r.context_tokens for r in estimate.rows)
    fits = memory.max_batch is None or memory.max_batch >= 1
    return TargetResult(STARTUP_FIT, True, fits, context, fits)


def _memory(estimate: Estimate, target: str) -> MemoryFit:
    if estimate.memory is None:
        raise InputError(
            f"{target} needs a GPU preset (its memory capacity), not a bandwidth alone"
        )
    return estimate.memory


def check_serving(
    result: ServingResult | DisaggregatedResult, gpus: int, targets: Targets
) -> tuple[TargetResult, ...]:
    """The serving targets against the server's steady state under the workload (their
    context, None: a workload has no single one), and max_ms_per_token there, which is
    its TPOT, as plan holds it under a workload, min_tokens_per_s, a sequence's
    tokens per second at that TPOT (1 / TPOT), and min_throughput_tokens_per_s, the
    server's output tokens per second; ``gpus``: all the deployment's."""
    found = {
        "max_ms_per_token": result.tpot_s * 1000,
        "min_tokens_per_s": 1 / result.tpot_s,
        "min_throughput_tokens_per_s": result.output_throughput_tokens_per_s,
        "max_ttft_ms": result.ttft_s * 1000,
        "max_tpot_ms": result.tpot_s * 1000,
        "min_output_throughput_tokens_per_s": result.output_throughput_tokens_per_s,
        "min_output_throughput_per_gpu": result.output_throughput_tokens_per_s / gpus,
    }
    results = []
    for name in (*TPOT_TARGETS, "min_throughput_tokens_per_s", *SERVING_TARGETS):
        limit = getattr(targets, name)
        if limit is not None:
            value = found[name]
            passed = value >= limit if name.startswith("min_") else value <= limit
            results.append(TargetResult(name, limit, value, None, passed, served=True))
    return tuple(results)
