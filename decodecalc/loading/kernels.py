"""Reading presets/kernels/<gpu>.yaml: per-operation kernel rates per engine, fitted offline
by validation/fit_kernels.py from aiconfigurator-core's measured tables (NVIDIA GPUs) and by
validation/fit_kernels_aiter.py from ROCm/aiter's tuned configs (AMD Instinct GPUs).

These files are data for the step model, not presets a user picks: they are found by the
GPU's preset id, and stay out of the catalog's listings."""

from __future__ import annotations

import functools
from pathlib import Path
from typing import TYPE_CHECKING

from decodecalc.errors import InputError
from decodecalc.loading.datafile import Document, is_file, read_yaml
from decodecalc.loading.fields import Fields
from decodecalc.record import replace
from decodecalc.step.step import may_bind
from decodecalc.units import parse_bandwidth, parse_duration

if TYPE_CHECKING:
    from decodecalc.engine.profile import Engine, EngineParams
    from decodecalc.model.dtypes import DType
    from decodecalc.model.hardware import GpuSpec
    from decodecalc.model.kernels import AllReduceRates, FitError, KernelRates, OpRates
# (the rate records are imported where a table is read: a dense query at a small batch
# reads none, see with_kernel_rates)

MAX_EFFICIENCY = 2
"""An efficiency past twice the preset's peak is a wrong preset or a misread table."""
MAX_TILE_ROWS = 4096
MAX_FIT_ERROR = 1000
MAX_FIXED_S = 0.01
"""Ten milliseconds: no single kernel's fixed time comes near it."""


def kernels_dir() -> Path:
    from decodecalc.loading.catalog import presets_dir

    return presets_dir() / "kernels"


def kernel_rates(
    gpu_id: str,
    engine: str | None = None,
    directory: Path | None = None,
    whole: bool = True,
    stand_in: bool = False,
) -> KernelRates | None:
    """The kernel rates of ``engine`` (a decodecalc engine id; None: the file's default
    engine) on the GPU preset ``gpu_id``; None where no table was measured for them.
    ``stand_in``: an engine without a block of its own takes the default engine's where
    the file lets other engines take it (``other_engines``: aiconfigurator's tuned engines
    stand in for any on NVIDIA; aiter's kernels are only the engines' that call aiter).
    ``whole`` False: only STEP_CLASSES, what a query's step takes."""
    found = _kernel_file(gpu_id, directory, whole)
    if found is None:
        return None
    blocks, default = found
    own = blocks.get(default if engine is None else engine)
    if own is None and stand_in and blocks[default].other_engines:
        return blocks[default]
    return own


@functools.lru_cache(maxsize=16)
def _kernel_file(
    gpu_id: str, directory: Path | None, whole: bool
) -> tuple[dict[str, KernelRates], str] | None:
    """A GPU's kernels file, every engine's block, read once per process: from the
    preset cache's JSON when fresh (an entry stored only after the whole strict read),
    else from the YAML, whole, then cached."""
    from decodecalc.loading import cache

    path = (directory or kernels_dir()) / f"{gpu_id}.yaml"
    if not is_file(path):
        return None
    entry = cache.entry(path)
    cached = cache.load(entry)
    if cached is not None:
        try:
            return read_kernel_file(Document(str(path), cached, cached=True), gpu_id, whole)
        except InputError:
            pass  # the rules changed under the cache: read the file itself
    doc = read_yaml(path)
    found = read_kernel_file(doc, gpu_id)
    cache.store(entry, doc.data)
    return found


