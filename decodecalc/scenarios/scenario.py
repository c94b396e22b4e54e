"""One deployment to estimate: a model on a GPU in given formats, with its batch, its
parallel split, efficiency, links, engine and rates, each checked when it is built."""

from __future__ import annotations

import math

from decodecalc.engine.profile import ROOFLINE, Engine
from decodecalc.errors import Conflict, InputError
from decodecalc.model.dtypes import DType
from decodecalc.model.hardware import GpuSpec, Link
from decodecalc.model.model import Model
from decodecalc.notes import Note
from decodecalc.record import record
from decodecalc.scenarios.fields import MAX_BATCH, MAX_PP, MAX_TP, MIN_FRACTION
from decodecalc.scenarios.rates import Rates


def check_count(name: str, value: int, most: int, least: int = 1) -> None:
    """A whole number from ``least`` to ``most``, checked before anything divides by it (a
    TP of 400 digits overflows a float) and before it meets a model (a bad value is no
    Conflict)."""
    if not least <= value <= most:
        raise InputError(f"{name} {value} must be a whole number from {least} to {most:,}")


def check_efficiency(value: float) -> None:
    check_fraction("efficiency", value, " (1 is the roofline)")


def check_fraction(name: str, value: float, meaning: str = "") -> None:
    """A share from MIN_FRACTION to 1 (efficiency, memory utilization); NaN is none."""
    if not (MIN_FRACTION <= value <= 1) or math.isnan(value):
        raise InputError(f"{name} {value} must be from {MIN_FRACTION} to 1{meaning}")


