"""Engine profiles fitted to published measurements, and how well they predict them.

Points are grouped by engine and GPU family (an engine's kernels are written per vendor and
class of chip); each group gets its own step-model fit (engine_fit). The same fit serves
the fitting script (validation/fit_engines.py, which writes presets/engines/) and
`decodecalc validate`, which refits in-process to predict each group of points with
profiles fitted without it.

Every comparison is of the decode step: a serving benchmark's mean TPOT at concurrency > 1
is first relieved of the other requests' prefill chunks the serving model puts in it
(prefill_share), in the fit, in the in-sample errors and left out alike. Its figure as
measured is what the serving validation (serving_points.py) holds the whole serving model
to.

Leave-one-group-out predicts a group as decodecalc would if that group had never been
measured: every profile refitted without it, then resolved for the group's engine and GPU
family by the rule --engine uses (engine.select.engine_for: the engine's own fit for the
family; without one, its best-measured family as one vote among the profiles measured on
the family); an engine left without a profile, and points that name none, get the typical
band (engine.select.typical, what a query without --engine shows). So the figure measures
what a user on an unmeasured engine or family gets.
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Iterable, Sequence

from decodecalc.answers.serving import prefill_share_s, serve
from decodecalc.calibration.engine_fit import (
    DEFAULT_PRIOR,
    PrefillCase,
    PrefillFit,
    StepFit,
    StepTerms,
    fit_prefill,
    fit_step_model,
    prefill_identified,
    step_terms,
)
from decodecalc.calibration.points import MeasuredPoint
from decodecalc.engine.profile import (
    FIXED_COSTS,
    GPU_FAMILIES,
    Engine,
    EngineParams,
    EngineProfile,
    FitRange,
    ReleaseLine,
    gpu_family,
    release_order,
    roofline,
)
from decodecalc.engine.scheduler import scheduler_limits
from decodecalc.engine.select import (
    Facts,
    at_line,
    choose_engine,
    engine_for,
    extrapolated,
    fitted_to,
    measured_on,
    typical,
)
from decodecalc.errors import InputError
from decodecalc.loading.catalog import Catalog
from decodecalc.record import record, replace
from decodecalc.resolving.resolve import kernel_rated
from decodecalc.scenarios.workload import Workload
from decodecalc.step.engine_terms import Expected
from decodecalc.step.running import RUNNING_COSTS
from decodecalc.step.step import Row, StepModel, expected_for

FLASH_KV_RATIO = 0.85
"""e_kv / e_w where the points cannot tell: flash-attention kernels read the KV cache at
about 0.85 of the weight GEMVs' efficiency (the ratio the context series in
../shared/validation give)."""

TYPICAL = "typical"
"""The engine label of points that name none: predicted by the typical band."""


@record
class Labelled:
    """A measured point with its step's terms and the group it is validated in."""

    point: MeasuredPoint
    terms: StepTerms
    step: StepModel
    row: Row
    engine: str
    family: str
    group: str
    facts: Facts | None = None
    """What a fitted range is checked against (FitRange): the point's model, batch, GPU,
    line and context."""

    @property
    def version(self) -> str:
        return self.point.engine_version or ""

    @property
    def release(self) -> str | None:
        return self.point.release


def labelled(points: Iterable[MeasuredPoint], catalog: Catalog) -> list[Labelled]:
    """Each point with its terms, engine (``typical`` when it names none), GPU family and
    group (the point's own, else engine/family). A serving figure's terms hold the decode
    step it shows (prefill_share)."""
    out = []
    for p in points:
        step = StepModel.of(p.scenario)
        family = gpu_family(p.scenario.gpu)
        engine = p.engine or TYPICAL
        out.append(
            Labelled(
                p,
                step_terms(p, step, prefill_share(p, catalog)),
                step,
                step.row(p.context_tokens),
                engine,
                family,
                p.group or f"{engine}/{family}",
                facts_of(p),
            )
        )
    return out


def facts_of(p: MeasuredPoint) -> Facts:
    s = p.scenario
    return Facts(
        s.model.total_params(),
        "dense" if s.model.moe() is None else "moe",
        s.batch,
        s.gpu.id if s.gpu else None,
        p.release,
        p.context_tokens,
    )


def fit_range(members: Sequence[Labelled]) -> FitRange:
    """The setups a fit's points span (engine/profile.py: FitRange)."""
    facts = [m.facts or facts_of(m.point) for m in members]
    return FitRange(
        params_min=min(f.params for f in facts),
        params_max=max(f.params for f in facts),
        kinds=tuple(sorted({f.kind for f in facts})),
        batch_min=min(f.batch for f in facts),
        batch_max=max(f.batch for f in facts),
        context_min=min(f.context or 0 for f in facts),
        context_max=max(f.context or 0 for f in facts),
        gpus=tuple(sorted({f.gpu for f in facts if f.gpu})),
        lines=tuple(sorted({f.line for f in facts if f.line}, key=release_order)),
        sizes=tuple(sorted({f.params for f in facts})),
    )


UNDER_LOAD = ("tpot_mean", "tpot_median", "itl_mean")
"""Measured kinds that hold other requests' prefill chunks: a request's time per output
token counts every step it waits through, chunks included (the median inter-token latency
is a step without one while most steps have none)."""


