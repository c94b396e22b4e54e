"""Which engine a scenario's expected figures come from, from the spec a user gives
(``--engine NAME``, ``NAME@LINE``, ``typical``, ``roofline`` or none) to an Engine with the
notes a reader must know (choose_engine): a profile's parameters for the GPU family, the
median of the profiles measured on it when the profile has none (engine_for), or every
profile measured on the family (typical)."""

from __future__ import annotations

import re
from collections.abc import Sequence
from datetime import date
from typing import TYPE_CHECKING, Protocol

from decodecalc.engine.profile import (
    Engine,
    EngineKind,
    EngineParams,
    EngineProfile,
    FitRange,
    ReleaseLine,
    ServingDefaults,
    gpu_family,
    release_order,
    roofline,
)
from decodecalc.engine.transfer import across, for_kind, vendor_of
from decodecalc.errors import InputError
from decodecalc.notes import Note

if TYPE_CHECKING:
    from decodecalc.model.hardware import GpuSpec
    from decodecalc.model.model import Model
from decodecalc.record import record, replace


def measured_on(profiles: Sequence[EngineProfile], family: str) -> list[tuple[str, EngineParams]]:
    """Each profile fitted on this family's own measurements (a profile carried over from
    another engine, with no points of its own, would count that engine twice), with the
    parameters ``--engine NAME`` takes there (as_named), by its name."""
    return [found for p in profiles if measured(p, family) and (found := as_named(p, family))]


def measured(profile: EngineProfile, family: str) -> bool:
    """Whether a profile's fit over every line holds points of this family's own (read
    without parsing its lines)."""
    found = profile.family(family)
    return found is not None and found.points > 0


def as_named(profile: EngineProfile, family: str) -> tuple[str, EngineParams] | None:
    """What ``--engine NAME`` takes on a GPU family (choose_engine: at_line at the newest
    line, its own parameters there or a transfer's), named ``NAME@LINE`` (``NAME`` for a
    profile without lines), so that a vote of the typical band is the figure the same
    engine named gives (issue 28: one answer, one release); None where it has none there
    and ``--engine NAME`` falls back on another family (engine_for)."""
    lines = sorted(profile.release_lines(), key=lambda found: release_order(found.release))
    if not lines:
        params = profile.family(family)
        return None if params is None else (profile.id, params)
    line = newest_line(profile, family)  # (at_line on this family alone: none other parsed)
    params = line_params(profile, lines, family, release_order(line))
    return None if params is None else (f"{profile.id}@{line}", params)


AS_OF = date(2026, 12, 2)
"""The day the shipped profiles stand for: the typical band's twelve months and the
vendor factors' (validation/fit_engines.py) end on it, fixed so that the same presets
give the same figures whatever day they run."""

RECENT_DAYS = 365


def recent_on(profiles: Sequence[EngineProfile], family: str) -> list[tuple[str, EngineParams]]:
    """Each profile with a release line fitted on this family's own points and dated
    within RECENT_DAYS before AS_OF (its versions' dates; a month counts from its first
    day): today's engines on the family, each with what ``--engine NAME`` takes there
    (as_named: its newest line there, a transfer's where its newest is transferred), by
    ``NAME@LINE``. Only profiles measured on the family are read (a profile's lines are
    parsed on first use)."""
    out = []
    for profile in profiles:
        if not measured(profile, family):
            continue
        stated = profile.latest_dates
        if stated is not None and not recent((dict(stated).get(family, ""),)):
            continue  # (no line of it is recent there: its lines stay unparsed)
        if any(
            (own := dict(x.families).get(family)) is not None
            and own.points
            and not own.transferred
            and recent(x.dates)
            for x in profile.release_lines()
        ) and (found := as_named(profile, family)):
            out.append(found)
    return out


def recent(dates: Sequence[str]) -> bool:
    """Whether any of a line's dates ('YYYY-MM-DD' or 'YYYY-MM') lies within RECENT_DAYS
    before AS_OF."""
    for text in dates:
        if not text:
            continue
        if 0 <= (AS_OF - day_of(text)).days <= RECENT_DAYS:
            return True
    return False


