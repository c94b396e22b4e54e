"""Fit per-operation kernel efficiencies per NVIDIA GPU from aiconfigurator-core's tables.

    .venv/bin/pip install numpy pyarrow      # this script's own needs; decodecalc has neither
    unzip -q aiconfigurator_core-0.12.0-cp311-abi3-manylinux_2_28_x86_64.whl -d /tmp/aic
    .venv/bin/python validation/fit_kernels.py /tmp/aic

aiconfigurator-core 0.12.0 (Apache-2.0, https://pypi.org/project/aiconfigurator-core/0.12.0/)
ships kernel latencies measured per GPU and engine version under
aiconfigurator_core/systems/data/<system>/<op>/<engine>/<version>/*.parquet. This script fits
the step model's per-operation form to them,

    t_op = max(bytes / (bandwidth x e_mem), FLOPs(M rounded up to tile_rows) / (peak x e_mma))
           + fixed

with bandwidth and peak FLOP/s per matmul class from decodecalc's own GPU presets (read with
decodecalc's loader), so every efficiency is relative to the figures decodecalc uses, and
writes presets/kernels/<gpu>.yaml. decodecalc never reads the tables or this package.

The rules:
- Versions: per engine the version aiconfigurator's systems/query_versions.yaml names
  `current` for the system (its newest complete collection); a table that version lacks is
  taken from the newest older version that has it (aiconfigurator's own backward fill).
- Where an engine measured one shape with several kernels (vLLM's FP8 block GEMM through
  CUTLASS, DeepGEMM and FlashInfer), the fastest counts: the kernel a tuned engine picks.
- The loss is the squared relative error; `fixed` (the time an operation takes on top of its
  roofline: launches, quantising activations, routing) is solved in closed form for each
  efficiency pair, the efficiencies on a grid (0.04 apart, then 0.004 around the best),
  the tile from the candidates listed per class. Errors are |fit / table - 1| per row.
- gemm (gemm_perf): dense weight GEMMs with N and K of 1,024 or more and M of 1 to 1,024:
  the decode range (M up to 256, reported on its own) leaves FP8 and FP4 GEMMs memory-bound
  throughout, so the compute side shows only with rows up to 1,024. Bytes: the weights at
  the dtype's bits (scales included: decodecalc's dtype presets) plus activations in and out
  at 2 bytes. FLOPs: 2 x M x N x K with M rounded up to the tile.
- moe (moe_perf): the grouped expert GEMMs, rows with the `balanced` routing, expert
  parallelism 1 (every expert local), tensor parallelism up to 8 (one node) and up to 1,024
  tokens (a decode step's batch): past those, costs per routed token (permuting, the
  activation, the weighted sum) that this form has no term for set the time, and the fit
  would trade the decode rows for them. Shapes TensorRT-LLM measured
  with a non-gated kernel are left out for every engine (the other engines' tables do not
  say which activation ran). Tokens go to experts as aiconfigurator's collector routes them
  (token t's i-th expert is (t + i x ceil(E / k)) mod E, spread over the stride when the
  tokens are fewer than it); bytes: the weights of every expert that gets a token (3
  matrices of H x I / TP) plus activations; FLOPs: each expert's tokens rounded up to the
  tile.
- attention (generation_attention_perf): decode attention without a window; bytes: K and V
  of every cached token (context = isl + step) at the KV dtype plus the query and output;
  memory-bound throughout (a GQA group is far below the ridge), so one e_mem and `fixed`.
- mla (generation_mla_perf, TensorRT-LLM and SGLang; vLLM measures only the whole MLA
  module): DeepSeek's absorbed decode, the 576-value latent (512 + 64 rope) read once per
  token for all heads; FLOPs 2 x heads x context x (576 + 512) per sequence, heads rounded
  up to the tile (FlashMLA pads them to 64).
- allreduce (comm/<engine>/<version>/custom_allreduce_perf): the engine's own all-reduce,
  bf16, messages of 128 to 8M values, the fastest implementation per size, as
  latency + 2 (N-1)/N x bytes / bus bandwidth per TP size (decodecalc's ring form).
- launch: the median time of the engine's bf16 GEMMs at M <= 16 and N x K <= 256 x 256,
  whose bytes and FLOPs take nanoseconds: one kernel's fixed cost.
"""

