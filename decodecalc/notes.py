"""Notes: what a reader must know to read a result right ("does not fit", "past the model's
maximum context", "these are roofline figures").

A note is computed with the result, not printed by the command that happens to notice it,
so every command that computes a case gives the same notes: tables print them under the
table, machine formats carry them in JSON (``notes``: a list of ``{"code", "message"}``)
and repeat them on stderr, where a pipeline's data stays clean. ``code`` is stable for
scripts to match; ``message`` is for people and may be reworded.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING

from decodecalc.record import record

if TYPE_CHECKING:
    from decodecalc.physics.estimator import Estimate, Scenario


@record
class Note:
    code: str
    """Stable, kebab-case: what scripts match on."""
    message: str

    def as_dict(self) -> dict[str, str]:
        return {"code": self.code, "message": self.message}


def unique(notes: Sequence[Note]) -> tuple[Note, ...]:
    """Each note once, in first-seen order (many scenarios of a comparison share a note)."""
    return tuple(dict.fromkeys(notes))


def many_notes(labelled: Iterable[tuple[str, Sequence[Note]]]) -> tuple[Note, ...]:
    """The notes of many scenarios (a comparison, a sweep) in one list: a note every
    scenario shares is said once; one that only some have names the first of them and
    counts the rest (a sweep may have millions)."""
    first: dict[Note, list[str]] = {}
    count: dict[Note, int] = {}
    scenarios = 0
    for label, notes in labelled:
        scenarios += 1
        for n in notes:
            labels = first.setdefault(n, [])
            if len(labels) < 3:
                labels.append(label)
            count[n] = count.get(n, 0) + 1
    merged = []
    for n, labels in first.items():
        if count[n] == scenarios:
            merged.append(n)
            continue
        more = count[n] - len(labels)
        shown = ", ".join(labels) + (f" and {more:,} more" if more else "")
        merged.append(Note(n.code, f"{shown}: {n.message}"))
    return tuple(merged)


TINY_STEP_S = 0.002
"""Below this much streaming per step, launch and scheduling overheads likely dominate."""


def scenario_notes(s: Scenario) -> list[Note]:
    """What holds for a scenario at any context."""
    notes = list(s.notes)
    expected = s.engine is not None and bool(s.engine.params)
    if s.efficiency == 1 and not s.overhead_s and not expected:
        notes.append(
            Note(
                "roofline",
                "these are bandwidth-roofline figures (efficiency 1, no overhead): real "
                "engines measure 1.1 to 10 times slower; give --efficiency and --overhead, or "
                "fit them with 'decodecalc calibrate'",
            )
        )
    if s.gpu is not None and s.peak_flops() is None:
        notes.append(
            Note(
                "no-compute-rate",
                f"no {s.weights.matmul.upper()} FLOP/s is known for {s.gpu.id}: times are "
                "memory time only, never compute-bound",
            )
        )
    if s.gpu is not None and s.gpu.announced:
        notes.append(
            Note(
                "announced-gpu",
                f"{s.gpu.id} is announced, not shipping: its figures are the vendor's "
                f"announcement ({s.gpu.announced}), not a datasheet of a part one can measure",
            )
        )
    if s.link is None and (s.tp > 1 or s.pp > 1):
        notes.append(Note("no-communication", f"not counted (--link none): {_uncounted(s)}"))
    return notes


def _uncounted(s: Scenario) -> str:
    """The transfers --link none leaves out: TP's collectives (or, under data-parallel
    attention, the MoE layers' gathers or all-to-alls) and the pipeline's hand-offs."""
    kinds = []
    if s.tp > 1:
        if not s.dp_attention:
            kinds.append(f"TP {s.tp} all-reduces")
        elif s.ep:
            kinds.append(f"the expert all-to-alls over {s.tp} GPUs")
        else:
            kinds.append(f"the MoE all-gathers over {s.tp} GPUs")
    if s.pp > 1:
        kinds.append(f"the hand-offs between the {s.pp} pipeline stages")
    return " and ".join(kinds)


def context_notes(s: Scenario, contexts: Sequence[int]) -> list[Note]:
    """Contexts past what the model was trained for: the physics extrapolates."""
    longest = max(contexts, default=0)
    limit = s.model.max_context_tokens
    if longest <= limit:
        return []
    return [
        Note(
            "past-max-context",
            f"contexts above {limit:,} tokens exceed {s.model.id}'s maximum context "
            "(max_position_embeddings); the figures extrapolate the same physics",
        )
    ]


def estimate_notes(est: Estimate) -> tuple[Note, ...]:
    """Every note that applies to an estimate's rows."""
    s = est.scenario
    notes = scenario_notes(s)
    notes.extend(context_notes(s, [r.context_tokens for r in est.rows]))
    misfits = [r.context_tokens for r in est.rows if r.fits is False]
    if misfits and est.memory is not None:
        budget = f"{est.memory.budget_bytes / 1e9:,.2f} GB per GPU"
        if est.memory.stored_weight_bytes > est.memory.budget_bytes:
            where = f"the weights alone need more than the {budget}"
        else:
            where = (
                f"from {misfits[0]:,} tokens at batch {s.batch}, weights, KV and state need "
                f"more than the {budget}"
            )
        notes.append(
            Note(
                "does-not-fit",
                f"does not fit: {where} that {s.memory_utilization:g} of memory leaves "
                "(these rows describe a deployment that cannot run)",
            )
        )
    streaming = est.rows[0].memory_seconds
    expected = s.engine is not None and bool(s.engine.params)  # (its fixed costs are in)
    if streaming < TINY_STEP_S and not s.overhead_s and not expected:
        notes.append(
            Note(
                "launch-bound",
                f"{streaming * 1000:.3f} ms of streaming per step is so little that kernel "
                "launches and scheduling likely dominate; see --overhead",
            )
        )
    return unique(notes)
