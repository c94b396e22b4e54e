"""The one description of a scenario, with its defaults declared once.

Every door into the estimator (the command line's options, compare and sweep grids, the
Python API, deployment files, vLLM serve configs, measured points) fills in a ScenarioSpec
and hands it to decodecalc.resolving.resolve.resolve, so the same inputs give the same figures
whichever door they came in by. This module imports nothing heavy: the CLI reads the
defaults from here to declare its options, before a query needs the physics.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from decodecalc.record import record

if TYPE_CHECKING:
    from decodecalc.engine.profile import Engine
    from decodecalc.model.dtypes import DType
    from decodecalc.model.hardware import GpuSpec, Link
    from decodecalc.model.model import Model
    from decodecalc.model.precision import WeightRecipe


@record
class ScenarioSpec:
    """What a user says about one deployment: preset names and unit texts, or objects they
    already hold (a GpuSpec they built is used as given, never swapped for the catalog's
    preset of the same id). None means "the default", spelled out in resolve()."""

    model: str | Model
    gpu: str | GpuSpec | None = None
    bandwidth: str | int | None = None
    """Overrides the GPU's: a text like 3.35TB/s, or bytes per second."""
    weights: str | DType | WeightRecipe | None = None
    """A dtype (every tensor in it) or a weight recipe (a format per tensor group); None:
    the model's own recipe from its config.json's quantization_config, else BF16."""
    kv_dtype: str | DType | None = None
    """None: like vLLM's 'auto', the weights' format if it is a compute format, else BF16."""
    v_dtype: str | DType | None = None
    """The V cache's format where an engine stores K and V differently; None: kv_dtype.
    MLA caches one latent (no separate V) and linear attention a state: both use kv_dtype."""
    batch: int = 1
    tp: int = 1
    pp: int = 1
    """Pipeline stages of ``tp`` GPUs each (vLLM's pipeline-parallel-size)."""
    ep: bool = False
    """Routed experts placed whole on GPUs (vLLM's enable-expert-parallel)."""
    eplb_redundant: int | None = None
    """Redundant expert replicas spread with --ep (vLLM's num_redundant_experts, SGLang's
    ep-num-redundant-experts); None: none."""
    dp_attention: bool = False
    """Attention data-parallel over the ``tp`` GPUs, each with its own sequences."""
    efficiency: str | float = "1"
    memory_utilization: float = 0.9
    overhead: str | float | None = None
    """A text like 0.3ms, or seconds; None: zero, or the calibrated overhead."""
    link: str | Link | None = None
    """None: the GPU's own interconnect when TP > 1; 'none' leaves communication out."""
    link_bandwidth: str | int | None = None
    gpus_per_node: int | None = None
    """None: the link's own domain (8 on an HGX board, 72 in a GB200 NVL72 rack)."""
    node_link: str | Link | None = None
    """The network between nodes; None: InfiniBand NDR where a group or a hand-off leaves
    a node."""
    engine: str | Engine | None = None
    """An engine profile whose measured step to expect; None: 'typical', the band across
    the profiles for the GPU's family; 'roofline': physics alone."""
    price: str | float | None = None
    """Dollars per GPU-hour (2.49, '2.49USD/h'), a price list's id ('lambda'), or 'lowest'
    (the cheapest list naming the GPU); None: no price, so no cost figures."""
    power: str | float | None = None
    """Board watts per GPU ('700W'), overriding the GPU preset's power_w."""
