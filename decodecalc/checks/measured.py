"""Measured against expected: `decodecalc check --measured`, the CI gate after a benchmark
run. Each measured point is held to the band decodecalc expects for its deployment (its
engine's profile, else the default 'typical' band): inside passes, outside fails with the
ratio, so a regression in the engine or the deployment fails the build as surely as a
config that would miss its target.

The expected figure is the one validate compares a point with: the decode step at the
point's context and batch, plus, for a serving figure, the share other requests' prefills
put in it (calibration.validation.prefill_share).
"""

from __future__ import annotations

from collections.abc import Sequence

from decodecalc.calibration.below_roofline import below_roofline
from decodecalc.calibration.measured_files import ReadPoint
from decodecalc.calibration.points import MeasuredPoint
from decodecalc.calibration.validation import prefill_share
from decodecalc.engine.profile import Engine
from decodecalc.engine.select import choose_engine, extrapolation
from decodecalc.loading.catalog import Catalog
from decodecalc.notes import Note
from decodecalc.record import record, replace
from decodecalc.resolving.resolve import kernel_rated
from decodecalc.step.step import StepModel, expected_for


@record
class MeasuredCheck:
    point: MeasuredPoint
    where: str
    """The file and the result in it (ReadPoint.where)."""
    engine: Engine
    expected_s: float
    low_s: float
    high_s: float
    prefill_s: float = 0.0
    """Other requests' prefills in a serving figure, inside expected, low and high."""
    notes: tuple[Note, ...] = ()
    """What stands in for the engine on this GPU, where its profile has no data for it;
    the replicas read from the benchmark file; a point measured below its roofline."""

    @property
    def ratio(self) -> float:
        """Measured over expected: above 1 is slower than expected."""
        return self.point.measured_seconds / self.expected_s

    @property
    def passed(self) -> bool:
        return self.low_s <= self.point.measured_seconds <= self.high_s


def check_measured(
    read: Sequence[ReadPoint], catalog: Catalog, engine: str | None = None
) -> list[MeasuredCheck]:
    """Each point against its expected band: the engine the point names, else ``engine``
    (--engine), else 'typical'."""
    checks = []
    for r in read:
        p = r.point
        named = p.engine if p.release is None else f"{p.engine}@{p.release}"
        chosen, notes = choose_engine(catalog, named if p.engine else engine, p.scenario.gpu)
        s = p.scenario
        # As estimate and validate price the point: the band widened where it lies outside
        # the profile's fitted range (said in a note), the GPU's kernel rates at its batch.
        wide, outside = extrapolation(chosen, s.model, s.batch, s.gpu)
        rated = kernel_rated(replace(s, engine=wide), s.batch).engine
        step = StepModel.of(s)
        expected = expected_for(step, step.row(p.context_tokens), rated)
        share = prefill_share(p, catalog)
        impossible = below_roofline(p, r.where)
        misread = _weights_overflow(step, p.context_tokens, r.where)
        said = (
            *notes,
            *outside,
            *r.notes,
            *(() if misread is None else (misread,)),
            *(() if impossible is None else (impossible,)),
        )
        checks.append(
            MeasuredCheck(
                p,
                r.where,
                chosen,
                expected.seconds + share,
                expected.low_seconds + share,
                expected.high_seconds + share,
                share,
                said,
            )
        )
    return checks


def _weights_overflow(step: StepModel, context: int, where: str) -> Note | None:
    """A point whose deployment, as read, cannot even hold its weights: no server ran it,
    so its band says nothing of the run. Most often the deployment was split over more GPUs
    than the file says (a benchmark result seldom gives its tensor parallelism)."""
    s = step.scenario
    memory = step.memory(context)
    if s.gpu is None or memory is None:
        return None
    usable = memory.room.usable_bytes
    if memory.stored_weight_bytes <= usable:
        return None
    hint = (
        ": the file gives no tensor parallelism and TP 1 was taken, give --tp" if s.tp == 1 else ""
    )
    return Note(
        "does-not-fit",
        f"{where}: {s.model.id} does not fit on {s.gpus} x {s.gpu.id}: its weights take "
        f"{memory.stored_weight_bytes / 1e9:,.2f} GB per GPU of the {usable / 1e9:,.2f} GB "
        f"usable, so no server ran it as read{hint}",
    )
