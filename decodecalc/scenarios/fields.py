"""The one table of scenario fields: for each field of ScenarioSpec, how the command line,
deployment files and measured points spell it, what kind of value it takes and its help.

Every door reads its scenario fields from here: the CLI declares one option per row
(cli/options.py), a deployment file accepts each row's key and checks its kind
(checks/deployments.py, and the JSON Schema `decodecalc schema` prints), a points file
reads the rows marked for points (calibration/points.py). A new field is a row here, a
field of ScenarioSpec with its default, and the code that uses its value: nothing else
(docs/development.md, "A new scenario field"). This module imports nothing heavy: the
CLI builds its options from it before a query needs the physics.
"""

from __future__ import annotations

from decodecalc.record import record

KINDS = ("text", "rate", "time", "count", "flag", "fraction", "efficiency")
"""What a field's value is: a text (a preset name), a bandwidth (3.35TB/s), a duration
(0.3ms), a whole number (of at least the field's ``least``, 1 unless it says), true or
false, a number above 0 and at most 1, or an efficiency (a fraction, or 'sustained' or
'calibrated')."""

EFFICIENCY_WORDS = ("sustained", "calibrated")
"""The words an efficiency takes besides a fraction (resolving/resolve.py reads them)."""

MAX_BATCH = 1_000_000
MIN_FRACTION = 0.001
"""Smallest efficiency or memory utilization accepted: below it, figures lose meaning."""
MAX_TP = 1024
MAX_PP = 1024
"""More stages than any model has layers: past it a value is no pipeline, whatever the model."""
MAX_REDUNDANT_EXPERTS = 1024
"""More expert replicas than any model has experts: past it a count is a typo, and far past
it no float holds the share of tokens it spreads."""

PRESETS = ("model", "gpu", "weights", "dtype")
"""Catalog look-ups a file's value is checked by where it is read (so a misspelt name
points at its own line): a model, a GPU, a weight format or recipe, a KV format."""


@record
class ScenarioField:
    """How one ScenarioSpec field is given at every door. compare and sweep take the
    ``axis`` options as comma lists (every combination is a scenario), the rest as one value."""

    name: str
    """The ScenarioSpec field, and the key of deployment files and points files."""
    flags: tuple[str, ...]
    help: str
    metavar: str
    kind: str = "text"
    """One of KINDS."""
    axis: str | None = None
    """Help for the comma-list form (None: one value in every command)."""
    complete: str | None = None
    """Which presets complete it on the command line."""
    preset: str | None = None
    """One of PRESETS: what a file's value is looked up as (None: read as its kind)."""
    in_files: bool = True
    """Deployment files take it (as ``name``)."""
    in_points: bool = False
    """Measured points take it (as ``name``): what the measurement ran, never a figure
    fitted to it (efficiency, overhead) or one of its labels (engine)."""
    required_in_points: bool = False
    most: int | None = None
    """The largest count Scenario takes (kind count; None: no bound of its own)."""
    least: int = 1
    """The smallest count Scenario takes (kind count): 0 where none is a choice."""


