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
    try:
        served = _served(d)
    except Refused as exc:
        return _unserved(d, results, notes, exc)
    gpus = d.scenario.gpus if d.pools is None else d.pools.gpus
    results = (*results, *check_serving(served, gpus, d.targets))
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


def _unserved(
    d: Deployment, results: tuple[TargetResult, ...], notes: tuple[Note, ...], exc: Refused
) -> tuple[tuple[TargetResult, ...], tuple[Note, ...]]:
    """A server that cannot carry its workload: a valid deployment that misses its targets,
    as plan counts it, not an invalid file, and the note says why. Its request rate
    reaches its saturation rate (``exc.target`` 'load': the queue, TTFT and TPOT grow
    without bound, no steady state gives a value), or it has no room for one request
    ('fit': weights, activations and reserve leave no KV cache, or a request outgrows it):
    every target held to the server is missed (must_fit is held to the file's batch and
    contexts, which say the misfit themselves)."""
    saturated = exc.target == "load"
    why = (
        "saturated: the queue grows without bound"
        if saturated
        else "does not fit: no room for a request"
    )
    held = [name for name in d.targets.asked() if name != "must_fit"]
    missed = tuple(
        TargetResult(name, getattr(d.targets, name), None, None, False, True, unserved=why)
        for name in held
    )
    code = "serving-saturated" if saturated else "serving-does-not-fit"
    return (*results, *missed), (*notes, Note(code, f"{exc}"))


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
