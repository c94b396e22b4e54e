"""The one function that turns a ScenarioSpec (decodecalc.scenarios.spec) into a Scenario:
preset names looked up, unit texts parsed, the defaults that depend on other inputs (the
KV dtype, the link, a calibrated overhead) filled in. Every door into the estimator calls it.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from typing import Any

from decodecalc.engine.profile import Engine
from decodecalc.engine.select import choose_engine, extrapolation, releases_note
from decodecalc.errors import Conflict, InputError
from decodecalc.loading.catalog import Catalog
from decodecalc.loading.fields import suggest
from decodecalc.loading.kernels import with_kernel_rates
from decodecalc.loading.presets import NUMBERS_PREFIX
from decodecalc.model.dtypes import DType
from decodecalc.model.hardware import GpuSpec, Link
from decodecalc.model.model import Model
from decodecalc.model.precision import Overrides, WeightRecipe, expand, group_dtype, mix_text
from decodecalc.notes import Note, unique
from decodecalc.record import record, replace
from decodecalc.scenarios.fields import MAX_TP, SCENARIO_FIELDS
from decodecalc.scenarios.rates import (
    PriceList,
    Rates,
    checked_power,
    checked_price,
    parse_power,
    parse_price,
)
from decodecalc.scenarios.scenario import (
    Scenario,
    check_count,
    check_efficiency,
    check_fraction,
)
from decodecalc.scenarios.spec import ScenarioSpec
from decodecalc.step.parallelism import handoff_crosses_nodes
from decodecalc.units import parse_bandwidth, parse_duration


def default_kv_dtype(catalog: Catalog, weights: DType) -> DType:
    """Like vLLM's 'auto': the weights' own format when it is a compute format, else BF16."""
    return weights if weights.compute else catalog.dtype("bf16")


DEFAULT_NODE_LINK = "ib-ndr"
"""Between nodes, unless --node-link says otherwise: one 400 Gb/s InfiniBand NDR port per
GPU, as HGX H100 and H200 clusters are built."""


def resolve_link(
    catalog: Catalog,
    gpu: GpuSpec | None,
    tp: int,
    name: str | Link | None,
    bandwidth: str | int | None,
    pp: int = 1,
) -> Link | None:
    """The interconnect TP all-reduces (and pipeline hand-offs) cross: the named one, else
    the GPU's own; required when TP or PP > 1 unless 'none' deliberately leaves
    communication out."""
    if tp * pp == 1 or (isinstance(name, str) and name.lower() == "none"):
        return None
    chosen = name or (gpu.link if gpu is not None else None)
    if chosen is None:
        what = "tp > 1 needs an interconnect for its all-reduces"
        if tp == 1:
            what = "pp > 1 needs an interconnect for its hand-offs"
        raise Conflict(
            f"{what}: give --link (nvlink4, pcie5, ... 'decodecalc links' lists them) or "
            "--link none to leave it out"
        )
    found = chosen if isinstance(chosen, Link) else catalog.link(chosen)
    if bandwidth is not None:
        found = replace(found, bandwidth_bytes_per_s=_rate(bandwidth, "link bandwidth"))
    return found


@record
class Links:
    """The links a scenario's transfers cross, and what a reader must know about them."""

    link: Link | None
    node_link: Link | None = None
    gpus_per_node: int | None = None
    notes: tuple[Note, ...] = ()


