"""The notes an answer carries about its scenario and contexts: roofline figures, an unknown
FLOP/s rate, uncounted communication, contexts past the model's maximum, a deployment that
does not fit, a step so short that launches dominate (decodecalc/notes.py says what a note is)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Protocol

from decodecalc.engine.profile import gpu_family
from decodecalc.notes import Note, unique

if TYPE_CHECKING:
    from decodecalc.model.hardware import GpuSpec
    from decodecalc.scenarios.scenario import Scenario
    from decodecalc.step.memory import MemoryFit
    from decodecalc.step.step import Row


class Estimated(Protocol):
    """What the estimate notes read of an estimate (answers/estimate.py builds one and
    gives it its notes, so this module names only what it reads)."""

    @property
    def scenario(self) -> Scenario: ...

    @property
    def rows(self) -> tuple[Row, ...]: ...

    @property
    def memory(self) -> MemoryFit | None: ...


TINY_STEP_S = 0.002
"""Below this much streaming per step, launch and scheduling overheads likely dominate."""


ENGINE_CHOICE = (
    "no-engine-data",
    "engine-not-fitted",
    "engine-fallback",
    "engine-older-line",
    "engine-transferred",
)
"""The notes on whose parameters the expected figures take (engine/select.py
choose_engine): one GPU's, whatever the batch, format or split."""


def engine_choice_notes(s: Scenario) -> list[Note]:
    """The scenario's ENGINE_CHOICE notes: what a plan says once per GPU, where the
    range notes vary with each option's batch."""
    return [n for n in s.notes if n.code in ENGINE_CHOICE]


def serving_scenario_notes(s: Scenario) -> list[Note]:
    """scenario_notes for a server: less the engine's fitted range checked at the
    scenario's one batch, for a server runs many, and serve checks each of them
    (answers/serving.py); said of the running requests (under_workload)."""
    return under_workload([n for n in scenario_notes(s) if n.code != "engine-extrapolated"], s)


def under_workload(notes: Sequence[Note], s: Scenario) -> list[Note]:
    """A scenario's notes for a server under a workload (serving, check): data-parallel
    attention splits the running requests, which the workload sets, not the scenario's
    batch (serving and check set none)."""
    from decodecalc.resolving.resolve import dp_attention_note

    return [dp_attention_note(s.tp, None) if n.code == "dp-attention" else n for n in notes]


def assumed_step(s: Scenario) -> list[Note]:
    """Under --engine roofline, --efficiency below 1 or an --overhead make the figures the
    user's own engine's step: no longer the bound the roofline is at efficiency 1 (every
    other engine refuses them: resolving/resolve.py roofline_only)."""
    if not s.engine.is_roofline or (s.efficiency == 1 and not s.overhead_s):
        return []
    overhead = f" plus {s.overhead_s * 1000:g} ms a step" if s.overhead_s else ""
    return [
        Note(
            "assumed-step",
            f"these figures are the roofline at efficiency {s.efficiency:g}{overhead}: your "
            "assumption of your engine's step, not a bound (at efficiency 1 and no overhead "
            "the roofline is one)",
        )
    ]


def unified_nominal(gpu: GpuSpec) -> bool:
    """An Apple GPU whose preset gives the whole unified RAM (no working set was found to
    cite): Metal lets the GPU wire only part of it by default."""
    return gpu.memory_nominal and gpu_family(gpu) == "apple"