def day_of(text: str) -> date:
    """A line's date ('YYYY-MM-DD', or 'YYYY-MM' counted from its first day)."""
    return date.fromisoformat(text if len(text) == 10 else f"{text}-01")


def line_day(profile: EngineProfile, release: str) -> tuple[str | None, bool]:
    """How recent a release line is known to be ('YYYY-MM-DD' or 'YYYY-MM'), and whether
    that is its own date: the newest of its own dates, else the newest date of an older
    line of the same engine (a release comes after its engine's older ones: vLLM's 0.11
    line, whose versions name no date, after 0.10's build of 2025-08-12), else (None,
    False)."""
    dated = [x for x in profile.release_lines() if any(x.dates)]
    own = [d for x in dated if x.release == release for d in x.dates if d]
    if own:
        return max(own, key=day_of), True
    here = release_order(release)
    older = [d for x in dated if release_order(x.release) < here for d in x.dates if d]
    return (max(older, key=day_of) if older else None), False


@record
class Window:
    """The twelve months the typical band's votes come from where no line measured on
    the family is dated within those before AS_OF (current_on)."""

    end: str
    """The newest date known of a line measured on the family (line_day)."""
    newest: str
    """That line, ``NAME@LINE``."""
    older: tuple[str, ...]
    """The votes left out: lines whose own dates lie over RECENT_DAYS before ``end``."""
    undated: tuple[str, ...]
    """The votes no date places (a line without dates, or a profile without lines)."""


def current_on(
    profiles: Sequence[EngineProfile], family: str
) -> tuple[list[tuple[str, EngineParams]], Window | None]:
    """Today's engines on a family as far as its lines' dates tell, where none is dated
    within RECENT_DAYS before AS_OF (recent_on): the twelve months ending at the newest
    date known of a line with points of the family's own (line_day: its own dates, else
    its engine's older line's), each profile measured there voting as ``--engine NAME``
    takes it (as_named) unless its line's own dates lie over RECENT_DAYS before that end.
    A line no date places votes: its age is not in the data (the fit dates lines only from
    their points' version strings: validation/fit_engines.py dates_of). On NVIDIA
    datacenter GPUs that leaves out llama.cpp's December 2023 build, whose 1.7x top made
    Llama-3.1-8B's band on an H100 5.5-19.0 ms (issue 28). Where no line there is dated,
    every profile measured on the family votes (measured_on) and the window is None."""
    chosen = measured_on(profiles, family)
    ends = [
        (found, f"{p.id}@{x.release}", own)
        for p in profiles
        if measured(p, family)
        for x in p.release_lines()
        if (mine := dict(x.families).get(family)) is not None
        and mine.points
        and not mine.transferred
        for found, own in (line_day(p, x.release),)
        if found is not None
    ]
    if not ends:
        return chosen, None
    end, newest, _ = max(ends, key=lambda e: (day_of(e[0]), e[2]))  # (a tie: an own date)
    by_id = {p.id: p for p in profiles}
    kept, older, undated = [], [], []
    for name, params in chosen:
        engine, _, line = name.partition("@")
        day, dated = line_day(by_id[engine], line) if line else (None, False)
        if dated and day is not None and (day_of(end) - day_of(day)).days > RECENT_DAYS:
            older.append(name)
            continue
        kept.append((name, params))
        if day is None:
            undated.append(name)
    return kept, Window(end, newest, tuple(older), tuple(undated))


def typical(profiles: Sequence[EngineProfile], family: str) -> Engine:
    """The band across today's engines on this family (recent_on: each profile measured
    there in the twelve months before AS_OF), else across those of the twelve months
    ending at the newest line dated there (current_on: every profile measured on it but
    those its lines' own dates show older), each voting with what ``--engine NAME``
    takes on the family (as_named: its newest line, a transfer's where that line has no
    points there; older lines stay under ``NAME@LINE``). On a family none has measured,
    across every family every profile was measured on, through the GPU's own figures
    (engine/transfer.py across): engines measured on other chips are nearer than the
    roofline, which none of them reaches. On AMD Instinct that leaves vLLM 0.19 and ATOM
    of May 2026, where SGLang 0.4 (February 2025) and vLLM's 2025 fit ran MoE steps 2-3x
    slower and stretched the band past 5x (docs/accuracy.md)."""
    return typical_of(voting(profiles, family)[0], family)


