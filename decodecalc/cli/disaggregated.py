"""`decodecalc serving --prefill-workers P --decode-workers D`: the two pools of a
disaggregated deployment (answers/disaggregated.py), read from serving's options."""

from typing import TYPE_CHECKING, Any

import typer

from decodecalc.errors import InputError

if TYPE_CHECKING:
    from decodecalc.answers.disaggregated import Pools
    from decodecalc.model.hardware import Link


def pools_of(
    ctx: typer.Context,
    prefill_workers: int | None,
    decode_workers: int | None,
    layout: dict[str, Any],
    kv_link: str | None,
) -> "Pools":
    """The pools the options describe: decode workers take the scenario's layout, prefill
    workers ``layout``'s (tp, ep, dp_attention: None keeps the decode worker's)."""
    from decodecalc.answers.disaggregated import Pools
    from decodecalc.cli.options import spec_of
    from decodecalc.record import replace
    from decodecalc.resolving.resolve import resolve

    if prefill_workers is None or decode_workers is None:
        given = "--prefill-workers" if decode_workers is None else "--decode-workers"
        missing = "--decode-workers" if decode_workers is None else "--prefill-workers"
        raise InputError(
            f"{given} splits serving into two pools: give {missing} too (how many workers "
            "of the other kind)"
        )
    catalog = load_catalog_of(ctx)
    spec = spec_of(ctx)
    decode = resolve(spec, catalog)
    changed = {k: v for k, v in layout.items() if v is not None}
    prefill = resolve(replace(spec, **changed), catalog) if changed else decode
    return Pools(prefill, decode, prefill_workers, decode_workers, _link(ctx, kv_link, spec))


def load_catalog_of(ctx: typer.Context) -> Any:
    from decodecalc.cli import load_catalog

    return load_catalog(ctx.params.get("presets"))


def _link(ctx: typer.Context, name: str | None, spec: Any) -> "Link | None":
    """--kv-link: a link preset, 'none' (no transfer time), or by default the scenario's
    network between nodes (resolving/resolve.py resolve_kv_link)."""
    from decodecalc.resolving.resolve import resolve_kv_link

    try:
        return resolve_kv_link(load_catalog_of(ctx), name, spec.node_link)
    except InputError as exc:
        raise InputError(f"--kv-link {name!r}: {exc}") from None


def run_disaggregated(
    ctx: typer.Context,
    pools: "Pools",
    loads: list[Any],
    limits: Any,
    output: tuple[Any, bool, Any],
    page: str | None = None,
) -> None:
    """Serve every load on the pools and emit the report (``output``: format, whether
    JSON, where to); ``page``: write the HTML page there too (--report)."""
    from decodecalc.answers.disaggregated import serve_disaggregated_each
    from decodecalc.cli import Format, emit
    from decodecalc.views.disaggregated import disaggregated_report, human_disaggregated

    fmt, as_json, to = output
    results, saturated = serve_disaggregated_each(pools, loads, limits)
    if page:
        from decodecalc.cli.report import disaggregated_page

        disaggregated_page(ctx, page, results, saturated)
    report = disaggregated_report(results, saturated)
    if not as_json and fmt in (Format.table, Format.markdown):
        report = human_disaggregated(report)
    emit(report, fmt, as_json, False, to)
