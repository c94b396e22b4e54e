"""A sweep: every combination of the axes given, each resolved to a scenario and streamed
as its rows (step/fast.py), so a grid of millions keeps memory flat."""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence

from decodecalc.answers.headline import ROOFLINE, basis
from decodecalc.answers.notes import context_notes, scenario_notes
from decodecalc.errors import Conflict, InputError
from decodecalc.loading.catalog import Catalog
from decodecalc.notes import Note
from decodecalc.resolving.resolve import resolve
from decodecalc.scenarios.scenario import Scenario
from decodecalc.scenarios.spec import ScenarioSpec
from decodecalc.step.fast import ROW_FIELDS, Columns, FastStep

MAX_SWEEP_ROWS = 100_000_000
"""Largest grid a sweep accepts: streaming keeps memory flat, but time is not free."""

Chunks = Iterator[Columns]

RATE_FIELDS = ("expected_tokens_per_s", "expected_throughput_tokens_per_s")
"""Tokens per second at a row's headline step (answers/headline.py): per sequence and for
the batch, after the row's cost and energy figures."""
_EXPECTED = ROW_FIELDS.index("expected_ms_per_token")
_RATES = (ROW_FIELDS.index("tokens_per_s"), ROW_FIELDS.index("throughput_tokens_per_s"))


def rate_columns(columns: Columns, s: Scenario) -> tuple[Sequence[float], Sequence[float]]:
    """A chunk's RATE_FIELDS: 1000 / expected ms and B times that, or under the roofline
    (basis) the step model's own rates (its tokens_per_s and throughput_tokens_per_s), so
    they equal the roofline's exactly."""
    if basis(s) == ROOFLINE:
        one, all_ = _RATES
        return columns[one], columns[all_]
    expected = columns[_EXPECTED]
    sequences = s.batch * 1000
    return [1000 / ms for ms in expected], [sequences / ms for ms in expected]


_FITS = ROW_FIELDS.index("fits")


class Misfits:
    """The rows of a sweep that do not fit, tallied as they stream past: how many of how
    many, and the smallest (batch, context) among them with its scenario. A sweep's rows
    are millions, so one note says it for all (estimate's does-not-fit note, per
    scenario, would be millions of lines)."""

    def __init__(self) -> None:
        self.rows = 0
        self.misfits = 0
        self.smallest: tuple[int, int, Scenario] | None = None

    def tally(self, scenario: Scenario, columns: Columns, no: object) -> None:
        """Count a chunk whose fits column labels a row that does not fit ``no``."""
        contexts, fits = columns[0], columns[_FITS]
        self.rows += len(contexts)
        found = fits.count(no)
        if not found:
            return
        self.misfits += found
        if self.smallest is not None and scenario.batch > self.smallest[0]:
            return  # (no row of a larger batch is the smallest: a sweep's rows stay fast)
        least = min(int(c) for c, f in zip(contexts, fits, strict=True) if f == no)
        if self.smallest is None or (scenario.batch, least) < self.smallest[:2]:
            self.smallest = (scenario.batch, least, scenario)

    def note(self, label: Callable[[Scenario], str]) -> Note | None:
        """One does-not-fit note for the whole sweep (None: every row fits), the smallest
        misfit's scenario named by ``label``."""
        if self.smallest is None:
            return None
        batch, context, scenario = self.smallest
        return Note(
            "does-not-fit",
            f"does not fit: {self.misfits:,} of {self.rows:,} rows (fits false) need more "
            "memory than the GPU leaves for weights, KV and state; the smallest: batch "
            f"{batch:,} at {context:,} tokens ({label(scenario)})",
        )


def sweep_scenarios(
    specs: Sequence[ScenarioSpec],
    contexts: tuple[int, ...],
    catalog: Catalog,
    skipped: list[str],
    notes: list[tuple[Scenario, Sequence[Note]]],
    labels: dict[bool | None, object] | None = None,
    misfits: Misfits | None = None,
) -> Iterator[tuple[Scenario, float | None, Chunks]]:
    """Each valid scenario with its crossover and the stream of its rows (in chunks of
    columns), its notes added to ``notes`` and the rows that do not fit tallied in
    ``misfits``; combinations that are no valid deployment (a TP that does not split the
    heads, a weight-only KV format) are listed in ``skipped`` instead."""
    for spec in specs:
        try:
            scenario = resolve(spec, catalog)
            fast = FastStep.of(scenario)
        except Conflict as exc:  # any other error is a bad value: the sweep stops on it
            skipped.append(skipped_combination(spec, exc))
            continue
        notes.append((scenario, [*scenario_notes(scenario), *context_notes(scenario, contexts)]))
        chunks = fast.chunks(contexts, labels)
        if misfits is not None:
            chunks = _tallied(scenario, chunks, misfits, False if labels is None else labels[False])
        yield scenario, fast.crossover, chunks


def valid_scenarios(
    specs: Sequence[ScenarioSpec], catalog: Catalog
) -> tuple[list[Scenario], list[str]]:
    """A grid's combinations resolved (compare), those that are no valid deployment (a TP
    that does not split the heads, --ep on a dense model) skipped and named, as sweep
    skips them; an error when none is valid: the only one's own, else the first named."""
    scenarios: list[Scenario] = []
    skipped: list[str] = []
    first: Conflict | None = None
    for spec in specs:
        try:
            scenarios.append(resolve(spec, catalog))
        except Conflict as exc:  # any other error is a bad value: the grid stops on it
            first = first or exc
            skipped.append(skipped_combination(spec, exc))
    if first is not None and not scenarios:
        if len(specs) == 1:
            raise first
        raise InputError(f"no combination is a valid deployment; the first: {skipped[0]}")
    return scenarios, skipped


def skipped_combination(spec: ScenarioSpec, exc: Conflict) -> str:
    """A grid's combination that is no valid deployment, in words: its values (a loaded
    preset by its id) and why."""
    given = {k: getattr(spec, k) for k in ("model", "gpu", "weights", "kv_dtype")}
    given = {k: getattr(v, "id", v) for k, v in given.items()}
    given.update(batch=spec.batch, tp=spec.tp)
    shown = ", ".join(f"{k}={v}" for k, v in given.items() if v is not None)
    return f"{shown}: {exc}"


def skipped_note(skipped: Sequence[str], verb: str = "skipped") -> Note:
    """What a grid (sweep, compare, plan's candidates) set aside: combinations of valid
    values that are no valid deployment (cli.md, "Grids"), counted, with the first;
    ``verb`` says what became of them."""
    many = len(skipped) > 1
    return Note(
        "skipped-combinations",
        f"{verb} {len(skipped):,} combination{'s that are' if many else ' that is'} no valid "
        f"deployment; first: {skipped[0]}",
    )


def _tallied(scenario: Scenario, chunks: Chunks, misfits: Misfits, no: object) -> Chunks:
    for columns in chunks:
        misfits.tally(scenario, columns, no)
        yield columns