def voting(
    profiles: Sequence[EngineProfile], family: str
) -> tuple[list[tuple[str, EngineParams]], Window | None]:
    """typical's votes, by name, and the window they come from where it is not the
    twelve months before AS_OF (current_on; None otherwise)."""
    recent = recent_on(profiles, family)
    if recent:
        return recent, None
    chosen, window = current_on(profiles, family)
    if chosen:
        return chosen, window
    every = [
        (f"{p.id} ({fitted})", across(params, fitted, family))
        for p in profiles
        for fitted, params in p.families
        if params.points
    ]
    return every, None


def typical_of(chosen: Sequence[tuple[str, EngineParams]], family: str) -> Engine:
    """The typical engine of its votes (voting), the roofline where there are none."""
    if not chosen:  # (no profile measured anywhere)
        return roofline(family, "typical")
    names = tuple(name for name, _ in chosen)
    return Engine("typical", tuple(f for _, f in chosen), family, names, kind=EngineKind.TYPICAL)


def engine_for(
    profile: EngineProfile, family: str, profiles: Sequence[EngineProfile]
) -> tuple[Engine, str | None]:
    """A profile's engine on a GPU family, and the family its own parameters come from
    when it has none for this one (None when it has).

    Without data for the family, the profile's best-measured family is one vote among the
    profiles measured on this one, each as ``--engine NAME`` takes it there (measured_on):
    the median of them all is the centre and the band spans them. Across the published
    points, one engine's step differs by 2x or more between GPU vendors (its kernels are
    written per vendor) while engines measured on one family differ by a few percent on
    the same model, so the family's engines say as much as the engine's other chips;
    neither alone transfers (docs/accuracy.md). Parameters of another
    vendor's family stand in through the GPU's own figures (engine/transfer.py across).
    `decodecalc validate` predicts each left-out group by this same rule, so its
    leave-one-group-out error is what a user of such a fallback gets."""
    own = profile.family(family)
    if own is not None:
        return Engine(profile.id, (own,), family, (profile.id,), profile.serving), None
    found, fitted = profile.params_for(family)
    params = across(found, fitted, family)
    others = [
        (name, p)
        for name, p in measured_on(profiles, family)
        if name.partition("@")[0] != profile.id
    ]
    return (
        Engine(
            profile.id,
            (params, *(p for _, p in others)),
            family,
            (f"{profile.id} ({fitted})", *(name for name, _ in others)),
            profile.serving,
            kind=EngineKind.FALLBACK,
        ),
        fitted,
    )


def at_line(profile: EngineProfile, line: str | None, family: str) -> EngineProfile:
    """A profile at a release line for a GPU family. ``line`` None: the newest line
    (newest_line). Each family takes the line's own parameters (fitted there, or
    transferred from another family: engine/transfer.py), else those of the nearest line
    on that family (the newest not newer than it, else the oldest newer one fitted on the
    family's own points: a transfer never stands in for an older line), else the pooled
    fit over every line, as before lines were kept; a line the profile lacks (a newer one
    predicted from older ones) takes the nearest. The view's ``line`` says which line it
    stands for; a profile without lines is returned as it is. Where another line's
    parameters (or the pooled ones) stand in, their range does not hold the line: the
    scenario is extrapolated and says so (extrapolated)."""
    if not profile.release_lines():
        return profile
    name = line or newest_line(profile, family)
    here = release_order(name)
    lines = sorted(profile.release_lines(), key=lambda found: release_order(found.release))
    families: list[tuple[str, EngineParams]] = []
    moved = [k for x in lines for k, _ in x.families if k not in profile.family_names]
    for kind in (*profile.family_names, *dict.fromkeys(moved)):
        params = line_params(profile, lines, kind, here)
        if params is not None:  # (none: a family only a newer line was transferred to)
            families.append((kind, params))
    return replace(profile, params_by_family=tuple(families), line=name)