from __future__ import annotations

import argparse
import math
import sys
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import yaml

from decodecalc.loading.catalog import Catalog
from decodecalc.model.hardware import GpuSpec

PACKAGE = "aiconfigurator-core 0.12.0"
PACKAGE_URL = "https://pypi.org/project/aiconfigurator-core/0.12.0/"
SYSTEMS = {  # aiconfigurator system -> decodecalc GPU preset
    "h100_sxm": "h100-sxm",
    "h200_sxm": "h200",
    "b200_sxm": "b200",
    "b300_sxm": "b300",
    "gb200": "gb200",
    "gb300": "gb300",
    "a100_sxm": "a100-80gb",
    "l40s": "l40s",
    "rtx_pro_6000_server": "rtx-pro-6000",
}
ENGINES = {"trtllm": "tensorrt-llm", "vllm": "vllm", "sglang": "sglang"}  # -> decodecalc id
DTYPES = {  # table dtype -> (decodecalc dtype preset, matmul class its FLOPs run at)
    "bfloat16": ("bf16", "bf16"),
    "fp8": ("fp8", "fp8"),
    "fp8_block": ("fp8-128x128", "fp8"),
    "nvfp4": ("nvfp4", "fp4"),
    "w4a16_mxfp4": ("mxfp4", "bf16"),  # 4-bit weights, bf16 activations: bf16 tensor cores
}
ACTIVATION_BYTES = 2
GEMM_MAX_M = 1024
DECODE_MAX_M = 256
MOE_MAX_TOKENS = 1024
MOE_MAX_TP = 8
ALLREDUCE_SIZES = (128, 8 * 2**20)
MLA_LATENT = 576  # kv_lora_rank 512 + qk_rope_head_dim 64 (DeepSeek-V3 config.json)
MLA_VALUE = 512
GEMM_TILES = (16, 32, 64, 128, 256)
MOE_TILES = (8, 16, 32, 64, 128, 256)
MLA_TILES = (1, 16, 32, 64, 128)
ATTN_TILES = (1, 8, 16, 32, 64)
COARSE = np.round(np.arange(0.04, 1.2001, 0.04), 3)


@dataclass
class Fit:
    memory_efficiency: float
    mma_efficiency: float | None
    tile_rows: int | None
    fixed_s: float
    errors: np.ndarray

    def error(self, mask: np.ndarray | None = None) -> dict[str, Any]:
        errs = self.errors if mask is None else self.errors[mask]
        return {  # at least 0.001: no fit is exact to better than 0.1%
            "median": max(round(float(np.median(errs)), 3), 0.001),
            "p90": max(round(float(np.percentile(errs, 90)), 3), 0.001),
            "rows": int(errs.size),
        }


def _fixed(roofline: np.ndarray, measured: np.ndarray) -> np.ndarray:
    """Per grid row, the constant c >= 0 minimising sum(((r + c) / t - 1)^2)."""
    inv = 1.0 / measured
    c = ((1.0 - roofline * inv) * inv).sum(axis=-1) / (inv * inv).sum()
    return np.maximum(c, 0.0)


