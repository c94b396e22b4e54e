"""The one function that turns a ScenarioSpec (decodecalc.scenario_spec) into a Scenario:
preset names looked up, unit texts parsed, the defaults that depend on other inputs (the
KV dtype, the link, a calibrated overhead) filled in. Every door into the estimator calls it.
"""

from __future__ import annotations

from decodecalc.errors import InputError
from decodecalc.loading.catalog import Catalog
from decodecalc.notes import Note
from decodecalc.physics.dtypes import DType
from decodecalc.physics.engine import Engine, gpu_family, typical
from decodecalc.physics.estimator import Scenario
from decodecalc.physics.hardware import GpuSpec, Link
from decodecalc.physics.model import Model
from decodecalc.physics.precision import Overrides, WeightRecipe, expand
from decodecalc.record import record, replace
from decodecalc.scenario_spec import ScenarioSpec
from decodecalc.units import parse_bandwidth, parse_duration


def default_kv_dtype(catalog: Catalog, weights: DType) -> DType:
    """Like vLLM's 'auto': the weights' own format when it is a compute format, else BF16."""
    return weights if weights.compute else catalog.dtype("bf16")


def resolve_link(
    catalog: Catalog,
    gpu: GpuSpec | None,
    tp: int,
    name: str | Link | None,
    bandwidth: str | int | None,
) -> Link | None:
    """The interconnect TP all-reduces cross: the named one, else the GPU's own; required
    when TP > 1 unless 'none' deliberately leaves communication out."""
    if tp == 1 or (isinstance(name, str) and name.lower() == "none"):
        return None
    chosen = name or (gpu.link if gpu is not None else None)
    if chosen is None:
        raise InputError(
            "tp > 1 needs an interconnect for its all-reduces: give --link (nvlink4, pcie5, "
            "... 'decodecalc links' lists them) or --link none to leave it out"
        )
    found = chosen if isinstance(chosen, Link) else catalog.link(chosen)
    if bandwidth is not None:
        found = replace(found, bandwidth_bytes_per_s=_rate(bandwidth))
    return found


@record
class Efficiency:
    fraction: float
    overhead_s: float | None = None
    """A calibrated per-step overhead, used unless one is given explicitly."""
    notes: tuple[Note, ...] = ()


def resolve_efficiency(text: str, gpu: GpuSpec | None) -> Efficiency:
    """A fraction in (0, 1], 'sustained' (the GPU's measured bandwidth over its peak) or
    'calibrated' (the fit saved by 'decodecalc calibrate')."""
    word = text.strip().lower()
    if word == "sustained":
        if gpu is None or gpu.sustained_bandwidth_bytes_per_s is None:
            name = gpu.id if gpu else "a bandwidth given alone"
            raise InputError(
                f"no sustained bandwidth is known for {name}; give --efficiency as a fraction "
                "or fit one with 'decodecalc calibrate'"
            )
        return Efficiency(gpu.sustained_bandwidth_bytes_per_s / gpu.bandwidth_bytes_per_s)
    if word == "calibrated":
        from decodecalc.calibration.saved import load_calibration

        saved = load_calibration()
        fit, elsewhere = saved.fit, gpu is not None and gpu.id not in saved.gpus
        notes = (
            (
                Note(
                    "calibrated-elsewhere",
                    f"the calibration was fitted on {', '.join(saved.gpus) or 'unrecorded GPUs'}"
                    f", not {gpu.id}: efficiency and overhead may not carry over",
                ),
            )
            if elsewhere and gpu is not None
            else ()
        )
        return Efficiency(fit.efficiency, fit.overhead_s, notes)
    try:
        return Efficiency(float(word))
    except ValueError:
        raise InputError(
            f"efficiency {text!r} is not a fraction in (0, 1], 'sustained' or 'calibrated'"
        ) from None