def line_params(
    profile: EngineProfile, lines: Sequence[ReleaseLine], family: str, here: tuple[int, ...]
) -> EngineParams | None:
    """at_line's parameters on one family for the line at ``here`` (release_order), from
    the profile's ``lines`` oldest first: that line's own, else the nearest line's, else
    the pooled fit's (parsed only where it stands in)."""
    fitted = [x for x in lines if family in dict(x.families)]
    older = [x for x in fitted if release_order(x.release) <= here]
    newer = [x for x in fitted if stands_in(profile, family, x, here)] if not older else []
    nearest = older[-1] if older else (newer[0] if newer else None)
    return profile.family(family) if nearest is None else dict(nearest.families)[family]


def stands_in(
    profile: EngineProfile, family: str, newer: ReleaseLine, here: tuple[int, ...]
) -> bool:
    """Whether a newer line's parameters on ``family`` may stand in for an older line at
    ``here`` (release_order) without its own: fitted on the family's own points (a
    transfer never does), beside the older lines' in the pooled fit. A line fitted apart
    from the pooled fit (validation/fit_engines.py: with_lines, vLLM 0.19 on AMD Instinct)
    leaves the older lines to the pooled fit, which holds their points, and stands in only
    for a release past them all that lies nearer to it (nearer_apart)."""
    if dict(newer.families)[family].transferred:
        return False
    pooled = profile.family(family)
    held = pooled.range.lines if pooled is not None and pooled.range is not None else ()
    return not held or newer.release in held or nearer_apart(newer.release, here, held)


def nearer_apart(apart: str, here: tuple[int, ...], held: Sequence[str]) -> bool:
    """Whether a release at ``here``, newer than every line the pooled fit holds, lies
    nearer the line fitted apart than the newest of them, counted in release steps (vLLM
    0.17 on AMD Instinct: two before the 0.19 line, seven past the pooled 0.7 and 0.10
    lines). Both stand in for a release neither has points of, one extrapolated forward
    and one back: at_line's rule for a line the profile lacks (the nearest) decides, ties
    to the older."""
    newest = release_order(max(held, key=release_order))
    if here <= newest:
        return False
    return _steps(release_order(apart), here) < _steps(here, newest)


def _steps(later: tuple[int, ...], earlier: tuple[int, ...]) -> tuple[int, ...]:
    """How far one release lies past another, component by component ((0, 19) past
    (0, 17): (0, 2)), compared as tuples."""
    width = max(len(later), len(earlier))
    a, b = ((*x, *(0,) * width)[:width] for x in (later, earlier))
    return tuple(x - y for x, y in zip(a, b, strict=True))


def newest_line(profile: EngineProfile, family: str) -> str:
    """What --engine NAME takes: the engine's newest release line with parameters on the
    GPU family, its own or transferred from another family (issue 28: today's release by
    default), or newer with points there (the pooled fit's range says which), else the
    profile's newest."""
    pooled = profile.family(family)
    measured = pooled.range.lines if pooled is not None and pooled.range else ()
    held = [x.release for x in profile.release_lines() if family in dict(x.families)]
    every = [x.release for x in profile.release_lines()]
    return max([*measured, *held] or every, key=release_order)


@record
class Facts:
    """What of a scenario a fitted range is checked against (FitRange)."""

    params: int
    kind: str
    """'moe' or 'dense'."""
    batch: int
    gpu: str | None
    line: str | None
    context: int | None = None
    """None where the figures span many contexts (checked per answer, not here)."""


SIZE_SLACK = 1.25
"""A model within a quarter of the fitted sizes is inside them: the models called "8B" run
from 7.6B to 8.2B parameters, and such a step streams like the fitted ones."""


def extrapolated(found: FitRange | None, facts: Facts) -> tuple[str, ...]:
    """What of a scenario lies outside the setups its parameters were fitted on, in words
    (empty: inside, or no range recorded)."""
    return tuple(words for _, words in outside(found, facts))


