"""Workloads in deployment files: the traffic a server is checked under, for the serving
targets (time to first token, time per output token, output throughput).

A deployment names its ``workload:`` as ``decodecalc serving`` takes one: requests kept in
flight (``concurrency``) or arriving at a rate (``request_rate``), their input and output
lengths, a shared prompt prefix and how often it is cached, and speculative decoding. The
server's scheduler limits (``max_num_batched_tokens``, ``max_num_seqs``) are deployment
settings, read from a vLLM config's flags of the same names when it gives them; its
``speculative-config`` gives the method and the tokens proposed, and the workload the
acceptance rate vLLM logs once it runs (no config can know it beforehand).
"""

from __future__ import annotations

import json
from collections.abc import Callable
from functools import partial
from typing import TYPE_CHECKING, Any

from decodecalc.checks.settings import (
    Problems,
    Setting,
    Settings,
    flag,
    locate,
    locate_key,
    number,
    show,
    tokens,
    whole,
)
from decodecalc.checks.settings import text as text_value
from decodecalc.errors import InputError
from decodecalc.loading.datafile import Document, KeyPath
from decodecalc.loading.fields import suggest
from decodecalc.resolving.resolve import resolve_weights
from decodecalc.scenarios.workload import WORKLOAD_FIELDS, keys_under

if TYPE_CHECKING:
    from decodecalc.loading.catalog import Catalog
    from decodecalc.scenarios.workload import Speculation, Workload

WORKLOAD_KEYS = keys_under("workload")
SPECULATIVE_KEYS = keys_under("workload", "speculative")
"""The keys a workload and its speculation take: the serving field table's
(scenarios/workload.py), so a misspelt key's did-you-mean comes from it too."""

VLLM_METHODS = {"eagle": "eagle", "eagle3": "eagle", "mtp": "mtp", "draft_model": "draft"}
"""vLLM speculative methods decodecalc prices; any ``*_mtp`` (deepseek_mtp, qwen3_next_mtp)
is MTP too. ngram, suffix, medusa and MLP speculators propose without a model pass that
decodecalc knows how to price, and are refused."""


def read_workload(
    doc: Document, settings: Settings, key_path: KeyPath, problems: Problems, catalog: Catalog
) -> Workload | None:
    """The deployment's workload (None when it names none), with the speculation its own
    ``speculative:`` and its vLLM config's ``speculative-config`` describe together."""
    from decodecalc.scenarios.workload import Workload

    raw = settings.get("workload")
    if raw is None:
        return None
    path = (*key_path, "workload")
    before = len(problems.items)
    found = mapping_settings(doc, raw, path, WORKLOAD_KEYS, problems)
    if found is None or len(problems.items) > before:  # a misspelt key: say only that
        return None
    values = read_fields(found, ("workload",), problems)
    missing = [key for key in ("input_len", "output_len") if key not in found]
    if missing:
        problems.items.append(f"{raw.where}: give {' and '.join(missing)} (tokens per request)")
    valid, speculation = _speculation(
        doc, found.get("speculative"), settings, path, problems, catalog
    )
    if missing or not valid or any(value is None for value in values.values()):
        return None
    try:
        return Workload(**values, speculative=speculation)
    except InputError as exc:
        problems.items.append(f"{raw.where}: {exc}")
    return None


def mapping_settings(
    doc: Document, raw: Setting, path: KeyPath, known: tuple[str, ...], problems: Problems
) -> Settings | None:
    """A nested mapping's values with their positions (None, with the problem kept: not a
    mapping); unknown keys are problems."""
    if not isinstance(raw.value, dict):
        problems.items.append(f"{raw.where}: expected a mapping, got {show(raw.value)}")
        return None
    found: Settings = {}
    for key, value in raw.value.items():
        at = locate(doc, (*path, str(key)))
        if key not in known:
            hint = suggest(str(key), list(known)) or "; valid: " + ", ".join(known)
            problems.items.append(f"{locate_key(doc, (*path, str(key)))}: unknown key{hint}")
        elif value is not None:
            found[str(key)] = Setting(value, at)
    return found


def _count(value: Any) -> int:
    """Tokens that may be none (a prefix length of 0)."""
    if value == 0 and not isinstance(value, bool):
        return 0
    return whole(tokens(value))


def _share(value: Any) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not 0 <= value <= 1:
        raise InputError(f"expected a share from 0 to 1, got {show(value)}")
    return float(value)


WORKLOAD_READERS: dict[str, Callable[[Any], Any]] = {
    "tokens": lambda v: whole(tokens(v)),
    "count": whole,
    "rate": number,
    "share": _share,
    "flag": flag,
    "text": text_value,
}
"""A file's value of each kind of serving field (scenarios/workload.py WORKLOAD_KINDS)."""


