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
from typing import Any

from decodecalc.checks.settings import (
    Problems,
    Setting,
    Settings,
    context_list,
    efficiency_setting,
    flag,
    locate,
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
from decodecalc.checks.workloads import read_workload
from decodecalc.errors import InputError, InputErrors
from decodecalc.loading.catalog import Catalog
from decodecalc.loading.datafile import Document, KeyPath, parse_yaml, read_yaml
from decodecalc.loading.fields import suggest
from decodecalc.notes import Note
from decodecalc.paths import expand_user
from decodecalc.physics.estimator import Scenario
from decodecalc.physics.kv_pool import SchedulerLimits, scheduler_limits
from decodecalc.physics.serving import Workload
from decodecalc.record import record, replace
from decodecalc.scenario_spec import ScenarioSpec
from decodecalc.scenarios import resolve
from decodecalc.units import ascii_float, parse_bandwidth, parse_duration

DEPLOYMENT_KEYS = (
    "name",
    "model",
    "gpu",
    "bandwidth",
    "weights",
    "kv_dtype",
    "v_dtype",
    "batch",
    "tp",
    "pp",
    "ep",
    "dp_attention",
    "gpus_per_node",
    "node_link",
    "context",
    "efficiency",
    "memory_utilization",
    "overhead",
    "link",
    "engine",
    "targets",
    "vllm_config",
    "workload",
    "max_num_batched_tokens",
    "max_num_seqs",
)
TOP_KEYS = ("deployments", "defaults")


@record
class Deployment:
    """One deployment ready to check."""

    file: str
    name: str
    scenario: Scenario
    contexts: tuple[int, ...]
    targets: Targets
    notes: tuple[Note, ...] = ()
    """What its vLLM config says that a reader of the figures must know."""
    startup_fit: bool = False
    """A vLLM config given no targets: check what vLLM checks when it starts instead."""
    workload: Workload | None = None
    """The traffic the serving targets are held under (checks/workloads.py)."""
    limits: SchedulerLimits | None = None
    """The server's scheduler limits: its engine's defaults, or what the file sets."""


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
            problems.items.append(f"{locate(doc, path)}: unknown key{hint}")
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
        deployments = [
            d
            for index, entry in enumerate(entries)
            if (d := self._read_entry(doc, entry, index, problems, serve_file)) is not None
        ]
        if problems.items:
            raise InputErrors(problems.items)
        return deployments

    def _read_entry(
        self, doc: Document, entry: Entry, index: int, problems: Problems, serve_file: bool
    ) -> Deployment | None:
        """One deployment with the vLLM config it is, or points at, read into it."""
        own, base, key_path = entry
        pointer = {**base, **own}.get("vllm_config")
        serve_doc = doc if serve_file else self._pointed(doc, pointer, problems)
        if pointer is not None and serve_doc is None:
            return None  # the model and more were to come from it: nothing else to say
        if serve_doc is None:
            return self._build(doc, own, base, key_path, index, problems, None, False)
        serve = read_serve_config(serve_doc, problems)
        start = {**base, **serve.settings}
        deployment = self._build(doc, own, start, key_path, index, problems, serve, serve_file)
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
        return replace(deployment, notes=notes, startup_fit=not asked)

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
        serve: ServeConfig | None,
        startup_check: bool,
    ) -> Deployment | None:
        """One deployment, or None with its problems kept. ``serve`` is the vLLM config
        its settings start from, if any: it gives the batch when nothing else does; with
        ``startup_check`` (a vLLM config checked alone) no targets is no problem."""
        settings = {**base, **own}
        if self.gpu and "gpu" not in settings and "bandwidth" not in settings:
            settings["gpu"] = Setting(self.gpu, "--gpu")
        where = locate(doc, key_path) if key_path else doc.path
        before = len(problems.items)
        get = self._getter(settings, problems)
        stem = Path(doc.path).stem
        name = get("name", text) or (f"{stem}-{index + 1}" if key_path else stem)
        model = get("model", lambda v: self.catalog.model(self._model_ref(doc, text(v))))
        gpu = get("gpu", lambda v: self.catalog.gpu(text(v)))
        bandwidth = get("bandwidth", lambda v: parse_bandwidth(text(v)))
        weights = get("weights", lambda v: self.catalog.weights(text(v)))
        kv = get("kv_dtype", lambda v: self.catalog.dtype(text(v)))
        v_kv = get("v_dtype", lambda v: self.catalog.dtype(text(v)))
        batch = get("batch", whole)
        if serve is not None and "batch" not in settings:
            batch = serve.default_batch(gpu)
        tp = get("tp", whole)
        parallel = {
            "pp": get("pp", whole),
            "ep": get("ep", flag),
            "dp_attention": get("dp_attention", flag),
            "gpus_per_node": get("gpus_per_node", whole),
            "node_link": get("node_link", text),
        }
        given = settings.get("data_parallel_size")  # a vLLM config's, checked where read
        replicas = given.value if given is not None else None
        if isinstance(replicas, int) and replicas > 1 and model is not None and model.moe():
            # vLLM serves a MoE model's data-parallel ranks as data-parallel attention, the
            # experts spread over every rank's GPUs; each rank schedules its own
            # max-num-seqs, so the group's batch is that many times the ranks.
            if tp is not None and tp > 1:
                problems.items.append(
                    f"{settings['data_parallel_size'].where}: data-parallel attention with "
                    "tensor-parallel-size > 1 inside each rank is not modelled: give "
                    "tensor-parallel-size 1 (decodecalc's dp_attention has one GPU per rank)"
                )
            tp, parallel["dp_attention"] = replicas, True
            batch = None if batch is None else batch * replicas
        contexts = get("context", context_list)
        efficiency = get("efficiency", efficiency_setting)
        utilization = get("memory_utilization", number)
        overhead = get("overhead", lambda v: parse_duration(text(v), "overhead"))
        link_name = get("link", text)
        engine = get("engine", text) or self.engine
        if engine is None and serve is not None:
            engine = VLLM_ENGINE  # a vLLM serve config is served by vLLM
        targets = _targets(settings, problems, doc, key_path)
        targets = self._cli_targets(targets, problems)
        workload = read_workload(doc, settings, key_path, problems, self.catalog)
        limits = {
            "max_num_batched_tokens": get("max_num_batched_tokens", lambda v: whole(tokens(v))),
            "max_num_seqs": get("max_num_seqs", whole),
            "memory_utilization": utilization,
        }
        if serve is not None and "max_num_seqs" not in settings:
            limits["max_num_seqs"] = serve.default_batch(gpu)  # as the decode batch above
        serving = [t for t in targets.asked() if t in SERVING_TARGETS]
        if serving and "workload" not in settings:
            problems.items.append(
                f"{where}: {name}: {', '.join(serving)} needs a workload: (concurrency or "
                "request_rate, input_len and output_len)"
            )
        if model is None and "model" not in settings:
            problems.items.append(f"{where}: missing model (a preset name or a file)")
        if (
            gpu is None
            and bandwidth is None
            and "gpu" not in settings
            and "bandwidth" not in settings
        ):
            problems.items.append(f"{where}: missing gpu (or bandwidth); vLLM configs take --gpu")
        if not targets.asked() and not startup_check and len(problems.items) == before:
            problems.items.append(f"{where}: {name}: no targets to check")
        if len(problems.items) > before or model is None:
            return None
        spec = ScenarioSpec(
            model=model, gpu=gpu, bandwidth=bandwidth, link=link_name, engine=engine
        )
        chosen = {
            "weights": weights,
            "kv_dtype": kv,
            "v_dtype": v_kv,
            "batch": batch,
            "tp": tp,
            **parallel,
            "efficiency": efficiency,
            "memory_utilization": utilization,
            "overhead": overhead,
        }
        spec = replace(spec, **{k: v for k, v in chosen.items() if v is not None})
        scenario: Scenario | None = problems.attempt(where, lambda: resolve(spec, self.catalog))
        if scenario is None:
            return None
        given_limits = {k: v for k, v in limits.items() if v is not None}
        server: SchedulerLimits | None = problems.attempt(
            where, lambda: scheduler_limits(scenario.engine, scenario.gpu, **given_limits)
        )
        if server is None:
            return None
        return Deployment(
            file=doc.path,
            name=name,
            scenario=scenario,
            contexts=contexts or (model.max_context_tokens,),
            targets=targets,
            workload=workload,
            limits=server,
        )

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