def outside(found: FitRange | None, facts: Facts) -> tuple[tuple[str, str], ...]:
    """extrapolated's words, each after the axis it lies outside on ('batch', 'GPU'):
    what the typical band's note counts its engines by (typical_outside)."""
    if found is None:
        return ()
    out = []
    if not near_size(found, facts.params):
        fitted = (
            ", ".join(_billions(s) for s in found.sizes)
            if found.sizes
            else f"{_billions(found.params_min)}-{_billions(found.params_max)}"
        )
        out.append(("model size", f"{_billions(facts.params)} params (fitted {fitted})"))
    if facts.kind not in found.kinds:
        out.append(("model kind", f"a {facts.kind} model (fitted {'+'.join(found.kinds)})"))
    if not found.batch_min <= facts.batch <= found.batch_max:
        side = "above" if facts.batch > found.batch_max else "below"
        out.append(("batch", f"batch {side} the fitted {found.batch_min}-{found.batch_max}"))
    if facts.context is not None and not found.context_min <= facts.context <= found.context_max:
        out.append(
            (
                "context",
                f"context {facts.context:,} (fitted {found.context_min:,}-{found.context_max:,})",
            )
        )
    if facts.gpu is not None and facts.gpu not in found.gpus:
        out.append(("GPU", f"{facts.gpu} (fitted {', '.join(found.gpus)})"))
    if facts.line is not None and found.lines and facts.line not in found.lines:
        out.append(("release line", f"line {facts.line} (fitted {', '.join(found.lines)})"))
    return tuple(out)


def near_size(found: FitRange, params: int) -> bool:
    """Whether a model of ``params`` parameters lies within SIZE_SLACK of a fitted model's
    size (FitRange.sizes; of the span between the smallest and largest where the sizes
    are not recorded)."""
    sizes = found.sizes or ()
    if not sizes:
        return found.params_min / SIZE_SLACK <= params <= found.params_max * SIZE_SLACK
    return any(s / SIZE_SLACK <= params <= s * SIZE_SLACK for s in sizes)


def widened(params: EngineParams) -> EngineParams:
    """The parameters with the band for a scenario outside their range: the wider of
    their own band and the range's ``outside_band`` on each side."""
    if params.range is None:
        return params
    low, high = params.range.outside_band
    return replace(params, band=(min(params.band[0], low), max(params.band[1], high)))


def _billions(count: int) -> str:
    return f"{count / 1e9:,.3g}B"


def beyond(engine: Engine, facts: Facts) -> tuple[Engine, tuple[str, ...]]:
    """An engine with each parameter set fitted to the scenario (fitted_to), and what
    its own parameters (the first) extrapolate, in words. The typical band's votes are
    each fitted as ``--engine NAME@LINE`` prices the scenario (at the vote's own line):
    a transfer's MoE factor, and the outside band where the scenario lies outside the
    vote's range, as `decodecalc validate` bands them. A vote's own band holds only what
    predictions inside a fitted range missed (docs/accuracy.md), so an unwidened vote
    would claim that precision for a model or GPU it has never seen; what the votes
    extrapolate is said in one phrase (typical_outside)."""
    if engine.kind is EngineKind.TYPICAL:
        params = tuple(
            fitted_to(p, replace(facts, line=name.partition("@")[2] or None))
            for name, p in zip(engine.names, engine.params, strict=True)
        )
        return replace(engine, params=params), typical_outside(engine, facts)
    if engine.kind not in (EngineKind.PROFILE, EngineKind.FALLBACK):
        return engine, ()
    params = tuple(fitted_to(p, facts) for p in engine.params)
    return replace(engine, params=params), extrapolated(engine.params[0].range, facts)


def typical_outside(engine: Engine, facts: Facts) -> tuple[str, ...]:
    """How many of the typical band's engines a scenario lies outside the fitted range
    of, and the axis most of them it lies outside on, with one engine's words for it
    (empty: inside every vote's range). Each vote is checked at its own line (the
    ``NAME@LINE`` it is named by), as ``--engine NAME`` checks it."""
    found = [
        (name, outside(p.range, replace(facts, line=name.partition("@")[2] or None)))
        for name, p in zip(engine.names, engine.params, strict=True)
    ]
    out = [(name, axes) for name, axes in found if axes]
    if not out:
        return ()
    counts: dict[str, int] = {}
    for _, axes in out:
        for axis, _ in axes:
            counts[axis] = counts.get(axis, 0) + 1
    main = max(counts, key=lambda axis: counts[axis])  # (a tie: the first in outside's order)
    name, words = next((n, w) for n, axes in out for axis, w in axes if axis == main)
    return (
        f"{len(out)} of its {len(found)} engines {'is' if len(out) == 1 else 'are'} outside "
        f"their fitted range, most on {main} ({counts[main]}; {name}: {words})",
    )


