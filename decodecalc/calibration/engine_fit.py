"""Fitting the engine step model (step/engine_terms.py) to measured points.

The step model is linear in its unknowns once the KV read mode is chosen:

    t = u_w x W/BW + u_kv x KV/BW + L x c_layer + c_step + calls x a + ring
        + L_moe x c_moe + B x (c_run + E_tok x c_expert + L_attn x c_attn + L_state x c_state)

with u_w = 1/e_w, u_kv = 1/e_kv, ``calls`` the all-reduces of a TP step (2 per layer, 0 at
TP 1), ``a`` the engine's latency per call, ``ring`` the bytes' time on the link and the last
bracket the running costs (step/running.py: per request, per token-expert pass, per sequence
per mixer layer and per recurrent layer). The loss
is the relative error t / measured - 1, so each point is a row x_i / m_i fitted to 1: a
point of 5 ms weighs as much as one of 50 ms, and the error minimised is the one reported.

Only what the points can tell apart is fitted. Unknowns are taken in a fixed order (e_w,
e_kv, per-MoE-layer cost, all-reduce latency, per-step cost, per-layer cost, the running
costs); each is fitted when its column is not (nearly) a combination of those already taken
and the points number at least twice the unknowns; e_kv only when the points hold several
contexts of one scenario (otherwise its bytes move with the weights'). An unknown that is
not fitted keeps the prior's value: e_kv at the prior's ratio to e_w, a cost at the prior's
figure, the all-reduce latency at the prior's or else the link's. So a single model at
several contexts fits e_w and e_kv and folds its fixed costs into e_w; models of one layer
count put the whole fixed cost per step (as the roofline's overhead does), and a per-layer
cost needs several layer counts.

The per-MoE-layer cost needs two MoE points at least, and comes before the other fixed
costs: where the points are of one MoE model, what it costs beyond the prior's dense costs
is charged to its MoE layers (routing, token permutation, grouped GEMMs), not to the
all-reduces or the step, so it does not follow the engine onto dense models. The
all-reduce latency comes before the per-step and per-layer costs, and where every point is
TP > 1 the per-step cost is not fitted at all: such points tell a constant per step from a
latency per call only through the layer counts of different models, which differ in
kernels per layer too, so the fixed cost is charged to the all-reduces (2 per layer),
which a TP 1 deployment of the same engine does not pay. The running costs are fitted only
where one scenario is measured at several batch sizes (at one batch they move with the
per-layer cost), in step/running.py's order: one model's sweep identifies the cost per
feed-forward pass alone, and the per-request and per-mixer-layer costs each need
models whose counts differ.

A serving benchmark's mean TPOT also holds the prefill chunks of the requests arriving
while it decodes; the caller takes them off the measured figure (step_terms' ``prefill_s``,
calibration/validation.py: prefill_share), so they are not fitted as a per-sequence cost
that grows with the batch and that the serving model would then add a second time.

A point whose compute at the GPU's peak exceeds its memory time is compute-bound: its row
keeps only the fixed costs (t = compute + every cost above but the byte terms). Which points are is
decided by the fit itself, refitted until the set stops changing.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import TYPE_CHECKING

from decodecalc.answers.serving import ServingResult, serve
from decodecalc.calibration.least_squares import bounded_least_squares
from decodecalc.calibration.points import MeasuredPoint
from decodecalc.engine.profile import KV_READS, EngineParams
from decodecalc.engine.scheduler import SchedulerLimits
from decodecalc.record import record, replace
from decodecalc.scenarios.scenario import Scenario
from decodecalc.scenarios.workload import Workload
from decodecalc.step.linear import (
    LinearTerms,
    allreduce_latency,
    linear_seconds,
    linear_terms,
    streaming_seconds,
)
from decodecalc.step.running import RUNNING_COSTS
from decodecalc.step.step import StepModel

if TYPE_CHECKING:
    from decodecalc.model.kernels import AllReduceRates

MEASURED_WEIGHTS: dict[str | None, float] = {
    None: 1.0,
    "step": 1.0,
    "itl_median": 0.5,
    "e2e_over_tokens": 0.5,
    "tpot_median": 0.25,
    "tpot_mean": 0.25,
    "itl_mean": 0.25,
}
"""Weight of a point in the loss by what its figure is: a timed step counts fully; a
median inter-token latency and a generate call over its tokens (one prefill inside) half;
serving means and TPOT a quarter: they absorb other requests' prefills, which the caller
takes off (step_terms' ``prefill_s``) only as far as the serving model prices them."""

DECODE_ONLY = (None, "step", "itl_median")
"""Measured kinds that time decode steps alone (see StepTerms.decode_only)."""

WEIGHTS, KV, MMA = "weight_efficiency", "kv_efficiency", "mma_efficiency"
PARAMETERS = (
    WEIGHTS,
    KV,
    MMA,
    "per_moe_layer",
    "allreduce_latency",
    "per_step",
    "per_layer",
    *(c.name for c in RUNNING_COSTS),
)
"""The unknowns, in the order they are taken when deciding what the points identify: the
running costs last (step/running.py), each only where batch sweeps show it."""

CALLS = "allreduce_calls"
"""The all-reduces per step, whoever prices them: the column that decides whether the
points identify a per-call cost, and that later costs must be independent of, where the
kernel tables price the calls (then no latency is fitted: _costs_chosen)."""

COST_PARAMETERS = PARAMETERS[3:]
"""The fixed costs and the all-reduce latency (the rest are efficiencies' inverses)."""

INDEPENDENT = 0.05
"""A column is identified when at least this share of its length is not explained by the
columns already taken (below it the fit would trade one unknown against another on noise)."""

MIN_POINTS_PER_UNKNOWN = 2
"""A fixed cost or latency is fitted only where the points number at least twice the
unknowns fitted with it: two points fit two unknowns exactly and say nothing of either."""

MAX_REFITS = 10
"""Rounds of re-deciding which points are compute-bound; the set settles in two or three."""

DEFAULT_PRIOR = EngineParams(weight_efficiency=1.0, kv_efficiency=1.0)
"""With no profile to lean on: one efficiency for weights and KV, no fixed costs, the
link's all-reduce latency (the roofline's own assumptions)."""


@record
class StepTerms:
    """One measured point's step split into the step model's linear terms."""

    linear: LinearTerms
    """The step's terms at the point's context (step/linear.py)."""
    measured_s: float
    """The measured figure less other requests' prefills: the decode step it shows."""
    weight: float
    scenario_key: tuple[object, ...]
    """The scenario without its context: points sharing it form a context series."""
    context_tokens: int
    batch_series: tuple[object, ...] = ()
    """The scenario without its batch and context: points sharing it at several batches
    identify the per-sequence cost."""
    decode_only: bool = True
    """A figure of decode steps alone (a timed step, a median inter-token latency): only
    those can tell the KV read rate apart, since end-to-end and serving figures grow with
    the context through the prefills they hold too."""


def step_terms(
    point: MeasuredPoint, step: StepModel | None = None, prefill_s: float = 0.0
) -> StepTerms:
    """The linear terms of a point's step, from the same StepModel the estimate uses
    (``step``: the point's, where the caller has built it already). ``prefill_s``: what
    other requests' prefill chunks add to a serving figure (answers.serving.prefill_share_s),
    taken off the measured figure so that the decode step is fitted to decode time alone."""
    s = point.scenario
    step = step or StepModel.of(s)
    gpu = s.gpu.id if s.gpu else s.bandwidth_bytes_per_s
    series = (s.model.id, gpu, s.weights.id, s.kv_dtype.id, s.tp)
    return StepTerms(
        linear=linear_terms(step, point.context_tokens, measured_allreduce(point)),
        measured_s=point.measured_seconds - prefill_s,
        weight=MEASURED_WEIGHTS.get(point.measured, 1.0),
        decode_only=point.measured in DECODE_ONLY,
        scenario_key=(*series, s.batch),
        context_tokens=point.context_tokens,
        batch_series=series,
    )


def measured_allreduce(point: MeasuredPoint) -> tuple[AllReduceRates, ...]:
    """The point's engine's all-reduce as its GPU's kernel tables measured it (as
    loading/kernels.py with_kernel_rates lends it to a query): where a table holds the
    group's size it prices the point's all-reduces, and the fitted latency is left to the
    points no table covers."""
    from decodecalc.loading.kernels import kernel_rates

    gpu, engine = point.scenario.gpu, point.engine
    if gpu is None or engine is None or point.scenario.tp < 2:
        return ()
    rates = kernel_rates(gpu.id, engine.split("@")[0], whole=False, stand_in=True)
    return () if rates is None else rates.allreduce


@record
class StepFit:
    """Parameters fitted to points, with what was fitted and why the rest was not."""

    params: EngineParams
    fitted: tuple[str, ...]
    """Names from PARAMETERS the points identified."""
    held: tuple[str, ...]
    """For each parameter not fitted, why and at what value."""
    loss: float
    """Weighted mean squared relative error."""
    compute_bound: int
    """Points fitted in the compute-bound form."""

    def describe(self) -> str:
        """One line for a profile's ``fitted:`` field and calibrate's report."""
        parts = [", ".join(self.fitted) or "none", *self.held]
        if self.compute_bound:
            parts.append(f"{self.compute_bound} points compute-bound (compute + fixed costs)")
        return "; ".join(parts)


def predicted_s(t: StepTerms, p: EngineParams) -> float:
    """The step model on a point's terms."""
    return linear_seconds(t.linear, p)


def relative_loss(terms: Sequence[StepTerms], p: EngineParams) -> float:
    """Weighted mean squared relative error of the step model on the points."""
    total = sum(t.weight for t in terms)
    return sum(t.weight * (predicted_s(t, p) / t.measured_s - 1) ** 2 for t in terms) / total


def fit_step_model(
    terms: Sequence[StepTerms], prior: EngineParams = DEFAULT_PRIOR, kv_read: str | None = None
) -> StepFit:
    """The best fit over the KV read modes (or the one given): per-query-head only when it
    fits clearly better (1% lower loss), since most kernels read each KV head once. Where
    the points cannot identify e_kv the prior's mode stays, as its ratio is for that mode."""
    if kv_read is None and _kv_unidentified(terms) is not None:
        kv_read = prior.kv_read
    modes = (kv_read,) if kv_read else KV_READS
    fits = [_fit_mode(terms, replace(prior, kv_read=mode)) for mode in modes]
    best = fits[0]
    for other in fits[1:]:
        if other.loss < 0.99 * best.loss:
            best = other
    return best


Bound = tuple[bool, tuple[bool, ...]]
"""Whether a point is compute-bound as a whole, and which of its GEMMs are."""


def _bound(t: StepTerms, p: EngineParams) -> Bound:
    """Which terms set the point's step at parameters ``p``: the whole step's compute at
    peak, and each GEMM's compute at e_mma against its weights at e_w."""
    ops = tuple(
        flops / p.mma_efficiency > read / p.weight_efficiency
        for read, flops in t.linear.op_seconds(p.tile_rows)
    )
    return t.linear.compute_s > streaming_seconds(t.linear, p), ops


def _fit_mode(terms: Sequence[StepTerms], prior: EngineParams) -> StepFit:
    bound = [_bound(t, prior) for t in terms]
    for _ in range(MAX_REFITS):
        fit = _fit_once(terms, prior, bound)
        again = [_bound(t, fit.params) for t in terms]
        if again == bound:
            break
        bound = again
    return fit


def _fit_once(terms: Sequence[StepTerms], prior: EngineParams, bound: Sequence[Bound]) -> StepFit:
    """One least-squares fit with the compute-bound points fixed: what the points
    identify (e_kv, then _costs_chosen), then the bounded solve for it, the rest at the
    prior's values."""
    ratio = prior.kv_efficiency / prior.weight_efficiency
    scale = [math.sqrt(t.weight) / t.measured_s for t in terms]
    features = [_features(t, prior, b) for t, b in zip(terms, bound, strict=True)]
    columns = {
        name: [f[name] * k for f, k in zip(features, scale, strict=True)] for name in PARAMETERS
    }
    columns[CALLS] = [f[CALLS] * k for f, k in zip(features, scale, strict=True)]
    chosen, held = [WEIGHTS], []
    kv_reason = _kv_unidentified(terms)
    if kv_reason is None and not _independent(columns[KV], [columns[WEIGHTS]]):
        kv_reason = "its bytes move with the weights"
    if kv_reason is None:
        chosen.append(KV)
    else:
        held.append(f"kv_efficiency {ratio:.3g} x weight_efficiency ({kv_reason})")
        columns[WEIGHTS] = [
            w + kv / ratio for w, kv in zip(columns[WEIGHTS], columns[KV], strict=True)
        ]
    held += _mma_chosen(terms, columns, prior, chosen)
    held += _costs_chosen(terms, columns, prior, chosen)
    costs = [n for n in PARAMETERS[2:] if n not in chosen]
    target = [
        math.sqrt(t.weight)
        - k * (f["known"] + sum(f[n] * _prior_value(n, prior, t) for n in costs))
        for t, f, k in zip(terms, features, scale, strict=True)
    ]
    lower = {WEIGHTS: max(1.0, ratio) if KV not in chosen else 1.0, KV: 1.0, MMA: 1.0}
    rows = [[columns[c][i] for c in chosen] for i in range(len(terms))]
    solved = bounded_least_squares(rows, target, [lower.get(c, 0.0) for c in chosen])
    params = _params(prior, dict(zip(chosen, solved, strict=True)), len(terms))
    return StepFit(
        params, tuple(chosen), tuple(held), relative_loss(terms, params), sum(b[0] for b in bound)
    )


def _mma_chosen(
    terms: Sequence[StepTerms],
    columns: dict[str, list[float]],
    prior: EngineParams,
    chosen: list[str],
) -> list[str]:
    """Adds e_mma to ``chosen`` where compute-bound GEMMs in two distinct decode-only
    points at least tell it apart from the efficiencies taken; else says at what value it
    stays. A serving mean holds other requests' prefills, whose share the fit takes off at
    the roofline: at a high concurrency what remains would pass for slow compute."""
    bound = len(
        {
            (t.scenario_key, t.context_tokens)
            for t, c in zip(terms, columns[MMA], strict=True)
            if c > 0 and t.decode_only
        }
    )
    if bound >= MIN_POINTS_PER_UNKNOWN and _independent(columns[MMA], [columns[c] for c in chosen]):
        chosen.append(MMA)
        return []
    why = (
        f"compute-bound GEMMs in {bound} decode-only point(s)"
        if bound
        else "no compute-bound GEMMs in decode-only figures"
    )
    return [f"mma_efficiency {prior.mma_efficiency:.3g} ({why})"]


def _costs_chosen(
    terms: Sequence[StepTerms],
    columns: dict[str, list[float]],
    prior: EngineParams,
    chosen: list[str],
) -> list[str]:
    """Adds to ``chosen`` the costs the points identify, in PARAMETERS' order; returns,
    for the others, why not and at what value they stay."""
    held = []
    distinct = len({(t.scenario_key, t.context_tokens) for t in terms})
    taken = list(chosen)
    for name in COST_PARAMETERS:
        column = CALLS if name == "allreduce_latency" else name
        why = _not_identified(name, terms)
        if why is None and not _independent(columns[column], [columns[c] for c in taken]):
            why = ""
        if why is None and distinct < MIN_POINTS_PER_UNKNOWN * (len(taken) + 1):
            why = f"only {distinct} distinct points"
        if why is None and column == CALLS and not any(columns[name]):
            # every call priced by the tables: the latency is theirs, but the calls keep
            # their place, so the costs after them are not fitted on what they moved with
            taken.append(CALLS)
            held.append(f"{name} the kernel tables' (every TP > 1 point's all-reduce measured)")
        elif why is None:
            chosen.append(name)
            taken.append(name)
        else:
            held.append(_held(name, prior, terms, why))
    return _joined(held)


def _joined(held: list[str]) -> list[str]:
    """The held lines with the running costs that stay for one reason said once:
    'per_ffn_pass 0 us, per_running 0 us (no scenario at several batch sizes)'."""
    out: list[str] = []
    for line in held:
        value, _, why = line.partition(" (")
        last = out[-1] if out else ""
        if (
            value.split(" ")[0] in RUNNING
            and last.endswith(f" ({why}")
            and (last.split(" ")[0] in RUNNING)
        ):
            out[-1] = f"{last.partition(' (')[0]}, {value} ({why}"
        else:
            out.append(line)
    return out


def _not_identified(name: str, terms: Sequence[StepTerms]) -> str | None:
    """Why the points cannot identify a cost whatever its column, or None."""
    if name == "per_step" and all(t.linear.calls for t in terms):
        return "every point is TP > 1: charged to the costs before it"
    if name == "per_moe_layer" and (moe := _moe_points(terms)) < MIN_POINTS_PER_UNKNOWN:
        return f"only {moe} distinct MoE point(s)"
    if name in RUNNING and (why := _running_unidentified(name, terms)) is not None:
        return why
    return None


RUNNING = {c.name: c for c in RUNNING_COSTS}


def _running_unidentified(name: str, terms: Sequence[StepTerms]) -> str | None:
    """Why the points cannot identify a running cost (step/running.py), or None: it needs a
    scenario measured at several batches, and its operation in the models measured
    (recurrent layers)."""
    if not _batch_varies(terms):
        return "no scenario at several batch sizes"
    if not any(_running_count(t, name) for t in terms):
        return "no model measured has the operation"
    return None


def _running_count(t: StepTerms, name: str) -> int:
    running = t.linear.counts.running
    return 0 if running is None else running.count(RUNNING[name])


def _params(prior: EngineParams, x: dict[str, float], points: int) -> EngineParams:
    """The prior with the solved unknowns (x: 1/e_w, 1/e_kv and the costs) in place."""
    e_w = 1 / x[WEIGHTS]
    ratio = prior.kv_efficiency / prior.weight_efficiency
    return replace(
        prior,
        weight_efficiency=e_w,
        kv_efficiency=1 / x[KV] if KV in x else ratio * e_w,
        mma_efficiency=1 / x[MMA] if MMA in x else prior.mma_efficiency,
        mma_fitted=MMA in x,
        allreduce_latency_s=x.get("allreduce_latency", prior.allreduce_latency_s),
        per_step_s=x.get("per_step", prior.per_step_s),
        per_layer_s=x.get("per_layer", prior.per_layer_s),
        per_moe_layer_s=x.get("per_moe_layer", prior.per_moe_layer_s),
        points=points,
        **{c.field: x.get(c.name, getattr(prior, c.field)) for c in RUNNING_COSTS},
    )


COSTS = {
    "per_step": "per_step_s",
    "per_layer": "per_layer_s",
    "per_moe_layer": "per_moe_layer_s",
    **{c.name: c.field for c in RUNNING_COSTS},
}
"""Each fixed cost's EngineParams field."""


def _prior_value(name: str, prior: EngineParams, t: StepTerms) -> float:
    """A cost the points did not identify, as the prior has it."""
    if name == "allreduce_latency":
        return allreduce_latency(t.linear, prior)
    if name == MMA:
        return 1 / prior.mma_efficiency
    value: float = getattr(prior, COSTS[name])
    return value


def _features(t: StepTerms, prior: EngineParams, bound: Bound) -> dict[str, float]:
    """A point's coefficient of each unknown (of 1/e_w, 1/e_kv and 1/e_mma, not the
    efficiencies), and ``known``: the seconds no unknown multiplies (the link's bytes, and
    the compute of a compute-bound step, whose memory terms then do not count). A GEMM
    that is compute-bound counts its FLOPs at peak (times 1/e_mma) instead of its weights."""
    compute_bound, ops = bound
    memory = 0.0 if compute_bound else 1.0
    pairs = t.linear.op_seconds(prior.tile_rows)
    streamed = sum(read for (read, _), cb in zip(pairs, ops, strict=True) if cb)
    multiplied = sum(flops for (_, flops), cb in zip(pairs, ops, strict=True) if cb)
    return {
        WEIGHTS: (t.linear.weight_s - streamed) * memory,
        KV: t.linear.kv_s[KV_READS.index(prior.kv_read)] * memory,
        MMA: multiplied * memory,
        "allreduce_latency": 0 if t.linear.measured_s is not None else t.linear.calls,
        CALLS: t.linear.calls,
        "per_step": 1.0,
        "per_layer": t.linear.counts.layers,
        "per_moe_layer": t.linear.counts.moe_layers,
        **{c.name: _running_count(t, c.name) for c in RUNNING_COSTS},
        "known": (t.linear.ring_s if t.linear.measured_s is None else t.linear.measured_s)
        + (t.linear.compute_s if compute_bound else 0.0),
    }


def _kv_unidentified(terms: Sequence[StepTerms]) -> str | None:
    """Why e_kv cannot be fitted, or None: it needs one scenario at several contexts."""
    contexts: dict[tuple[object, ...], set[int]] = {}
    for t in terms:
        if t.decode_only:
            contexts.setdefault(t.scenario_key, set()).add(t.context_tokens)
    if any(len(c) > 1 for c in contexts.values()):
        return None
    return "no decode-only figures of one scenario at several contexts"


def _moe_points(terms: Sequence[StepTerms]) -> int:
    """Distinct points of MoE models: a per-MoE-layer cost needs two, beside dense ones."""
    return len({(t.scenario_key, t.context_tokens) for t in terms if t.linear.counts.moe_layers})


def _batch_varies(terms: Sequence[StepTerms]) -> bool:
    """Whether some scenario (less its batch and context) is measured at several batches."""
    batches: dict[tuple[object, ...], set[int]] = {}
    for t in terms:
        batches.setdefault(t.batch_series, set()).add(_running_count(t, "per_running"))
    return any(len(b) > 1 for b in batches.values())


def _independent(column: Sequence[float], taken: Sequence[Sequence[float]]) -> bool:
    """Whether more than INDEPENDENT of a column's length is left once its projection on
    the columns taken is removed (Gram-Schmidt over the taken columns first)."""
    basis: list[list[float]] = []
    for other in [*taken, column]:
        rest = _residual(other, basis)
        norm = math.sqrt(_dot(rest, rest))
        if other is column:
            return norm > INDEPENDENT * math.sqrt(_dot(column, column))
        if norm > 0:
            basis.append([x / norm for x in rest])
    raise AssertionError("unreachable: the loop ends at the column")


def _residual(v: Sequence[float], basis: Sequence[Sequence[float]]) -> list[float]:
    rest = list(v)
    for b in basis:
        dot = _dot(rest, b)
        rest = [x - dot * y for x, y in zip(rest, b, strict=True)]
    return rest


def _dot(a: Sequence[float], b: Sequence[float]) -> float:
    return sum(x * y for x, y in zip(a, b, strict=True))


def _held(name: str, prior: EngineParams, terms: Sequence[StepTerms], why: str = "") -> str:
    """Why a cost was not fitted, and the prior's value it keeps: ``why`` when given (too
    few points), else what in the points makes it inseparable."""
    if name == "allreduce_latency":
        latency = prior.allreduce_latency_s
        value = "the link's" if latency is None else _us(latency)
        if not any(t.linear.calls for t in terms):
            why = "no TP > 1 points"
    else:
        value = _us(getattr(prior, COSTS[name]))
        if name == "per_moe_layer" and not any(t.linear.counts.moe_layers for t in terms):
            why = "no MoE models"
        layers = {t.linear.counts.layers for t in terms}
        if not why and name == "per_layer" and len(layers) == 1:
            why = f"every point has {layers.pop()} layers: the costs fitted before it hold it"
    return f"{name} {value} ({why or 'not separable from the terms fitted before it'})"


def _us(seconds: float) -> str:
    return f"{seconds * 1e6:.4g} us"


@record
class PrefillCase:
    """A serving benchmark with a measured TTFT, as the prefill fit replays it: its
    scenario (its engine holding the parameters fitted to decode steps), workload and
    scheduler limits."""

    scenario: Scenario
    workload: Workload
    limits: SchedulerLimits
    ttft_s: float
    tpot_s: float
    """The measured mean TPOT, which other requests' chunks move too."""

    def served(self, prefill_efficiency: float) -> ServingResult:
        engine = self.scenario.engine
        params = tuple(
            replace(p, prefill_efficiency=prefill_efficiency, per_request_s=0.0)
            for p in engine.params
        )
        scenario = replace(self.scenario, engine=replace(engine, params=params))
        return serve(scenario, self.workload, self.limits)


@record
class PrefillFit:
    prefill_efficiency: float
    per_request_s: float
    fitted: str
    """Which of the two the points identified, from how many TTFTs (for ``fitted:``)."""
    prior: float | None = None
    """The family's e_p that c_req was fitted at; None where e_p was fitted too."""


PREFILL_RANGE = (0.003, 1.0)
"""e_p is searched between 0.3% of peak FLOP/s and the peak itself."""

PREFILL_STEPS = 14
"""Golden-section steps on log e_p: the bracket shrinks to 0.618^14 of its log width
(e_p to about 0.5%), at a serving replay per point per step."""

PROMPT_SPREAD = 2
"""Prompt sizes (computed tokens) at least this far apart identify e_p beside c_req: a
prompt's prefill then grows with its size while c_req does not. Prompts of one size (the
ShareGPT benchmarks' ~230 tokens of three models) tell a slower prefill from a fixed cost
only through the models' FLOPs, too weakly to fit both."""


def prefill_identified(cases: Sequence[PrefillCase]) -> bool:
    """Whether the cases fit their own e_p beside c_req (PROMPT_SPREAD)."""
    sizes = [c.workload.new_tokens for c in cases]
    return max(sizes) >= PROMPT_SPREAD * min(sizes)


def fit_prefill(cases: Sequence[PrefillCase], prior: float | None = None) -> PrefillFit:
    """e_p and c_req that best predict the cases' TTFT and mean TPOT (squared relative
    errors, both): a slower prefill lengthens TTFT and, through the chunks decoding
    requests wait through, TPOT, so the TPOT keeps e_p from absorbing a TTFT's queueing
    the steady state does not model. c_req (TTFT only, never negative) comes in closed
    form at each e_p. Which are fitted:

    - prompts of sizes PROMPT_SPREAD apart: e_p and c_req;
    - else, given ``prior`` (the family's e_p, fitted where prompts differ): c_req at it;
    - else e_p alone, c_req 0 (a per-request cost cannot be told from a slower prefill)."""
    if prior is not None and not prefill_identified(cases):
        served = [c.served(prior) for c in cases]
        per_request = _per_request(cases, [r.ttft_s for r in served])
        return PrefillFit(
            prior, per_request, f"per_request from {len(cases)} TTFTs at the family's e_p", prior
        )
    free = prefill_identified(cases) and len(cases) >= 2 * MIN_POINTS_PER_UNKNOWN

    def at(log_e: float) -> tuple[float, float]:
        results = [c.served(math.exp(log_e)) for c in cases]
        ttft = [r.ttft_s for r in results]
        per_request = _per_request(cases, ttft) if free else 0.0
        loss = sum(
            ((t + per_request) / c.ttft_s - 1) ** 2 + (r.tpot_s / c.tpot_s - 1) ** 2
            for c, t, r in zip(cases, ttft, results, strict=True)
        )
        return loss, per_request

    low, high = (math.log(e) for e in PREFILL_RANGE)
    ratio = (math.sqrt(5) - 1) / 2
    a, b = high - ratio * (high - low), low + ratio * (high - low)
    fa, fb = at(a)[0], at(b)[0]
    for _ in range(PREFILL_STEPS):
        if fa <= fb:
            high, b, fb = b, a, fa
            a = high - ratio * (high - low)
            fa = at(a)[0]
        else:
            low, a, fa = a, b, fb
            b = low + ratio * (high - low)
            fb = at(b)[0]
    best = a if fa <= fb else b
    fitted = "prefill_efficiency, per_request" if free else "prefill_efficiency"
    held = "" if free else "; per_request 0 us (prompts of one size)"
    return PrefillFit(math.exp(best), at(best)[1], f"{fitted} from {len(cases)} TTFTs{held}")


def _per_request(cases: Sequence[PrefillCase], ttft: Sequence[float]) -> float:
    """The c_req >= 0 minimising the squared relative TTFT errors (closed form)."""
    inverse = sum(1 / c.ttft_s**2 for c in cases)
    gap = sum((c.ttft_s - t) / c.ttft_s**2 for c, t in zip(cases, ttft, strict=True))
    return max(0.0, gap / inverse)