def resolve_links(catalog: Catalog, gpu: GpuSpec | None, spec: ScenarioSpec, model: Model) -> Links:
    """The link within a node, GPUs per node (--gpus-per-node, else the link's own domain:
    8 for an NVLink board, 72 for a GB200 NVL72 rack) and, where the tp x pp GPUs fill more
    than one node, the network between nodes (--node-link, else InfiniBand NDR)."""
    link = resolve_link(catalog, gpu, spec.tp, spec.link, spec.link_bandwidth, spec.pp)
    if spec.gpus_per_node is not None and not 1 <= spec.gpus_per_node <= MAX_TP:
        raise InputError(f"gpus per node {spec.gpus_per_node} must be from 1 to {MAX_TP}")
    per_node = spec.gpus_per_node or (None if link is None else link.gpus)
    node = node_network(catalog, spec.node_link)  # a typo errs even unused
    if link is None or per_node is None or not _spans(link, per_node, spec):
        return Links(link, None, per_node)
    notes = []
    if spec.tp > per_node:
        hop = link.slowest_hop(node)
        nodes = math.ceil(spec.tp / per_node)
        spans = f"the {spec.tp}-GPU group spans {nodes} nodes of {per_node} GPUs"
        bandwidth = f"{hop.bandwidth_bytes_per_s / 1e9:g} GB/s"
        latency = f"{hop.latency_s * 1e6:g} us a call"
        notes.append(
            Note(
                "tp-across-nodes",
                f"{spans}: its collectives run at {node.name}'s {bandwidth} and {latency} "
                f"(a ring is as slow as its slowest hop), not {link.name}'s "
                f"{link.bandwidth_bytes_per_s / 1e9:g} GB/s"
                if hop is node
                else f"{spans}: its collectives run at {bandwidth} and {latency}, the "
                f"slowest of its hops (a ring is as slow as its slowest): {link.name}'s "
                f"{link.bandwidth_bytes_per_s / 1e9:g} GB/s and "
                f"{link.latency_s * 1e6:g} us within a node, {node.name}'s "
                f"{node.bandwidth_bytes_per_s / 1e9:g} GB/s and "
                f"{node.latency_s * 1e6:g} us between nodes",
            )
        )
    stages = min(spec.pp, len(model.layers))  # more is refused, once the Scenario is built
    crossing = sum(handoff_crosses_nodes(i, spec.tp, per_node) for i in range(stages - 1))
    if crossing:
        notes.append(
            Note(
                "pp-across-nodes",
                (
                    "the pipeline hand-off crosses"
                    if spec.pp == 2
                    else f"{crossing} of the {spec.pp - 1} pipeline hand-offs "
                    + ("crosses" if crossing == 1 else "cross")
                )
                + f" between nodes of {per_node} GPUs, over {node.name}",
            )
        )
    return Links(link, node, per_node, tuple(notes))


def _spans(link: Link | None, per_node: int | None, spec: ScenarioSpec) -> bool:
    """Whether tp x pp GPUs fill more than one node of ``per_node`` (none without a link)."""
    return link is not None and per_node is not None and spec.tp * spec.pp > per_node


LINK_OPTIONS = ("link", "link_bandwidth", "gpus_per_node", "node_link")
"""The interconnect settings: what GPUs send each other is priced over them."""


def unused_link(
    given: dict[str, Any],
    uses: Sequence[tuple[int, bool]],
    carries_kv: bool,
    flag: Callable[[str], str],
) -> str | None:
    """Why an interconnect setting given (``given``: name to value) prices nothing, the
    one rule of every command and file (None: each is used): link, link_bandwidth and
    gpus_per_node need a scenario of more than one GPU ('none' asks for nothing to be sent:
    so it is); node_link one whose group spans nodes, or a disaggregated deployment whose
    prompt KV it carries (``carries_kv``). ``uses``: each scenario's GPUs and whether its
    group spans nodes; ``flag``: how a setting is named (--link-bandwidth, link_bandwidth)."""
    if max(gpus for gpus, _ in uses) <= 1:
        for name in LINK_OPTIONS[:3]:
            if name in given and str(given[name]).strip().lower() != "none":
                return (
                    f"{flag(name)} prices what GPUs send each other, and every scenario here "
                    f"is one GPU: give {flag('tp')} or {flag('pp')} above 1"
                )
    if "node_link" in given and not (carries_kv or any(spans for _, spans in uses)):
        return (
            f"{flag('node_link')} prices what GPUs send between nodes, and every GPU group "
            f"here fits in one node: give {flag('tp')} x {flag('pp')} above the GPUs a node "
            f"joins ({flag('gpus_per_node')}, by default the GPU's link's)"
        )
    return None


def spans_nodes(catalog: Catalog, spec: ScenarioSpec) -> bool:
    """Whether a spec's tp x pp GPUs fill more than one node (resolve_links' rule), before
    the rest of it is resolved; False where its GPU or link is unknown or none is given
    (resolving the spec says why)."""
    try:
        gpu = catalog.gpu(spec.gpu) if isinstance(spec.gpu, str) else spec.gpu
        link = resolve_link(catalog, gpu, spec.tp, spec.link, None, spec.pp)
    except InputError:
        return False
    return _spans(link, spec.gpus_per_node or (None if link is None else link.gpus), spec)