def fitted_to(params: EngineParams, facts: Facts) -> EngineParams:
    """Parameters as they price a scenario: a transfer's for the model's kind
    (engine/transfer.py for_kind), widened where the scenario lies outside their range
    (widened)."""
    found = for_kind(params, facts.kind)
    return widened(found) if extrapolated(found.range, facts) else found


def extrapolation_note(engine: Engine, axes: Sequence[str]) -> Note:
    """What a scenario extrapolates (extrapolated's words), with the widened band of the
    engine's own parameters; of the typical band, typical_outside's one phrase (its band
    spans the votes' bands, each widened where the scenario lies outside it: beyond)."""
    if engine.kind is EngineKind.TYPICAL:  # (its band spans the votes', each as priced)
        return Note("engine-extrapolated", f"{engine.id} extrapolated: {'; '.join(axes)}")
    low, high = engine.params[0].band
    return Note(
        "engine-extrapolated",
        f"{engine.id} extrapolated: {'; '.join(axes)}; band x{low:.2f}-x{high:.2f}",
    )


def facts_for(engine: Engine, model: Model, batch: int, gpu: GpuSpec | None) -> Facts:
    """A scenario's facts as a fitted range is checked against (context aside)."""
    return Facts(
        model.total_params(),
        "dense" if model.moe() is None else "moe",
        batch,
        gpu.id if gpu else None,
        engine.line,
    )


class Profiles(Protocol):
    """Where engine profiles are looked up (the preset catalog, loading/catalog.py)."""

    def engine(self, name: str) -> EngineProfile:
        """One profile by id or alias; an unknown name is an InputError with a suggestion."""
        ...

    def engines(self) -> list[EngineProfile]:
        """Every profile."""
        ...


def choose_engine(
    profiles: Profiles, spec: str | Engine | None, gpu: GpuSpec | None
) -> tuple[Engine, tuple[Note, ...]]:
    """The engine whose measured step the expected figures predict, and what a reader must
    know of the choice: a profile's parameters for the GPU's family (or, said in a note,
    the family it has most data for), 'typical' (the band across every profile with data
    for that family; the default, None) or 'roofline' (physics alone); ``NAME@LINE`` keeps
    a release line."""
    if isinstance(spec, Engine):
        return spec, ()
    family = gpu_family(gpu)
    if spec is not None and not spec.strip():
        raise InputError(
            "engine '' is empty: give a profile ('decodecalc engines'), typical or roofline"
        )
    word = (spec or "typical").strip().lower()
    if word == "roofline":
        return roofline(family), ()
    if word == "typical":
        return typical_engine(profiles.engines(), family)
    name, _, line = word.partition("@")
    profile = profiles.engine(name)
    view = at_line(profile, release_line(profile, line) if "@" in word else None, family)
    engine, fitted = engine_for(view, family, profiles.engines())
    engine = replace(engine, line=view.line)
    notes = [] if "@" in word else list(newer_lines(profile, view.line, family))
    moved = engine.params[0].transferred
    if moved and fitted is None:
        notes.append(
            Note(
                "engine-transferred",
                f"{profile.id}@{view.line} has no points on {family} GPUs: {moved}",
            )
        )
    elif not engine.params[0].points:
        notes.append(
            Note(
                "engine-not-fitted",
                f"{profile.name} has no published measurements of its own, so its parameters "
                f"are an assumption: {profile.notes or 'see decodecalc engines'}",
            )
        )
    if fitted is not None:
        notes.append(fallback_note(profile.name, family, fitted, len(engine.params) - 1))
        notes.extend(transferred_votes(engine))
    return engine, tuple(notes)


def engine_at(profiles: Profiles, name: str, line: str | None, gpu: GpuSpec | None) -> Engine:
    """A profile's engine at a measured point's release line, as validate predicts it:
    the line's parameters on the GPU's family, else the nearest line's (at_line), where
    choose_engine refuses a line the profile does not keep (a point of a newer release);
    ``line`` None: the newest."""
    family = gpu_family(gpu)
    view = at_line(profiles.engine(name), line, family)
    engine, _ = engine_for(view, family, profiles.engines())
    return replace(engine, line=view.line)


