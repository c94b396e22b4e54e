"""From what a user typed to a Scenario: the one place flags become core objects, shared by
estimate, generate, explain and the deployment files."""

from __future__ import annotations

from decodecalc.errors import InputError
from decodecalc.loading.catalog import Catalog
from decodecalc.physics.dtypes import DType
from decodecalc.physics.estimator import Scenario
from decodecalc.physics.hardware import GpuSpec, Link
from decodecalc.physics.model import Model
from decodecalc.record import record, replace
from decodecalc.units import parse_bandwidth, parse_duration


def default_kv_dtype(catalog: Catalog, weights: DType) -> DType:
    """Like vLLM's 'auto': the weights' own format when it is a compute format, else BF16."""
    return weights if weights.compute else catalog.dtype("bf16")


def resolve_link(
    catalog: Catalog, gpu: GpuSpec | None, tp: int, name: str | None, bandwidth: str | None
) -> Link | None:
    """The interconnect TP all-reduces cross: the named one, else the GPU's own; required
    when TP > 1 unless 'none' deliberately leaves communication out."""
    if tp == 1 or (name is not None and name.lower() == "none"):
        return None
    chosen = name or (gpu.link if gpu is not None else None)
    if chosen is None:
        raise InputError(
            "tp > 1 needs an interconnect for its all-reduces: give --link (nvlink4, pcie5, "
            "... 'decodecalc links' lists them) or --link none to leave it out"
        )
    found = catalog.link(chosen)
    if bandwidth is not None:
        found = replace(found, bandwidth_bytes_per_s=parse_bandwidth(bandwidth))
    return found


@record
class Efficiency:
    fraction: float
    overhead_s: float | None = None
    """A calibrated per-step overhead, used unless one is given explicitly."""


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

        fit = load_calibration()
        return Efficiency(fit.efficiency, fit.overhead_s)
    try:
        return Efficiency(float(word))
    except ValueError:
        raise InputError(
            f"efficiency {text!r} is not a fraction in (0, 1], 'sustained' or 'calibrated'"
        ) from None


def build_scenario(
    catalog: Catalog,
    model: Model,
    *,
    gpu: str | None,
    bandwidth: str | None,
    weights: str,
    kv_dtype: str | None,
    batch: int,
    tp: int,
    efficiency: str,
    memory_utilization: float,
    overhead: str | None,
    link: str | None,
    link_bandwidth: str | None,
) -> Scenario:
    gpu_spec = catalog.gpu(gpu) if gpu is not None else None
    if bandwidth is not None:
        bytes_per_s = parse_bandwidth(bandwidth)
    elif gpu_spec is not None:
        bytes_per_s = gpu_spec.bandwidth_bytes_per_s
    else:
        raise InputError(
            "give --gpu NAME or --bandwidth VALUE (e.g. --gpu h100-sxm, --bandwidth 3.35TB/s)"
        )
    weights_dtype = catalog.dtype(weights)
    kv = default_kv_dtype(catalog, weights_dtype) if kv_dtype is None else catalog.dtype(kv_dtype)
    fit = resolve_efficiency(efficiency, gpu_spec)
    if overhead is not None:
        overhead_s = parse_duration(overhead, "overhead")
    else:
        overhead_s = fit.overhead_s or 0.0
    return Scenario(
        model=model,
        weights=weights_dtype,
        kv_dtype=kv,
        bandwidth_bytes_per_s=bytes_per_s,
        efficiency=fit.fraction,
        batch=batch,
        tp=tp,
        gpu=gpu_spec,
        memory_utilization=memory_utilization,
        link=resolve_link(catalog, gpu_spec, tp, link, link_bandwidth),
        overhead_s=overhead_s,
    )
