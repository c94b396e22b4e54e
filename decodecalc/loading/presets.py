"""Turning preset files into core objects: models, GPUs and dtypes.

Model presets hold architecture fields named as in the model's config.json under
``config:``; ``families`` turns them into layers.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from fractions import Fraction
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

from decodecalc.errors import InputError
from decodecalc.loading.datafile import Document, fragment
from decodecalc.loading.families import MAX_SIZE, read_architecture
from decodecalc.loading.fields import Fields, suggest
from decodecalc.model.dtypes import DType
from decodecalc.model.hardware import GpuSpec, Link
from decodecalc.model.model import Model
from decodecalc.model.precision import GROUP_NAMES, Mix, WeightRecipe
from decodecalc.scenarios.rates import MAX_POWER_W, MAX_PRICE, PriceList

if TYPE_CHECKING:
    from decodecalc.engine.profile import (
        EngineParams,
        EngineProfile,
        FitRange,
        PendingFamilies,
        ReleaseLine,
        ServingDefaults,
    )
from decodecalc.units import parse_bandwidth, parse_duration, parse_flops, parse_size

T = TypeVar("T")


def _parsed(fields: Fields, name: str, parse: Callable[[str], T]) -> T:
    """A field with a unit (3.35TB/s, 80GiB); a parse error points at the field."""
    text = fields.text(name)
    try:
        return parse(text)
    except InputError as exc:
        raise fields.error(name, str(exc)) from None


MAX_PARAMS = 10**15
"""Most parameters a model card may claim: 500 times the largest published model (about
2 trillion), and far below what a 64-bit counter wraps to (2^64 is a typo's favourite)."""


def _common(fields: Fields) -> tuple[str, tuple[str, ...], str]:
    return fields.text("name"), fields.texts("aliases"), fields.text("source")


MODEL_FIELDS = (
    "name",
    "aliases",
    "source",
    "official_params",
    "official_params_source",
    "official_active_params",
    "official_active_params_source",
    "notes",
    "config",
)
"""Every field a model preset may give (Fields.known): any other key is refused first, with
the nearest of these names."""


def load_model(doc: Document, preset_id: str) -> Model:
    """A model preset: metadata, and the model's config.json fields under ``config:``."""
    top = Fields(doc, known=MODEL_FIELDS)
    name, aliases, source = _common(top)
    official = top.integer("official_params", default=0, minimum=0, maximum=MAX_PARAMS)
    official_source = top.text("official_params_source", "")
    official_active = top.optional_integer("official_active_params")
    official_active_source = top.text("official_active_params_source", "")
    notes = top.text("notes", "")
    config = top.mapping("config")
    config.limit = MAX_SIZE
    model_type, arch = read_architecture(config)
    top.finish()
    return Model(
        id=preset_id,
        name=name,
        family=model_type,
        official_params=official,
        official_params_source=official_source,
        official_active_params=official_active,
        official_active_params_source=official_active_source,
        aliases=aliases,
        source=source,
        notes=notes,
        **arch.__dict__,
    )


def model_from_config(doc: Document, preset_id: str) -> Model:
    """A model straight from a config.json: fields it does not need are ignored, and
    there is no official parameter count to compare with (0)."""
    return _read_config(doc, preset_id)[0]


def _read_config(doc: Document, preset_id: str) -> tuple[Model, dict[str, Any]]:
    cfg = Fields(doc, limit=MAX_SIZE)
    model_type, arch = read_architecture(cfg)
    model = Model(
        id=preset_id,
        name=preset_id,
        family=model_type,
        official_params=0,
        source=doc.path,
        **arch.__dict__,
    )
    return model, cfg.used()


def preset_from_config(
    doc: Document, name: str, source: str | None, official_params: int | None
) -> dict[str, Any]:
    """A model preset (as data to write) holding the config.json fields decodecalc read."""
    _, used = _read_config(doc, config_model_id(Path(doc.path)))
    preset: dict[str, Any] = {"name": name, "source": source or doc.path}
    if official_params:
        preset["official_params"] = official_params
    preset["config"] = used
    return preset


GPU_FIELDS = (
    "name",
    "aliases",
    "source",
    "bandwidth",
    "memory",
    "memory_source",
    "flops",
    "vendor",
    "memory_kind",
    "notes",
    "flops_source",
    "link",
    "sustained_bandwidth",
    "sustained_source",
    "family",
    "power_w",
    "power_source",
    "announced",
)
"""Every field a GPU preset may give (Fields.known): any other key is refused first, with
the nearest of these names."""


def load_gpu(doc: Document, preset_id: str) -> GpuSpec:
    top = Fields(doc, known=GPU_FIELDS)
    name, aliases, source = _common(top)
    bandwidth = _parsed(top, "bandwidth", parse_bandwidth)
    memory = _parsed(top, "memory", parse_size)
    # where the device-reported capacity was seen; "nominal" where none was
    memory_nominal = top.text("memory_source", "").startswith("nominal")
    flops: list[tuple[str, int]] = []
    if top.has("flops"):
        table = top.mapping("flops")
        for cls in ("bf16", "fp8", "fp4", "fp32"):
            if table.has(cls):
                flops.append((cls, _parsed(table, cls, parse_flops)))
    gpu = GpuSpec(
        id=preset_id,
        name=name,
        vendor=top.text("vendor"),
        bandwidth_bytes_per_s=bandwidth,
        memory_bytes=memory,
        memory_kind=top.text("memory_kind"),
        aliases=aliases,
        notes=top.text("notes", ""),
        source=source,
        flops_per_s=tuple(flops),
        flops_source=top.text("flops_source", ""),
        link=top.text("link", "") or None,
        sustained_bandwidth_bytes_per_s=_sustained(top),
        sustained_source=top.text("sustained_source", ""),
        family=_family(top),
        memory_nominal=memory_nominal,
        power_w=_power(top),
        power_source=top.text("power_source", ""),
        announced=top.text("announced", ""),
    )
    top.finish()
    return gpu


def _power(top: Fields) -> float | None:
    """The board power (TDP) in watts, when the preset gives one."""
    if not top.has("power_w"):
        top.read.add("power_w")
        return None
    return float(top.fraction("power_w", int(MAX_POWER_W)))


PRICES_FIELDS = (
    "name",
    "aliases",
    "source",
    "date",
    "prices",
    "notes",
)
"""Every field a price list may give (Fields.known): any other key is refused first, with
the nearest of these names."""


def load_prices(doc: Document, preset_id: str) -> PriceList:
    """A price list: one cloud's on-demand dollars per GPU-hour, by GPU preset id, with the
    page they were read from and the date they were read (prices change)."""
    top = Fields(doc, known=PRICES_FIELDS)
    name, aliases, source = _common(top)
    date = top.text("date")
    table = top.mapping("prices")
    prices = tuple(
        (str(gpu).lower(), float(table.fraction(str(gpu), int(MAX_PRICE)))) for gpu in table.data
    )
    if not prices:
        raise top.error("prices", "list at least one GPU preset id with its price per GPU-hour")
    listing = PriceList(
        id=preset_id,
        name=name,
        source=source,
        date=date,
        prices=prices,
        notes=top.text("notes", ""),
        aliases=aliases,
    )
    top.read.add("prices")
    top.finish()
    return listing


def _family(top: Fields) -> str:
    from decodecalc.engine.profile import GPU_FAMILIES

    value = top.text("family", "")
    if value and value not in GPU_FAMILIES:
        raise top.error(
            "family", f"expected one of {', '.join(GPU_FAMILIES)}, got {fragment(value)}"
        )
    return value


MAX_BITS = 64
"""Bits per stored value, scales included: no format stores more than FP64."""


DTYPE_FIELDS = (
    "name",
    "aliases",
    "source",
    "bits",
    "scale_bits",
    "block_size",
    "block_bytes",
    "average_bits",
    "scale_per",
    "kv_cache",
    "weights",
    "layer_kind",
    "matmul",
    "compute",
    "description",
)
"""Every field a dtype preset may give (Fields.known): any other key is refused first, with
the nearest of these names."""


def load_dtype(doc: Document, preset_id: str) -> DType:
    """A dtype gives its cost one of three ways: ``bits`` (plus ``scale_bits`` per
    ``block_size`` values), ``block_bytes`` per ``block_size`` (GGUF), or
    ``average_bits`` for a mixture of formats."""
    top = Fields(doc, known=DTYPE_FIELDS)
    name, aliases, source = _common(top)
    forms = [f for f in ("bits", "block_bytes", "average_bits") if top.has(f)]
    if len(forms) != 1:
        raise top.error(None, "give exactly one of bits, block_bytes or average_bits")
    head_scale_bits, head_width = Fraction(0), 0
    per_head = _scale_per_head(top)
    if per_head and not (forms == ["bits"] and top.has("scale_bits")):
        raise top.error("scale_per", "head needs bits with scale_bits per block_size values")
    if forms == ["bits"]:
        bits = top.fraction("bits", MAX_BITS)
        if top.has("scale_bits"):
            scale_bits, block = top.fraction("scale_bits", MAX_BITS), top.integer("block_size")
            bits += scale_bits / block
            if per_head:
                head_scale_bits, head_width = scale_bits, block
    elif forms == ["block_bytes"]:
        bits = top.fraction("block_bytes", MAX_BITS * 2**20) * 8 / top.integer("block_size")
    else:
        bits = top.fraction("average_bits", MAX_BITS)
    if bits > MAX_BITS:
        raise top.error(forms[0], f"gives {float(bits):g} bits per value; at most {MAX_BITS}")
    dtype = DType(
        id=preset_id,
        name=name,
        bits_per_value=bits,
        kv_cache=top.boolean("kv_cache", default=False),
        matmul=_matmul(top),
        compute=top.boolean("compute", default=False),
        mixture=forms == ["average_bits"],
        description=top.text("description"),
        aliases=aliases,
        source=source,
        weights=top.boolean("weights", default=True),
        layer_kind=top.text("layer_kind", "") or None,
        head_scale_bits=head_scale_bits,
        head_width=head_width,
    )
    top.finish()
    return dtype


def _scale_per_head(top: Fields) -> bool:
    """``scale_per: head``: the scales cover one head of each token, ``block_size`` being
    the head width the bits are counted at (LMDeploy's KV); ``block`` (the default): fixed
    blocks of ``block_size`` values."""
    value = top.text("scale_per", "block")
    if value not in ("block", "head"):
        raise top.error("scale_per", f"expected block or head, got {fragment(value)}")
    return value == "head"


RECIPE_FIELDS = (
    "name",
    "aliases",
    "source",
    "default",
    "groups",
    "description",
)
"""Every field a weight recipe may give (Fields.known): any other key is refused first, with
the nearest of these names."""


def load_recipe(doc: Document, preset_id: str) -> WeightRecipe:
    """A weight recipe: a ``default`` dtype and, under ``groups``, tensor groups stored in
    another: a dtype id, or a mapping of dtype ids to whole-number parts of the group's
    parameters (``{q4-k: 5, q6-k: 1}``: five sixths Q4_K, one sixth Q6_K)."""
    top = Fields(doc, known=RECIPE_FIELDS)
    name, aliases, source = _common(top)
    overrides: list[tuple[str, Mix]] = []
    if top.has("groups"):
        groups = top.mapping("groups")
        overrides = [(_group(groups, str(g)), _mix(groups, str(g))) for g in groups.data]
    recipe = WeightRecipe(
        id=preset_id,
        name=name,
        default=top.text("default"),
        overrides=tuple(overrides),
        description=top.text("description"),
        source=source,
        aliases=aliases,
    )
    top.read.add("groups")
    top.finish()
    return recipe


def _group(groups: Fields, name: str) -> str:
    if name not in GROUP_NAMES:
        hint = suggest(name, list(GROUP_NAMES)) or f"; known: {', '.join(GROUP_NAMES)}"
        raise groups.error(name, f"no tensor group has this name{hint}")
    return name


def _mix(groups: Fields, name: str) -> Mix:
    if not isinstance(groups.data[name], dict):
        return ((groups.text(name), Fraction(1)),)
    parts = groups.mapping(name)
    return tuple((str(d), Fraction(parts.integer(str(d)))) for d in parts.data)


def _sustained(top: Fields) -> int | None:
    if not top.has("sustained_bandwidth"):
        top.read.add("sustained_bandwidth")
        return None
    return _parsed(top, "sustained_bandwidth", parse_bandwidth)


def _matmul(top: Fields) -> str:
    value = top.text("matmul", "bf16")
    if value not in ("bf16", "fp8", "fp4", "fp32"):
        raise top.error("matmul", f"expected bf16, fp8, fp4 or fp32, got {fragment(value)}")
    return value


LINK_FIELDS = (
    "name",
    "aliases",
    "source",
    "bandwidth",
    "latency",
    "latency_source",
    "gpus",
    "notes",
)
"""Every field a link preset may give (Fields.known): any other key is refused first, with
the nearest of these names."""


def load_link(doc: Document, preset_id: str) -> Link:
    top = Fields(doc, known=LINK_FIELDS)
    name = top.text("name")
    bandwidth = _parsed(top, "bandwidth", parse_bandwidth)
    latency = _parsed(top, "latency", lambda text: parse_duration(text, "latency"))
    link = Link(
        id=preset_id,
        name=name,
        bandwidth_bytes_per_s=bandwidth,
        latency_s=latency,
        source=top.text("source"),
        aliases=top.texts("aliases"),
        gpus=top.optional_integer("gpus"),
    )
    top.text("latency_source", "")
    top.text("notes", "")
    top.finish()
    return link


def load_engine(doc: Document, preset_id: str) -> EngineProfile:
    """An engine profile: per GPU family, the efficiencies and fixed costs fitted on
    measured points (see validation/ and validation/fit_engines.py), and per release line
    those fitted on the line's own points.

    Families and lines are parsed on first use, which a query needs of one family only.
    A document read from its file is checked whole at once, so that its errors name a
    line and column and only a whole-checked document reaches the cache
    (loading/cache.py); one from the cache was checked so when it was stored."""
    from decodecalc.engine.profile import GPU_FAMILIES, EngineProfile, release_order

    top = Fields(doc)
    name, aliases, source = _common(top)
    families = _pending_families(top.mapping("families"))
    if not families.names:
        raise top.error(
            "families", f"give parameters for at least one of {', '.join(GPU_FAMILIES)}"
        )
    has_lines = top.has("lines")
    top.read.add("lines")
    versions, notes = top.texts("versions"), top.text("notes", "")
    serving = _serving(top.mapping("serving"), name) if top.has("serving") else None
    top.finish()
    if not doc.cached:
        for family in families.names:
            families.parse(family)
    pending_lines, dates = None, None
    if has_lines:
        table = top.mapping("lines")  # after finish: read, and checked, on first use

        @functools.cache
        def lines() -> tuple[ReleaseLine, ...]:
            found = []
            for release in table.data:
                if not isinstance(release, str) or not release_order(release):
                    raise table.error(
                        str(release), "a release line holds numbers ('0.10', '2024-05')"
                    )
                found.append(_line(table.mapping(release), release))
            table.finish()
            return tuple(sorted(found, key=lambda x: release_order(x.release)))

        if not doc.cached:
            for line in lines():
                for family in line.family_names:
                    line.family(family)
        pending_lines, dates = lines, latest_dates(table.data)
    # Built once its lines are known: a profile built and then replaced costs each query a
    # record's construction and checks per profile.
    return EngineProfile(
        id=preset_id,
        name=name,
        pending_families=families,
        versions=versions,
        source=source,
        notes=notes,
        aliases=aliases,
        serving=serving,
        pending_lines=pending_lines,
        latest_dates=dates,
    )


def latest_dates(lines: dict[Any, Any]) -> tuple[tuple[str, str], ...]:
    """For each GPU family a line holds parameters of its own on (not transferred), the
    latest date such a line carries, read from the document without parsing the lines
    (checked when they are): engine/select.py recent_on parses a profile's lines only
    where one may be recent."""
    found: dict[str, str] = {}
    for line in lines.values():
        if not isinstance(line, dict) or not isinstance(line.get("families"), dict):
            continue
        days = [str(day) for day in line.get("dates") or ()]
        for family, params in line["families"].items():
            if days and not (isinstance(params, dict) and params.get("transferred")):
                found[str(family)] = max([*days, found.get(str(family), "")])
    return tuple(sorted(found.items()))


def _line(f: Fields, release: str) -> ReleaseLine:
    """A release line: its versions and dates, and parameters on the families it was
    fitted on by itself."""
    from decodecalc.engine.profile import ReleaseLine

    return ReleaseLine(
        release,
        versions=f.texts("versions"),
        dates=f.texts("dates"),
        points=f.integer("points", default=0, minimum=0),
        pending_families=_pending_families(f.mapping("families")) if f.has("families") else None,
    )


def _pending_families(table: Fields) -> PendingFamilies:
    """A profile's or a line's families, named and checked for unknown keys now, each
    parsed when first asked for (ByFamily.family)."""
    from decodecalc.engine.profile import PendingFamilies

    names = _family_names(table)
    table.read.update(names)
    table.finish()
    parsed: dict[str, EngineParams] = {}

    def parse(family: str) -> EngineParams:
        # (a dict, not functools.cache: its wrapper copies name and docstring, 17K
        # instructions for each of the two dozen families a query sets pending)
        if family not in parsed:
            parsed[family] = _params(table, family)
        return parsed[family]

    return PendingFamilies(
        names,
        parse,
        # (checked already: a document is cached, or read at all, only once parsed whole)
        lambda family: table.data[family].get("points") or 0,
        lambda family: tuple((table.data[family].get("range") or {}).get("lines") or ()),
    )


def _family_names(table: Fields) -> tuple[str, ...]:
    from decodecalc.engine.profile import GPU_FAMILIES

    return tuple(family for family in GPU_FAMILIES if table.has(family))


def _params(table: Fields, family: str) -> EngineParams:
    """One GPU family's parameters in a profile or a release line."""
    from decodecalc.engine.profile import KV_READS, MMA_EFFICIENCY, TILE_ROWS, EngineParams

    f = table.mapping(family)
    kv_read = f.text("kv_read", "once")
    if kv_read not in KV_READS:
        raise f.error("kv_read", f"expected one of {', '.join(KV_READS)}, got {fragment(kv_read)}")
    params = EngineParams(
        weight_efficiency=_efficiency(f, "weight_efficiency"),
        kv_efficiency=_efficiency(f, "kv_efficiency"),
        per_layer_s=_duration(f, "per_layer") or 0.0,
        per_step_s=_duration(f, "per_step") or 0.0,
        per_moe_layer_s=_duration(f, "per_moe_layer") or 0.0,
        per_sequence_s=_duration(f, "per_sequence") or 0.0,
        per_ffn_pass_s=_duration(f, "per_ffn_pass") or 0.0,
        per_running_s=_duration(f, "per_running") or 0.0,
        per_mixer_sequence_s=_duration(f, "per_mixer_sequence") or 0.0,
        per_state_sequence_s=_duration(f, "per_state_sequence") or 0.0,
        allreduce_latency_s=_duration(f, "allreduce_latency"),
        kv_read=kv_read,
        band=_band(f),
        points=f.integer("points", default=0, minimum=0),
        prefill_efficiency=(
            _efficiency(f, "prefill_efficiency") if f.has("prefill_efficiency") else 1.0
        ),
        per_request_s=_duration(f, "per_request") or 0.0,
        mma_efficiency=(
            _efficiency(f, "mma_efficiency") if f.has("mma_efficiency") else MMA_EFFICIENCY
        ),
        tile_rows=f.integer("tile_rows", default=TILE_ROWS, minimum=1),
        mma_fitted=f.boolean("mma_fitted", False),
        range=_range(f.mapping("range")) if f.has("range") else None,
        transferred=f.text("transferred", ""),
        moe_factor=f.real("moe_factor", MAX_BAND) if f.has("moe_factor") else 1.0,
        lent=_lent(f),
    )
    f.text("fitted", "")
    f.finish()
    return params


def _lent(f: Fields) -> tuple[str, ...]:
    """The fixed costs a parameter set took from its family's pooled fit (EngineParams.lent),
    each one of FIXED_COSTS."""
    from decodecalc.engine.profile import FIXED_COSTS

    lent = f.texts("lent")
    for name in lent:
        if name not in FIXED_COSTS:
            known = ", ".join(FIXED_COSTS)
            raise f.error("lent", f"expected some of {known}, got {fragment(name)}")
    return lent


def _band(f: Fields) -> tuple[float, float]:
    band = (f.real("band_low", 1), f.real("band_high", MAX_BAND))
    if band[1] < 1:
        raise f.error("band_high", f"must be at least 1, got {band[1]}")
    return band


def _range(f: Fields) -> FitRange:
    """What a parameter set was fitted on ([min, max] pairs), and its band outside it."""
    from decodecalc.engine.profile import FitRange

    def pair(key: str) -> tuple[int, int]:
        found = f.raw_list(key)
        if len(found) != 2 or not 0 <= found[0] <= found[1]:
            raise f.error(key, f"expected [smallest, largest], got {list(found)}")
        return found[0], found[1]

    params, batch, context = pair("params"), pair("batch"), pair("context")
    return FitRange(
        params_min=params[0],
        params_max=params[1],
        kinds=f.texts("kinds"),
        batch_min=batch[0],
        batch_max=batch[1],
        context_min=context[0],
        context_max=context[1],
        gpus=f.texts("gpus"),
        lines=f.texts("lines"),
        outside_band=_band(f),
        sizes=_sizes(f, params),
    )


def _sizes(f: Fields, params: tuple[int, int]) -> tuple[int, ...]:
    """Each fitted model's parameters (optional: a range without them checks the pair),
    ascending and within the ``params`` pair."""
    sizes = f.raw_list("sizes")
    if list(sizes) != sorted(sizes) or any(not params[0] <= s <= params[1] for s in sizes):
        raise f.error("sizes", f"expected ascending sizes within {list(params)}, got {list(sizes)}")
    return sizes


def _serving(f: Fields, engine: str) -> ServingDefaults:
    """An engine's hand-written scheduler defaults: each value a mapping of ``value`` and the
    ``source`` (engine file and version) it was read from."""
    from decodecalc.engine.limits import MAX_SCHEDULER_LIMIT
    from decodecalc.engine.profile import GpuRule, ServingDefaults

    def sourced(name: str) -> Fields:
        entry = f.mapping(name)
        entry.text("source")
        return entry

    def count(name: str) -> int:
        return sourced(name).integer("value", maximum=MAX_SCHEDULER_LIMIT)

    def size(name: str) -> int:
        return _parsed(sourced(name), "value", parse_size)

    large_gpu = None
    if f.has("large_gpu"):
        g = sourced("large_gpu")
        large_gpu = GpuRule(
            min_memory_bytes=_parsed(g, "min_memory", parse_size),
            excluded=tuple(word.lower() for word in g.texts("except")),
            max_num_batched_tokens=g.integer("max_num_batched_tokens", maximum=MAX_SCHEDULER_LIMIT),
            max_num_seqs=g.integer("max_num_seqs", maximum=MAX_SCHEDULER_LIMIT),
        )
    return ServingDefaults(
        max_num_batched_tokens=count("max_num_batched_tokens"),
        max_num_seqs=count("max_num_seqs"),
        block_size=count("block_size"),
        memory_utilization=float(sourced("memory_utilization").fraction("value", 1)),
        reserve_bytes=size("reserve"),
        tp_reserve_bytes=size("tp_reserve"),
        source=f"{engine} {f.text('version')} defaults",
        large_gpu=large_gpu,
    )


MAX_BAND = 100
"""An engine band wider than 100x says the fit failed."""


def _duration(f: Fields, key: str) -> float | None:
    if not f.has(key):
        f.read.add(key)
        return None
    return _parsed(f, key, lambda text: _seconds(text, key))


@functools.cache
def _seconds(text: str, key: str) -> float:
    """parse_duration, once per text and field: a query reads a dozen parameter sets, and
    most of their durations repeat (0.00us, a family's shared costs), each read exactly
    (a dozen microseconds apiece). A text it refuses is not kept: it raises again."""
    return parse_duration(text, key)


def _efficiency(f: Fields, key: str) -> float:
    value = f.real(key, 1)
    if not value >= 0.001:
        raise f.error(key, f"expected a fraction from 0.001 to 1, got {value}")
    return value


LOADERS: dict[str, Callable[[Document, str], object]] = {
    "models": load_model,
    "gpus": load_gpu,
    "dtypes": load_dtype,
    "links": load_link,
    "engines": load_engine,
    "recipes": load_recipe,
    "prices": load_prices,
}


def preset_id_of(path: Path) -> str:
    return path.stem.lower()


NUMBERS_PREFIX = "numbers:"
"""How the id of a model or GPU given by numbers starts (loading/numbers.py builds them;
resolve tells them by it, without importing that reader for a preset query)."""


def config_model_id(path: Path) -> str:
    """``models/Llama-3.1-8B/config.json`` is ``llama-3.1-8b``; ``qwen3.json`` is ``qwen3``."""
    stem = path.resolve().parent.name if path.stem == "config" else path.stem
    return stem.lower() or "model"
