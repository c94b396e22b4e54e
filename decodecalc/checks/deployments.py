"""Deployment files for `decodecalc check`: ours, and vLLM serve configs.

A file is read in one pass that collects every problem (unknown keys, wrong types,
unknown presets, duplicate keys) with its file:line:column, so a user fixes them all at
once. Each setting remembers where it came from: a deployment's own mapping, the file's
``defaults:``, a vLLM config it points at, or the command line.
"""

from __future__ import annotations

from collections.abc import Callable
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING, Any

from decodecalc.checks.pools import PoolSettings, read_pools
from decodecalc.checks.settings import (
    Problems,
    Setting,
    Settings,
    context_list,
    efficiency_setting,
    flag,
    locate,
    locate_key,
    number,
    show,
    text,
    tokens,
    whole,
)
from decodecalc.checks.targets import SERVING_TARGETS, Targets
from decodecalc.checks.vllm import (
    VLLM_ENGINE,
    ServeConfig,
    default_batch_note,
    looks_like_vllm,
    read_serve_config,
)
from decodecalc.checks.workloads import read_fields, read_workload
from decodecalc.engine.scheduler import SchedulerLimits, scheduler_limits
from decodecalc.errors import InputError, InputErrors
from decodecalc.loading.catalog import Catalog
from decodecalc.loading.datafile import Document, KeyPath, parse_yaml, read_yaml
from decodecalc.loading.fields import suggest
from decodecalc.notes import Note
from decodecalc.paths import expand_user
from decodecalc.record import record, replace
from decodecalc.resolving.resolve import LINK_OPTIONS, resolve, unused_link
from decodecalc.scenarios.fields import SCENARIO_FIELDS, ScenarioField
from decodecalc.scenarios.scenario import Scenario
from decodecalc.scenarios.spec import ScenarioSpec
from decodecalc.scenarios.workload import Workload, keys_under
from decodecalc.units import ascii_float, parse_bandwidth, parse_duration

if TYPE_CHECKING:
    from decodecalc.answers.disaggregated import Pools

DEPLOYMENT_KEYS = (
    "name",
    *(field.name for field in SCENARIO_FIELDS if field.in_files),
    "context",
    "targets",
    "vllm_config",
    *keys_under(),
)
"""A deployment's keys: its name, the scenario fields (scenarios/fields.py), its contexts,
targets and vLLM config, and the serving fields' (scenarios/workload.py)."""
TOP_KEYS = ("deployments", "defaults")


@record
class Deployment:
    """One deployment ready to check."""

    file: str
    """The file it was read from, as messages and reports name it."""
    name: str
    scenario: Scenario
    contexts: tuple[int, ...]
    """Where its targets are held: the file's contexts, else the model's maximum."""
    targets: Targets
    notes: tuple[Note, ...] = ()
    """What its vLLM config says that a reader of the figures must know."""
    startup_fit: bool = False
    """A vLLM config given no targets: check what vLLM checks when it starts instead."""
    workload: Workload | None = None
    """The traffic the serving targets are held under (checks/workloads.py)."""
    limits: SchedulerLimits | None = None
    """The server's scheduler limits: its engine's defaults, or what the file sets."""
    serve_config: str | None = None
    """The vLLM config its vllm_config names, as a path (None: none): a run given both
    files checks the config through this deployment, which names the GPU."""
    pools: Pools | None = None
    """Disaggregated serving: its prefill and decode pools (checks/pools.py); the
    scenario is then the decode worker's."""
    batch_is_cap: bool = False
    """The batch is a vLLM config's max-num-seqs (set or vLLM's default): a cap on the
    requests vLLM runs at once, which it starts with whatever memory holds, not a load."""


class SharedLinks:
    """The interconnect settings of a file's ``defaults:``, and whether any deployment
    that takes one prices something with it. A default reaches deployments of every size,
    so a single-GPU one leaving it unused does not make it wrong; it is refused, as the
    command line refuses an option no scenario of its grid uses, only where no deployment
    that takes it uses it. (A deployment's own setting is refused where it is unused.)"""

    def __init__(self, defaults: Settings) -> None:
        self.given = {name: defaults[name] for name in LINK_OPTIONS if name in defaults}
        self.used: set[str] = set()
        self.unused: dict[str, str] = {}
        """Why a default prices nothing, as the first deployment that leaves it unused says."""

    def taken(self, settings: Settings) -> set[str]:
        """The link settings a deployment takes from the defaults: the same Setting, not
        one of its own (or its vLLM config's) of that name."""
        return {name for name, setting in self.given.items() if settings.get(name) is setting}

    def record(self, links: dict[str, Any], uses: list[tuple[int, bool]], kv: bool) -> None:
        """Which of the defaults' ``links`` a deployment of ``uses`` prices with."""
        for name, value in links.items():
            why = unused_link({name: value}, uses, kv, lambda key: key)
            if why is None:
                self.used.add(name)
            else:
                self.unused.setdefault(name, why)

    def problems(self) -> list[str]:
        """A default no deployment that takes it uses, at its line."""
        return [
            f"{self.given[name].where}: {why.split(' ', 1)[1]}"
            for name, why in self.unused.items()
            if name not in self.used
        ]