@record
class Scenario:
    """One deployment to estimate: a model on a GPU with formats, batch and TP."""

    model: Model
    weights: DType
    """The default weight format: every tensor group that weight_overrides does not name."""
    kv_dtype: DType
    bandwidth_bytes_per_s: int
    efficiency: float = 1.0
    batch: int = 1
    tp: int = 1
    gpu: GpuSpec | None = None
    memory_utilization: float = 0.9
    """Share of GPU memory the runtime gives weights and cache (vLLM's default 0.9)."""
    link: Link | None = None
    """The interconnect TP all-reduces cross (None: communication not counted)."""
    own_link: bool = True
    """Whether ``link`` is the GPU's own as its preset names it (no link or link bandwidth
    given): the one its kernel tables timed the engines' all-reduces on, which price them
    only then (resolving/resolve.py kernel_rated)."""
    overhead_s: float = 0.0
    """A fixed time per step: kernel launches, scheduling, sampling."""
    notes: tuple[Note, ...] = ()
    """What resolving the inputs found a reader must know (a calibration from another GPU)."""
    weight_overrides: tuple[tuple[str, DType], ...] = ()
    """Tensor groups (by name) stored in another format than ``weights``: a mixed-precision
    checkpoint (physics/precision.py). Compute keeps the default format's matmul class."""
    weights_recipe: str | None = None
    """The recipe the formats came from (None: one format everywhere), for reports."""
    engine: Engine = ROOFLINE
    """Whose measured step the expected figures predict (the roofline's kind: physics
    alone)."""
    v_dtype: DType | None = None
    """The V cache's format when it differs from K's (None: kv_dtype). Attention layers
    cache K and V, half their elements each; MLA's latent is one tensor with no separate
    V, so kv_dtype covers all of it, as it does linear attention's state."""
    rates: Rates = Rates()
    """Price per GPU-hour and board power, for cost and energy per token (physics/cost.py)."""
    pp: int = 1
    """Pipeline stages, each of ``tp`` GPUs (physics/parallelism.py)."""
    ep: bool = False
    eplb_redundant: int = 0
    """Redundant expert replicas over the --ep GPUs (step/expert_balance.py)."""
    """Routed experts placed whole on the group's GPUs instead of each split over them."""
    dp_attention: bool = False
    """Attention data-parallel over the group's ``tp`` GPUs: each rank holds its own
    sequences and a whole copy of everything outside the routed experts."""
    gpus_per_node: int | None = None
    """GPUs one node (one domain of ``link``) joins; None: every GPU is in one node."""
    node_link: Link | None = None
    """The network between nodes, for groups and hand-offs that leave a node."""

    def __post_init__(self) -> None:
        check_count("batch", self.batch, MAX_BATCH)
        check_count("tp", self.tp, MAX_TP)
        check_count("pp", self.pp, MAX_PP)
        # Data-parallel attention splits no heads: each rank holds whole attention.
        if not self.dp_attention and not self.model.supports_tp(self.tp):
            valid = ", ".join(str(n) for n in self.model.valid_tp())
            raise Conflict(
                f"tp {self.tp} does not split {self.model.id}'s attention heads evenly; "
                f"valid: {valid}"
            )
        check_efficiency(self.efficiency)
        check_fraction("memory utilization", self.memory_utilization)
        if not (0 <= self.overhead_s < 3600) or math.isnan(self.overhead_s):
            raise InputError(f"overhead {self.overhead_s} s must be zero or more, under an hour")
        if self.bandwidth_bytes_per_s <= 0:
            raise InputError("bandwidth must be greater than zero")
        self._check_formats()
        self._check_parallelism()

    def _check_formats(self) -> None:
        """Weights in a format checkpoints store weights in, caches in a KV-cache format."""
        if not self.weights.weights:
            w = self.weights.id
            what, hint = (
                ("a KV-cache", f"try --kv-dtype {w}; ")
                if self.weights.kv_cache
                else ("not a weight", "")
            )
            raise InputError(
                f"{w} is {what} format: no checkpoint stores weights in it ({hint}"
                "'decodecalc dtypes' shows which formats hold weights)"
            )
        for cache in (self.kv_dtype, self.v_dtype):
            if cache is not None and not cache.kv_cache:
                what = "a weight-only format, not" if cache.weights else "not"
                raise InputError(
                    f"{cache.id} is {what} a KV-cache dtype "
                    "('decodecalc dtypes' shows which formats hold a KV cache)"
                )

    def _check_parallelism(self) -> None:
        layers, moe = len(self.model.layers), self.model.moe()
        if not 1 <= self.pp <= layers:
            raise Conflict(
                f"pp {self.pp} must be a whole number from 1 to {layers}: each pipeline stage "
                f"needs at least one of {self.model.id}'s {layers} layers"
            )
        if (self.ep or self.dp_attention) and moe is None:
            what = "--ep spreads experts" if self.ep else "--dp-attention serves experts"
            raise Conflict(
                f"{what} over GPUs, and {self.model.id} has no experts (a dense model's data "
                "parallelism is independent replicas: estimate one)"
            )
        if self.eplb_redundant and not self.ep:
            raise Conflict("--eplb-redundant adds expert replicas under --ep: give --ep too")
        if self.ep and moe is not None and (moe.num_experts + self.eplb_redundant) % self.tp:
            extra = f" + {self.eplb_redundant} redundant" if self.eplb_redundant else ""
            raise Conflict(
                f"--ep places whole experts: {moe.num_experts}{extra} experts do not divide "
                f"evenly over {self.tp} GPUs"
            )
        if self.dp_attention and self.tp == 1:
            raise Conflict("--dp-attention splits sequences over the group's GPUs: give --tp > 1")
        if self.gpus_per_node is not None and not 1 <= self.gpus_per_node <= MAX_TP:
            raise InputError(
                f"gpus per node {self.gpus_per_node} must be a whole number from 1 to {MAX_TP}"
            )

    @property
    def bandwidth_given(self) -> bool:
        """Whether the bandwidth is another than the GPU preset's own (--bandwidth beside
        --gpu): its rows then carry the GPU's name, memory and FLOP/s at that bandwidth."""
        return self.gpu is not None and self.bandwidth_bytes_per_s != self.gpu.bandwidth_bytes_per_s

    @property
    def effective_bandwidth_bytes_per_s(self) -> float:
        return self.bandwidth_bytes_per_s * self.efficiency

    @property
    def gpus(self) -> int:
        """GPUs the deployment uses: ``tp`` in each of ``pp`` stages."""
        return self.tp * self.pp

    @property
    def attention_tp(self) -> int:
        """How many ways a sequence's cache and attention are split: 1 under data-parallel
        attention, where a rank holds whole sequences."""
        return 1 if self.dp_attention else self.tp

    @property
    def attention_ranks(self) -> int:
        """Ranks that each hold their own sequences' cache, each in a KV pool of its own:
        the tp GPUs under data-parallel attention, else 1 (the TP group shares one)."""
        return self.tp if self.dp_attention else 1

    @property
    def expert_ranks(self) -> int:
        """GPUs a layer's routed experts are spread over: the TP group under expert
        parallelism, where each holds whole experts and runs only the tokens routed to
        them; 1 otherwise, where each holds a slice of every expert and sees every token."""
        return self.tp if self.ep else 1

    @property
    def sequences_per_gpu(self) -> int:
        """Sequences whose cache one GPU holds and reads: all of them, or under data-parallel
        attention its share, the busiest rank's when tp does not divide the batch."""
        return math.ceil(self.batch / self.tp) if self.dp_attention else self.batch

    def peak_flops(self) -> tuple[str, int] | None:
        """The GPU's dense rate for this weight format's matrix multiplies, if known."""
        return None if self.gpu is None else self.gpu.peak_flops(self.weights.matmul)
