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
    locate,
    number,
    show,
    text,
    tokens,
    whole,
)
from decodecalc.checks.targets import Targets
from decodecalc.checks.vllm import (
    VLLM_ENGINE,
    ServeConfig,
    default_batch_note,
    looks_like_vllm,
    read_serve_config,
)
from decodecalc.errors import InputError, InputErrors
from decodecalc.loading.catalog import Catalog
from decodecalc.loading.datafile import Document, KeyPath, parse_yaml, read_yaml
from decodecalc.loading.fields import suggest
from decodecalc.notes import Note
from decodecalc.paths import expand_user
from decodecalc.physics.estimator import Scenario
from decodecalc.record import record, replace
from decodecalc.scenario_spec import ScenarioSpec
from decodecalc.scenarios import resolve
from decodecalc.units import parse_bandwidth, parse_duration

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
    "context",
    "efficiency",
    "memory_utilization",
    "overhead",
    "link",
    "engine",
    "targets",
    "vllm_config",
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
        if asked and "batch" not in {**start, **own}:  # (a start-up check is at batch 1)
            notes = (*notes, default_batch_note(deployment.scenario.batch))
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
            "efficiency": efficiency,
            "memory_utilization": utilization,
            "overhead": overhead,
        }
        spec = replace(spec, **{k: v for k, v in chosen.items() if v is not None})
        deployment: Deployment | None = problems.attempt(
            where,
            lambda: Deployment(
                file=doc.path,
                name=name,
                scenario=resolve(spec, self.catalog),
                contexts=contexts or (model.max_context_tokens,),
                targets=targets,
            ),
        )
        return deployment

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
        return float(given)
    except ValueError:
        raise InputError(f"expected a number, got {given!r}") from None