def node_network(catalog: Catalog, name: str | Link | None) -> Link:
    """The network between nodes --node-link names (DEFAULT_NODE_LINK when None): a link
    that joins any number of GPUs (InfiniBand, RoCE), not one that joins those of one node
    or rack (NVLink, PCIe, Infinity Fabric: a group past it crosses the network instead)."""
    found = name if isinstance(name, Link) else catalog.link(name or DEFAULT_NODE_LINK)
    if found.gpus is None:
        return found
    networks = [link.id for link in catalog.links() if link.gpus is None]
    raise InputError(
        f"node link {found.id}: {found.name} joins the GPUs inside one node or rack "
        f"({found.gpus} of them), not nodes; a network between nodes: {', '.join(networks)}"
    )


def resolve_kv_link(
    catalog: Catalog, name: str | None, node_link: str | Link | None
) -> Link | None:
    """The link a disaggregated deployment's prompt KV crosses from a prefill to a decode
    worker: the named one ('none': no transfer time), else the network between nodes
    (``node_link``, else DEFAULT_NODE_LINK)."""
    if name is not None and name.strip().lower() == "none":
        return None
    if name is None and isinstance(node_link, Link):
        return node_link
    fallback = node_link if isinstance(node_link, str) else DEFAULT_NODE_LINK
    return catalog.link(name or fallback)


def _numbers_notes(*described: Model | GpuSpec | None) -> tuple[Note, ...]:
    """A note for each model or GPU given by numbers: its figures are only as good as the
    numbers typed, with no preset's sources behind them."""
    return tuple(
        Note("from-numbers", d.notes) for d in described if d and d.id.startswith(NUMBERS_PREFIX)
    )


def _shadowing_notes(catalog: Catalog, spec: ScenarioSpec) -> tuple[Note, ...]:
    """A model or GPU name that one of the user's presets takes over from a built-in, or
    that a built-in keeps from one of theirs (Catalog.shadowing)."""
    named = [("models", spec.model), ("gpus", spec.gpu)]
    notes = [
        catalog.shadowing(kind, name.partition(",")[0])
        for kind, name in named
        if isinstance(name, str)
    ]
    return tuple(n for n in notes if n is not None)


def format_notes(
    model: Model, weights: DType, caches: tuple[DType | None, ...], gpu: GpuSpec | None
) -> tuple[Note, ...]:
    """A cache format that cannot exist for this model is refused; a V format the model has
    no V to store in is said to price nothing; weights in a format the GPU has no tensor
    cores for are said to run at the class it falls back to."""
    for cache in caches:
        if cache is not None and not model.takes_cache_layout(cache.layer_kind):
            raise InputError(
                f"KV dtype {cache.id!r} lays out the cache of {cache.layer_kind} layers, and "
                f"{model.id} has no {cache.layer_kind} layers; try fp8 ('decodecalc show "
                f"{model.id}' lists the KV dtypes it takes)"
            )
    kv, values = caches[0], caches[-1]
    notes = []
    if values is not None and kv is not None and values != kv and not model.caches_values():
        why = (
            f"{model.id}'s MLA caches one latent per token, shared by K and V, all"
            if model.has_latent_attention()
            else f"no layer of {model.id} caches a V of its own; its cache is all"
        )
        notes.append(
            Note(
                "v-dtype-unused",
                f"--v-dtype {values.id} prices nothing here: {why} in the KV dtype ({kv.id})",
            )
        )
    if gpu is None or weights.matmul == "bf16":
        return tuple(notes)
    peak = gpu.peak_flops(weights.matmul)
    if peak is None or peak[0] == weights.matmul:
        return tuple(notes)
    return (
        *notes,
        Note(
            "matmul-fallback",
            f"{gpu.id} has no {weights.matmul.upper()} tensor cores: {weights.id} weights are "
            f"read at their {float(weights.bits_per_value):g} bits but multiplied at the "
            f"{peak[0].upper()} rate (weight-only, as engines run them there)",
        ),
    )