SCENARIO_FIELDS = (
    ScenarioField(
        "model",
        ("--model", "-m"),
        "Model preset or alias, a model YAML file, a config.json, a Hugging Face Hub id "
        "(org/name; needs decodecalc[hub]) or numbers: 'layers=80,hidden=8192,heads=64,...'.",
        "MODEL",
        axis="One or more models, comma-separated (a numbers spec keeps its commas; a field "
        "given again starts the next spec).",
        complete="models",
        in_points=True,
        required_in_points=True,
        preset="model",
    ),
    ScenarioField(
        "gpu",
        ("--gpu", "-g"),
        "GPU preset (sets bandwidth, capacity and FLOP/s), one with its memory or bandwidth "
        "given ('strix-halo,memory=64GiB'), or numbers: "
        "'bandwidth=3.35TB/s,memory=80GiB,bf16=989TFLOP/s'.",
        "GPU",
        axis="One or more GPU presets or numbers specs.",
        complete="gpus",
        in_points=True,
        required_in_points=True,
        preset="gpu",
    ),
    ScenarioField(
        "bandwidth",
        ("--bandwidth", "-b"),
        "Memory bandwidth, e.g. 3.35TB/s, 819GB/s, 1.5TiB/s; overrides --gpu.",
        "RATE",
        kind="rate",
    ),
    ScenarioField(
        "weights",
        ("--weights", "-w"),
        "Weight dtype, every tensor in it ('decodecalc dtypes'), or a weight recipe, a "
        "format per tensor group ('decodecalc recipes'). Default: the checkpoint's recipe "
        "from config.json, else bf16.",
        "DTYPE",
        axis="One or more weight dtypes or recipes (default as for estimate).",
        complete="dtypes",
        in_points=True,
        required_in_points=True,
        preset="weights",
    ),
    ScenarioField(
        "kv_dtype",
        ("--kv-dtype", "-k"),
        "KV-cache dtype. Default: the weight dtype if it is FP32/FP16/BF16, else BF16.",
        "DTYPE",
        axis="One or more KV dtypes (default as for estimate).",
        complete="dtypes",
        in_points=True,
        required_in_points=True,
        preset="dtype",
    ),
    ScenarioField(
        "v_dtype",
        ("--v-dtype",),
        "V-cache dtype where an engine stores K and V differently; --kv-dtype is then K's. "
        "MLA's latent has no separate V and linear attention's state none: both use "
        "--kv-dtype. Default: the same as --kv-dtype.",
        "DTYPE",
        axis="One or more V dtypes (default: the KV dtype).",
        complete="dtypes",
        in_points=True,
        preset="dtype",
    ),
    ScenarioField(
        "batch",
        ("--batch",),
        "Concurrent sequences per step.",
        "N",
        "count",
        axis="One or more batch sizes, e.g. 1,8,64.",
        in_points=True,
        most=MAX_BATCH,
    ),
    ScenarioField(
        "tp",
        ("--tp",),
        "Tensor-parallel GPUs; figures are per GPU.",
        "N",
        "count",
        axis="One or more TP sizes, e.g. 1,2,4,8.",
        in_points=True,
        most=MAX_TP,
    ),
    ScenarioField(
        "pp",
        ("--pp",),
        "Pipeline stages of --tp GPUs each: a token's step runs through them in turn, and "
        "memory per GPU holds one stage's layers.",
        "N",
        "count",
        axis="One or more pipeline sizes, e.g. 1,2,4.",
        in_points=True,
        most=MAX_PP,
    ),
    ScenarioField(
        "ep",
        ("--ep",),
        "Expert parallelism (vLLM's enable-expert-parallel): whole experts on each of the "
        "--tp GPUs instead of every expert split over them.",
        "",
        "flag",
        in_points=True,
    ),
    ScenarioField(
        "eplb_redundant",
        ("--eplb-redundant",),
        "Redundant expert replicas spread with --ep (DeepSeek's EPLB; vLLM's "
        "num_redundant_experts, SGLang's ep-num-redundant-experts): each takes half its "
        "expert's tokens; held and read like any expert.",
        "N",
        "count",
        in_points=True,
        most=MAX_REDUNDANT_EXPERTS,
        least=0,
    ),
    ScenarioField(
        "dp_attention",
        ("--dp-attention",),
        "Data-parallel attention over the --tp GPUs (MoE models): each holds its own "
        "sequences' whole KV cache; experts stay spread over all of them.",
        "",
        "flag",
        in_points=True,
    ),
    ScenarioField(
        "efficiency",
        ("--efficiency", "-e"),
        "Fraction of peak bandwidth reached, in (0, 1] (1 is the roofline); 'sustained' "
        "(the GPU's measured bandwidth) or 'calibrated' (from 'decodecalc calibrate --save'). "
        "Below 1, only with --engine roofline: your own engine's step.",
        "EFF",
        kind="efficiency",
    ),
    ScenarioField(
        "memory_utilization",
        ("--memory-utilization",),
        "Share of GPU memory for weights and cache, like vLLM's gpu_memory_utilization.",
        "FRACTION",
        "fraction",
    ),
    ScenarioField(
        "overhead",
        ("--overhead",),
        "Fixed time added to every step, e.g. 0.3ms (default 0, or calibrated); above 0, "
        "only with --engine roofline.",
        "TIME",
        kind="time",
    ),
    ScenarioField(
        "link",
        ("--link",),
        "Interconnect for TP all-reduces (default: the GPU's; 'none' leaves them out).",
        "LINK",
        in_points=True,
    ),
    ScenarioField(
        "link_bandwidth",
        ("--link-bandwidth",),
        "Override the link's bandwidth, e.g. 450GB/s.",
        "RATE",
        in_files=False,
        kind="rate",
    ),
    ScenarioField(
        "gpus_per_node",
        ("--gpus-per-node",),
        "GPUs one node's link joins (default: the link's, 8 for NVLink boards, 72 for "
        "nvl72); larger groups and hand-offs between nodes take --node-link.",
        "N",
        "count",
        in_points=True,
        most=MAX_TP,
    ),
    ScenarioField(
        "node_link",
        ("--node-link",),
        "Network between nodes: ib-ndr (default), ib-xdr, roce-400g ('decodecalc links').",
        "LINK",
        in_points=True,
    ),
    ScenarioField(
        "engine",
        ("--engine",),
        "Engine profile whose measured step to expect ('decodecalc engines' lists them), at "
        "its newest release line, or NAME@LINE for another ('sglang@0.4'); default "
        "'typical': the band across the profiles for the GPU's family; 'roofline': physics "
        "alone.",
        "ENGINE",
        axis="One or more engine profiles (default typical).",
        complete="engines",
    ),
    ScenarioField(
        "price",
        ("--price",),
        "Price per GPU-hour for cost per million tokens: dollars (2.49, 2.49USD/h), one per "
        "GPU ('h100-sxm=2.5,mi300x=2'), a price list (hyperstack, lambda, vultr) or 'lowest' (the "
        "cheapest list naming the GPU).",
        "PRICE",
        in_files=False,
    ),
    ScenarioField(
        "power",
        ("--power",),
        "Board power per GPU for energy per token, e.g. 700W (default: the GPU's TDP, "
        "an upper bound).",
        "WATTS",
        in_files=False,
    ),
)
"""Every option that describes one deployment, in the order help lists them; the defaults
are ScenarioSpec's, so no command can drift from another."""