Entry = tuple[Settings, Settings, KeyPath]
"""A deployment's own settings, the settings it starts from, and where it is in the file."""
Getter = Callable[[str, Callable[[Any], Any]], Any]


def _settings(
    doc: Document, mapping: Any, key_path: KeyPath, known: tuple[str, ...], problems: Problems
) -> Settings:
    """A mapping's values with their positions; unknown keys are problems."""
    at = locate(doc, key_path)
    if not isinstance(mapping, dict):
        problems.items.append(f"{at}: expected a mapping, got {type(mapping).__name__}")
        return {}
    found = {}
    for key, value in mapping.items():
        path = (*key_path, str(key))
        if key not in known:
            hint = suggest(str(key), list(known)) or "; valid: " + ", ".join(known)
            problems.items.append(f"{locate_key(doc, path)}: unknown key{hint}")
        elif value is not None:
            found[str(key)] = Setting(value, locate(doc, path))
    return found


def _targets(settings: Settings, problems: Problems, doc: Document, key_path: KeyPath) -> Targets:
    values: dict[str, Any] = {}
    raw = settings.get("targets")
    if raw is None:
        return Targets()
    found = _settings(doc, raw.value, (*key_path, "targets"), Targets.names(), problems)
    for name, setting in found.items():
        values[name] = problems.attempt(setting.where, partial(_target, name, setting.value))
    return Targets(**{k: v for k, v in values.items() if v is not None})


def _target(name: str, value: Any) -> Any:
    if name == "must_fit":
        if not isinstance(value, bool):
            raise InputError(f"expected true or false, got {show(value)}")
        return value
    if name == "min_crossover_context":
        return tokens(value)
    found = number(value)
    if name == "max_kv_share" and not 0 < found <= 1:
        raise InputError(f"a share is above 0 and at most 1, got {show(value)}")
    return found


KIND_READERS: dict[str, Callable[..., Any]] = {
    "text": lambda v, what: text(v),
    "rate": lambda v, what: parse_bandwidth(text(v)),
    "time": lambda v, what: parse_duration(text(v), what),
    "flag": lambda v, what: flag(v),
    "fraction": lambda v, what: number(v),
    "efficiency": lambda v, what: efficiency_setting(v),
}
"""A file's value of each kind of scenario field (scenarios/fields.py KINDS), checked."""


def _serve_defaults(
    given: dict[str, Any], settings: Settings, serve: ServeConfig, problems: Problems
) -> None:
    """What a vLLM config implies beyond its settings: vLLM serves it; its decode batch is
    max-num-seqs when nothing else gives one; a MoE model's data-parallel ranks are
    data-parallel attention, the experts spread over every rank's GPUs, each rank
    scheduling its own max-num-seqs (so the group's batch is that many times the ranks)."""
    given["engine"] = given.get("engine") or VLLM_ENGINE
    if "batch" not in settings:
        given["batch"] = serve.default_batch(given.get("gpu"))
    replicas = settings["data_parallel_size"].value if "data_parallel_size" in settings else None
    model = given.get("model")
    if not (isinstance(replicas, int) and replicas > 1 and model is not None and model.moe()):
        return
    tp = given.get("tp")
    if tp is not None and tp > 1:
        problems.items.append(
            f"{settings['data_parallel_size'].where}: data-parallel attention with "
            "tensor-parallel-size > 1 inside each rank is not modelled: give "
            "tensor-parallel-size 1 (decodecalc's dp_attention has one GPU per rank)"
        )
    given["tp"], given["dp_attention"] = replicas, True
    if given.get("batch") is not None:
        given["batch"] *= replicas


SCHEDULER_KEYS = ("max_num_batched_tokens", "max_num_seqs")
"""The serving fields a deployment sets its server's scheduler limits with."""