def read_fields(found: Settings, section: tuple[str, ...], problems: Problems) -> dict[str, Any]:
    """The values of the serving fields right under ``section`` that a file gives, each
    read by its kind (a token count whose least is 0 may be 0), by key."""
    values = {}
    for row in WORKLOAD_FIELDS:
        if row.key is None or row.key[:-1] != section or row.key[-1] not in found:
            continue
        read = _count if row.kind == "tokens" and row.least == 0 else WORKLOAD_READERS[row.kind]
        setting = found[row.key[-1]]
        values[row.key[-1]] = problems.attempt(setting.where, partial(read, setting.value))
    return values


def _speculation(
    doc: Document,
    own: Setting | None,
    settings: Settings,
    path: KeyPath,
    problems: Problems,
    catalog: Catalog,
) -> tuple[bool, Speculation | None]:
    """Whether the workload's speculation reads (the problems say why not), and the
    speculation (None: the server does not speculate)."""
    from decodecalc.scenarios.workload import Speculation

    parts: Settings = {}
    config = settings.get("speculative")  # from a vLLM config's speculative-config
    if config is not None:
        parts.update({k: Setting(v, config.where) for k, v in config.value.items()})
    if own is not None:
        found = mapping_settings(doc, own, (*path, "speculative"), SPECULATIVE_KEYS, problems)
        if found is None:
            return False, None
        parts.update(found)
    if not parts:
        return True, None
    where = (own or config or Setting(None, "")).where
    if "acceptance" not in parts:
        problems.items.append(
            f"{where}: speculative decoding needs workload.speculative.acceptance: the share "
            "of proposed tokens accepted (one rate, or one per position, as vLLM logs them)"
        )
        return False, None
    for key in ("method", "num_speculative_tokens"):
        if key not in parts:
            problems.items.append(f"{where}: speculative decoding needs {key}")
            return False, None
    method = problems.attempt(parts["method"].where, lambda: _method(parts["method"].value))
    proposed = problems.attempt(
        parts["num_speculative_tokens"].where, lambda: whole(parts["num_speculative_tokens"].value)
    )
    acceptance = problems.attempt(
        parts["acceptance"].where, lambda: _rates(parts["acceptance"].value)
    )
    draft = None
    if method == "draft":
        model = parts.get("draft_model")
        if model is None:
            problems.items.append(f"{where}: a draft-model speculation needs draft_model")
            return False, None
        draft = problems.attempt(model.where, lambda: catalog.model(text_value(model.value)))
    if None in (method, proposed, acceptance) or (method == "draft" and draft is None):
        return False, None
    drafted = None if draft is None else resolve_weights(catalog, None, draft)
    made: Speculation | None = problems.attempt(
        where, lambda: Speculation(method, proposed, acceptance, draft, drafted)
    )
    return made is not None, made


def _method(value: Any) -> str:
    name = text_value(value).strip().lower()
    if name in ("eagle", "mtp", "draft"):
        return name
    if name in VLLM_METHODS:
        return VLLM_METHODS[name]
    if name.endswith("_mtp"):
        return "mtp"
    raise InputError(
        f"speculative method {value!r} is not modelled: decodecalc prices EAGLE, MTP and a "
        "draft model (vLLM's eagle, eagle3, *_mtp and draft_model)"
    )


def _rates(value: Any) -> tuple[float, ...]:
    items = value if isinstance(value, list) else [value]
    rates = []
    for item in items:
        if isinstance(item, bool) or not isinstance(item, (int, float)):
            raise InputError(f"expected a rate from 0 to under 1, or a list, got {show(value)}")
        rates.append(float(item))
    return tuple(rates)


def vllm_speculative(doc: Document, problems: Problems) -> Setting | None:
    """A vLLM config's speculative-config (a mapping, its JSON text, or dotted keys such as
    ``speculative-config.method``) as the parts decodecalc reads: method, tokens proposed
    and the drafter (vLLM's ``model``, for draft models). vLLM infers an EAGLE method
    from a drafter named so when no method is given, and a draft model otherwise."""
    parts: dict[str, Any] = {}
    where = ""
    for raw, value in doc.data.items():
        key = str(raw)
        name, dot, field = key.partition(".")
        if name.replace("_", "-") != "speculative-config" or value is None:
            continue
        where = where or locate(doc, (key,))
        if dot:
            parts[field] = value
            continue
        found = problems.attempt(where, partial(_config_mapping, value))
        if found is None:
            return None
        parts.update(found)
    if not parts:
        return None
    model = parts.get("model")
    given = parts.get("method")
    if given is None and isinstance(model, str):
        given = "eagle" if "eagle" in model.lower() else "draft_model"
    method = None if given is None else problems.attempt(where, partial(_method, given))
    if given is not None and method is None:
        return None
    read = {"method": method, "num_speculative_tokens": parts.get("num_speculative_tokens")}
    if model is not None and method == "draft":
        read["draft_model"] = model
    return Setting({k: v for k, v in read.items() if v is not None}, where)


def _config_mapping(value: Any) -> dict[str, Any]:
    if isinstance(value, str):
        try:
            value = json.loads(value)
        except ValueError:
            raise InputError(f"expected a JSON object, got {show(value)}") from None
    if not isinstance(value, dict):
        raise InputError(f"expected a mapping (or its JSON text), got {show(value)}")
    return value
