"""Running deployment checks: estimate each deployment and hold it against its targets."""

from __future__ import annotations

from typing import TYPE_CHECKING

from decodecalc.answers.estimate import Estimate, estimate
from decodecalc.answers.notes import estimate_notes, under_workload
from decodecalc.checks.deployments import Deployment
from decodecalc.checks.targets import (
    TPOT_TARGETS,
    TargetResult,
    Targets,
    check,
    check_serving,
    startup_fit,
)
from decodecalc.errors import InputError
from decodecalc.notes import Note
from decodecalc.record import record, replace

if TYPE_CHECKING:
    from decodecalc.answers.disaggregated import DisaggregatedResult
    from decodecalc.answers.serving import Refused, ServingResult


@record
class CheckedDeployment:
    deployment: Deployment
    estimate: Estimate
    results: tuple[TargetResult, ...]
    notes: tuple[Note, ...] = ()
    """The deployment's own notes, and what a check it was not asked for checked."""

    @property
    def passed(self) -> bool:
        return all(r.passed for r in self.results)

    @property
    def at_contexts(self) -> bool:
        """Whether a target was held to a step at the file's batch and contexts (under a
        workload perhaps none: every other target is held to the server)."""
        return any(not r.served for r in self.results)

    @property
    def stepped(self) -> bool:
        """Whether a speed target was held to a decode step at the file's contexts."""
        return any(r.timed and not r.served for r in self.results)

    @property
    def under_workload(self) -> bool:
        """Whether a target was held to the server under the deployment's workload."""
        return any(r.served for r in self.results)


def check_deployment(d: Deployment) -> CheckedDeployment:
    """One deployment against its targets (or, for a vLLM config given none, against
    vLLM's start-up check); an InputError names the file and the deployment."""
    try:
        est = estimate(d.scenario, d.contexts)
        stepped = _stepped(d)
        results = check(est, stepped)
        # The roofline note is said once for the whole run, as what targets are held to.
        found = (n for n in estimate_notes(est) if n.code != "roofline")
        if d.batch_is_cap and not stepped.asked():
            found = (_capped(d, est) if n.code == "does-not-fit" else n for n in found)
        notes = (*d.notes, *found)
        if d.workload is not None:
            notes = tuple(under_workload(notes, d.scenario))
            if set(d.targets.asked()) - set(stepped.asked()):
                results, notes = _under_workload(d, results, notes)
        if d.startup_fit:
            fit = startup_fit(est)
            results = (*results, fit)
            notes = (*notes, _startup_note(d, fit))
    except InputError as exc:
        raise InputError(f"{d.file}: {d.name}: {exc}") from None
    return CheckedDeployment(d, est, results, notes)


def _stepped(d: Deployment) -> Targets:
    """The targets held to a decode step at the deployment's batch and contexts: under a
    workload, must_fit alone (every other is held to the server: _under_workload)."""
    return d.targets if d.workload is None else Targets(must_fit=d.targets.must_fit)


def _under_workload(
    d: Deployment, results: tuple[TargetResult, ...], notes: tuple[Note, ...]
) -> tuple[tuple[TargetResult, ...], tuple[Note, ...]]:
    """The targets held to the server under the deployment's workload, and the notes that
    say what each was held to. Under a workload max_ms_per_token is the server's TPOT, as
    plan holds it there, min_tokens_per_s its inverse and min_throughput_tokens_per_s its
    output tokens/s: a decode step at batch 1 and the model's maximum context (a file's
    defaults) is not what a user then sees; max_kv_share and min_crossover_context are
    held to a decode step at the server's mean decode batch and mean context."""
    assert d.workload is not None and d.limits is not None  # (every read deployment's)
    from decodecalc.answers.serving import Refused

    asked = set(d.targets.asked())
    gpus = d.scenario.gpus if d.pools is None else d.pools.gpus
    try:
        served = _served(d)
        results = (*results, *check_serving(served, gpus, d.targets))
    except Refused as exc:
        if exc.target != "load":
            return _unserved(d, results, notes, exc)
        served, held = _at_saturation(d, exc, gpus)
        results, notes = (*results, *held), (*notes, Note("serving-saturated", f"{exc}"))
    if asked & set(TPOT_TARGETS):
        notes = (*notes, TPOT_NOTE)
    if "min_throughput_tokens_per_s" in asked:
        notes = (*notes, THROUGHPUT_NOTE)
    step_targets = Targets(
        max_kv_share=d.targets.max_kv_share,
        min_crossover_context=d.targets.min_crossover_context,
    )
    if step_targets.asked():
        batch = max(1, round(served.decode_batch))
        context = d.workload.input_len + d.workload.output_len // 2
        at = estimate(replace(d.scenario, batch=batch), (context,))
        results = (*results, *(replace(r, served=True) for r in check(at, step_targets)))
        notes = (*notes, _mean_step_note(step_targets, batch, context))
    return results, (*notes, *served.notes)


UNBOUNDED = ("max_ttft_ms", "max_tpot_ms", *TPOT_TARGETS)
"""The targets a saturated server misses: its queue, so its TTFT, grows without bound, and
its TPOT has no steady state to give."""
FULL = 1_000_000
"""A closed loop's concurrency past a server's running limit (max-num-seqs, the KV pool's
requests): the server full. The most a workload takes."""