def typical_engine(
    profiles: Sequence[EngineProfile], family: str
) -> tuple[Engine, tuple[Note, ...]]:
    """The typical band on a family (typical), with a note where no profile was measured
    on it."""
    chosen, window = voting(profiles, family)
    engine = typical_of(chosen, family)
    if any(measured(p, family) for p in profiles):
        return engine, (*window_note(window, family), *transferred_votes(engine))
    shown = (
        "are the roofline"
        if engine.is_roofline
        else "span every profile on each family it was measured on"
    )
    return engine, (
        Note(
            "no-engine-data",
            f"no engine profile has data for {family} GPUs: the expected figures {shown} "
            "('decodecalc engines' lists what each profile was fitted on)",
        ),
    )


def window_note(window: Window | None, family: str) -> tuple[Note, ...]:
    """Where no line measured on the family is dated within the twelve months before
    AS_OF: the twelve months the typical band's votes come from instead (current_on), the
    line that ends them, the lines left out as older and those no date places, which
    vote."""
    if window is None:
        return ()
    older = f", without {', '.join(window.older)}" if window.older else ""
    undated = f"; undated: {', '.join(window.undated)}" if window.undated else ""
    return (
        Note(
            "typical-window",
            f"typical: no {family} line is dated in the 12 months to {AS_OF.isoformat()}; "
            f"votes from the 12 months to {window.end} ({window.newest}){older}{undated}",
        ),
    )


def transferred_votes(engine: Engine) -> tuple[Note, ...]:
    """A note where profiles voting in a band of several (typical, or beside a fallback:
    engine_for) have no points on its family and vote with their newest line's rates
    transferred from another, as ``--engine NAME`` takes them there (its note
    engine-transferred): one line naming how many and which."""
    names = [n for n, p in zip(engine.names, engine.params, strict=True) if p.transferred]
    if not names:
        return ()
    return (
        Note(
            "engine-transferred",
            f"{len(names)} of the {len(engine.params)} profiles voting on {engine.family} GPUs "
            f"({', '.join(names)}) {'has' if len(names) == 1 else 'have'} no points there: "
            "each votes with its newest line's rates transferred from another family, as "
            "--engine NAME takes it",
        ),
    )


def fallback_note(name: str, family: str, fitted: str, others: int) -> Note:
    """What a fallback (engine_for) stands on: the profile's ``fitted`` family, with the
    ``others`` profiles measured on this one."""
    joined = (
        f" with the {others} profile{'s' * (others > 1)} measured on {family} (the "
        "median of them all; the band spans them)"
        if others
        else ""
    )
    through = (
        " (through the GPU's own bandwidth, FLOP/s and link latency)"
        if vendor_of(fitted) != vendor_of(family)
        else ""
    )
    return Note(
        "engine-fallback",
        f"{name} has no measurements on {family} GPUs: its {fitted} "
        f"parameters stand in{through}{joined}, so expect a wider error than its band says",
    )


def newer_lines(profile: EngineProfile, line: str | None, family: str) -> tuple[Note, ...]:
    """What --engine NAME leaves unsaid where it takes the newest line fitted on the GPU
    family and the profile holds newer lines fitted only elsewhere: the figures are those
    of the older builds (SGLang 0.4 on AMD Instinct, where 0.5.13 ran MiniMax-M2 2-3x
    faster in points kept out of the fits, docs/accuracy.md). It names the release the
    profile's scheduler defaults cite where that is another (one answer, one release:
    vLLM's 0.11 line on NVIDIA GPUs serves with 0.19.0's defaults)."""
    newer = [
        x.release
        for x in profile.release_lines()
        if line is not None and release_order(x.release) > release_order(line)
    ]
    if not newer or line is None:
        return ()
    cited = scheduler_release(profile.serving)
    also = f"; scheduler defaults from {cited}" if cited and not same_release(line, cited) else ""
    return (
        Note(
            "engine-older-line",
            f"{profile.id}@{line}: the newest line fitted on {family} GPUs "
            f"({', '.join(newer)} {'is' if len(newer) == 1 else 'are'} not){also}",
        ),
    )


