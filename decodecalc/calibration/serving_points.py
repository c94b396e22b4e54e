"""The serving rows of a points file replayed through the serving model: each benchmark's
workload (input and output lengths, concurrency) on its scenario with the engine that
measured it and that engine's scheduler defaults, the predicted mean TPOT against the
measured one and, where the source gives it, the TTFT: with the shipped profiles and,
left out, with profiles refitted without the point's group (calibration/validation.py:
ttft_left_out).

A point's ``ms_per_token`` is its benchmark's mean TPOT (``tpot_mean``) or mean
inter-token latency (``itl_mean``, which for a whole run is the same figure: the decode
time after the first token over the tokens after it), so both are held to the model's TPOT.
"""

from __future__ import annotations

from collections.abc import Sequence

from decodecalc.answers.serving import ServingResult, serve
from decodecalc.calibration.points import MeasuredPoint
from decodecalc.engine.profile import gpu_family
from decodecalc.engine.scheduler import scheduler_limits
from decodecalc.engine.select import choose_engine, engine_at, engine_for, extrapolation
from decodecalc.errors import InputError
from decodecalc.loading.catalog import Catalog
from decodecalc.record import record, replace
from decodecalc.scenarios.workload import Workload

TPOT_TARGET = 0.15
"""The median absolute TPOT error the serving model is held to (issue 13)."""


@record
class ServingCheck:
    point: MeasuredPoint
    result: ServingResult | None
    """None when the model refuses the workload (the reason is in ``problem``)."""
    problem: str | None = None
    left_out_ttft_s: float | None = None
    """The TTFT predicted by profiles refitted without the point's group (ttft_left_out)."""

    @property
    def tpot_error(self) -> float | None:
        if self.result is None:
            return None
        return self.result.tpot_s / self.point.measured_seconds - 1

    @property
    def ttft_error(self) -> float | None:
        load = self.point.serving
        if self.result is None or load is None or load.ttft_seconds is None:
            return None
        return self.result.ttft_s / load.ttft_seconds - 1

    @property
    def left_out_ttft_error(self) -> float | None:
        load = self.point.serving
        if self.left_out_ttft_s is None or load is None or load.ttft_seconds is None:
            return None
        return self.left_out_ttft_s / load.ttft_seconds - 1


@record
class ServingValidation:
    checks: tuple[ServingCheck, ...]

    @property
    def tpot_mdape(self) -> float | None:
        return _median_abs([c.tpot_error for c in self.checks])

    @property
    def ttft_mdape(self) -> float | None:
        return _median_abs([c.ttft_error for c in self.checks])

    @property
    def left_out_ttft_mdape(self) -> float | None:
        return _median_abs([c.left_out_ttft_error for c in self.checks])

    @property
    def steady_ttft_mdape(self) -> float | None:
        """TTFT error over the points whose TTFT the steady state describes (those fitted)."""
        return _median_abs([c.ttft_error for c in self._steady])

    @property
    def steady_left_out_ttft_mdape(self) -> float | None:
        return _median_abs([c.left_out_ttft_error for c in self._steady])

    @property
    def _steady(self) -> list[ServingCheck]:
        return [c for c in self.checks if c.point.serving and c.point.serving.ttft_fitted]


def _median_abs(errors: Sequence[float | None]) -> float | None:
    values = sorted(abs(e) for e in errors if e is not None)
    if not values:
        return None
    middle = len(values) // 2
    return values[middle] if len(values) % 2 else (values[middle - 1] + values[middle]) / 2


def validate_serving(points: Sequence[MeasuredPoint], catalog: Catalog) -> ServingValidation:
    """Every point with a serving workload, predicted with its own engine's profile and
    scheduler defaults (the typical band's centre and vLLM's defaults when it names none)."""
    from decodecalc.calibration.validation import ttft_left_out

    left_out = ttft_left_out(points, catalog)
    checks = []
    for i, point in enumerate(points):
        load = point.serving
        if load is None:
            continue
        scenario = point.scenario
        if point.engine is None:
            engine, _ = choose_engine(catalog, "typical", scenario.gpu)
        elif point.release is None:  # no line named: the pooled fit, as the estimate's
            profile = catalog.engine(point.engine)  # validation takes it (stand_in)
            engine, _ = engine_for(profile, gpu_family(scenario.gpu), catalog.engines)
        else:  # at the point's own release line, as the estimate's validation takes it
            engine = engine_at(catalog, point.engine, point.release, scenario.gpu)
        engine, _ = extrapolation(engine, scenario.model, scenario.batch, scenario.gpu)
        scenario = replace(scenario, engine=engine)
        workload = Workload(
            input_len=load.input_len, output_len=load.output_len, concurrency=load.concurrency
        )
        try:
            result = serve(scenario, workload, scheduler_limits(engine, scenario.gpu))
        except InputError as exc:
            checks.append(ServingCheck(point, None, str(exc)))
            continue
        checks.append(ServingCheck(point, result, None, left_out.get(i)))
    return ServingValidation(tuple(checks))