def at_head_width(
    model: Model, kv: DType, v_kv: DType | None
) -> tuple[DType, DType | None, tuple[Note, ...]]:
    """Cache formats with a scale per head (LMDeploy's) priced at the model's head width,
    with a note where that is not the width their listed bits are counted at."""
    width = model.kv_head_width()
    if width is None:
        return kv, v_kv, ()
    new_kv = kv.at_head_width(width)
    new_v = None if v_kv is None else v_kv.at_head_width(width)
    notes = tuple(
        Note(
            "kv-head-width",
            f"{new.id} stores {float(new.head_scale_bits):g} scale bits per head of each "
            f"token: on {model.id}'s {float(width):g}-wide heads that is "
            f"{float(new.bits_per_value):g} bits per value, not the "
            f"{float(old.bits_per_value):g} listed for {old.head_width}-wide heads",
        )
        for old, new in ((kv, new_kv), (v_kv, new_v))
        if old is not None and new is not None and new is not old
    )
    return new_kv, new_v, unique(notes)


def parallelism_notes(spec: ScenarioSpec, model: Model) -> tuple[Note, ...]:
    """What pipeline, expert and data-parallel attention figures mean."""
    notes = []
    if spec.pp > 1:
        notes.append(
            Note(
                "pipeline-throughput",
                f"pp {spec.pp}: each step is one batch's trip through the {spec.pp} stages in "
                "turn (their bytes added up, plus a hand-off between each); with "
                f"{spec.pp} batches in flight every stage stays busy, so throughput can reach "
                f"up to {spec.pp}x the throughput shown, holding {spec.pp}x the KV cache",
            )
        )
    moe = model.moe()
    if spec.ep and moe is not None:
        how = (
            "each rank dispatches its tokens to the experts' GPUs and combines the answers "
            "(all-to-all)"
            if spec.dp_attention
            else "every GPU holds every token after the attention all-reduce, so it runs its "
            "own experts on all of them and one all-reduce combines them, as under TP"
        )
        notes.append(
            Note(
                "expert-parallel",
                f"ep: {(moe.num_experts + (spec.eplb_redundant or 0)) // spec.tp} whole "
                f"experts per GPU; {how}. Routing is taken as uniform, and the step waits for "
                "the busiest GPU: its expected expert reads (the maximum over GPUs, not the "
                "mean) are what it streams",
            )
        )
    if spec.dp_attention:
        notes.append(dp_attention_note(spec.tp, spec.batch))
    return tuple(notes)


def dp_attention_note(tp: int, batch: int | None) -> Note:
    """What data-parallel attention splits: the batch's sequences, or under a workload
    (``batch`` None: serving and check set no batch) the running requests."""
    return Note(
        "dp-attention",
        f"data-parallel attention: {_dp_split(tp, batch)} whole KV cache (MLA's latent once, "
        "not copied to every GPU) and a whole copy of every weight outside the routed experts",
    )


def _dp_split(tp: int, batch: int | None) -> str:
    """Who holds which sequences when ``tp`` does not divide the batch: some ranks hold one
    more (or the only one) and the step waits for them, so it is priced at their share
    (Scenario.sequences_per_gpu rounds up)."""
    if batch is None:
        return f"each of the {tp} ranks holds its own share of the running requests with their"
    whole, extra = divmod(batch, tp)
    if not extra:
        return f"each of the {tp} ranks holds its own {whole:,} of {batch:,} sequences with their"
    if not whole:
        held = "the one sequence" if batch == 1 else "one sequence each"
        ranks = "holds" if batch == 1 else "hold"
        split = f"{batch} of the {tp} ranks {ranks} {held} and the other {tp - batch} hold none"
    else:
        split = (
            f"{extra} of the {tp} ranks hold {whole + 1:,} of the {batch:,} sequences each "
            f"and the other {tp - extra} hold {whole:,}"
        )
    return (
        f"{split} (the step waits for the busiest rank: priced at its {whole + 1:,}), each "
        "rank with its own sequences'"
    )


@record
class Efficiency:
    fraction: float
    overhead_s: float | None = None
    """A calibrated per-step overhead, used unless one is given explicitly."""
    notes: tuple[Note, ...] = ()