def prefill_share(point: MeasuredPoint, catalog: Catalog) -> float:
    """What other requests' prefills add to a serving point's figure, per output token:
    the serving model's share for its workload under the scheduler defaults of the engine
    that measured it (answers.serving.prefill_share_s, free of the engine parameters being
    fitted), 0 for a figure of decode steps alone, a single request, or a workload the
    serving model refuses (the serving validation reports that one)."""
    load = point.serving
    if load is None or load.concurrency <= 1 or point.measured not in UNDER_LOAD:
        return 0.0
    gpu = point.scenario.gpu
    engine, _ = choose_engine(catalog, point.engine or TYPICAL, gpu)
    workload = Workload(load.input_len, load.output_len, concurrency=load.concurrency)
    try:
        share = prefill_share_s(point.scenario, workload, scheduler_limits(engine, gpu))
    except InputError:
        return 0.0
    if share >= point.measured_seconds:
        raise InputError(
            f"{point.source}: the serving model puts {share * 1000:.3g} ms of other requests' "
            f"prefills in a figure of {point.measured_seconds * 1000:.3g} ms; check the workload"
        )
    return share


@record
class FamilyFit:
    """One engine on one GPU family: the fit and the points it came from."""

    engine: str
    family: str
    fit: StepFit
    groups: tuple[str, ...]
    versions: tuple[str, ...]
    line: str | None = None
    """The release line of a line's own fit; None: every line pooled."""
    lines: tuple[FamilyFit, ...] = ()
    """Of a pooled fit: each release line with MIN_LINE_POINTS points or more on the
    family, fitted on its own points (fit_lines), oldest first."""
    points: int = 0


Fits = dict[tuple[str, str], FamilyFit]

MIN_LINE_POINTS = 4
MIN_LINE_MODELS = 3
"""Points and models a release line needs on a GPU family for parameters of its own
there (what its points cannot tell comes from the engine's pooled fit on the family);
with fewer, the nearest line's stand in (engine/select.py: at_line). Measured on
validation/points.yaml: lines of one or two models fit their own parameters to those
models, and with one model left out the other predicts it worse than the pooled fit
does (model left out, p90 44% and band coverage 79% at 2 points and 1 model; 34% and
87% at 4 and 3, against 34% and 85% before lines)."""


def fit_engines(points: Sequence[Labelled]) -> Fits:
    """Every engine+family with points, fitted in two passes on family_prior's costs. The
    first assumes e_kv at FLASH_KV_RATIO x e_w where the points cannot show it, and no
    running costs (step/running.py) where they cannot show them. The second refits each family that
    could not identify e_kv with the ratio and read mode of the same engine's
    best-measured family (most points) that could: the same kernels on other chips say
    more than a constant; and each that could not identify its running costs with those
    its family's batch sweeps show (lent_running_costs). One family's fitted costs are
    not lent to another: an engine's launch costs on one vendor can exceed a whole step on
    another (the fit could only answer with e_w at its bound)."""
    keyed: dict[tuple[str, str], list[Labelled]] = {}
    for p in points:
        if p.engine != TYPICAL:
            keyed.setdefault((p.engine, p.family), []).append(p)
    priors = {
        family: family_prior([m.terms for (_, f), ms in keyed.items() if f == family for m in ms])
        for family in {f for _, f in keyed}
    }
    first = {key: _fit(key, members, priors[key[1]]) for key, members in keyed.items()}
    fits: Fits = {}
    for key, members in sorted(keyed.items()):
        fitted = first[key].fit.fitted
        lent = lent_running_costs(first, key[1])
        prior = replace(priors[key[1]], **lent)
        lenders = [
            f.fit.params
            for (engine, _), f in sorted(first.items())
            if engine == key[0] and "kv_efficiency" in f.fit.fitted
        ]
        if lenders and "kv_efficiency" not in fitted:
            lender = max(lenders, key=lambda p: p.points)
            ratio = lender.kv_efficiency / lender.weight_efficiency
            prior = replace(prior, kv_efficiency=ratio, kv_read=lender.kv_read)
        elif RUNNING_NAMES & set(fitted) or not any(lent.values()):
            fits[key] = first[key]
            continue
        fits[key] = _fit(key, members, prior)
    return {key: fit_lines(f, keyed[key]) for key, f in fits.items()}


def fit_lines(pooled: FamilyFit, members: Sequence[Labelled]) -> FamilyFit:
    """A pooled engine+family fit with its range and its release lines' own fits: each
    line with MIN_LINE_POINTS points or more, fitted on them with the pooled parameters
    as the prior (what the line's points cannot identify, the engine's other lines on the
    same chips say best); a line holding every point is the pooled fit itself, whatever
    its count."""
    by_line: dict[str, list[Labelled]] = {}
    for m in members:
        if m.release is not None:
            by_line.setdefault(m.release, []).append(m)
    lines = []
    for line in sorted(by_line, key=release_order):
        mine = by_line[line]
        models = {m.point.scenario.model.id for m in mine}
        whole = len(mine) == len(members)
        if not whole and (len(mine) < MIN_LINE_POINTS or len(models) < MIN_LINE_MODELS):
            continue
        lines.append(_ranged(replace(pooled, line=line), mine) if whole else fit_line(pooled, mine))
    return replace(_ranged(pooled, members), lines=tuple(lines))