def _limits(
    problems: Problems, given: dict[str, Any], settings: Settings, serve: ServeConfig | None
) -> dict[str, Any]:
    """The scheduler limits a file sets; a vLLM config's max-num-seqs defaults as its
    decode batch does."""
    limits: dict[str, Any] = dict.fromkeys(SCHEDULER_KEYS)
    limits.update(read_fields({k: v for k, v in settings.items() if k in limits}, (), problems))
    limits["memory_utilization"] = given.get("memory_utilization")
    if serve is not None and "max_num_seqs" not in settings:
        limits["max_num_seqs"] = serve.default_batch(given.get("gpu"))
    return limits


def _missing(
    where: str,
    name: str,
    settings: Settings,
    targets: Targets,
    startup_check: bool,
    earlier: bool,
) -> list[str]:
    """What a deployment lacks: a workload for its serving targets, a model, a GPU, and,
    when nothing else is wrong (``earlier``: problems found already), any target at all
    (unless it is a vLLM config checked alone, at start-up)."""
    found = []
    serving = [t for t in targets.asked() if t in SERVING_TARGETS]
    if serving and "workload" not in settings:
        found.append(
            f"{where}: {name}: {', '.join(serving)} needs a workload: (concurrency or "
            "request_rate, input_len and output_len)"
        )
    if "model" not in settings:
        found.append(f"{where}: missing model (a preset name or a file)")
    if "gpu" not in settings and "bandwidth" not in settings:
        found.append(f"{where}: missing gpu (or bandwidth); vLLM configs take --gpu")
    if not targets.asked() and not startup_check and not earlier and not found:
        found.append(f"{where}: {name}: no targets to check")
    return found


def _named_in(where: str, settings: Settings) -> Callable[[str], str]:
    """Where a problem of the resolved scenario points: at the setting its message starts
    with ("tp 3 does not split ...": the tp line), else at the deployment."""

    def at(message: str) -> str:
        setting = settings.get(message.split(" ", 1)[0])
        return where if setting is None else setting.where

    return at


