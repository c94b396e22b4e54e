"""Fit per-operation kernel efficiencies per AMD Instinct GPU from ROCm/aiter's tuned configs.

    .venv/bin/pip install numpy              # this script's own need; decodecalc has none
    git clone https://github.com/ROCm/aiter /tmp/aiter
    .venv/bin/python validation/fit_kernels_aiter.py /tmp/aiter --commit e4048607a535

aiter (MIT, https://github.com/ROCm/aiter) is the kernel library SGLang and vLLM call on
ROCm for their GEMMs and fused MoE. Its tuners time every candidate kernel per shape and
keep the fastest in aiter/configs/**/*tuned*.csv, a row per shape with its microseconds
(`us`) and the GPU it ran on as `gfx` (the architecture) and `cu_num` (compute units). This
script reads those CSVs at one commit (through git, so the commit is the one cited) and fits
the same form as validation/fit_kernels.py, with its fitting core:

    t_op = max(bytes / (bandwidth x e_mem), FLOPs(M rounded up to tile_rows) / (peak x e_mma))
           + fixed

against decodecalc's own GPU presets' bandwidth and peak FLOP/s, writing
presets/kernels/<gpu>.yaml. decodecalc never reads the CSVs.

The rules:
- GPUs: gfx942 with 304 CUs (MI300X and MI325X share the chip) and gfx950 with 256 CUs
  (MI355X and MI350X, the air-cooled part at lower clocks). The CSVs do not say which
  board ran them: the boards of one chip are fitted on the same rows, each against its own
  preset's bandwidth and peaks. Rows naming another gfx (gfx1250 also has 256 CUs) are
  left out; fused MoE files older than the `gfx` column are all gfx950 at 256 CUs
  (gfx1250's are newer). 80 CUs (MI308X) has no decodecalc preset.
- Untuned and batched GEMM files are left out, and so is a row whose time equals, to the
  last digit, that of the same shape at another M in the same file (66 fused MoE and 42
  GEMM rows: copied, not timed; DeepSeek's fused MoE on gfx950 takes 77.4907 us at 1 to 8
  tokens). Where several files (the general table and
  the per-model ones under model_configs/) time one shape of one class, the fastest counts:
  the kernel a tuned engine picks.
- gemm: dense weight GEMMs (Y = X W^T, W of N x K), N and K of 1,024 or more and M of 1 to
  1,024, as validation/fit_kernels.py; the classes by file: bf16 (`bf16` GEMMs), fp8
  (`a8w8` and `a8w8_bpreshuffle` with FP8 weights: per-token activation and per-channel
  weight scales), fp8-128x128 (`a8w8_blockscale`, plain and pre-shuffled) and mxfp4
  (`a4w4_blockscale`: FP4 weights and activations with one scale per 32, so its FLOPs run
  at the FP4 peak). INT8 `a8w8` rows have no decodecalc class and are left out.
- moe: aiter's fused MoE (`*fmoe*.csv`), gated (use_g1u1 1) rows of up to 1,024 tokens; the
  classes by quantisation: bf16 (QuantType.No), fp8 (per_Token, per_Tensor), fp8-128x128
  (per_1x128) and mxfp4 (per_1x32 with FP4 weights and activations). W4A16, W8A4, MXFP8 and
  INT4 rows are left out (no class of decodecalc's maps to them one to one). `inter_dim` and
  `expert` are one GPU's (a shard under TP, the local experts and any fused shared expert
  under EP). The tuner routes tokens by random scores (gemm_moe_tune.py generate_data:
  torch.randn, then top-k), so each expert receives Binomial(tokens, topk / experts) rows:
  bytes are the expected touched experts' weights (3 matrices of model_dim x inter_dim)
  plus activations; FLOPs each expert's expected rows rounded up to the row's own kernel
  tile (block_m, a column of the CSV: a fact, not fitted). tile_rows is the median block_m
  where an expert gets under 16 tokens (decode's range; 16 to 32 rows).
- launch: the median time of the dense GEMMs at M <= 16 whose weights stream in under a
  microsecond at the preset's bandwidth: one kernel's fixed cost.
- No attention, MLA or all-reduce: aiter's tuned configs do not time them.
"""

from __future__ import annotations

import argparse
import csv
import io
import math
import subprocess
import sys
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import yaml

from decodecalc.loading.catalog import Catalog

sys.path.insert(0, str(Path(__file__).parent))  # the sibling script's fitting core
from fit_kernels import (
    GEMM_MAX_M,
    HEADER,
    LEFT_OUT,
    MOE_MAX_TOKENS,
    Context,
    duration,
    fit_dense,
    fit_grouped,
    report,
)