def fit_line(pooled: FamilyFit, mine: Sequence[Labelled]) -> FamilyFit:
    """One release line's own fit on its points ``mine``, with the pooled engine+family
    fit as the prior (validation/fit_engines.py also fits a line so on points kept out of
    the pooled fit)."""
    fit = _fit((pooled.engine, pooled.family), mine, pooled.fit.params)
    return _ranged(replace(fit, line=mine[0].release), mine)


def _ranged(f: FamilyFit, members: Sequence[Labelled]) -> FamilyFit:
    params = replace(f.fit.params, range=fit_range(members))
    return replace(f, fit=replace(f.fit, params=params), points=len(members))


def lent_running_costs(first: Fits, family: str) -> dict[str, float]:
    """The running costs (step/running.py) a group whose points cannot show them is given,
    by EngineParams field: for each, the smallest that any group's own batch sweeps on the
    same GPU family show, else none. Capped so, it is what every measured engine on those
    GPUs pays at least, never one engine's scheduler lent to a faster one."""
    return {
        c.field: min(
            (
                getattr(f.fit.params, c.field)
                for (_, f_family), f in first.items()
                if f_family == family and c.name in f.fit.fitted
            ),
            default=0.0,
        )
        for c in RUNNING_COSTS
    }


RUNNING_NAMES = {c.name for c in RUNNING_COSTS}


BASE_PRIOR = replace(DEFAULT_PRIOR, kv_efficiency=FLASH_KV_RATIO)
"""What family_prior's pooled fit assumes where the points cannot tell."""


def family_prior(terms: Sequence[StepTerms]) -> EngineParams:
    """What a group's fit assumes for the terms its own points cannot identify: the
    per-layer, per-step and per-MoE-layer costs and e_mma of one fit over every engine's
    points on the same GPU family, not zero. Every engine pays launch, norm and sampling
    costs, at a price set by the vendor's runtime; a group of one model and one layer
    count cannot tell them from e_w and, at zero, folds them into a lower e_w that
    mispredicts every other model size. The running costs are not pooled (fit_engines
    lends the smallest the family's batch sweeps show instead). The all-reduce latency
    stays the link's (each TP group fits its own)."""
    unmeasured = [replace(t, linear=replace(t.linear, measured_s=None)) for t in terms]
    pooled = fit_step_model(unmeasured, BASE_PRIOR).params
    return replace(
        BASE_PRIOR,
        per_layer_s=pooled.per_layer_s,
        per_step_s=pooled.per_step_s,
        per_moe_layer_s=pooled.per_moe_layer_s,
        mma_efficiency=pooled.mma_efficiency,
        lent=FIXED_COSTS,
    )


def _fit(key: tuple[str, str], members: Sequence[Labelled], prior: EngineParams) -> FamilyFit:
    """The members' fit on ``prior``, each fixed cost the prior lent and the members could
    not identify (nor zero) recorded as lent (EngineParams.lent)."""
    fit = fit_step_model([m.terms for m in members], prior)
    params = fit.params
    lent = tuple(c for c in prior.lent if c not in fit.fitted and getattr(params, f"{c}_s"))
    fit = replace(fit, params=replace(params, lent=lent))
    return FamilyFit(
        key[0],
        key[1],
        fit,
        tuple(sorted({m.group for m in members})),
        tuple(sorted({m.version for m in members if m.version})),
    )


def predicted(p: Labelled, params: Sequence[EngineParams], engine: str) -> Expected:
    """The expected step of a point and its band as decodecalc shows them
    (step.step.expected: the median over several parameter sets, never below the
    roofline)."""
    s = p.point.scenario
    # (a refit left with no points has no parameters: the roofline stands)
    chosen = Engine(engine, tuple(params), p.family) if params else roofline(p.family, engine)
    rated = kernel_rated(replace(s, engine=chosen), s.batch)
    return expected_for(p.step, p.row, rated.engine)


def profiles_of(fits: Fits) -> tuple[EngineProfile, ...]:
    """Fits as the engine profiles the presets would hold (families in the loader's order,
    release lines oldest first)."""
    table: dict[str, list[tuple[str, EngineParams]]] = {}
    lines: dict[str, dict[str, list[tuple[str, EngineParams]]]] = {}
    for (engine, family), f in sorted(fits.items(), key=lambda i: GPU_FAMILIES.index(i[0][1])):
        table.setdefault(engine, []).append((family, f.fit.params))
        for line in f.lines:
            assert line.line is not None
            lines.setdefault(engine, {}).setdefault(line.line, []).append((family, line.fit.params))
    return tuple(
        EngineProfile(
            e,
            e,
            tuple(families),
            lines=tuple(
                ReleaseLine(
                    line, params_by_family=tuple(held), points=sum(p.points for _, p in held)
                )
                for line, held in sorted(
                    lines.get(e, {}).items(), key=lambda i: release_order(i[0])
                )
            ),
        )
        for e, families in sorted(table.items())
    )