def _at_saturation(
    d: Deployment, exc: Refused, gpus: int
) -> tuple[ServingResult | DisaggregatedResult, tuple[TargetResult, ...]]:
    """A saturated server's targets: TTFT and TPOT (UNBOUNDED) missed; its output, every
    running slot busy, is its saturation rate (``exc.value``, requests/s) x the output
    tokens, held to the throughput targets; and the server full (a closed loop past its
    running limit), whose mean decode batch the step targets are held at."""
    assert d.workload is not None
    full = _served(replace(d, workload=replace(d.workload, request_rate=None, concurrency=FULL)))
    output = exc.value * d.workload.output_len
    found = {
        "min_throughput_tokens_per_s": output,
        "min_output_throughput_tokens_per_s": output,
        "min_output_throughput_per_gpu": output / gpus,
    }
    results = []
    for r in check_serving(full, gpus, d.targets):
        if r.target in UNBOUNDED:
            why = "saturated: the queue grows without bound"
            results.append(replace(r, value=None, passed=False, unserved=why))
        else:
            value = found[r.target]
            results.append(replace(r, value=value, passed=value >= r.limit))
    # (the full loop's queue is no open loop's: the saturation note says what grows)
    kept = tuple(n for n in full.notes if n.code != "serving-queued")
    return replace(full, notes=kept), tuple(results)


def _unserved(
    d: Deployment, results: tuple[TargetResult, ...], notes: tuple[Note, ...], exc: Refused
) -> tuple[tuple[TargetResult, ...], tuple[Note, ...]]:
    """A server with no room for one request (weights, activations and reserve leave no
    KV cache, or a request outgrows it): a valid deployment that cannot carry its
    workload, not an invalid file, so every target held to the server is missed, as plan
    counts it, and the note says why (must_fit is held to the file's batch and contexts,
    which say the misfit themselves)."""
    why = "does not fit: no room for a request"
    held = [name for name in d.targets.asked() if name != "must_fit"]
    missed = tuple(
        TargetResult(name, getattr(d.targets, name), None, None, False, True, unserved=why)
        for name in held
    )
    return (*results, *missed), (*notes, Note("serving-does-not-fit", f"{exc}"))


TPOT_NOTE = Note(
    "ms-per-token-as-tpot",
    "under its workload, max_ms_per_token is held to the server's TPOT (as plan holds it) "
    "and min_tokens_per_s to 1000 / TPOT ms per sequence, not to a decode step at a context",
)
"""Said where a deployment with a workload asks for max_ms_per_token or min_tokens_per_s."""
THROUGHPUT_NOTE = Note(
    "throughput-under-workload",
    "under its workload, min_throughput_tokens_per_s is held to the server's output tokens "
    "per second (as min_output_throughput_tokens_per_s), not to a decode step at a batch",
)
"""Said where a deployment with a workload asks for min_throughput_tokens_per_s."""


def _mean_step_note(targets: Targets, batch: int, context: int) -> Note:
    """What max_kv_share and min_crossover_context were held to under a workload."""
    return Note(
        "step-at-workload-mean",
        f"under its workload, {' and '.join(targets.asked())} "
        f"{'are' if len(targets.asked()) > 1 else 'is'} held to a decode step at the "
        f"server's mean decode batch ({batch:,} sequences) and the workload's mean context "
        f"({context:,} tokens: the input and half the output), not to the file's batch "
        "and contexts",
    )


def _capped(d: Deployment, est: Estimate) -> Note:
    """What a vLLM config's max-num-seqs not fitting at full length means when no target
    holds the deployment at that batch: vLLM starts as long as one sequence of
    max-model-len fits (its start-up check) and runs fewer at once. Where not even one
    fits, the deployment cannot run, and the does-not-fit note stays."""
    memory = est.memory
    assert memory is not None  # a row that does not fit was held to a memory budget
    if not memory.max_batch:  # (None: any number fits, and no row misfits)
        return next(n for n in estimate_notes(est) if n.code == "does-not-fit")
    context = max(r.context_tokens for r in est.rows)
    return Note(
        "vllm-fewer-at-once",
        f"{d.scenario.batch:,} sequences (max-num-seqs) at full length ({context:,} tokens) "
        f"would not fit in the {memory.room.usable_bytes / 1e9:,.2f} GB per GPU a server "
        f"leaves at {d.scenario.memory_utilization:g} of memory; {memory.max_batch:,} would: "
        "max-num-seqs only caps the requests vLLM runs at once, so it starts and runs fewer",
    )


def _served(d: Deployment) -> ServingResult | DisaggregatedResult:
    """The deployment's server under its workload: one pool, or prefill and decode pools."""
    assert d.workload is not None and d.limits is not None
    if d.pools is not None:
        from decodecalc.answers.disaggregated import serve_disaggregated

        return serve_disaggregated(d.pools, d.workload, d.limits)
    from decodecalc.answers.serving import serve

    return serve(d.scenario, d.workload, d.limits)


def _startup_note(d: Deployment, fit: TargetResult) -> Note:
    """Unnamed: it is the deployment's own note, and a run of several names it once."""
    return Note(
        "vllm-startup-fit",
        "no targets given, so it was held to what vLLM checks when it starts: "
        f"the weights and one sequence of max-model-len ({fit.context:,} tokens) fit in "
        f"gpu-memory-utilization ({d.scenario.memory_utilization:g}) of the GPU's memory, "
        "less the activations and reserve its start-up profile takes",
    )