def with_kernel_rates(
    engine: Engine,
    gpu: GpuSpec | None,
    weights: DType,
    experts: DType | None,
    batch: int | None,
    overridden: bool = False,
    tp: int = 1,
) -> Engine:
    """The engine with e_mma and the grouped GEMMs' tile from the GPU's kernel tables,
    where it has them (NVIDIA GPUs aiconfigurator measured) and a profile's points did not
    fit e_mma: the dense GEMMs' e_mma for the weights' format, the grouped GEMMs' e_mma
    and tile for the experts' (``experts`` None: the model has none). Each profile takes
    its own engine's tables, else the file's default engine's. Points identify e_w and
    e_kv; compute-bound GEMMs are rare in them, so the tables are the better witness.

    ``batch``: the one batch the answer's steps run at, where a dense model of one weight
    format (not ``overridden`` by a recipe) then cannot be compute-bound at any e_mma the
    tables hold and they are not read (a query in a shell loop); None where the answer
    varies it (a server's running batches, a plan's largest). ``tp``: the tensor-parallel
    size over the GPU's own interconnect (1 where the scenario names another link or
    bandwidth: the tables timed the engines' all-reduce on the GPU's own); at 2 or more
    the tables' all-reduce prices the transfers, so they are read whatever the batch."""
    if gpu is None or engine.is_roofline:
        return engine
    dense = experts is None and not overridden
    if dense and tp < 2 and batch is not None and not may_bind(gpu, weights, batch, MIN_DENSE_MMA):
        return engine
    names = engine.names
    if len(names) != len(engine.params):  # a set of parameters not named one by one
        names = (engine.id,) * len(engine.params)
    params = tuple(
        _with_rates(p, gpu.id, name, weights, experts, tp > 1)
        for p, name in zip(engine.params, names, strict=True)
    )
    return replace(engine, params=params) if params != engine.params else engine


MIN_DENSE_MMA = 0.2
"""Below every dense GEMM's e_mma in the shipped tables (the lowest is 0.22: MI300X's FP8
block-scaled GEMMs in aiter)."""


def _with_rates(
    p: EngineParams,
    gpu_id: str,
    name: str,
    weights: DType,
    experts: DType | None,
    allreduce: bool,
) -> EngineParams:
    engine_id = name.split(" ")[0].split("@")[0]
    rates = kernel_rates(gpu_id, engine_id, whole=False, stand_in=True)
    if rates is None:
        return p
    if allreduce and rates.allreduce != p.allreduce_rates:
        p = replace(p, allreduce_rates=rates.allreduce)
    if p.mma_fitted:
        return p
    dense = rates.gemm_rates(weights.id, weights.matmul)
    grouped = None if experts is None else rates.moe_rates(experts.id, experts.matmul)
    changes: dict[str, object] = {}
    if dense is not None and dense.mma_efficiency:
        changes["mma_efficiency"] = dense.mma_efficiency
    if grouped is not None and grouped.mma_efficiency:
        changes["grouped_mma_efficiency"] = grouped.mma_efficiency
    if grouped is not None and grouped.tile_rows:
        changes["tile_rows"] = grouped.tile_rows
    if not changes:
        return p
    source = f"{rates.engine} {rates.version} kernel tables on {gpu_id} ({rates.measured_by})"
    return replace(p, kernel_source=source, **changes)


def read_kernel_rates(doc: Document, gpu_id: str, engine: str | None) -> KernelRates | None:
    """One engine's block of a kernels file, every other block checked as well (a typo
    anywhere in the file is an error, whichever engine is asked for)."""
    blocks, default = read_kernel_file(doc, gpu_id)
    return blocks.get(default if engine is None else engine)


def read_kernel_file(
    doc: Document, gpu_id: str, whole: bool = True
) -> tuple[dict[str, KernelRates], str]:
    """Every engine's block of a kernels file, by engine id, and the default engine's id
    (``whole`` False: of each block only STEP_CLASSES)."""
    top = Fields(doc)
    top.text("name")
    if top.text("gpu") != gpu_id:
        raise top.error("gpu", f"expected {gpu_id!r}, the file's own name")
    source = top.text("source")
    measured_by = top.text("measured_by", MEASURED_BY)
    others = top.boolean("other_engines", True)
    default = top.text("default_engine")
    engines = top.mapping("engines")
    blocks = {
        str(name): replace(
            _engine(engines.mapping(str(name)), gpu_id, str(name), source, whole),
            measured_by=measured_by,
            other_engines=others,
        )
        for name in engines.data
    }
    if default not in blocks:
        raise top.error("default_engine", f"expected one of {', '.join(blocks)}, got {default!r}")
    top.finish()
    return blocks, default


MEASURED_BY = "aiconfigurator-core"
"""Whose tables a file was fitted on, where it does not say (the NVIDIA files came first)."""

STEP_CLASSES = ("gemm", "moe", "allreduce")
"""The classes the step model takes from the tables (with_kernel_rates). A query reads
only these from the preset cache, whose entry exists only for a file that passed the
whole strict read (kernel_rates); every class is read where the file itself is."""


