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

from decodecalc.checks.targets import Targets
from decodecalc.context import parse_context, parse_tokens
from decodecalc.errors import InputError, InputErrors
from decodecalc.loading.catalog import Catalog
from decodecalc.loading.datafile import Document, read_yaml
from decodecalc.loading.fields import suggest
from decodecalc.paths import expand_user
from decodecalc.physics.estimator import Scenario
from decodecalc.record import field, record, replace
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
    "batch",
    "tp",
    "context",
    "efficiency",
    "memory_utilization",
    "overhead",
    "link",
    "targets",
    "vllm_config",
)
TOP_KEYS = ("deployments", "defaults")

# vLLM serve flags (as `vllm serve --config` YAML keys) and the deployment field each sets.
VLLM_KEYS = {
    "model": "model",
    "tensor_parallel_size": "tp",
    "max_model_len": "context",
    "max_num_seqs": "batch",
    "kv_cache_dtype": "kv_dtype",
    "quantization": "weights",
    "dtype": "weights",
    "gpu_memory_utilization": "memory_utilization",
}
VLLM_DEFAULT_MAX_NUM_SEQS = 256
_VLLM_QUANTIZATION = {
    "fp8": "fp8",
    "fbgemm_fp8": "fp8",
    "ptpc_fp8": "fp8",
    "awq": "int4-g128",
    "awq_marlin": "int4-g128",
    "gptq": "int4-g128",
    "gptq_marlin": "int4-g128",
    "mxfp4": "mxfp4",
    "modelopt_fp4": "nvfp4",
    "nvfp4": "nvfp4",
}
_VLLM_DTYPE = {
    "auto": "bf16",
    "bfloat16": "bf16",
    "bf16": "bf16",
    "float16": "fp16",
    "half": "fp16",
    "fp16": "fp16",
    "float32": "fp32",
    "float": "fp32",
}
_VLLM_KV = {
    "fp8": "fp8",
    "fp8_e4m3": "fp8",
    "fp8_e5m2": "fp8",
    "fp8_inc": "fp8",
    "bfloat16": "bf16",
}


KeyPath = tuple[str | int, ...]


@record
class Setting:
    value: Any
    where: str
    """file:line:col and key path, for messages."""


@record
class Deployment:
    """One deployment ready to check."""

    file: str
    name: str
    scenario: Scenario
    contexts: tuple[int, ...]
    targets: Targets


Settings = dict[str, "Setting"]
Entry = tuple[Settings, Settings, KeyPath]
"""A deployment's own settings, the settings it starts from, and where it is in the file."""
Getter = Callable[[str, Callable[[Any], Any]], Any]


@record
class _Problems:
    items: list[str] = field(default_factory=list)

    def attempt(self, where: str, action: Callable[[], Any]) -> Any:
        try:
            return action()
        except InputErrors as exc:
            self.items.extend(exc.problems)
        except InputError as exc:
            self.items.append(f"{where}: {exc}")
        return None


def _settings(
    doc: Document, mapping: Any, key_path: KeyPath, known: tuple[str, ...], problems: _Problems
) -> dict[str, Setting]:
    """A mapping's values with their positions; unknown keys are problems."""
    where = _where(doc, key_path)
    if not isinstance(mapping, dict):
        problems.items.append(f"{where}: expected a mapping, got {type(mapping).__name__}")
        return {}
    found = {}
    for key, value in mapping.items():
        path = (*key_path, str(key))
        if key not in known:
            hint = suggest(str(key), list(known)) or "; valid: " + ", ".join(known)
            problems.items.append(f"{_where(doc, path)}: unknown key{hint}")
        elif value is not None:
            found[str(key)] = Setting(value, _where(doc, path))
    return found


def _where(doc: Document, key_path: KeyPath) -> str:
    label = ".".join(str(p) for p in key_path)
    return f"{doc.where(key_path)}" + (f": {label}" if label else "")


