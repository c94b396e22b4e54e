"""A deployment file's disaggregated pools: ``prefill:`` and ``decode:`` sections (workers,
tp, ep, dp_attention) and ``kv_link``, read into answers/disaggregated.py's Pools."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from decodecalc.checks.settings import Problems, Settings, locate, text
from decodecalc.checks.workloads import mapping_settings, read_fields
from decodecalc.record import record, replace
from decodecalc.scenarios.workload import keys_under

if TYPE_CHECKING:
    from decodecalc.answers.disaggregated import Pools
    from decodecalc.loading.catalog import Catalog
    from decodecalc.loading.datafile import Document, KeyPath
    from decodecalc.scenarios.scenario import Scenario
    from decodecalc.scenarios.spec import ScenarioSpec

POOL_KEYS = keys_under("prefill")
"""What a pool takes (the serving field table's keys under prefill: and decode:)."""


@record
class PoolSettings:
    """What a file says of the two pools, before the scenarios are resolved."""

    prefill_workers: int
    decode_workers: int
    prefill: dict[str, Any]
    """The prefill workers' layout where it differs from the decode workers'."""
    decode: dict[str, Any]
    """The decode workers' layout over the deployment's own tp, ep and dp_attention."""
    kv_link: str | None = None

    def build(self, spec: ScenarioSpec, decode: Scenario, catalog: Catalog) -> Pools:
        """The pools: ``decode`` the decode worker's scenario (``spec`` resolved)."""
        from decodecalc.answers.disaggregated import Pools
        from decodecalc.resolving.resolve import resolve, resolve_kv_link

        prefill = resolve(replace(spec, **self.prefill), catalog) if self.prefill else decode
        link = resolve_kv_link(catalog, self.kv_link, spec.node_link)
        return Pools(prefill, decode, self.prefill_workers, self.decode_workers, link)


def read_pools(
    doc: Document, settings: Settings, key_path: KeyPath, problems: Problems
) -> PoolSettings | None:
    """The pools a deployment describes (None: it is one pool, or has problems, kept)."""
    given = [k for k in ("prefill", "decode") if k in settings]
    where = locate(doc, key_path) if key_path else doc.path
    if len(given) < 2:
        if given or "kv_link" in settings:
            said = given[0] + ":" if given else "kv_link:"
            problems.items.append(
                f"{where}: {said} describes disaggregated serving: give both prefill: and "
                "decode: (each with its workers)"
            )
        return None
    before = len(problems.items)
    pools = {name: _pool(doc, settings, key_path, name, problems) for name in given}
    kv_link = (
        problems.attempt(settings["kv_link"].where, lambda: text(settings["kv_link"].value))
        if "kv_link" in settings
        else None
    )
    prefill, decode = pools["prefill"], pools["decode"]
    if len(problems.items) > before or prefill is None or decode is None:
        return None
    return PoolSettings(
        prefill_workers=prefill.pop("workers"),
        decode_workers=decode.pop("workers"),
        prefill=prefill,
        decode=decode,
        kv_link=kv_link,
    )


def _pool(
    doc: Document, settings: Settings, key_path: KeyPath, name: str, problems: Problems
) -> dict[str, Any] | None:
    raw = settings[name]
    found = mapping_settings(doc, raw, (*key_path, name), POOL_KEYS, problems)
    if found is None:
        return None
    if "workers" not in found:
        problems.items.append(f"{raw.where}: give workers (how many {name} engine instances)")
        return None
    values = read_fields(found, (name,), problems)
    if any(v is None for v in values.values()):
        return None
    return values