def sustained_gpus(catalog: Catalog) -> list[str]:
    """The GPU presets that cite a measured (sustained) bandwidth."""
    return [g.id for g in catalog.gpus() if g.sustained_bandwidth_bytes_per_s is not None]


EFFICIENCY_WORDS = ("sustained", "calibrated")
"""The efficiencies given by name rather than as a fraction."""


def resolve_efficiency(
    text: str, gpu: GpuSpec | None, catalog: Catalog | None = None
) -> Efficiency:
    """A fraction in (0, 1], 'sustained' (the GPU's measured bandwidth over its peak) or
    'calibrated' (the fit saved by 'decodecalc calibrate'). ``catalog`` names, when
    'sustained' has no figure for this GPU, the GPUs that have one."""
    word = text.strip().lower()
    if word == "sustained":
        if gpu is None or gpu.sustained_bandwidth_bytes_per_s is None:
            name = gpu.id if gpu else "a bandwidth given alone"
            measured = [] if catalog is None else sustained_gpus(catalog)
            which = f" (only {', '.join(measured)} have one)" if measured else ""
            raise Conflict(
                f"no sustained bandwidth is known for {name}: 'sustained' is a public "
                f"benchmark's measured bandwidth, which a GPU preset cites{which}; give "
                "--efficiency as a fraction, --engine NAME for a measured engine's step, or fit "
                "one with 'decodecalc calibrate'"
            )
        return Efficiency(gpu.sustained_bandwidth_bytes_per_s / gpu.bandwidth_bytes_per_s)
    if word == "calibrated":
        from decodecalc.loading.saved import load_calibration

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
            + suggest(word, list(EFFICIENCY_WORDS))
        ) from None


def roofline_only(engine: Engine, efficiency: float, overhead_s: float) -> None:
    """An efficiency below 1 and a per-step overhead are an assumption about one's own
    engine, and only the roofline's step takes them: a measured engine's (a profile's, or
    the default typical band's) has its own efficiencies and costs, which they would not
    move. So every command refuses them there, rather than moving the roofline alone past
    the figure it bounds."""
    given = [f"efficiency {efficiency:g}"] if efficiency != 1 else []
    if overhead_s:
        given.append(f"overhead {overhead_s * 1000:g} ms")
    if given and not engine.is_roofline:
        raise InputError(
            f"{' and '.join(given)} {'shape' if len(given) > 1 else 'shapes'} only the "
            f"roofline's step, and the figures are the "
            f"{engine.id} engine's measured step: give --engine roofline to take them as "
            "your own engine's"
        )


def check_values(spec: ScenarioSpec, catalog: Catalog) -> None:
    """Every value of a spec that is wrong whatever the others hold: a count out of range,
    a text that is no rate, time, fraction or wattage, an unknown link. Checked first, so
    that a value no scenario uses (a link at TP 1) is still refused, a count too large for
    a float never reaches one, and a grid refuses a bad value instead of skipping the
    combinations it is in (those raise Conflict)."""
    for field in SCENARIO_FIELDS:
        count = getattr(spec, field.name)
        if field.most is not None and count is not None:
            check_count(field.name.replace("_", " "), count, field.most, field.least)
    for rate, what in ((spec.bandwidth, "bandwidth"), (spec.link_bandwidth, "link bandwidth")):
        if rate is not None:
            _rate(rate, what)
    if isinstance(spec.overhead, str):
        parse_duration(spec.overhead, "overhead")
    check_fraction("memory utilization", spec.memory_utilization)
    if str(spec.efficiency).strip().lower() not in EFFICIENCY_WORDS:
        check_efficiency(resolve_efficiency(str(spec.efficiency), None).fraction)
    if isinstance(spec.link, str) and spec.link.strip().lower() != "none":
        catalog.link(spec.link)
    if spec.node_link is not None:
        node_network(catalog, spec.node_link)
    if spec.power is not None:
        resolve_rates(catalog, None, spec.power, None)
    if isinstance(spec.price, str):
        price_lists(catalog, spec.price)