def release_line(profile: EngineProfile, line: str) -> str:
    """A release line the profile holds ('sglang@0.4'), or one line naming those it has."""
    import difflib

    known = [x.release for x in profile.release_lines()]
    if line in known:
        return line
    if not known:
        raise InputError(
            f"{profile.id} keeps no release lines (its points name none): use --engine {profile.id}"
        )
    close = difflib.get_close_matches(line, known, n=3, cutoff=0.6) if line else []
    hint = f"; did you mean {', '.join(repr(c) for c in close)}?" if close else ""
    raise InputError(
        f"unknown release line {line!r} of {profile.id}{hint} (its lines: {', '.join(known)})"
    )


def extrapolation(
    engine: Engine, model: Model, batch: int, gpu: GpuSpec | None
) -> tuple[Engine, tuple[Note, ...]]:
    """The engine with its band widened where the scenario lies outside the setups its
    parameters were fitted on (beyond), and a note saying what is extrapolated."""
    widened_engine, axes = beyond(engine, facts_for(engine, model, batch, gpu))
    if not axes:
        return widened_engine, ()
    return widened_engine, (extrapolation_note(widened_engine, axes),)


def releases_note(engine: Engine, said: Sequence[Note] = ()) -> tuple[Note, ...]:
    """One answer, one release, or a note naming each (issue 28): a named profile's step
    parameters come from its release line's points, its compute rates from the kernel
    tables of another release (loading/kernels.py), its scheduler defaults from the
    release its ``serving:`` block cites. Said where kernel tables enter, where other
    lines' parameters stand in for the line asked for (``vllm@0.10`` on NVIDIA GPUs, whose
    figures are 0.11's), where the parameters pool several lines' points (llama.cpp on
    Apple GPUs) or where only the scheduler's release differs (``vllm@0.11`` on an H100,
    with 0.19.0's defaults). Each part's release is named once: where a note ``said``
    (the note on the line --engine NAME takes: newer_lines) names the scheduler's, this
    note leaves it out."""
    if engine.kind not in (EngineKind.PROFILE, EngineKind.FALLBACK) or engine.line is None:
        return ()
    fitted = engine.params[0].range
    held = fitted.lines if fitted is not None else ()
    standing = f" (standing in for {engine.line})" if held and engine.line not in held else ""
    named = (
        f"{', '.join(held)} lines'"
        if len(held) > 1
        else f"{held[0] if held else engine.line} line's"
    )
    parts = [f"step parameters from the {named} points{standing}"]
    rates = _kernel_part(engine.params[0])
    if rates:
        parts.append(rates)
    cited = scheduler_release(engine.serving)
    scheduler = f"scheduler defaults from {cited}"
    if any(n.code == "engine-older-line" and scheduler in n.message for n in said):
        cited = None  # (named once, in the note on the line taken)
    if cited:
        parts.append(scheduler)
    unsaid = cited is not None and not same_release(engine.line, cited)
    if not rates and len(held) < 2 and not standing and not unsaid:
        return ()
    return (Note("engine-releases", f"{engine.id}@{engine.line}: {'; '.join(parts)}"),)


def _kernel_part(params: EngineParams) -> str:
    """What the GPU's kernel tables lend the step: compute rates (loading/kernels.py
    kernel_source names their release) and, at TP 2 or more over the GPU's own link, the
    all-reduce they measured; empty where they lend nothing."""
    kernels, measured = params.kernel_source, bool(params.allreduce_rates)
    if kernels:
        return f"compute rates{' and all-reduces' if measured else ''} from {kernels}"
    return "all-reduces from the GPU's kernel tables (aiconfigurator-core)" if measured else ""


def scheduler_release(serving: ServingDefaults | None) -> str | None:
    """The release a profile's scheduler defaults cite ('0.19.0'), else their source."""
    if serving is None:
        return None
    cited = re.search(r"v?(\d+\.\d+(?:\.\d+)?)", serving.source)
    return cited.group(1) if cited else serving.source


def same_release(line: str, version: str) -> bool:
    """Whether a version ('0.19.0') is of a release line ('0.19').

    >>> same_release("0.19", "0.19.0"), same_release("0.11", "0.19.0")
    (True, False)
    """
    return version == line or version.startswith(f"{line}.")