def scenario_notes(s: Scenario) -> list[Note]:
    """What holds for a scenario at any context."""
    notes = list(s.notes)
    if s.efficiency == 1 and not s.overhead_s and s.engine.is_roofline:
        notes.append(
            Note(
                "roofline",
                "these are bandwidth-roofline figures (efficiency 1, no overhead): real "
                "engines measure 1.1 to 10 times slower; give --efficiency and --overhead, or "
                "fit them with 'decodecalc calibrate'",
            )
        )
    notes.extend(assumed_step(s))
    if s.gpu is not None and s.bandwidth_given:
        notes.append(
            Note(
                "bandwidth-given",
                f"{s.bandwidth_bytes_per_s / 1e9:,g} GB/s (--bandwidth) stands in for "
                f"{s.gpu.id}'s own {s.gpu.bandwidth_bytes_per_s / 1e9:,g} GB/s: the memory "
                "and FLOP/s stay the GPU's",
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
    if s.gpu is not None and unified_nominal(s.gpu):
        notes.append(
            Note(
                "memory-nominal-unified",
                f"{s.gpu.id}'s memory is its nominal {s.gpu.memory_bytes / 2**30:,.0f} GiB of "
                "unified RAM, not what Metal lets the GPU use (recommendedMaxWorkingSetSize, "
                "48 GiB of 64 on an M1 Max, unless raised with sysctl iogpu.wired_limit_mb): "
                "fits are that much too generous; give "
                f"-g '{s.gpu.id},memory=SIZE' for your Mac's figure",
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


def estimate_notes(est: Estimated) -> tuple[Note, ...]:
    """Every note that applies to an estimate's rows."""
    s = est.scenario
    notes = scenario_notes(s)
    notes.extend(context_notes(s, [r.context_tokens for r in est.rows]))
    misfits = [r.context_tokens for r in est.rows if r.fits is False]
    if misfits and est.memory is not None:
        usable = est.memory.room.usable_bytes
        budget = f"{usable / 1e9:,.2f} GB per GPU"
        longest = est.memory.max_context  # the bytes' limit at the batch
        room = est.memory.room
        if room.overhead_overflows:
            where = (
                f"the server's activation peak ({room.activation_bytes / 1e9:,.2f} GB) and "
                f"runtime reserve ({room.reserve_bytes / 1e9:,.2f} GB) alone take the "
                f"{room.budget_bytes / 1e9:,.2f} GB per GPU its memory utilization gives: none is"
            )
        elif est.memory.stored_weight_bytes > usable:
            where = f"the weights alone need more than the {budget}"
        elif longest is None or misfits[0] <= longest:
            where = (
                f"from {misfits[0]:,} tokens, batch {s.batch} is more requests than the "
                f"server's KV pool holds (it keeps blocks a step does not read) in the {budget}"
            )
        else:
            where = (
                f"from {misfits[0]:,} tokens at batch {s.batch:,}, weights, KV and state need "
                f"more than the {budget}"
            )
        notes.append(
            Note(
                "does-not-fit",
                f"does not fit: {where} usable (these rows describe a deployment that cannot run)",
            )
        )
    streaming = est.rows[0].memory_seconds
    # (an engine's expected step has its fixed costs in)
    if streaming < TINY_STEP_S and not s.overhead_s and s.engine.is_roofline:
        notes.append(
            Note(
                "launch-bound",
                f"{streaming * 1000:.3f} ms of streaming per step is so little that kernel "
                "launches and scheduling likely dominate; see --overhead",
            )
        )
    return unique(notes)


def cost_notes(s: Scenario) -> tuple[Note, ...]:
    """Energy from board power is a ceiling, and list prices are dated. The energy note
    comes with a price or a given power, when tables show cost and energy: every GPU preset
    with a TDP would otherwise add it to every query."""
    r = s.rates
    notes = []
    if r.power_w is not None and (r.price_per_gpu_hour is not None or r.power_source == "given"):
        notes.append(
            Note(
                "energy-at-tdp",
                "energy per token assumes every GPU draws its full board power (its TDP, or "
                "--power): an upper bound, since a memory-bound decode step leaves much of the "
                "chip idle",
            )
        )
    if r.price_date:
        notes.append(
            Note(
                "dated-price",
                f"{r.price_source}'s prices are on-demand list prices as read on {r.price_date}: "
                "prices change, give --price to use yours",
            )
        )
    return tuple(notes)
