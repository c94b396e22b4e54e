"""Commands about the presets themselves: listings, one model in detail, and importing a
config.json as a new preset."""

from typing import Annotated, Any

import typer

from decodecalc.cli import (
    ForceOpt,
    Output,
    PresetsOpt,
    app,
    destination,
    given_path,
    load_catalog,
    note,
    output_file,
    output_options,
    output_stream,
)
from decodecalc.errors import InputError


def _filter_option(help_text: str) -> Any:
    return typer.Option(help=help_text, metavar="NAME")


@app.command()
@output_options
def models(
    ctx: typer.Context,
    family: Annotated[
        str | None,
        _filter_option("Only models of this family (the config.json model_type: deepseek_v3)."),
    ] = None,
    out: Output = Output(),
    presets: PresetsOpt = None,
) -> None:
    """List model presets: parameters, attention shape, KV bytes per token, maximum context,
    aliases.

    Example: decodecalc models --family qwen3_moe
    """
    from decodecalc.loading.catalog import matching
    from decodecalc.views.listings import models_report

    catalog = load_catalog(presets)
    every = catalog.models()
    if family and not any(m.family == family for m in every):
        from decodecalc.loading.families import FAMILIES, REFUSED, WRAPPERS

        if family in FAMILIES or family in WRAPPERS:  # read from config.json, no preset
            raise InputError(
                f"no preset has family {family!r}; decodecalc reads its config.json: give "
                "-m a model folder, a config.json or a Hugging Face id"
            )
        if family in REFUSED:
            raise InputError(
                f"no preset has family {family!r}, and its config.json is refused: "
                f"{REFUSED[family]}"
            )
    found = matching(every, family, lambda m: m.family, "family")
    out.emit(models_report(found, catalog.dtype("bf16")))


@app.command()
@output_options
def gpus(
    ctx: typer.Context,
    vendor: Annotated[str | None, _filter_option("Only GPUs of this vendor (NVIDIA, AMD).")] = None,
    family: Annotated[
        str | None,
        _filter_option("Only GPUs of this engine-profile family (nvidia-datacenter, apple)."),
    ] = None,
    out: Output = Output(),
    presets: PresetsOpt = None,
) -> None:
    """List GPU presets: peak memory bandwidth and capacity, aliases, and which are only
    announced.

    Example: decodecalc gpus --vendor amd
    """
    from decodecalc.engine.profile import gpu_family
    from decodecalc.loading.catalog import matching
    from decodecalc.views.listings import gpus_report

    every = load_catalog(presets).gpus()
    families = {g.id for g in matching(every, family, gpu_family, "family")}
    found = [g for g in matching(every, vendor, lambda g: g.vendor, "vendor") if g.id in families]
    out.emit(gpus_report(found))


@app.command()
@output_options
def show(
    ctx: typer.Context,
    model: Annotated[
        str | None,
        typer.Argument(
            help="Model preset, model YAML file or config.json.",
            metavar="MODEL",
            callback=given_path,
        ),
    ] = None,
    named: Annotated[
        str | None,
        typer.Option(
            "--model", "-m", help="The model, as -m names it in other commands.", metavar="MODEL"
        ),
    ] = None,
    out: Output = Output(),
    presets: PresetsOpt = None,
) -> None:
    """A model's architecture, its derived vs official parameter count, its weights by tensor
    group in the checkpoint's formats, and KV bytes per token.

    Example: decodecalc show llama-3.1-70b
    """
    from decodecalc.resolving.resolve import resolve_weights
    from decodecalc.views.listings import show_report

    if (model is None) == (named is None):
        raise InputError("give one model: show MODEL or show -m MODEL")
    catalog = load_catalog(presets)
    found = catalog.model(str(model or named))
    weights = resolve_weights(catalog, None, found)
    out.emit(show_report(found, catalog.dtypes(), weights))


def _given_name(name: str) -> str:
    """An empty --name (an unset shell variable) would write a preset named ''."""
    if not name.strip():
        raise typer.BadParameter("is empty; give the model's display name, e.g. Llama-3.1-8B")
    return name


@app.command("import")
def import_config(
    ctx: typer.Context,
    config: Annotated[
        str,
        typer.Argument(
            help="A model's config.json (a local file).", metavar="CONFIG", callback=given_path
        ),
    ],
    name: Annotated[
        str,
        typer.Option(
            "--name", help="The preset's display name.", metavar="NAME", callback=_given_name
        ),
    ],
    output: Annotated[str | None, output_file("Write the preset here (default: stdout).")] = None,
    force: ForceOpt = False,
    source: Annotated[
        str | None,
        typer.Option("--source", help="Where the config came from (a URL).", metavar="URL"),
    ] = None,
    official_params: Annotated[
        str | None,
        typer.Option(
            "--official-params",
            help="The model card's parameter count, to check against (8030261248, 8.03B).",
            metavar="N",
        ),
    ] = None,
) -> None:
    """Turn a config.json into a model preset YAML holding the fields decodecalc reads.

    Put the file in a presets directory (DIR/models/NAME.yaml, with --presets DIR or
    $DECODECALC_PRESETS) to use it by name. --model config.json works without importing.

    Example: decodecalc import ./Llama-3.1-8B/config.json --name Llama-3.1-8B -o my.yaml
    """
    from decodecalc.loading.datafile import folder_config, is_dir, is_file
    from decodecalc.loading.numbers import parameter_count
    from decodecalc.loading.presets import MAX_PARAMS, preset_from_config
    from decodecalc.loading.quantization import read_config
    from decodecalc.paths import expand_user

    official = None
    if official_params is not None:
        try:
            official = parameter_count(official_params.strip())
        except InputError as exc:
            raise InputError(f"--official-params {exc}") from None
        if not 1 <= official <= MAX_PARAMS:
            raise InputError(
                f"--official-params {official_params} must be a count from 1 to {MAX_PARAMS:,}"
            )
    path = expand_user(config)
    if is_dir(path):  # a checkpoint folder, as --model takes one
        path = folder_config(path, config)
    if not is_file(path):
        raise InputError(f"config file {config!r} does not exist")
    # hf_quant_config.json beside it sets the default weight recipe, as with --model.
    doc = read_config(path)
    preset = preset_from_config(doc, name, source, official)
    import yaml

    text = yaml.safe_dump(preset, sort_keys=False, default_flow_style=False)
    with output_stream(destination(ctx)) as out:
        out.write(text)
    if output is not None:
        note(f"wrote {output}")


def _listing(name: str, doc: str) -> None:
    """Register the command ``name`` that lists one kind of preset: the catalog's
    ``name()`` as views.listings' ``{name}_report`` shows it."""

    def listing(ctx: typer.Context, out: Output = Output(), presets: PresetsOpt = None) -> None:
        from decodecalc.views import listings

        found = getattr(load_catalog(presets), name)()
        out.emit(getattr(listings, f"{name}_report")(found))

    listing.__doc__ = doc
    app.command(name)(output_options(listing))


_listing(
    "dtypes", "List weight and KV-cache formats with their bits per value, block scales included."
)
_listing(
    "recipes", "List weight recipes: how real checkpoints store each tensor group (--weights NAME)."
)
_listing(
    "engines",
    "List engine profiles: per GPU family, the efficiencies and fixed costs fitted on\n"
    "published measurements, the band of their errors and how many points they rest on.",
)
_listing("links", "List interconnect presets for tensor-parallel all-reduces.")