def stand_in(
    profiles: Sequence[EngineProfile], engine: str, family: str, line: str | None = None
) -> tuple[tuple[EngineParams, ...], str]:
    """The parameters that predict an engine on a family, as decodecalc resolves them
    (engine.select.engine_for at the point's release line, engine.select.at_line: its
    own, else the nearest line's; an engine with no profile left, or none named, gets the
    typical band, what a query without --engine shows), and in words which they are."""
    profile = next((p for p in profiles if p.id == engine), None)
    if profile is not None:
        if line is not None:
            profile = at_line(profile, line, family)
        found, fitted = engine_for(profile, family, lambda: profiles)
        if fitted is None:
            return found.params, f"{engine} on {family}"
        others = len(found.params) - 1
        return found.params, f"{engine} on {fitted}" + (
            f" with {others} profile{'s' * (others > 1)} on {family}" if others else ""
        )
    every = typical(profiles, family).params
    if not every:
        return every, "the roofline (no profiles)"
    if measured_on(profiles, family):
        return every, f"typical of {len(every)} profiles on {family}"
    return every, f"typical of all {len(every)} profiles"


@record
class HeldOut:
    """A unit of points (a group, a model, a GPU, a release line) predicted by profiles
    fitted without it."""

    unit: str
    expected: tuple[Expected, ...]
    """The prediction of each of the unit's points, with its band, in their order."""
    stand_in: str
    profiles: tuple[EngineProfile, ...] = ()
    """The profiles refitted without the unit (conformal re-bands them)."""
    outside: tuple[bool, ...] = ()
    """Whether each point lay outside the fitted range of the parameters predicting it."""

    @property
    def seconds(self) -> tuple[float, ...]:
        return tuple(e.seconds for e in self.expected)


LEFT_OUT = ("group", "model", "gpu", "release")
"""What validate leaves out in turn: a point's group (engine and GPU family), its model,
its GPU, and its engine's release line (predicted from that engine's older lines). Their
residuals make the bands (conformal, shipped_bands)."""

REPORTED = (*LEFT_OUT, "vendor")
"""What validate reports: LEFT_OUT and the GPU's vendor (NVIDIA, AMD, Apple, ...: every
GPU of it left out at once, so its points are predicted from the other vendors' fits
alone, through its own hardware figures: engine/transfer.py across). Its points are
banded by the LEFT_OUT residuals of the other vendors' points and by those vendors' own
vendor-left-out residuals (leave_out_all), as a scenario on a vendor without data would
be: what a transfer across vendors missed where it can be measured. They make no shipped
band (shipped_bands): a shipped profile is fitted on its own family."""


def unit_of(p: Labelled, unit: str) -> str | None:
    """The unit a point is left out with; None where it has none (a release line is the
    engine's and the point's ``release``: points without one are not predicted by line)."""
    if unit == "group":
        return p.group
    if unit == "model":
        return p.point.scenario.model.id
    if unit == "gpu":
        gpu = p.point.scenario.gpu
        return gpu.id if gpu else f"{p.point.scenario.bandwidth_bytes_per_s} B/s"
    if unit == "vendor":
        gpu = p.point.scenario.gpu
        return gpu.vendor if gpu else None
    release = p.point.release
    return f"{p.engine}@{release}" if release and p.engine != TYPICAL else None


def trains_on(p: Labelled, unit: str, held: Labelled) -> bool:
    """Whether a point may be in the fit that predicts ``held``'s unit: any point outside
    the unit; for a release line, of the same engine only its older lines (a point of the
    engine without a line could be newer, so it stays out too)."""
    if unit != "release":
        return unit_of(p, unit) != unit_of(held, unit)
    if p.engine != held.engine:
        return True
    line, mine = p.point.release, held.point.release
    assert mine is not None
    return line is not None and release_order(line) < release_order(mine)


def leave_out(points: Sequence[Labelled], unit: str = "group") -> dict[str, HeldOut]:
    """Each unit's points predicted by refitting every profile on the points it may
    train on (trains_on) and resolving them by the rule --engine uses (stand_in). The
    profiles carry no band yet: conformal() gives them one from other points' residuals."""
    out = {}
    for key in sorted({k for p in points if (k := unit_of(p, unit)) is not None}):
        held = [p for p in points if unit_of(p, unit) == key]
        profiles = profiles_of(fit_engines([p for p in points if trains_on(p, unit, held[0])]))
        out[key] = _predicted(key, held, profiles)
    return out


def _predicted(key: str, held: Sequence[Labelled], profiles: tuple[EngineProfile, ...]) -> HeldOut:
    predictions, outside, words = [], [], ""
    for p in held:
        params, words = stand_in(profiles, p.engine, p.family, p.release)
        params, beyond = widened_for(params, p.facts)
        predictions.append(predicted(p, params, p.engine))
        outside.append(beyond)
    return HeldOut(key, tuple(predictions), words, profiles, tuple(outside))


def widened_for(
    params: Sequence[EngineParams], facts: Facts | None
) -> tuple[tuple[EngineParams, ...], bool]:
    """Each parameter set as it prices the setup (engine.select.fitted_to: a transfer's
    for the model's kind, the outside band where the setup lies outside its fitted
    range), and whether any was widened."""
    if facts is None:
        return tuple(params), False
    out = [fitted_to(x, facts) for x in params]
    return tuple(out), any(extrapolated(x.range, facts) for x in params)


Found = dict[str, dict[str, HeldOut]]
"""leave_out's answers, by way of leaving out (LEFT_OUT)."""