def _engine(block: Fields, gpu_id: str, engine: str, source: str, whole: bool) -> KernelRates:
    from decodecalc.model.kernels import KernelRates

    if not whole:
        block.read.update(k for k in block.data if k not in STEP_CLASSES)
    return KernelRates(
        gpu=gpu_id,
        engine=engine,
        version=block.text("version"),
        source=f"{source}; launch: {block.text('launch_table')}",
        launch_s=_duration(block, "launch"),
        gemm=_per_dtype(block, "gemm"),
        moe=_per_dtype(block, "moe"),
        attention=_per_dtype(block, "attention") if whole else (),
        mla=_per_dtype(block, "mla") if whole else (),
        allreduce=_allreduce(block),
        left_out=block.texts("left_out") if whole else (),
    )


def _per_dtype(block: Fields, name: str) -> tuple[OpRates, ...]:
    if not block.has(name):
        block.read.add(name)
        return ()
    group = block.mapping(name)
    table = group.text("table")
    return tuple(
        _op(group.mapping(str(key)), str(key), table) for key in group.data if key != "table"
    )


def _tables(fields: Fields, table: str) -> str:
    """The class's table, and the files under it its rows came from where it lists them
    (aiter's tuned configs are one CSV per kernel family and model)."""
    files = fields.texts("tables")
    return f"{table}: {', '.join(files)}" if files else table


def _op(fields: Fields, key: str, table: str) -> OpRates:
    from decodecalc.model.kernels import OpRates

    has_compute = fields.has("mma_efficiency")
    return OpRates(
        key=key,
        memory_efficiency=float(fields.fraction("memory_efficiency", MAX_EFFICIENCY)),
        mma_efficiency=(
            float(fields.fraction("mma_efficiency", MAX_EFFICIENCY)) if has_compute else None
        ),
        tile_rows=(
            fields.integer("tile_rows", maximum=MAX_TILE_ROWS)
            if has_compute
            else fields.optional_integer("tile_rows")
        ),
        fixed_s=_duration(fields, "fixed", allow_zero=True),
        matmul=fields.text("matmul", "bf16"),
        table=_tables(fields, table),
        error=_error(fields, "error"),
        decode_error=_error(fields, "decode_error") if fields.has("decode_error") else None,
    )


def _allreduce(block: Fields) -> tuple[AllReduceRates, ...]:
    from decodecalc.model.kernels import AllReduceRates

    if not block.has("allreduce"):
        block.read.add("allreduce")
        return ()
    group = block.mapping("allreduce")
    group.text("table")
    rates = []
    for key in group.data:
        if key == "table":
            continue
        if not str(key).isdigit() or int(key) < 2:
            raise group.error(str(key), "expected a tensor-parallel size (2 or more GPUs)")
        fields = group.mapping(str(key))
        rates.append(
            AllReduceRates(
                gpus=int(key),
                latency_s=_duration(fields, "latency"),
                bus_bandwidth_bytes_per_s=_bandwidth(fields, "bus_bandwidth"),
                error=_error(fields, "error"),
            )
        )
    return tuple(rates)


def _error(fields: Fields, name: str) -> FitError:
    from decodecalc.model.kernels import FitError

    error = fields.mapping(name)
    return FitError(
        median=float(error.fraction("median", MAX_FIT_ERROR)),
        p90=float(error.fraction("p90", MAX_FIT_ERROR)),
        rows=error.integer("rows"),
    )


def _duration(fields: Fields, name: str, allow_zero: bool = False) -> float:
    """A time such as 2.7us, above zero (or zero where ``allow_zero``) and at most 10 ms."""
    try:
        seconds = parse_duration(fields.text(name), name)
    except InputError as exc:
        raise fields.error(name, str(exc)) from None
    if seconds > MAX_FIXED_S or (seconds == 0 and not allow_zero):
        raise fields.error(name, f"expected more than 0 and at most 10ms, got {seconds:g} s")
    return seconds


def _bandwidth(fields: Fields, name: str) -> int:
    try:
        return parse_bandwidth(fields.text(name))
    except InputError as exc:
        raise fields.error(name, str(exc)) from None