def resolve(spec: ScenarioSpec, catalog: Catalog) -> Scenario:
    """The Scenario a spec describes, every name looked up and every text parsed."""
    model = catalog.model(spec.model) if isinstance(spec.model, str) else spec.model
    gpu = catalog.gpu(spec.gpu) if isinstance(spec.gpu, str) else spec.gpu
    if spec.bandwidth is not None:
        bytes_per_s = _rate(spec.bandwidth)
    elif gpu is not None:
        bytes_per_s = gpu.bandwidth_bytes_per_s
    else:
        raise InputError(
            "give --gpu NAME or --bandwidth VALUE (e.g. --gpu h100-sxm, --bandwidth 3.35TB/s)"
        )
    weights, overrides, recipe = resolve_weights(catalog, spec.weights, model)
    kv = (
        default_kv_dtype(catalog, weights)
        if spec.kv_dtype is None
        else _dtype(catalog, spec.kv_dtype)
    )
    v_kv = None if spec.v_dtype is None else _dtype(catalog, spec.v_dtype)
    fit = resolve_efficiency(str(spec.efficiency), gpu)
    engine, engine_notes = resolve_engine(catalog, spec.engine, gpu)
    if isinstance(spec.overhead, str):
        overhead_s = parse_duration(spec.overhead, "overhead")
    else:
        overhead_s = fit.overhead_s or 0.0 if spec.overhead is None else float(spec.overhead)
    return Scenario(
        model=model,
        weights=weights,
        weight_overrides=overrides,
        weights_recipe=recipe,
        kv_dtype=kv,
        v_dtype=v_kv,
        bandwidth_bytes_per_s=bytes_per_s,
        efficiency=fit.fraction,
        batch=spec.batch,
        tp=spec.tp,
        gpu=gpu,
        memory_utilization=spec.memory_utilization,
        link=resolve_link(catalog, gpu, spec.tp, spec.link, spec.link_bandwidth),
        overhead_s=overhead_s,
        notes=(*fit.notes, *engine_notes),
        engine=engine,
    )


def resolve_engine(
    catalog: Catalog, name: str | Engine | None, gpu: GpuSpec | None
) -> tuple[Engine, tuple[Note, ...]]:
    """The engine whose measured step the expected figures predict: a profile's parameters
    for the GPU's family (or, said in a note, the family it has most data for), 'typical'
    (the band across every profile with data for that family; the default) or 'roofline'
    (physics alone)."""
    if isinstance(name, Engine):
        return name, ()
    family = gpu_family(gpu)
    if name is not None and not name.strip():
        raise InputError(
            "engine '' is empty: give a profile ('decodecalc engines'), typical or roofline"
        )
    word = (name or "typical").strip().lower()
    if word == "roofline":
        return Engine("roofline", (), family), ()
    if word == "typical":
        engine = typical(catalog.engines(), family)
        if engine.params:
            return engine, ()
        return engine, (
            Note(
                "no-engine-data",
                f"no engine profile has data for {family} GPUs: the expected figures are the "
                "roofline ('decodecalc engines' lists what each profile was fitted on)",
            ),
        )
    profile = catalog.engine(word)
    params, fitted = profile.params_for(family)
    notes: tuple[Note, ...] = ()
    if not params.points:
        notes = (
            Note(
                "engine-not-fitted",
                f"{profile.name} has no published measurements of its own, so its parameters "
                f"are an assumption: {profile.notes or 'see decodecalc engines'}",
            ),
        )
    elif fitted != family:
        notes = (
            Note(
                "engine-fallback",
                f"{profile.name} has no measurements on {family} GPUs: its {fitted} "
                "parameters stand in, so expect a wider error than its band says",
            ),
        )
    return Engine(profile.id, (params,), family, (profile.id,)), notes


def resolve_weights(
    catalog: Catalog, value: str | DType | WeightRecipe | None, model: Model
) -> tuple[DType, Overrides, str | None]:
    """The default weight format, the tensor groups stored otherwise, and the recipe they
    came from: a dtype stores every group in it (even for a quantized checkpoint); a
    recipe, named or the model's own (when nothing is named), gives a format per group;
    with neither, BF16."""
    chosen = model.default_weights if value is None else value
    found = catalog.weights(chosen) if isinstance(chosen, str) else chosen
    if found is None:
        return catalog.dtype("bf16"), (), None
    if isinstance(found, DType):
        return found, (), None
    default, overrides = expand(found, (g.name for g in model.tensor_groups()), catalog.dtype)
    return default, overrides, found.id


def _dtype(catalog: Catalog, value: str | DType) -> DType:
    return catalog.dtype(value) if isinstance(value, str) else value


def _rate(value: str | int) -> int:
    return parse_bandwidth(value) if isinstance(value, str) else value