LIBRARY = "ROCm/aiter"
LIBRARY_URL = "https://github.com/ROCm/aiter"
CONFIGS = "aiter/configs"
CHIPS = {  # decodecalc GPU preset -> (gfx, cu_num) its tables were tuned on
    "mi300x": ("gfx942", 304),
    "mi325x": ("gfx942", 304),
    "mi355x": ("gfx950", 256),
    "mi350x": ("gfx950", 256),
}
ENGINES = ("sglang", "vllm")
"""The decodecalc engines whose ROCm builds call aiter's GEMMs and fused MoE; no other
engine takes these rates (an engine without a block of its own gets none)."""
MIN_ROWS = 20
DECODE_ROWS = 16
"""Tokens per expert below which a fused MoE row is decode's (tile_rows is the median
block_m the tuner chose there)."""
LAUNCH_MAX_M = 16
LAUNCH_WEIGHTS_S = 1e-6


@dataclass
class Rows:
    """Timed shapes of one class on one chip: the fastest per shape over every file."""

    best: dict[tuple[int, ...], tuple[float, int]] = field(default_factory=dict)
    """Shape -> (microseconds, the tile rows of the kernel that took them; 0: not said)."""
    files: set[str] = field(default_factory=set)

    def add(self, shape: tuple[int, ...], us: float, path: str, tile: int = 0) -> None:
        if us < self.best.get(shape, (math.inf, 0))[0]:
            self.best[shape] = (us, tile)
        self.files.add(path)

    def arrays(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Shapes, seconds and tiles, a row each."""
        shapes = sorted(self.best)
        us, tiles = zip(*(self.best[s] for s in shapes), strict=True)
        return np.array(shapes, dtype=float), np.array(us) * 1e-6, np.array(tiles)


class Repo:
    """The aiter repository at one commit, read through git (a bare mirror will do)."""

    def __init__(self, path: Path, commit: str) -> None:
        self.path = path
        self.commit = self._git("rev-parse", f"{commit}^{{commit}}").strip()

    def _git(self, *args: str) -> str:
        run = subprocess.run(
            ["git", "-C", str(self.path), *args], capture_output=True, text=True, check=False
        )
        if run.returncode != 0:
            raise SystemExit(f"{self.path}: git {' '.join(args)}: {run.stderr.strip()}")
        return run.stdout

    def tuned_csvs(self) -> Iterator[tuple[str, list[dict[str, str]]]]:
        names = self._git("ls-tree", "-r", "--name-only", self.commit, CONFIGS).split()
        for name in sorted(names):
            base = name.rsplit("/", 1)[-1]
            if base.endswith(".csv") and "tuned" in base and "untuned" not in base:
                text = self._git("show", f"{self.commit}:{name}")
                yield name, list(csv.DictReader(io.StringIO(text)))


GEMM_CLASSES = (  # file-name mark -> (decodecalc dtype preset, matmul class); first match
    ("a4w4_blockscale", ("mxfp4", "fp4")),
    ("a8w8_blockscale", ("fp8-128x128", "fp8")),
    ("a8w8", ("fp8", "fp8")),
    ("bf16", ("bf16", "bf16")),
)
MOE_CLASSES = {  # (q_type, activations, weights) -> (decodecalc dtype preset, matmul class)
    ("QuantType.No", "bf16", "bf16"): ("bf16", "bf16"),
    ("QuantType.per_Token", "fp8", "fp8"): ("fp8", "fp8"),
    ("QuantType.per_Tensor", "fp8", "fp8"): ("fp8", "fp8"),
    ("QuantType.per_1x128", "fp8", "fp8"): ("fp8-128x128", "fp8"),
    ("QuantType.per_1x32", "fp4", "fp4"): ("mxfp4", "fp4"),
}


def _torch_kind(dtype: str) -> str:
    """torch.float8_e4m3fnuz -> fp8, torch.float4_e2m1fn_x2 -> fp4, torch.bfloat16 -> bf16."""
    for mark, kind in (("float8", "fp8"), ("float4", "fp4"), ("bfloat16", "bf16")):
        if mark in dtype:
            return kind
    return dtype


def _number(text: str | None) -> float | None:
    try:
        value = float(text or "")
    except ValueError:
        return None
    return value if 0 < value < math.inf else None


def gemm_class(name: str, row: dict[str, str]) -> tuple[str, str] | None:
    base = name.rsplit("/", 1)[-1]
    if "batched" in base or "fmoe" in base or "gemm" not in base:
        return None
    for mark, found in GEMM_CLASSES:
        if mark in base:
            weights = row.get("q_dtype_w") or row.get("dtype") or ""
            if mark == "a8w8" and "float8" not in weights:
                return None  # INT8 a8w8: no decodecalc class
            return found
    return None


def moe_class(name: str, row: dict[str, str]) -> tuple[str, str] | None:
    if "fmoe" not in name.rsplit("/", 1)[-1] or row.get("use_g1u1") != "1":
        return None
    key = (row.get("q_type", ""), _torch_kind(row.get("q_dtype_a", "")))
    return MOE_CLASSES.get((*key, _torch_kind(row.get("q_dtype_w", ""))))


def on_chip(row: dict[str, str], gfx: str, cus: int) -> bool:
    return row.get("cu_num") == str(cus) and row.get("gfx") in (None, "", gfx)


@dataclass
class Timed:
    """Every class's rows on one chip."""

    gemm: dict[tuple[str, str], Rows] = field(default_factory=dict)
    moe: dict[tuple[str, str], Rows] = field(default_factory=dict)


def collect(csvs: Iterable[tuple[str, list[dict[str, str]]]], gfx: str, cus: int) -> Timed:
    timed = Timed()
    for name, rows in csvs:
        copies: set[tuple[object, ...]] = set()
        for row in rows:
            us = _number(row.get("us"))
            if us is None or not on_chip(row, gfx, cus):
                continue
            columns: tuple[str, ...]
            if (cls := gemm_class(name, row)) is not None:
                group, columns = timed.gemm, ("M", "N", "K")
            elif (cls := moe_class(name, row)) is not None:
                group, columns = timed.moe, MOE_COLUMNS
            else:
                continue
            shape = tuple(int(row[c]) for c in columns)
            copy = (cls, shape[1:], row.get("q_dtype_a"), row.get("us"))
            if copy in copies:
                continue  # the time of the same shape at another M, to the digit: copied
            copies.add(copy)
            group.setdefault(cls, Rows()).add(shape, us, name, int(row.get("block_m") or 0))
    return timed


MOE_COLUMNS = ("token", "model_dim", "inter_dim", "expert", "topk")


def binomial(n: int, p: float) -> np.ndarray:
    """P(X = x) for x = 0..n, X ~ Binomial(n, p), through log-gamma (n up to thousands)."""
    x = np.arange(n + 1)
    if p >= 1:
        return np.asarray(x == n, dtype=float)
    choose = math.lgamma(n + 1) - np.array([math.lgamma(i + 1) + math.lgamma(n - i + 1) for i in x])
    return np.asarray(np.exp(choose + x * math.log(p) + (n - x) * math.log1p(-p)))


def random_routing(tokens: int, experts: int, topk: int, tile: int) -> tuple[float, float]:
    """Expected experts touched and rows they compute, each expert's rows rounded up to
    ``tile``, when every token picks ``topk`` distinct experts at random (each expert gets
    Binomial(tokens, topk / experts) of them)."""
    pmf = binomial(tokens, min(topk / experts, 1.0))
    x = np.arange(tokens + 1)
    active = experts * (1 - pmf[0])
    rows = experts * float((pmf * np.ceil(x / tile) * tile).sum())
    return float(active), rows


def fit_gemms(ctx: Context, timed: Timed) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for (dtype_id, matmul), rows in sorted(timed.gemm.items()):
        shapes, t, _ = rows.arrays()
        m, n, k = shapes.T
        keep = (m <= GEMM_MAX_M) & (n >= 1024) & (k >= 1024)
        if keep.sum() < MIN_ROWS:
            continue
        fitted = fit_dense(ctx, dtype_id, matmul, m[keep], n[keep], k[keep], t[keep])
        out[dtype_id] = fitted and {"tables": sorted(rows.files)} | fitted
    return out


def fit_moes(ctx: Context, timed: Timed) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for (dtype_id, matmul), rows in sorted(timed.moe.items()):
        shapes, t, tiles = rows.arrays()
        keep = shapes[:, 0] <= MOE_MAX_TOKENS
        if keep.sum() < MIN_ROWS:
            continue
        shapes, t, tiles = shapes[keep], t[keep], np.maximum(tiles[keep], 1)
        tokens, hidden, inter, experts, topk = (shapes[:, i] for i in range(5))
        routed = [(int(a), int(b), int(c)) for a, b, c in zip(tokens, experts, topk, strict=True)]
        active = np.array([random_routing(*r, 1)[0] for r in routed])
        # each row's FLOPs at the tile its own kernel ran (block_m), whatever tile is asked
        own = np.array([random_routing(*r, int(m))[1] for r, m in zip(routed, tiles, strict=True)])
        decode = tokens * topk / experts < DECODE_ROWS
        tile = int(np.median(tiles[decode] if decode.any() else tiles))

        def padded(_: int, own: np.ndarray = own) -> np.ndarray:
            return own

        pairs = tokens * topk
        fitted = fit_grouped(ctx, dtype_id, matmul, hidden, inter, active, pairs, padded, t, [tile])
        out[dtype_id] = fitted and {"tables": sorted(rows.files)} | fitted
    return out


def fit_launch(ctx: Context, timed: Timed) -> float:
    times = []
    for (dtype_id, _), rows in timed.gemm.items():
        shapes, t, _ = rows.arrays()
        m, n, k = shapes.T
        weights_s = n * k * ctx.bits(dtype_id) / 8 / ctx.bandwidth
        times.extend(t[(m <= LAUNCH_MAX_M) & (weights_s < LAUNCH_WEIGHTS_S)].tolist())
    if len(times) < 5:
        raise SystemExit(f"{ctx.gpu.id}: fewer than 5 small GEMMs to take the launch time from")
    return float(np.median(times))


def block(repo: Repo, ctx: Context, timed: Timed) -> dict[str, Any]:
    """The rates every aiter-calling engine's block holds (the same kernels for each)."""
    out: dict[str, Any] = {
        "version": f"aiter {repo.commit[:12]}",
        "launch": duration(fit_launch(ctx, timed)),
        "launch_table": f"{CONFIGS}/**/*tuned*gemm*.csv at {repo.commit[:12]}",
    }
    left_out: list[str] = []
    for name, fitted in (("gemm", fit_gemms(ctx, timed)), ("moe", fit_moes(ctx, timed))):
        kept = {key: value for key, value in fitted.items() if value is not None}
        left_out.extend(f"{name} {key}: {LEFT_OUT}" for key, v in fitted.items() if v is None)
        if kept:
            out[name] = {"table": f"{LIBRARY_URL}/tree/{repo.commit}/{CONFIGS}"} | kept
    if left_out:
        out["left_out"] = left_out
    return out


def write_gpu(out_dir: Path, repo: Repo, catalog: Catalog, gpu_id: str) -> dict[str, Any]:
    gfx, cus = CHIPS[gpu_id]
    ctx = Context(catalog.gpu(gpu_id), catalog)
    timed = collect(repo.tuned_csvs(), gfx, cus)
    rates = block(repo, ctx, timed)
    shared = [other for other, chip in CHIPS.items() if chip == (gfx, cus) and other != gpu_id]
    board = (
        f"; the rows do not name the board ({', '.join(shared)} has the same {cus} CUs): "
        f"these are fitted against {gpu_id}'s own figures"
        if shared
        else ""
    )
    preset = {
        "name": f"{ctx.gpu.name}: kernel rates",
        "gpu": gpu_id,
        "source": (
            f"{LIBRARY} (MIT, {LIBRARY_URL}) at commit {repo.commit}: the tuned configs' "
            f"microseconds per shape under {CONFIGS}/ (each class lists its files), rows of "
            f"{gfx} with {cus} CUs{board}; fitted by validation/fit_kernels_aiter.py against "
            f"decodecalc's {gpu_id} preset ({ctx.gpu.bandwidth_bytes_per_s / 1e12:g} TB/s "
            "and its peak FLOP/s per dtype)"
        ),
        "measured_by": f"{LIBRARY} tuned configs",
        "other_engines": False,
        "default_engine": ENGINES[0],
        "engines": dict.fromkeys(ENGINES, rates),
    }
    text = HEADER.format(script="fit_kernels_aiter.py", package=f"{LIBRARY} {repo.commit[:12]}")
    (out_dir / f"{gpu_id}.yaml").write_text(
        text + yaml.safe_dump(preset, sort_keys=False, width=100)
    )
    return preset


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("repo", type=Path, help="a clone of ROCm/aiter (bare will do)")
    parser.add_argument("--commit", default="HEAD", help="the commit to read (default HEAD)")
    parser.add_argument(
        "--out", type=Path, default=Path(__file__).parent.parent / "presets" / "kernels"
    )
    parser.add_argument("--gpu", action="append", help="only these decodecalc GPU ids")
    args = parser.parse_args(argv)
    repo = Repo(args.repo, args.commit)
    catalog = Catalog()
    args.out.mkdir(parents=True, exist_ok=True)
    for gpu_id in CHIPS:
        if args.gpu and gpu_id not in args.gpu:
            continue
        preset = write_gpu(args.out, repo, catalog, gpu_id)
        for line in report(gpu_id, preset):
            print(line, flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