def _vllm(doc: Document, problems: _Problems) -> dict[str, Setting]:
    """Deployment settings from a vLLM serve config. Flags that do not change decode speed
    are ignored; ones decodecalc cannot map are problems, never guesses."""
    settings: dict[str, Setting] = {}
    if not isinstance(doc.data, dict):
        problems.items.append(f"{doc.path}: expected a mapping of vLLM serve flags")
        return settings
    flags = {str(k).replace("-", "_"): (k, v) for k, v in doc.data.items()}
    for flag, target in VLLM_KEYS.items():
        if flag not in flags or flags[flag][1] is None:
            continue
        key, value = flags[flag]
        where = _where(doc, (str(key),))
        if flag == "quantization":
            mapped = _VLLM_QUANTIZATION.get(str(value).lower())
            if mapped is None:
                problems.items.append(
                    f"{where}: vLLM quantization {value!r} has no decodecalc dtype; set weights: "
                    f"in a deployment file (known: {', '.join(sorted(_VLLM_QUANTIZATION))})"
                )
                continue
            value = mapped
        elif flag == "dtype":
            if "quantization" in flags:
                continue
            value = _VLLM_DTYPE.get(str(value).lower(), value)
        elif flag == "kv_cache_dtype":
            if str(value).lower() == "auto":
                continue
            value = _VLLM_KV.get(str(value).lower(), value)
        settings[target] = Setting(value, where)
    if "batch" not in settings:
        settings["batch"] = Setting(
            VLLM_DEFAULT_MAX_NUM_SEQS, f"{doc.path}: max-num-seqs (vLLM's default)"
        )
    return settings


def _looks_like_vllm(data: Any) -> bool:
    keys = {str(k).replace("-", "_") for k in data} if isinstance(data, dict) else set()
    return bool(keys & (set(VLLM_KEYS) - {"model", "dtype"})) and not keys & {
        "deployments",
        "targets",
        "defaults",
    }


def _targets(
    settings: dict[str, Setting], problems: _Problems, doc: Document, key_path: KeyPath
) -> Targets:
    values: dict[str, Any] = {}
    raw = settings.get("targets")
    if raw is None:
        return Targets()
    found = _settings(doc, raw.value, (*key_path, "targets"), Targets.names(), problems)
    for name, setting in found.items():
        values[name] = problems.attempt(setting.where, partial(_target, name, setting.value))
    return Targets(**{k: v for k, v in values.items() if v is not None})


def _show(value: Any) -> str:
    """A value for an error message, cut short: a YAML alias bomb must not be printed."""
    import reprlib

    shown = reprlib.Repr()
    shown.maxstring, shown.maxother, shown.maxlist, shown.maxlevel = 40, 40, 4, 2
    return shown.repr(value)


def _target(name: str, value: Any) -> Any:
    if name == "must_fit":
        if not isinstance(value, bool):
            raise InputError(f"expected true or false, got {_show(value)}")
        return value
    if name == "min_crossover_context":
        return _tokens(value)
    number = _number(value)
    if name == "max_kv_share" and not 0 < number <= 1:
        raise InputError(f"a share is above 0 and at most 1, got {_show(value)}")
    return number


def _number(value: Any) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise InputError(f"expected a number, got {_show(value)}")
    if not value > 0 or value == float("inf"):
        raise InputError(f"must be a positive number, got {_show(value)}")
    return float(value)


def _whole(value: Any) -> int:
    if isinstance(value, bool) or not isinstance(value, int):
        raise InputError(f"expected a whole number, got {_show(value)}")
    return value


def _tokens(value: Any) -> int:
    if isinstance(value, bool) or not isinstance(value, (int, str)):
        raise InputError(f"expected a token count such as 32768 or 32K, got {_show(value)}")
    return value if isinstance(value, int) else parse_tokens(value)


def _contexts(value: Any) -> tuple[int, ...]:
    items = value if isinstance(value, list) else [value]
    found: set[int] = set()
    for item in items:
        if isinstance(item, bool) or not isinstance(item, (int, str)):
            raise InputError(f"expected a context (32K, 1K..128K, a list), got {_show(item)}")
        found.update(parse_context(str(item)))
    return tuple(sorted(found))


def _text(value: Any) -> str:
    if not isinstance(value, str) or not value.strip():
        raise InputError(f"expected text, got {_show(value)}")
    return value