COVERAGE_PERCENT = 80
"""The share of left-out points a band is built to hold (issue 19: at least 80%); whole
percent, so the ranks below come out of integer arithmetic exactly."""

MIN_SIMILAR = 20
"""Residuals a GPU family needs for a band of its own; with fewer, every family's."""

ALL_FAMILIES = "*"


Residual = tuple[Labelled, str, float, bool]
"""A left-out prediction's point, the way it was left out, measured / expected, and
whether the point lay outside the fitted range of the parameters that predicted it."""


def residuals(points: Sequence[Labelled], found: Found) -> list[Residual]:
    """measured / expected of every left-out prediction (a point once per way of leaving
    it out): the errors a user meets on setups the profiles were not fitted on."""
    out = []
    for unit, table in found.items():
        for key, held in table.items():
            members = [p for p in points if unit_of(p, unit) == key]
            outside = held.outside or (False,) * len(members)
            for p, e, beyond in zip(members, held.expected, outside, strict=True):
                out.append((p, unit, p.terms.measured_s / e.seconds, beyond))
    return out


def conformal_band(ratios: Sequence[float]) -> tuple[float, float]:
    """The split-conformal interval of measured / expected ratios at COVERAGE_PERCENT: the
    floor((n + 1) x 0.1)-th and ceil((n + 1) x 0.9)-th smallest of n, which holds at least
    80% of a further point exchangeable with them; always around 1."""
    ordered = sorted(ratios)
    n = len(ordered)
    tail = (100 - COVERAGE_PERCENT) // 2
    low = max(1, (n + 1) * tail // 100)
    high = min(n, -(-(n + 1) * (100 - tail) // 100))
    return min(1.0, ordered[low - 1]), max(1.0, ordered[high - 1])


def family_bands(found: Sequence[Residual]) -> dict[str, tuple[float, float]]:
    """Each GPU family's band (similar setups: the vendor's kernels): for each way of
    leaving out, the conformal band of the family's residuals (every family's where it
    has fewer than MIN_SIMILAR), and the widest of them, so that it holds its share
    whether a scenario is new by its engine, model, GPU or release. ALL_FAMILIES: the
    same over every family's residuals, for a family with too few."""
    by_way: dict[tuple[str, str], list[float]] = {}
    for p, unit, ratio, _ in found:
        by_way.setdefault((p.family, unit), []).append(ratio)
        by_way.setdefault((ALL_FAMILIES, unit), []).append(ratio)
    families = sorted({f for f, _ in by_way})
    table = {}
    for family in families:
        ways = [u for f, u in by_way if f == family]
        if family != ALL_FAMILIES and sum(len(by_way[family, u]) for u in ways) < MIN_SIMILAR:
            continue
        bands = [
            conformal_band(
                by_way[family, u]
                if len(by_way[family, u]) >= MIN_SIMILAR
                else by_way[ALL_FAMILIES, u]
            )
            for u in ways
        ]
        table[family] = (min(b[0] for b in bands), max(b[1] for b in bands))
    return table


Bands = dict[str, tuple[tuple[float, float], tuple[float, float]]]
"""By GPU family (or ALL_FAMILIES): the band inside the fitted range and outside it."""


def outside_bands(found: Sequence[Residual]) -> Bands:
    """Each GPU family's band inside the fitted range and outside it.

    Inside (inside_bands): the conformal band of the residuals predicted inside their
    predictor's range (a left-out model of a size the fit holds, of a kind it holds, on
    its GPUs and lines), every way pooled: the error of a setup like the fitted ones (a
    family with fewer than MIN_SIMILAR takes every family's, which may be wider than its
    own band over every residual: clipped to it, points.yaml's models left out fell from
    83% to 81% inside). Outside: family_bands over
    every residual (each way of leaving out on its own, the widest taken) and over the
    residuals that lay outside (the folds' own extrapolations), the wider on each side,
    never narrower than the band inside: a new model, GPU, engine or release line misses
    by as much as the left-out folds did.
    Before 2026-12-02 the band inside was the band over every residual, so a setup like
    the fitted ones took the error of a new vendor's (AMD Instinct x0.60-x3.29)."""
    every = family_bands(found)
    beyond = [r for r in found if r[3]]
    wide = family_bands(beyond) if beyond else {}
    near = inside_bands([r for r in found if not r[3]])
    out: Bands = {}
    for family, band in every.items():
        other = wide.get(family, wide.get(ALL_FAMILIES, band))
        inside = near.get(family, near.get(ALL_FAMILIES, band))
        low, high = min(band[0], other[0]), max(band[1], other[1])
        out[family] = inside, (min(low, inside[0]), max(high, inside[1]))
    return out


def inside_bands(found: Sequence[Residual]) -> dict[str, tuple[float, float]]:
    """Each GPU family's conformal band over its residuals predicted inside a fitted range,
    every way of leaving out pooled (they are one kind of error: a setup like the fitted
    ones), for a family with MIN_SIMILAR of them; ALL_FAMILIES over every family's."""
    by_family: dict[str, list[float]] = {}
    for p, _, ratio, _ in found:
        by_family.setdefault(p.family, []).append(ratio)
    table = {f: conformal_band(r) for f, r in by_family.items() if len(r) >= MIN_SIMILAR}
    if found:
        table[ALL_FAMILIES] = conformal_band([r[2] for r in found])
    return table


def with_band(
    params: EngineParams, bands: tuple[tuple[float, float], tuple[float, float]]
) -> EngineParams:
    """Parameters with a family's band and, on their range, its outside band."""
    band, outside = bands
    found = params.range
    return replace(
        params,
        band=band,
        range=None if found is None else replace(found, outside_band=outside),
    )


def banded(profiles: Sequence[EngineProfile], table: Bands) -> tuple[EngineProfile, ...]:
    """Each profile's families, its lines' too, with the bands of outside_bands for that
    family."""

    def each(
        families: tuple[tuple[str, EngineParams], ...],
    ) -> tuple[tuple[str, EngineParams], ...]:
        return tuple(
            (f, with_band(params, table.get(f, table[ALL_FAMILIES]))) for f, params in families
        )

    return tuple(
        replace(
            profile,
            params_by_family=each(profile.families),
            lines=tuple(
                replace(x, params_by_family=each(x.families)) for x in profile.release_lines()
            ),
            pending_lines=None,
        )
        for profile in profiles
    )


def shipped_bands(points: Sequence[Labelled], fits: Fits) -> Fits:
    """Each fit with its GPU family's bands from the left-out residuals (every way of
    leaving out, LEFT_OUT; outside_bands), said in its ``fitted:`` line."""
    pairs = residuals(points, {unit: leave_out(points, unit) for unit in LEFT_OUT})
    table = outside_bands(pairs)
    counts: dict[str, int] = {}
    for p, _, _, _ in pairs:
        counts[p.family] = counts.get(p.family, 0) + 1
    out: Fits = {}
    for key, f in fits.items():
        family = key[1] if key[1] in table else ALL_FAMILIES
        n = counts.get(family, len(pairs)) if family != ALL_FAMILIES else len(pairs)
        where = "every family" if family == ALL_FAMILIES else family
        near = [r for r in pairs if not r[3] and r[0].family == family]
        if len(near) < MIN_SIMILAR:
            near, close = [r for r in pairs if not r[3]], "every family"
        else:
            close = family
        how = (
            f"band: conformal {COVERAGE_PERCENT}% interval of the {len(near)} left-out "
            f"residuals on {close} predicted inside their predictor's range "
            "(calibration/validation.py: inside_bands)"
        )
        beyond = sum(r[3] for r in pairs if family in (ALL_FAMILIES, r[0].family))
        how += (
            f"; outside the fitted range: the widest of each way's interval of {n} left-out "
            f"residuals on {where} and of the {beyond} outside their predictor's range "
            "(calibration/validation.py: outside_bands)"
        )
        lines = tuple(
            replace(x, fit=replace(x.fit, params=with_band(x.fit.params, table[family])))
            for x in f.lines
        )
        params = with_band(f.fit.params, table[family])
        fit = replace(f.fit, params=params, held=(*f.fit.held, how))
        out[key] = replace(f, fit=fit, lines=lines)
    return out


def conformal(
    points: Sequence[Labelled], found: Found, pairs: Sequence[Residual] | None = None
) -> Found:
    """Every left-out prediction again with its band: the conformal band of the residuals
    of the points outside the unit (their own left-out predictions; ``pairs``: these
    residuals instead of found's own), so no point's band is calibrated on its own error."""
    pairs = residuals(points, found) if pairs is None else pairs
    out: Found = {}
    for unit, table in found.items():
        out[unit] = {}
        for key, held in table.items():
            members = [p for p in points if unit_of(p, unit) == key]
            inside = {id(p) for p in members}
            bands = outside_bands([r for r in pairs if id(r[0]) not in inside])
            out[unit][key] = _predicted(key, members, banded(held.profiles, bands))
    return out


def leave_out_all(points: Sequence[Labelled]) -> Found:
    """Every way of leaving out that validate reports (REPORTED), with conformal bands
    from the residuals of LEFT_OUT's ways; a vendor's points also from the other vendors'
    own vendor-left-out residuals (conformal never lets a point's own in): a scenario on
    a vendor without data is a transfer across vendors, and its band is the error such
    transfers showed on the vendors that have data."""
    found = {unit: leave_out(points, unit) for unit in LEFT_OUT}
    pairs = residuals(points, found)
    more = {unit: leave_out(points, unit) for unit in REPORTED if unit not in found}
    across = [*pairs, *residuals(points, more)]
    return {**conformal(points, found, pairs), **conformal(points, more, across)}


def percentile(values: Sequence[float], q: float) -> float:
    """The q-th percentile (0-100), interpolating linearly between the closest ranks."""
    ordered = sorted(values)
    position = (len(ordered) - 1) * q / 100
    low = math.floor(position)
    high = min(low + 1, len(ordered) - 1)
    return ordered[low] + (ordered[high] - ordered[low]) * (position - low)


@record
class ErrorSummary:
    """Absolute relative errors of predictions, in percent: count, median, 90th percentile."""

    n: int
    mdape: float
    p90: float

    @classmethod
    def of(cls, errors: Sequence[float]) -> ErrorSummary:
        absolute = [abs(e) * 100 for e in errors]
        return cls(len(absolute), statistics.median(absolute), percentile(absolute, 90))


@record
class LeftOut:
    """One way of leaving points out (REPORTED): the errors of the points it predicts and
    the share of them whose measured figure lies inside the predicted band, in percent."""

    unit: str
    errors: ErrorSummary
    band_coverage: float
    units: int
    """How many units were left out in turn."""


def left_out_summary(points: Sequence[Labelled], unit: str, found: dict[str, HeldOut]) -> LeftOut:
    """The errors and band coverage of ``found`` (leave_out's answer) on its points."""
    errors, inside = [], 0
    for key, out in found.items():
        held = [p for p in points if unit_of(p, unit) == key]
        for p, e in zip(held, out.expected, strict=True):
            measured = p.terms.measured_s
            errors.append(e.seconds / measured - 1)
            inside += e.low_seconds <= measured <= e.high_seconds
    return LeftOut(unit, ErrorSummary.of(errors), 100 * inside / len(errors), len(found))


@record
class PointCheck:
    """A point's expected decode step against the decode step its figure shows (a serving
    figure less other requests' prefills: labelled)."""

    item: Labelled
    expected_s: float
    """With the shipped profile."""
    held_out_s: float
    """With profiles fitted without the point's group."""
    low_s: float = 0.0
    high_s: float = 0.0
    """The shipped profile's band around expected_s."""

    @property
    def inside(self) -> bool:
        """Whether the decode step the figure shows lies inside the shipped band."""
        return self.low_s <= self.item.terms.measured_s <= self.high_s

    @property
    def error(self) -> float:
        return self.expected_s / self.item.terms.measured_s - 1

    @property
    def held_out_error(self) -> float:
        return self.held_out_s / self.item.terms.measured_s - 1


@record
class GroupCheck:
    group: str
    engine: str
    family: str
    shipped: ErrorSummary
    held_out: ErrorSummary
    profile: str
    """Which shipped parameters predicted the group."""
    stand_in: str
    """Which refitted parameters predicted it left out."""


@record
class Validation:
    points: tuple[PointCheck, ...]
    groups: tuple[GroupCheck, ...]
    shipped: ErrorSummary
    held_out: ErrorSummary
    left_out: tuple[LeftOut, ...] = ()
    """Each of REPORTED: the errors and band coverage of the points it predicts."""

    @property
    def band_coverage(self) -> float:
        """Percent of the points inside the shipped profiles' band: in-sample for the
        points the profiles were fitted on, out of sample for any other."""
        return 100 * sum(c.inside for c in self.points) / len(self.points)


def validate(points: Sequence[MeasuredPoint], catalog: Catalog) -> Validation:
    """Every point predicted with its engine's shipped profile (the catalog's) and with
    profiles refitted without its group; errors per group and overall."""
    items = labelled(points, catalog)
    found = leave_out_all(items)
    held_out = found["group"]
    checks, groups = [], []
    for group, out in held_out.items():
        members = [p for p in items if p.group == group]
        first = members[0]
        profile = _shipped(catalog, first.engine, first.family, first.release)[1]
        mine = [
            _checked(
                p, predicted(p, _shipped(catalog, p.engine, p.family, p.release, p)[0], p.engine), s
            )
            for p, s in zip(members, out.seconds, strict=True)
        ]
        checks.extend(mine)
        groups.append(
            GroupCheck(
                group,
                first.engine,
                first.family,
                ErrorSummary.of([c.error for c in mine]),
                ErrorSummary.of([c.held_out_error for c in mine]),
                profile,
                out.stand_in,
            )
        )
    return Validation(
        tuple(checks),
        tuple(groups),
        ErrorSummary.of([c.error for c in checks]),
        ErrorSummary.of([c.held_out_error for c in checks]),
        tuple(left_out_summary(items, unit, found[unit]) for unit in REPORTED if found[unit]),
    )


def _checked(p: Labelled, shipped: Expected, held_out_s: float) -> PointCheck:
    return PointCheck(p, shipped.seconds, held_out_s, shipped.low_seconds, shipped.high_seconds)


def _shipped(
    catalog: Catalog, engine: str, family: str, line: str | None, p: Labelled | None = None
) -> tuple[tuple[EngineParams, ...], str]:
    """The shipped parameters for an engine on a family at a point's release line, as
    --engine NAME@LINE resolves them (an unknown engine is an error with a did-you-mean),
    widened where the point ``p`` lies outside their fitted range."""
    known = engine if engine == TYPICAL else catalog.engine(engine).id
    params, words = stand_in(catalog.engines(), known, family, line)
    return widened_for(params, p.facts if p else None)[0], words


BAND_PERCENTILES = (10, 90)
"""A profile's band spans these percentiles of measured / expected over its points."""


def band_of(ratios: Sequence[float]) -> tuple[float, float]:
    """The band that holds most of these measured / expected ratios: their 10th and 90th
    percentiles, always around 1 (expected stays inside its band)."""
    low_q, high_q = BAND_PERCENTILES
    return min(1.0, percentile(ratios, low_q)), max(1.0, percentile(ratios, high_q))


Cases = dict[tuple[str, str], list[tuple[Labelled, PrefillCase]]]
PrefillTable = dict[tuple[str, str], PrefillFit]


def prefill_cases(points: Sequence[Labelled], fits: Fits, catalog: Catalog) -> Cases:
    """Each fitted engine+family's serving points with a measured TTFT, replayed with the
    engine's decode fit and its scheduler defaults (a workload the serving model refuses
    is left out: the serving validation reports it; so is a TTFT whose point says, in
    ``ttft_exclude``, why the steady state cannot describe it)."""
    out: Cases = {}
    for p in points:
        load, key = p.point.serving, (p.engine, p.family)
        if load is None or load.ttft_seconds is None or not load.ttft_fitted or key not in fits:
            continue
        case = _case(p, catalog, (fits[key].fit.params,))
        if case is not None:
            out.setdefault(key, []).append((p, case))
    return out


def _case(p: Labelled, catalog: Catalog, params: tuple[EngineParams, ...]) -> PrefillCase | None:
    load = p.point.serving
    assert load is not None and load.ttft_seconds is not None
    gpu = p.point.scenario.gpu
    engine, _ = choose_engine(catalog, p.engine, gpu)
    scenario = replace(p.point.scenario, engine=replace(engine, params=params))
    workload = Workload(load.input_len, load.output_len, concurrency=load.concurrency)
    case = PrefillCase(
        scenario,
        workload,
        scheduler_limits(engine, gpu),
        load.ttft_seconds,
        p.point.measured_seconds,
    )
    try:
        serve(scenario, workload, case.limits)
    except InputError:
        return None
    return case


def fit_prefills(cases: Cases, known: PrefillTable | None = None) -> PrefillTable:
    """e_p and c_req of every engine+family with TTFTs: first those whose prompt sizes
    identify e_p (engine_fit.prefill_identified), each on its own points; then the rest
    at the median e_p of those on their GPU family, where there is one. ``known``: fits
    of the same cases made before (leave-one-group-out reuses what a group's absence
    does not change)."""
    known = known or {}
    table: PrefillTable = {}
    ordered = sorted(cases.items(), key=lambda item: not prefill_identified(_of(item[1])))
    for key, found in ordered:
        family = [
            t.prefill_efficiency
            for (e, f), t in table.items()
            if f == key[1] and prefill_identified(_of(cases[e, f]))
        ]
        prior = statistics.median(family) if family else None
        reuse = known.get(key)
        if reuse is not None and (prefill_identified(_of(found)) or reuse.prior == prior):
            table[key] = reuse
        else:
            table[key] = fit_prefill(_of(found), prior)
    return dict(sorted(table.items()))


def _of(found: Sequence[tuple[Labelled, PrefillCase]]) -> list[PrefillCase]:
    return [c for _, c in found]


def with_prefill(fits: Fits, table: PrefillTable) -> Fits:
    """Each fit with its prefill efficiency and per-request cost: its own where its
    TTFTs fitted them, else the median of those fitted on the same GPU family (every
    engine's prefill runs the vendor's GEMM libraries), else e_p 1 and no c_req (the
    roofline's prefill)."""
    out: Fits = {}
    for key, f in fits.items():
        own = table.get(key)
        family = [t for (_, fam), t in table.items() if fam == key[1]]
        if own is not None:
            e_p, c_req, how = own.prefill_efficiency, own.per_request_s, own.fitted
        elif family:
            e_p = statistics.median(t.prefill_efficiency for t in family)
            c_req = statistics.median(t.per_request_s for t in family)
            how = f"prefill_efficiency, per_request the median of {len(family)} on {key[1]}"
        else:
            out[key] = f
            continue
        fit = replace(f.fit, params=_priced(f.fit.params, e_p, c_req), held=(*f.fit.held, how))
        lines = tuple(
            replace(x, fit=replace(x.fit, params=_priced(x.fit.params, e_p, c_req)))
            for x in f.lines
        )
        out[key] = replace(f, fit=fit, lines=lines)
    return out


def _priced(params: EngineParams, e_p: float, c_req: float) -> EngineParams:
    return replace(params, prefill_efficiency=e_p, per_request_s=c_req)


def ttft_left_out(points: Sequence[MeasuredPoint], catalog: Catalog) -> dict[int, float]:
    """Each measured TTFT (by its index in ``points``) predicted as leave_out
    predicts a decode step: every profile refitted without the point's group, its decode
    and its prefill parameters, resolved by the rule --engine uses (stand_in)."""
    items = labelled(points, catalog)
    index = {id(p.point): i for i, p in enumerate(items)}
    cases = prefill_cases(items, fit_engines(items), catalog)
    table = fit_prefills(cases)
    out: dict[int, float] = {}
    for group in sorted({p.group for found in cases.values() for p, _ in found}):
        rest = [p for p in items if p.group != group]
        kept = {key: [(p, c) for p, c in found if p.group != group] for key, found in cases.items()}
        unchanged = {k: t for k, t in table.items() if len(kept[k]) == len(cases[k])}
        without = fit_prefills({k: f for k, f in kept.items() if f}, unchanged)
        profiles = profiles_of(with_prefill(fit_engines(rest), without))
        for found in cases.values():
            for p, _ in found:
                if p.group != group:
                    continue
                params, _ = stand_in(profiles, p.engine, p.family)
                case = _case(p, catalog, params) if params else None
                if case is not None:
                    out[index[id(p.point)]] = serve(
                        case.scenario, case.workload, case.limits
                    ).ttft_s
    return out
