"""Kernel rates: how close one engine's kernels on one GPU come to the GPU's peaks, per
operation class, fitted offline to measured kernel tables (presets/kernels/, written by
validation/fit_kernels.py from aiconfigurator-core's tables for NVIDIA GPUs and by
validation/fit_kernels_aiter.py from ROCm/aiter's tuned configs for AMD Instinct GPUs).

Every class has the form the per-operation step model prices an operation by:

    t = max(bytes / (bandwidth x memory_efficiency),
            FLOPs(rows rounded up to tile_rows) / (peak[matmul] x mma_efficiency)) + fixed

with bandwidth and peak from decodecalc's own GPU preset, so the efficiencies are relative
to the figures decodecalc uses (not to what the kernel's vendor quotes)."""

from __future__ import annotations

from decodecalc.model.hardware import FALLBACK
from decodecalc.record import record


@record
class FitError:
    """How far the fitted form lies from the measured table: |fit / table - 1| over the
    table rows fitted on."""

    median: float
    p90: float
    rows: int


@record
class OpRates:
    """One operation class (a dense GEMM of one weight dtype, a grouped MoE GEMM, decode
    attention or MLA decode of one KV dtype) on one GPU under one engine."""

    key: str
    """The dtype preset id it was measured with: the weights' (bf16, fp8, fp8-128x128,
    nvfp4, mxfp4) for GEMMs, the KV cache's (bf16, fp8) for attention and MLA."""
    memory_efficiency: float
    """Share of the preset's bandwidth the kernel streams its bytes at, where memory binds."""
    mma_efficiency: float | None
    """Share of the preset's peak FLOP/s for ``matmul`` it reaches where compute binds
    (None: the class was fitted as memory-bound alone)."""
    tile_rows: int | None
    """Rows the kernel multiplies in one tile: M (a GEMM's batch, an expert's tokens,
    attention's query heads per KV head) is rounded up to it for compute, so a few rows
    pay for a whole tile."""
    fixed_s: float
    """Seconds the operation takes on top of its roofline (launches, quantising the
    activations, routing), fitted with the efficiencies."""
    matmul: str = "bf16"
    """The peak FLOP/s class ``mma_efficiency`` is relative to (a W4A16 MXFP4 MoE
    multiplies at bf16, whatever its weights' class)."""
    table: str = ""
    """The measured table it was fitted on: a path inside aiconfigurator-core's wheel, or
    aiter's configs folder at a commit and the CSV files under it."""
    error: FitError | None = None
    decode_error: FitError | None = None
    """For GEMMs, the error over the decode rows alone (M up to 256)."""


@record
class AllReduceRates:
    """The engine's own all-reduce at one tensor-parallel size, as decodecalc's ring form:
    latency + 2 (N-1)/N x bytes / bus bandwidth."""

    gpus: int
    latency_s: float
    """Seconds per call at small messages: what a decode step's all-reduces pay."""
    bus_bandwidth_bytes_per_s: int
    """Bytes per second the ring streams per GPU at large messages."""
    error: FitError | None = None


@record
class KernelRates:
    """One engine's kernels on one GPU, as measured at one engine version."""

    gpu: str
    engine: str
    """The decodecalc engine id (tensorrt-llm, vllm, sglang)."""
    version: str
    """The engine version the tables were measured with."""
    source: str
    launch_s: float
    """One kernel's fixed time: the engine's bf16 GEMM at the smallest shapes, where the
    bytes and FLOPs take nanoseconds."""
    gemm: tuple[OpRates, ...] = ()
    """Dense weight GEMMs, one per weight dtype measured."""
    moe: tuple[OpRates, ...] = ()
    """Grouped expert GEMMs (gate, up and down of every expert a token reaches), per
    weight dtype."""
    attention: tuple[OpRates, ...] = ()
    """Decode attention reading a GQA KV cache, per KV dtype (bf16, fp8): an FP8 cache runs
    other kernels."""
    mla: tuple[OpRates, ...] = ()
    """DeepSeek MLA decode in the absorbed form (latent read once for all heads), per KV
    dtype."""
    allreduce: tuple[AllReduceRates, ...] = ()
    left_out: tuple[str, ...] = ()
    """Fits left out of the file, each with why (an efficiency on the fit grid's edge: the
    table's times do not follow the form)."""
    measured_by: str = "aiconfigurator-core"
    """Whose tables these are (aiconfigurator-core; ROCm/aiter tuned configs), as notes
    name them."""
    other_engines: bool = True
    """Whether the file's default engine stands in for an engine without a block of its
    own: yes for aiconfigurator's tables (a tuned engine's kernels), no for aiter's (only
    SGLang and vLLM on ROCm call them; llama.cpp's HIP kernels are its own)."""

    def gemm_rates(self, dtype: str, matmul: str) -> OpRates | None:
        """The dense GEMM rates for a weight dtype: its own, else those of a dtype of the
        same or the next wider matmul class (FP4 falls back to FP8, then BF16)."""
        return _pick(self.gemm, dtype, matmul)

    def moe_rates(self, dtype: str, matmul: str) -> OpRates | None:
        """The grouped expert GEMM rates for a weight dtype, with the same fallback."""
        return _pick(self.moe, dtype, matmul)

    def attention_rates(self, kv_dtype: str, matmul: str) -> OpRates | None:
        """Decode attention for a KV dtype, with the same fallback."""
        return _pick(self.attention, kv_dtype, matmul)

    def mla_rates(self, kv_dtype: str, matmul: str) -> OpRates | None:
        """MLA decode for a KV dtype, with the same fallback."""
        return _pick(self.mla, kv_dtype, matmul)

    def allreduce_rates(self, gpus: int) -> AllReduceRates | None:
        """The all-reduce at ``gpus``, else at the nearest size measured above it (more
        GPUs: a slower ring), else the largest measured; None when none was."""
        return allreduce_at(self.allreduce, gpus)


def allreduce_at(rates: tuple[AllReduceRates, ...], gpus: int) -> AllReduceRates | None:
    """The all-reduce measured at ``gpus``, else at the nearest size measured above it
    (more GPUs: a slower ring), else the largest measured; None when none was."""
    if not rates:
        return None
    above = [a for a in rates if a.gpus >= gpus]
    if above:
        return min(above, key=lambda a: a.gpus)
    return max(rates, key=lambda a: a.gpus)


def _pick(rates: tuple[OpRates, ...], dtype: str, matmul: str) -> OpRates | None:
    """The dtype's own rates, else, class by class down the fallback chain, those of the
    class's plain dtype (fp8, bf16), else of any dtype multiplying at that class."""
    by_key = {rate.key: rate for rate in rates}
    if dtype in by_key:
        return by_key[dtype]
    for cls in FALLBACK.get(matmul, (matmul,)):
        same = by_key.get(cls) or next((r for r in rates if r.matmul == cls), None)
        if same is not None:
            return same
    return None