class DeploymentReader:
    """Reads deployment and vLLM files against one catalog, with command-line overrides."""

    def __init__(
        self, catalog: Catalog, gpu: str | None = None, targets: dict[str, str] | None = None
    ) -> None:
        self.catalog = catalog
        self.gpu = gpu
        self.cli_targets = targets or {}

    def read(self, path: Path) -> list[Deployment]:
        """Every deployment in a file, or InputErrors listing every problem in it."""
        problems = _Problems()
        doc = read_yaml(path, keep_duplicates=True)
        problems.items.extend(doc.duplicates)
        entries: list[Entry]
        if _looks_like_vllm(doc.data):
            entries = [({}, _vllm(doc, problems), ())]
        else:
            entries = self._entries(doc, problems)
        deployments = [
            d
            for index, (own, base, key_path) in enumerate(entries)
            if (d := self._build(doc, own, base, key_path, index, problems)) is not None
        ]
        if problems.items:
            raise InputErrors(problems.items)
        return deployments

    def _entries(self, doc: Document, problems: _Problems) -> list[Entry]:
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
                f"{_where(doc, ('deployments',))}: expected a list of deployments"
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
        own: dict[str, Setting],
        base: dict[str, Setting],
        key_path: KeyPath,
        index: int,
        problems: _Problems,
    ) -> Deployment | None:
        settings = {**base, **own}
        if "vllm_config" in settings:
            vllm_setting = settings["vllm_config"]
            vllm_path = self._relative(doc, str(vllm_setting.value))
            vllm_doc = problems.attempt(
                vllm_setting.where, lambda: read_yaml(vllm_path, keep_duplicates=True)
            )  # (its own messages name the vLLM file; the prefix says who pointed at it)
            if vllm_doc is None:
                return None  # the model and more were to come from it: nothing else to say
            problems.items.extend(vllm_doc.duplicates)
            settings = {**base, **_vllm(vllm_doc, problems), **own}
        if self.gpu and "gpu" not in settings and "bandwidth" not in settings:
            settings["gpu"] = Setting(self.gpu, "--gpu")
        where = _where(doc, key_path) if key_path else doc.path
        before = len(problems.items)
        get = self._getter(settings, problems)
        stem = Path(doc.path).stem
        name = get("name", _text) or (f"{stem}-{index + 1}" if key_path else stem)
        model = get("model", lambda v: self.catalog.model(self._model_ref(doc, _text(v))))
        gpu = get("gpu", lambda v: self.catalog.gpu(_text(v)))
        bandwidth = get("bandwidth", lambda v: parse_bandwidth(_text(v)))
        weights = get("weights", lambda v: self.catalog.dtype(_text(v)))
        kv = get("kv_dtype", lambda v: self.catalog.dtype(_text(v)))
        batch = get("batch", _whole)
        tp = get("tp", _whole)
        contexts = get("context", _contexts)
        efficiency = get("efficiency", _number)
        utilization = get("memory_utilization", _number)
        overhead = get("overhead", lambda v: parse_duration(_text(v), "overhead"))
        link_name = get("link", _text)
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
        if not targets.asked() and len(problems.items) == before:
            problems.items.append(f"{where}: {name}: no targets to check")
        if len(problems.items) > before or model is None:
            return None
        spec = ScenarioSpec(model=model, gpu=gpu, bandwidth=bandwidth, link=link_name)
        chosen = {
            "weights": weights,
            "kv_dtype": kv,
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

    def _getter(self, settings: dict[str, Setting], problems: _Problems) -> Getter:
        def get(key: str, convert: Callable[[Any], Any]) -> Any:
            setting = settings.get(key)
            if setting is None:
                return None
            return problems.attempt(setting.where, lambda: convert(setting.value))

        return get

    def _cli_targets(self, targets: Targets, problems: _Problems) -> Targets:
        values = {name: getattr(targets, name) for name in targets.asked()}
        for name, text in self.cli_targets.items():
            where = f"--target {name}={text}"
            if name not in Targets.names():
                hint = suggest(name, list(Targets.names())) or "; valid: " + ", ".join(
                    Targets.names()
                )
                problems.items.append(f"{where}: unknown target{hint}")
                continue
            values[name] = problems.attempt(where, _cli_target(name, text))
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


def _cli_target(name: str, text: str) -> Callable[[], Any]:
    return lambda: _target(name, _parse_cli_value(name, text))


def _parse_cli_value(name: str, text: str) -> Any:
    if name == "must_fit":
        lowered = text.lower()
        if lowered not in ("true", "false"):
            raise InputError(f"expected true or false, got {text!r}")
        return lowered == "true"
    if name == "min_crossover_context":
        return text
    try:
        return float(text)
    except ValueError:
        raise InputError(f"expected a number, got {text!r}") from None