class DeploymentReader:
    """Reads deployment and vLLM files against one catalog, with command-line overrides."""

    def __init__(
        self,
        catalog: Catalog,
        gpu: str | None = None,
        targets: dict[str, str] | None = None,
        engine: str | None = None,
    ) -> None:
        self.catalog = catalog
        self.gpu = gpu
        self.gpu_taken = False
        """Whether a deployment read so far took --gpu (one that names its own does not)."""
        self.cli_targets = targets or {}
        self.engine = engine
        """--engine: for deployments that name none (a vLLM config implies vllm)."""
        problems = Problems()  # a bad --target is said once, not once per deployment
        self._cli_targets(Targets(), problems)
        if problems.items:
            raise InputErrors(problems.items)

    def read(self, path: Path) -> list[Deployment]:
        """Every deployment in a file, or InputErrors listing every problem in it."""
        return self.read_document(read_yaml(path, keep_duplicates=True))

    def read_text(self, content: str, name: str) -> list[Deployment]:
        """Every deployment in a text (standard input), called ``name`` in messages."""
        return self.read_document(parse_yaml(content, name, keep_duplicates=True))

    def read_document(self, doc: Document) -> list[Deployment]:
        problems = Problems()
        problems.items.extend(doc.duplicates)
        serve_file = looks_like_vllm(doc.data)
        entries: list[Entry] = [({}, {}, ())] if serve_file else self._entries(doc, problems)
        shared = SharedLinks(entries[0][1] if entries else {})  # (each entry's defaults)
        deployments = [
            d
            for index, entry in enumerate(entries)
            if (d := self._read_entry(doc, entry, index, problems, serve_file, shared)) is not None
        ]
        if not problems.items:  # (a deployment not read may have been the one to use it)
            problems.items.extend(shared.problems())
        if problems.items:
            raise InputErrors(problems.items)
        return deployments

    def _read_entry(
        self,
        doc: Document,
        entry: Entry,
        index: int,
        problems: Problems,
        serve_file: bool,
        shared: SharedLinks,
    ) -> Deployment | None:
        """One deployment with the vLLM config it is, or points at, read into it."""
        own, base, key_path = entry
        pointer = {**base, **own}.get("vllm_config")
        serve_doc = doc if serve_file else self._pointed(doc, pointer, problems)
        if pointer is not None and serve_doc is None:
            return None  # the model and more were to come from it: nothing else to say
        if serve_doc is None:
            return self._build(doc, own, base, key_path, index, problems, shared)
        serve = read_serve_config(serve_doc, problems)
        start = {**base, **serve.settings}
        deployment = self._build(
            doc, own, start, key_path, index, problems, shared, serve, serve_file
        )
        if deployment is None:
            return None
        # Without targets, only a vLLM config checked alone gets here (see _build).
        asked = bool(deployment.targets.asked())
        notes = serve.notes
        if deployment.scenario.dp_attention:  # its ranks are not replicas: see _build
            notes = tuple(n for n in notes if n.code != "vllm-data-parallel")
        if asked and "batch" not in {**start, **own}:  # (a start-up check is at batch 1)
            notes = (*notes, default_batch_note(deployment.scenario.batch))
        if "speculative" in start and deployment.workload is None:
            notes = (*notes, UNPRICED_SPECULATION)
        pointed = None if pointer is None else str(self._relative(doc, str(pointer.value)))
        return replace(
            deployment,
            notes=notes,
            startup_fit=not asked,
            serve_config=pointed,
            batch_is_cap="batch" not in {**base, **own},
        )

    def _pointed(
        self, doc: Document, pointer: Setting | None, problems: Problems
    ) -> Document | None:
        """The vLLM config a deployment's vllm_config names (None: none, or unreadable)."""
        if pointer is None:
            return None
        path = self._relative(doc, str(pointer.value))
        # (its own messages name the vLLM file; the prefix says who pointed at it)
        found: Document | None = problems.attempt(
            pointer.where, lambda: read_yaml(path, keep_duplicates=True)
        )
        if found is not None:
            problems.items.extend(found.duplicates)
        return found

    def _entries(self, doc: Document, problems: Problems) -> list[Entry]:
        data = doc.data
        if not isinstance(data, dict):
            problems.items.append(f"{doc.path}: expected a deployment or a 'deployments:' list")
            return []
        if "deployments" not in data:
            return [(_settings(doc, data, (), DEPLOYMENT_KEYS, problems), {}, ())]
        top = _settings(doc, data, (), TOP_KEYS, problems)
        defaults = (
            _settings(doc, top["defaults"].value, ("defaults",), DEPLOYMENT_KEYS, problems)
            if "defaults" in top
            else {}
        )
        listing = data["deployments"]
        if not isinstance(listing, list) or not listing:
            problems.items.append(
                f"{locate(doc, ('deployments',))}: expected a list of deployments"
            )
            return []
        return [
            (
                _settings(doc, item, ("deployments", i), DEPLOYMENT_KEYS, problems),
                defaults,
                ("deployments", i),
            )
            for i, item in enumerate(listing)
        ]

    def _build(
        self,
        doc: Document,
        own: Settings,
        base: Settings,
        key_path: KeyPath,
        index: int,
        problems: Problems,
        shared: SharedLinks,
        serve: ServeConfig | None = None,
        startup_check: bool = False,
    ) -> Deployment | None:
        """One deployment, or None with its problems kept. ``serve`` is the vLLM config
        its settings start from, if any: it gives the batch when nothing else does; with
        ``startup_check`` (a vLLM config checked alone) no targets is no problem."""
        settings = {**base, **own}
        if self.gpu and "gpu" not in settings and "bandwidth" not in settings:
            settings["gpu"] = Setting(self.gpu, "--gpu")
            self.gpu_taken = True
        where = locate(doc, key_path) if key_path else doc.path
        before = len(problems.items)
        get = self._getter(settings, problems)
        stem = Path(doc.path).stem
        name = get("name", text) or (f"{stem}-{index + 1}" if key_path else stem)
        given = {
            field.name: get(field.name, self._reader(doc, field))
            for field in SCENARIO_FIELDS
            if field.in_files and field.name in settings
        }
        given["engine"] = given.get("engine") or self.engine
        if serve is not None:
            _serve_defaults(given, settings, serve, problems)
        contexts = get("context", context_list)
        targets = self._cli_targets(_targets(settings, problems, doc, key_path), problems)
        workload = read_workload(doc, settings, key_path, problems, self.catalog)
        limits = _limits(problems, given, settings, serve)
        earlier = len(problems.items) > before
        problems.items.extend(_missing(where, name, settings, targets, startup_check, earlier))
        model = given.get("model")
        if len(problems.items) > before or model is None:
            return None
        pooled = read_pools(doc, settings, key_path, problems)
        inherited = shared.taken(settings)  # judged over the file's deployments, not here
        at = _named_in(where, settings)
        found = self._resolved(at, given, limits, problems, pooled, shared, inherited)
        if found is None:
            return None
        scenario, server, pools = found
        return Deployment(
            pools=pools,
            file=doc.path,
            name=name,
            scenario=scenario,
            contexts=contexts or (model.max_context_tokens,),
            targets=targets,
            workload=workload,
            limits=server,
        )

    def _resolved(
        self,
        at: Callable[[str], str],
        given: dict[str, Any],
        limits: dict[str, Any],
        problems: Problems,
        pooled: PoolSettings | None,
        shared: SharedLinks,
        inherited: set[str],
    ) -> tuple[Scenario, SchedulerLimits, Pools | None] | None:
        """The scenario the settings describe (the decode worker's, with ``pooled``
        disaggregated pools, which are built too) and the server's scheduler limits, or
        None with the problem kept, where ``at`` places it. The link settings it
        takes from the file's defaults (``inherited``) are recorded in ``shared``, judged
        over every deployment, not refused here."""
        if pooled is not None:
            given = {**given, **pooled.decode}
        spec = ScenarioSpec(**{k: v for k, v in given.items() if v is not None})
        try:
            scenario = resolve(spec, self.catalog)
        except InputErrors as exc:
            problems.items.extend(exc.problems)
            return None
        except InputError as exc:
            problems.items.append(f"{at(str(exc))}: {exc}")
            return None
        links = {k: given[k] for k in LINK_OPTIONS if given.get(k) is not None}
        carries_kv = pooled is not None and pooled.kv_link is None
        uses = [(scenario.gpus, scenario.node_link is not None)]
        shared.record({k: v for k, v in links.items() if k in inherited}, uses, carries_kv)
        own = {k: v for k, v in links.items() if k not in inherited}
        unused = unused_link(own, uses, carries_kv, lambda name: name)
        if unused is not None:  # as the command line's options are refused; at its line
            problems.items.append(f"{at(unused)}: {unused.split(' ', 1)[1]}")
            return None
        where = at("")
        given_limits = {k: v for k, v in limits.items() if v is not None}
        server: SchedulerLimits | None = problems.attempt(
            where, lambda: scheduler_limits(scenario.engine, scenario.gpu, **given_limits)
        )
        if server is None:
            return None
        if pooled is None:
            return scenario, server, None
        pools = problems.attempt(where, lambda: pooled.build(spec, scenario, self.catalog))
        return None if pools is None else (scenario, server, pools)

    def _reader(self, doc: Document, field: ScenarioField) -> Callable[[Any], Any]:
        """How a file's value of a scenario field is read: looked up in the catalog where
        it names a preset (so a misspelt name points at its own line), else by its kind."""
        lookups: dict[str | None, Callable[[str], Any]] = {
            "model": lambda v: self.catalog.model(self._model_ref(doc, v)),
            "gpu": self.catalog.gpu,
            "weights": self.catalog.weights,
            "dtype": self.catalog.dtype,
        }
        lookup = lookups.get(field.preset)
        if lookup is not None:
            return lambda v: lookup(text(v))
        if field.kind == "count":
            return partial(whole, least=field.least)
        return partial(KIND_READERS[field.kind], what=field.name)

    def _getter(self, settings: Settings, problems: Problems) -> Getter:
        def get(key: str, convert: Callable[[Any], Any]) -> Any:
            setting = settings.get(key)
            if setting is None:
                return None
            return problems.attempt(setting.where, lambda: convert(setting.value))

        return get

    def _cli_targets(self, targets: Targets, problems: Problems) -> Targets:
        values = {name: getattr(targets, name) for name in targets.asked()}
        for name, given in self.cli_targets.items():
            where = f"--target {name}={given}"
            if name not in Targets.names():
                hint = suggest(name, list(Targets.names())) or "; valid: " + ", ".join(
                    Targets.names()
                )
                problems.items.append(f"{where}: unknown target{hint}")
                continue
            values[name] = problems.attempt(where, _cli_target(name, given))
        return Targets(**{k: v for k, v in values.items() if v is not None})

    @staticmethod
    def _relative(doc: Document, reference: str) -> Path:
        path = expand_user(reference)
        return path if path.is_absolute() else Path(doc.path).parent / path

    def _model_ref(self, doc: Document, reference: str) -> str:
        """A model file named in a deployment file is relative to that file."""
        if reference.endswith((".yaml", ".yml", ".json")):
            return str(self._relative(doc, reference))
        return reference


UNPRICED_SPECULATION = Note(
    "vllm-speculative-unpriced",
    "speculative-config: decode-step targets and the start-up check leave speculation out; "
    "a workload: with speculative: acceptance: prices it in the serving targets",
)


def _cli_target(name: str, given: str) -> Callable[[], Any]:
    return lambda: _target(name, _parse_cli_value(name, given))


def _parse_cli_value(name: str, given: str) -> Any:
    if name == "must_fit":
        lowered = given.lower()
        if lowered not in ("true", "false"):
            raise InputError(f"expected true or false, got {given!r}")
        return lowered == "true"
    if name == "min_crossover_context":
        return given
    try:
        return ascii_float(given)
    except ValueError:
        raise InputError(f"expected a number, got {given!r}") from None