def resolve(spec: ScenarioSpec, catalog: Catalog) -> Scenario:
    """The Scenario a spec describes, every name looked up and every text parsed."""
    check_values(spec, catalog)
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
    kv, v_kv, head_notes = at_head_width(model, kv, v_kv)
    fit = resolve_efficiency(str(spec.efficiency), gpu, catalog)
    engine, engine_notes = choose_engine(catalog, spec.engine, gpu)
    engine, wider = extrapolation(engine, model, spec.batch, gpu)
    links = resolve_links(catalog, gpu, spec, model)
    if isinstance(spec.overhead, str):
        overhead_s = parse_duration(spec.overhead, "overhead")
    else:
        overhead_s = fit.overhead_s or 0.0 if spec.overhead is None else float(spec.overhead)
    roofline_only(engine, fit.fraction, overhead_s)
    scenario = Scenario(
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
        pp=spec.pp,
        ep=spec.ep,
        eplb_redundant=spec.eplb_redundant or 0,
        dp_attention=spec.dp_attention,
        gpus_per_node=links.gpus_per_node,
        node_link=links.node_link,
        gpu=gpu,
        memory_utilization=spec.memory_utilization,
        link=links.link,
        own_link=spec.link is None and spec.link_bandwidth is None,
        overhead_s=overhead_s,
        notes=(
            *fit.notes,
            *engine_notes,
            *wider,
            *_numbers_notes(model, gpu),
            *_shadowing_notes(catalog, spec),
            *links.notes,
            *parallelism_notes(spec, model),
            *format_notes(model, weights, (kv, v_kv), gpu),
            *head_notes,
            *_export_name_note(model, weights.id, spec.weights is not None),
            *_recipe_note(catalog, spec.weights, model, overrides),
        ),
        engine=engine,
        rates=resolve_rates(catalog, spec.price, spec.power, gpu),
    )
    rated = kernel_rated(scenario, spec.batch)
    return replace(rated, notes=(*rated.notes, *releases_note(rated.engine, rated.notes)))


def experts_dtype(model: Model, default: DType, overrides: Overrides) -> DType | None:
    """The format of a model's routed experts (None: it has none), which a mixed recipe
    may store apart from the rest (gpt-oss's MXFP4 experts beside BF16 attention)."""
    for group in model.tensor_groups():
        if group.experts:
            return group_dtype(group.name, default, overrides)
    return None


def _export_name_note(model: Model, weights: str, given: bool) -> tuple[Note, ...]:
    """loading/quantization.py's export_name_note, imported only where it can say something:
    given weights name their format, and a query that gives them need not load the module."""
    if given:
        return ()
    from decodecalc.loading.quantization import export_name_note

    return export_name_note(model, weights, given)


def kernel_rated(scenario: Scenario, batch: int | None) -> Scenario:
    """The scenario with its engine taking the GPU's kernel rates where they can matter at
    ``batch``, the one its steps run at; None for an answer that runs them at other batches
    (a server's running batches, a plan's largest): then whatever the batch
    (loading/kernels.py with_kernel_rates)."""
    s = scenario
    experts = experts_dtype(s.model, s.weights, s.weight_overrides)
    overridden = bool(s.weight_overrides)
    tp = s.tp if s.own_link else 1  # (the tables timed the all-reduce on the GPU's link)
    found = with_kernel_rates(s.engine, s.gpu, s.weights, experts, batch, overridden, tp)
    return s if found is s.engine else replace(s, engine=found)


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


def _recipe_note(
    catalog: Catalog, value: str | DType | WeightRecipe | None, model: Model, overrides: Overrides
) -> tuple[Note, ...]:
    """A recipe given (-w) that stores nothing of this model otherwise than its default: the
    groups it names in other formats (routed experts, for an experts-only recipe) are none
    of the model's, so it prices as --weights DEFAULT would, and says so, as --v-dtype
    says where there is no V to store (format_notes)."""
    found = catalog.weights(value) if isinstance(value, str) else value
    if not isinstance(found, WeightRecipe) or overrides:
        return ()
    named = [(group, mix_text(mix)) for group, mix in found.overrides]
    other = [(group, text) for group, text in named if text != found.default]
    if not other:
        return ()
    stored = ", ".join(f"{group} in {text}" for group, text in other)
    return (
        Note(
            "recipe-unused",
            f"-w {found.id} prices nothing here beyond {found.default}: it stores only "
            f"{stored} otherwise, and {model.id} has none of them, so every weight is "
            f"{found.default}",
        ),
    )