def _loss(roofline: np.ndarray, measured: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    c = _fixed(roofline, measured)
    rel = (roofline + c[..., None]) / measured - 1.0
    return (rel * rel).mean(axis=-1), c


def _best(memory_s: np.ndarray, compute_s: np.ndarray | None, t: np.ndarray, mem_grid, mma_grid):
    """The grid point with the least loss: (loss, e_mem, e_mma, c)."""
    em = np.asarray(mem_grid)[:, None, None]
    mem = memory_s[None, None, :] / em
    if compute_s is None:
        loss, c = _loss(mem[:, 0, :], t)
        i = int(np.argmin(loss))
        return float(loss[i]), float(mem_grid[i]), None, float(c[i])
    ec = np.asarray(mma_grid)[None, :, None]
    roof = np.maximum(mem, compute_s[None, None, :] / ec)
    loss, c = _loss(roof, t)
    i, j = np.unravel_index(int(np.argmin(loss)), loss.shape)
    return float(loss[i, j]), float(mem_grid[i]), float(mma_grid[j]), float(c[i, j])


def _fine(value: float | None) -> np.ndarray | None:
    if value is None:
        return None
    return np.round(np.clip(np.arange(value - 0.04, value + 0.0401, 0.004), 0.01, 1.2), 4)


def fit_roofline(
    memory_bytes: np.ndarray,
    flops: Callable[[int], np.ndarray] | None,
    tiles: Iterable[int | None],
    t: np.ndarray,
    bandwidth: float,
    peak: float,
) -> Fit:
    """Efficiencies, tile and fixed time of t = max(bytes/(bw e_mem), FLOPs/(peak e_mma)) + c."""
    memory_s = memory_bytes / bandwidth
    best: tuple[float, float, float | None, float, int | None] | None = None
    for tile in tiles:
        compute_s = None if flops is None or tile is None else flops(tile) / peak
        loss, em, ec, c = _best(
            memory_s, compute_s, t, COARSE, None if compute_s is None else COARSE
        )
        fine_mem = _fine(em)
        assert fine_mem is not None
        loss, em, ec, c = _best(memory_s, compute_s, t, fine_mem, _fine(ec))
        if best is None or loss < best[0]:
            best = (loss, em, ec, c, tile)
    assert best is not None
    _, em, ec, c, tile = best
    pred = memory_s / em
    if ec is not None and flops is not None and tile is not None:
        pred = np.maximum(pred, flops(tile) / peak / ec)
    return Fit(em, ec, tile, c, np.abs((pred + c) / t - 1.0))


# ---------------------------------------------------------------- tables


def version_key(version: str) -> tuple[Any, ...]:
    """1.3.0rc20 < 1.3.0rc23 < 1.3.0; 0.5.6.post2 > 0.5.6 (PEP 440 order, enough of it)."""
    import re

    parts = re.findall(r"\d+|[a-z]+", version.lower())
    key: list[Any] = []
    for part in parts:
        if part.isdigit():
            key.append((1, int(part)))
        elif part == "post":
            key.append((2, 0))
        else:  # rc, dev: before the release
            key.append((0, part))
    key.append((1, -1))
    return tuple(key)


class Tables:
    """The wheel's systems/ directory: which table of which version each fit reads."""

    def __init__(self, root: Path) -> None:
        self.systems = root / "aiconfigurator_core" / "systems"
        if not self.systems.is_dir():
            raise SystemExit(f"{root}: no aiconfigurator_core/systems/ (unzip the wheel there)")
        slots = yaml.safe_load((self.systems / "query_versions.yaml").read_text())
        self.defaults = {e: s["current"] for e, s in slots["defaults"].items()}
        self.overrides = {
            system: {e: s["current"] for e, s in engines.items()}
            for system, engines in (slots.get("overrides") or {}).items()
        }

    def current(self, system: str, engine: str) -> str:
        return self.overrides.get(system, {}).get(engine, self.defaults[engine])

    def path(self, system: str, op: str, engine: str, filename: str) -> Path | None:
        """The table of the current version, else of the newest older one that has it."""
        folder = self.systems / "data" / system / op / engine
        if not folder.is_dir():
            return None
        limit = version_key(self.current(system, engine))
        versions = sorted(
            (v.name for v in folder.iterdir() if version_key(v.name) <= limit),
            key=version_key,
            reverse=True,
        )
        for version in versions:
            if (folder / version / filename).is_file():
                return folder / version / filename
        return None

    def cite(self, path: Path) -> str:
        return str(path.relative_to(self.systems.parent.parent))


OPTIONAL = {"window_size": 0, "beam_width": 1}
"""Columns older tables lack (A100's TensorRT-LLM 1.0.0 attention), with what they meant."""


def read(path: Path, columns: list[str]) -> dict[str, np.ndarray]:
    import pyarrow.parquet as pq  # here: validation/fit_kernels_aiter.py reads CSVs alone

    present = set(pq.read_schema(path).names)
    table = pq.read_table(path, columns=[c for c in columns if c in present])
    cols = {c: table.column(c).to_numpy(zero_copy_only=False) for c in columns if c in present}
    for c in columns:
        if c not in present:
            cols[c] = np.full(table.num_rows, OPTIONAL[c])
    return cols


def fastest(cols: dict[str, np.ndarray], keys: list[str]) -> dict[str, np.ndarray]:
    """One row per shape: the least latency over the kernels measured for it."""
    if cols["latency"].size == 0:
        return cols
    order = np.lexsort([cols["latency"]] + [cols[k] for k in reversed(keys)])
    sorted_cols = {k: v[order] for k, v in cols.items()}
    first = np.ones(order.size, dtype=bool)
    same = np.ones(order.size - 1, dtype=bool)
    for k in keys:
        same &= sorted_cols[k][1:] == sorted_cols[k][:-1]
    first[1:] = ~same
    return {k: v[first] for k, v in sorted_cols.items()}


# ---------------------------------------------------------------- classes


@dataclass
class Context:
    gpu: GpuSpec
    catalog: Catalog

    @property
    def bandwidth(self) -> float:
        return float(self.gpu.bandwidth_bytes_per_s)

    def peak(self, matmul: str) -> float:
        found = self.gpu.peak_flops(matmul)
        if found is None:
            raise SystemExit(f"{self.gpu.id}: no peak FLOP/s for {matmul}")
        return float(found[1])

    def bits(self, dtype_id: str) -> float:
        return float(self.catalog.dtype(dtype_id).bits_per_value)


def fit_launch(path: Path) -> float:
    cols = read(path, ["gemm_dtype", "m", "n", "k", "latency"])
    small = (
        (cols["gemm_dtype"] == "bfloat16") & (cols["m"] <= 16) & (cols["n"] * cols["k"] <= 65536)
    )
    return float(np.median(cols["latency"][small])) * 1e-3


def fit_gemm(ctx: Context, path: Path) -> dict[str, dict[str, Any]]:
    cols = read(path, ["gemm_dtype", "m", "n", "k", "latency"])
    keep = (cols["m"] <= GEMM_MAX_M) & (cols["n"] >= 1024) & (cols["k"] >= 1024)
    cols = fastest({k: v[keep] for k, v in cols.items()}, ["gemm_dtype", "m", "n", "k"])
    out = {}
    for table_dtype, (dtype_id, matmul) in DTYPES.items():
        rows = cols["gemm_dtype"] == table_dtype
        if rows.sum() < 20:
            continue
        m, n, k = (cols[c][rows].astype(float) for c in ("m", "n", "k"))
        out[dtype_id] = fit_dense(ctx, dtype_id, matmul, m, n, k, cols["latency"][rows] * 1e-3)
    return out


def fit_dense(
    ctx: Context,
    dtype_id: str,
    matmul: str,
    m: np.ndarray,
    n: np.ndarray,
    k: np.ndarray,
    t: np.ndarray,
) -> dict[str, Any] | None:
    """One dense GEMM class: weights N x K at the dtype's bits plus activations in and out
    at 2 bytes; FLOPs 2 x M x N x K with M rounded up to the tile; t in seconds. The entry
    as written (None: left out), with the error over the decode rows (M up to 256)."""
    memory = n * k * ctx.bits(dtype_id) / 8 + m * (n + k) * ACTIVATION_BYTES

    def flops(tile: int) -> np.ndarray:
        return 2 * np.ceil(m / tile) * tile * n * k

    fit = fit_roofline(memory, flops, GEMM_TILES, t, ctx.bandwidth, ctx.peak(matmul))
    written = entry(fit, matmul)
    return written and written | {"decode_error": fit.error(m <= DECODE_MAX_M)}


def routed_counts(tokens: int, experts: int, topk: int) -> np.ndarray:
    """Tokens per expert under aiconfigurator's `balanced` routing (collector/helper.py)."""
    stride = math.ceil(experts / topk)
    t = np.arange(tokens)[:, None].astype(float)
    i = np.arange(topk)[None, :]
    if tokens >= stride:
        chosen = (t + i * stride) % experts
    else:
        chosen = (t * stride / tokens + i * stride) % experts
    return np.bincount(chosen.astype(int).ravel(), minlength=experts)


MOE_KEYS = [
    "moe_dtype",
    "num_tokens",
    "hidden_size",
    "inter_size",
    "topk",
    "num_experts",
    "moe_tp_size",
]


SHAPE = ("hidden_size", "inter_size", "num_experts", "topk")


def non_gated_shapes(tables: Tables, system: str) -> set[tuple[int, int, int, int]]:
    path = tables.path(system, "moe", "trtllm", "moe_perf.parquet")
    if path is None:
        return set()
    cols = read(path, ["kernel_source", "hidden_size", "inter_size", "num_experts", "topk"])
    rows = np.char.find(cols["kernel_source"].astype(str), "nongated") >= 0
    return set(zip(*(cols[c][rows].tolist() for c in SHAPE), strict=True))


def fit_moe(
    ctx: Context, path: Path, skip: set[tuple[int, int, int, int]]
) -> dict[str, dict[str, Any]]:
    cols = read(path, [*MOE_KEYS, "moe_ep_size", "distribution", "latency"])
    keep = (
        (cols["distribution"] == "balanced")
        & (cols["moe_ep_size"] == 1)
        & (cols["num_tokens"] <= MOE_MAX_TOKENS)
        & (cols["moe_tp_size"] <= MOE_MAX_TP)
    )
    shapes = zip(*(cols[c].tolist() for c in SHAPE), strict=True)
    keep &= np.array([s not in skip for s in shapes], dtype=bool)
    cols = fastest({k: v[keep] for k, v in cols.items()}, MOE_KEYS)
    out = {}
    for table_dtype, (dtype_id, matmul) in DTYPES.items():
        rows = np.flatnonzero(cols["moe_dtype"] == table_dtype)
        if rows.size < 20:
            continue
        counts = [
            routed_counts(
                int(cols["num_tokens"][r]), int(cols["num_experts"][r]), int(cols["topk"][r])
            )
            for r in rows
        ]
        h = cols["hidden_size"][rows].astype(float)
        inter = cols["inter_size"][rows].astype(float) / cols["moe_tp_size"][rows]
        pairs = np.array([c.sum() for c in counts], dtype=float)
        active = np.array([(c > 0).sum() for c in counts], dtype=float)

        def padded(tile: int, counts=counts) -> np.ndarray:
            return np.array([(np.ceil(c / tile) * tile).sum() for c in counts], dtype=float)

        t = cols["latency"][rows] * 1e-3
        out[dtype_id] = fit_grouped(ctx, dtype_id, matmul, h, inter, active, pairs, padded, t)
    return out


def fit_grouped(
    ctx: Context,
    dtype_id: str,
    matmul: str,
    hidden: np.ndarray,
    inter: np.ndarray,
    active: np.ndarray,
    pairs: np.ndarray,
    padded: Callable[[int], np.ndarray],
    t: np.ndarray,
    tiles: Iterable[int] = MOE_TILES,
) -> dict[str, Any] | None:
    """One grouped (MoE) GEMM class, gated (gate, up, down: 3 matrices of hidden x inter
    per expert, inter the GPU's share): the weights of the ``active`` experts plus
    activations of the ``pairs`` (token, expert) routed; FLOPs 2 x matrices x the rows
    ``padded`` gives at a tile (each expert's tokens rounded up to it), the tile the best
    of ``tiles``; t in seconds."""
    matrix = 3 * hidden * inter
    memory = (
        active * matrix * ctx.bits(dtype_id) / 8
        + pairs * (2 * hidden + 3 * inter) * ACTIVATION_BYTES
    )

    def flops(tile: int) -> np.ndarray:
        return 2 * padded(tile) * matrix

    fit = fit_roofline(memory, flops, tiles, t, ctx.bandwidth, ctx.peak(matmul))
    return entry(fit, matmul)


ATTN_KEYS = [
    "batch_size",
    "isl",
    "step",
    "num_heads",
    "num_key_value_heads",
    "head_dim",
    "kv_cache_dtype",
]


KV_DTYPES = {"bfloat16": "bf16", "fp8": "fp8"}  # table KV dtype -> decodecalc dtype preset


def per_kv_dtype(
    ctx: Context, cols: dict[str, np.ndarray], fit: Callable[[dict[str, np.ndarray], float], Fit]
) -> dict[str, dict[str, Any]]:
    """One fit per KV dtype: an FP8 cache runs other kernels (TensorRT-LLM's Blackwell MLA
    multiplies FP8 at more than the BF16 peak), and their FLOPs run at its matmul class."""
    out = {}
    for table_dtype, dtype_id in KV_DTYPES.items():
        rows = cols["kv_cache_dtype"] == table_dtype
        if rows.sum() < 20:
            continue
        matmul = ctx.catalog.dtype(dtype_id).matmul
        bytes_per_value = ctx.bits(dtype_id) / 8
        result = fit({k: v[rows] for k, v in cols.items()}, bytes_per_value)
        out[dtype_id] = entry(result, matmul)
    return out


def fit_attention(ctx: Context, path: Path) -> dict[str, dict[str, Any]]:
    cols = read(path, [*ATTN_KEYS, "window_size", "beam_width", "latency"])
    keep = (cols["window_size"] == 0) & (cols["beam_width"] == 1)
    cols = fastest({k: v[keep] for k, v in cols.items()}, ATTN_KEYS)

    def fit(rows: dict[str, np.ndarray], kv_bytes: float) -> Fit:
        b, heads, kv_heads, dim = (
            rows[c].astype(float)
            for c in ("batch_size", "num_heads", "num_key_value_heads", "head_dim")
        )
        context = (rows["isl"] + rows["step"]).astype(float)
        memory = (
            b * context * 2 * kv_heads * dim * kv_bytes + b * heads * dim * 2 * ACTIVATION_BYTES
        )
        groups = heads / kv_heads

        def flops(tile: int) -> np.ndarray:
            return 4 * b * kv_heads * np.ceil(groups / tile) * tile * context * dim

        peak = ctx.peak("fp8" if kv_bytes == 1 else "bf16")
        return fit_roofline(memory, flops, ATTN_TILES, rows["latency"] * 1e-3, ctx.bandwidth, peak)

    return per_kv_dtype(ctx, cols, fit)


MLA_KEYS = ["batch_size", "isl", "step", "num_heads", "kv_cache_dtype"]


def fit_mla(ctx: Context, path: Path) -> dict[str, dict[str, Any]]:
    cols = fastest(read(path, [*MLA_KEYS, "latency"]), MLA_KEYS)

    def fit(rows: dict[str, np.ndarray], kv_bytes: float) -> Fit:
        b, heads = rows["batch_size"].astype(float), rows["num_heads"].astype(float)
        context = (rows["isl"] + rows["step"]).astype(float)
        memory = b * context * MLA_LATENT * kv_bytes + b * heads * MLA_LATENT * 2 * ACTIVATION_BYTES

        def flops(tile: int) -> np.ndarray:
            return 2 * b * np.ceil(heads / tile) * tile * context * (MLA_LATENT + MLA_VALUE)

        peak = ctx.peak("fp8" if kv_bytes == 1 else "bf16")
        return fit_roofline(memory, flops, MLA_TILES, rows["latency"] * 1e-3, ctx.bandwidth, peak)

    return per_kv_dtype(ctx, cols, fit)


def fit_allreduce(path: Path) -> dict[str, dict[str, Any]]:
    cols = read(path, ["allreduce_dtype", "num_gpus", "message_size", "latency"])
    low, high = ALLREDUCE_SIZES
    keep = (
        (cols["allreduce_dtype"] == "bfloat16")
        & (cols["message_size"] >= low)
        & (cols["message_size"] <= high)
    )
    cols = fastest({k: v[keep] for k, v in cols.items()}, ["num_gpus", "message_size"])
    out = {}
    for n in sorted(set(cols["num_gpus"].tolist())):
        rows = cols["num_gpus"] == n
        t = cols["latency"][rows] * 1e-3
        ring = 2 * (n - 1) / n * cols["message_size"][rows] * ACTIVATION_BYTES
        # least squares on the relative error: (latency + ring x s) / t = 1, s = 1 / bus bw
        a = np.stack([1 / t, ring / t], axis=1)
        latency, per_byte = np.linalg.lstsq(a, np.ones_like(t), rcond=None)[0]
        latency = max(float(latency), 0.0)
        errors = np.abs((latency + ring * per_byte) / t - 1)
        out[str(n)] = {
            "latency": duration(latency),
            "bus_bandwidth": f"{1 / per_byte / 1e9:.0f}GB/s",
            "error": Fit(1.0, None, None, 0.0, errors).error(),
        }
    return out


# ---------------------------------------------------------------- output


def duration(seconds: float) -> str:
    return f"{seconds * 1e6:.2f}us"


def entry(fit: Fit, matmul: str | None) -> dict[str, Any] | None:
    """The fit as written, or None where it is left out: an efficiency on the grid's edge
    means the table's times do not follow this form (vLLM's FP8 block GEMMs on Blackwell
    take 150-370 us at any shape), and the figures would be the edge's, not the kernel's."""
    edge = COARSE[-1]
    if fit.memory_efficiency >= edge or (fit.mma_efficiency or 0) >= edge:
        return None
    out: dict[str, Any] = {}
    if matmul is not None:
        out["matmul"] = matmul
    out["memory_efficiency"] = round(fit.memory_efficiency, 3)
    if fit.mma_efficiency is not None:
        out["mma_efficiency"] = round(fit.mma_efficiency, 3)
        out["tile_rows"] = fit.tile_rows
    out["fixed"] = duration(fit.fixed_s)
    out["error"] = fit.error()
    return out


def fit_engine(tables: Tables, ctx: Context, system: str, engine: str) -> dict[str, Any] | None:
    """Every class one engine's tables cover on one system."""
    gemm_path = tables.path(system, "gemm", engine, "gemm_perf.parquet")
    if gemm_path is None:
        return None
    block: dict[str, Any] = {"version": tables.current(system, engine)}
    block["launch"] = duration(fit_launch(gemm_path))
    block["launch_table"] = tables.cite(gemm_path)
    left_out: list[str] = []
    classes: list[tuple[str, str, str, Callable[[Path], Any]]] = [
        ("gemm", "gemm", "gemm_perf.parquet", lambda p: fit_gemm(ctx, p)),
        (
            "moe",
            "moe",
            "moe_perf.parquet",
            lambda p: fit_moe(ctx, p, non_gated_shapes(tables, system)),
        ),
        (
            "attention",
            "attention",
            "generation_attention_perf.parquet",
            lambda p: fit_attention(ctx, p),
        ),
        ("mla", "mla", "generation_mla_perf.parquet", lambda p: fit_mla(ctx, p)),
        ("allreduce", "comm", "custom_allreduce_perf.parquet", fit_allreduce),
    ]
    for name, op, filename, fit in classes:
        path = tables.path(system, op, engine, filename)
        result = None if path is None else fit(path)
        if not result:
            continue
        kept = {key: fit for key, fit in result.items() if fit is not None}
        left_out.extend(f"{name} {key}" for key, fit in result.items() if fit is None)
        if kept:
            block[name] = {"table": tables.cite(path)} | kept
    if left_out:
        block["left_out"] = [f"{item}: {LEFT_OUT}" for item in left_out]
    return block


LEFT_OUT = "an efficiency on the fit grid's edge (1.2): the table does not follow this form"
HEADER = (
    "# Written by validation/{script} from {package}'s measured kernel tables: re-run\n"
    "# the script instead of editing (its docstring states the fitting rules).\n"
)


def write_gpu(
    out_dir: Path, tables: Tables, catalog: Catalog, system: str, gpu_id: str
) -> dict[str, Any]:
    ctx = Context(catalog.gpu(gpu_id), catalog)
    engines = {}
    for engine, engine_id in ENGINES.items():
        block = fit_engine(tables, ctx, system, engine)
        if block is not None:
            engines[engine_id] = block
    preset = {
        "name": f"{ctx.gpu.name}: kernel rates",
        "gpu": gpu_id,
        "source": (
            f"{PACKAGE} (Apache-2.0, {PACKAGE_URL}): kernel latencies measured on {system} "
            f"(aiconfigurator_core/systems/data/{system}/; each class names its table), fitted by "
            f"validation/fit_kernels.py against decodecalc's {gpu_id} preset "
            f"({ctx.gpu.bandwidth_bytes_per_s / 1e12:g} TB/s and its peak FLOP/s per dtype)"
        ),
        "default_engine": max(engines, key=lambda e: (len(engines[e]), e == "tensorrt-llm")),
        "engines": engines,
    }
    text = HEADER.format(script="fit_kernels.py", package=PACKAGE)
    text += yaml.safe_dump(preset, sort_keys=False, width=100)
    (out_dir / f"{gpu_id}.yaml").write_text(text)
    return preset


def report(gpu_id: str, preset: dict[str, Any]) -> Iterable[str]:
    for engine, block in preset["engines"].items():
        head = f"{gpu_id:13} {engine:13} {block['version']:10}"
        yield f"{head} launch {block['launch']}"
        for name in ("gemm", "moe", "attention", "mla", "allreduce"):
            if name not in block:
                continue
            fits = {k: v for k, v in block[name].items() if k != "table"}
            for key, fit in fits.items():
                params = " ".join(
                    f"{k}={v}"
                    for k, v in fit.items()
                    if k not in ("error", "decode_error", "matmul", "tables")
                )
                err = fit["error"]
                line = (
                    f"{head} {name:9} {key!s:12} {params}  |fit/table-1| median "
                    f"{err['median']:.3f} p90 {err['p90']:.3f} ({err['rows']} rows)"
                )
                if "decode_error" in fit:
                    d = fit["decode_error"]
                    line += f"; M<=256: {d['median']:.3f} / {d['p90']:.3f}"
                yield line
        for item in block.get("left_out", []):
            yield f"{head} left out: {item}"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("unzipped", type=Path, help="the aiconfigurator-core wheel, unzipped")
    parser.add_argument(
        "--out", type=Path, default=Path(__file__).parent.parent / "presets" / "kernels"
    )
    parser.add_argument("--gpu", action="append", help="only these decodecalc GPU ids")
    args = parser.parse_args(argv)
    tables = Tables(args.unzipped)
    catalog = Catalog()
    args.out.mkdir(parents=True, exist_ok=True)
    for system, gpu_id in SYSTEMS.items():
        if args.gpu and gpu_id not in args.gpu:
            continue
        if not (tables.systems / "data" / system).is_dir():
            continue
        preset = write_gpu(args.out, tables, catalog, system, gpu_id)
        for line in report(gpu_id, preset):
            print(line, flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