def _dtype(catalog: Catalog, value: str | DType) -> DType:
    return catalog.dtype(value) if isinstance(value, str) else value


def _rate(value: str | int, what: str = "bandwidth") -> int:
    """Bytes per second from a text or a number, at least 1: every transfer divides by it."""
    rate = parse_bandwidth(value, what) if isinstance(value, str) else value
    if rate < 1:
        raise InputError(f"{what} {value!r} must be at least 1 byte/s")
    return rate


def resolve_rates(
    catalog: Catalog, price: str | float | None, power: str | float | None, gpu: GpuSpec | None
) -> Rates:
    """The price per GPU-hour (dollars, a price list's entry for the GPU, or 'lowest': the
    cheapest list naming it) and the board power (given, else the GPU preset's TDP)."""
    dollars, listed = _price(catalog, price, gpu)
    if power is not None:
        watts: float | None = (
            parse_power(power) if isinstance(power, str) else checked_power(power, "power")
        )
        power_source = "given"
    else:
        watts = None if gpu is None else gpu.power_w
        power_source = "" if watts is None or gpu is None else gpu.id
    source, date = ("given", "") if listed is None else (listed.id, listed.date)
    return Rates(dollars, "" if dollars is None else source, date, watts, power_source)


def _price(
    catalog: Catalog, value: str | float | None, gpu: GpuSpec | None
) -> tuple[float | None, PriceList | None]:
    """Dollars per GPU-hour and the price list they came from (None: given, or no price)."""
    if value is None:
        return None, None
    if not isinstance(value, str):
        return checked_price(value, "price"), None
    dollars, lists = price_lists(catalog, value)
    if dollars is not None:
        return dollars, None
    if gpu is None:
        raise InputError(f"price {value!r} names a price list: give --gpu, or a price in dollars")
    quoted = [(price, p) for p in lists if (price := p.price(gpu.id)) is not None]
    if not quoted and lists[0].id == "given":
        raise Conflict(f"--price {value!r} gives no price for {gpu.id}: add {gpu.id}=DOLLARS")
    if not quoted:
        where = (
            f"{lists[0].id} gives no price" if len(lists) == 1 else "no price list gives a price"
        )
        raise Conflict(
            f"{where} for {gpu.id}: give --price in dollars per GPU-hour, e.g. --price 2.49"
        )
    return min(quoted, key=lambda q: q[0])


def given_prices(catalog: Catalog, text: str) -> PriceList:
    """``h100-sxm=2.5,mi300x=2``: a price per GPU given on the command line, read as a price
    list of its own ('given'), so that every GPU of a comparison or a plan has its own."""
    prices: dict[str, float] = {}
    for item in text.split(","):
        name, _, value = item.partition("=")
        dollars = parse_price(value) if value.strip() else None
        if not name.strip() or dollars is None:
            raise InputError(
                f"price {item.strip()!r}: expected GPU=DOLLARS per GPU-hour, "
                "e.g. --price 'h100-sxm=2.5,mi300x=2'"
            )
        prices[catalog.gpu(name.strip()).id] = dollars
    listed = tuple(prices.items())
    return PriceList("given", "given on the command line", "--price", "", listed)


def price_lists(catalog: Catalog, text: str) -> tuple[float | None, list[PriceList]]:
    """What a --price text says: dollars per GPU-hour, or the price lists to look the GPU
    up in (one named, or every one for 'lowest'); anything else is an input error."""
    dollars = parse_price(text)
    if dollars is not None:
        return dollars, []
    if "=" in text:
        return None, [given_prices(catalog, text)]
    word = text.strip().lower()
    if word == "lowest":
        return None, catalog.price_lists()
    try:
        return None, [catalog.price_list(word)]
    except InputError:
        known = ", ".join(catalog.ids("prices"))
        raise InputError(
            f"price {text!r} is not dollars per GPU-hour (e.g. 2.49 or 2.49USD/h), a price list "
            f"({known}) or 'lowest'" + suggest(word, [*catalog.ids("prices"), "lowest"])
        ) from None
