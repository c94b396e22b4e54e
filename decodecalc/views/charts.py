"""Latency against context, drawn: in the terminal with plotext, or to SVG/PNG with
matplotlib (the optional `plot` extra). Both take the same series: the headline step (the
engine's expected one) with its band, and the roofline labelled as the bound."""

from __future__ import annotations

from typing import IO, Any

from decodecalc.answers.estimate import Estimate
from decodecalc.answers.headline import ROOFLINE, basis
from decodecalc.errors import InputError
from decodecalc.record import record


@record
class Axes:
    """What a chart's axes, title and marked points are: decode latency against context by
    default; serving's curve draws TPOT against throughput with its knee marked."""

    x: str = "context (tokens)"
    y: str = "ms per token"
    title: str = "decode latency per token"
    file_title: str = "Decode latency per token: weights (flat) + KV cache (growing)"
    marker: str = "crossover (KV = weights)"
    file_marker: str = "crossover (KV bytes = weight bytes)"
    tokens: bool = True
    """The x axis counts tokens: a log scale with K and M past a wide range."""


DECODE = Axes()

BAND = "band"
BOUND = "roofline (the bound)"
"""How a chart names a series' band and its roofline: the line is the headline (the
engine's expected step), the roofline a bound no engine beats, never the forecast."""


@record
class Series:
    label: str
    contexts: tuple[float, ...]
    """The x values: contexts in tokens (serving: output throughput)."""
    ms_per_token: tuple[float, ...]
    """The headline step (answers/headline.py): the expected one where an engine expects
    one, else the roofline (serving: TPOT)."""
    crossover: tuple[float, float] | None
    """(T*, ms per token there) when the crossover falls inside the contexts shown (the
    marked point: serving's knee)."""
    low: tuple[float, ...] = ()
    high: tuple[float, ...] = ()
    """The band around the headline (empty: none, as on the roofline)."""
    bound: tuple[float, ...] = ()
    """The roofline step, drawn as the bound beside an expected line (empty: the line is
    the roofline itself, or there is none)."""


def line_label(s: Series) -> str:
    """A series' own line: the expected figure where it has a band, else the label alone."""
    return f"{s.label}: expected" if s.high else s.label


def series_of(label: str, est: Estimate) -> Series:
    """An estimate's curve: its headline steps with their band, and the roofline as the
    bound where the headline is an engine's expected step."""
    rows, heads = est.rows, est.headlines
    marked = next((i for i, r in enumerate(rows) if r.is_crossover), None)
    ms = tuple(head.seconds * 1000 for head in heads)
    crossover = None if marked is None else (float(rows[marked].context_tokens), ms[marked])
    contexts = tuple(r.context_tokens for r in rows)
    if basis(est.scenario) == ROOFLINE:
        return Series(f"{label} (roofline)", contexts, ms, crossover)
    return Series(
        label,
        contexts,
        ms,
        crossover,
        low=tuple(head.low_seconds * 1000 for head in heads),
        high=tuple(head.high_seconds * 1000 for head in heads),
        bound=tuple(r.seconds_per_token * 1000 for r in rows),
    )


def terminal_chart(
    series: list[Series],
    width: int = 80,
    height: int = 22,
    color: bool = False,
    axes: Axes = DECODE,
) -> str:
    """A line per series, crossovers marked with an 'x', axes in tokens and ms."""
    import plotext as plt

    plt.clear_figure()
    plt.plotsize(width, height)
    plt.theme("pro" if color else "clear")
    for s in series:
        xs = list(s.contexts)
        plt.plot(xs, list(s.ms_per_token), label=line_label(s), marker="braille")
        if s.high:
            plt.plot(xs, list(s.high), label=f"{s.label}: {BAND}", marker=".")
            plt.plot(xs, list(s.low), marker=".")
        if s.bound:
            plt.plot(xs, list(s.bound), label=f"{s.label}: {BOUND}", marker="-")
    crossings = [s.crossover for s in series if s.crossover]
    if crossings:
        plt.scatter(
            [c[0] for c in crossings],
            [c[1] for c in crossings],
            marker="x",
            label=axes.marker,
        )
    if axes.tokens:
        ticks = token_ticks(series)
        plt.xticks(ticks, [_tokens_label(t, None) for t in ticks])
    plt.xlabel(axes.x)
    plt.ylabel(axes.y)
    plt.title(axes.title)
    text: str = plt.build()
    plt.clear_figure()
    return text if color else _plain(text)


MAX_TICKS = 6
"""Tick labels a terminal chart's token axis carries: more would run into each other."""


def token_ticks(series: list[Series]) -> list[float]:
    """Contexts to label on a token axis (32K, not 32768): those the series hold, every
    n-th of them past MAX_TICKS, the last always kept; a crossover's own row, between the
    contexts asked for, gets no tick (its 100.247K would crowd them; its 'x' marks it)."""
    crossovers = {s.crossover[0] for s in series if s.crossover is not None}
    contexts = sorted({c for s in series for c in s.contexts} - crossovers)
    if len(contexts) <= MAX_TICKS:
        return contexts
    step = -(-len(contexts) // MAX_TICKS)
    picked = contexts[::step]
    return picked if picked[-1] == contexts[-1] else [*picked[:-1], contexts[-1]]


def _plain(text: str) -> str:
    import re

    return re.sub(r"\x1b\[[0-9;]*m", "", text)


def _tokens_label(value: float, _: object) -> str:
    """1K, 32K, 1M: binary suffixes, as contexts are usually powers of two."""
    for factor, suffix in ((2**20, "M"), (2**10, "K")):
        if value >= factor:
            return f"{value / factor:g}{suffix}"
    return f"{value:g}"


def plot_format(name: str) -> str:
    """The chart file's format, from its name (svg or png), once matplotlib is known to
    be there to draw it."""
    import importlib.util

    suffix = name.rpartition(".")[2].lower() if "." in name else ""
    if suffix not in ("svg", "png"):
        raise InputError(f"--plot {name!r}: the file must end in .svg or .png")
    if importlib.util.find_spec("matplotlib") is None:
        raise InputError(MISSING_MATPLOTLIB)
    return suffix


MISSING_MATPLOTLIB = (
    "--plot needs matplotlib: pip install 'decodecalc[plot]' (or pip install matplotlib)"
)


def _band_and_bound(plot: Any, s: Series, color: Any) -> None:
    """A series' band shaded in its colour and its roofline dashed, each labelled."""
    if s.high:
        label = f"{s.label}: {BAND}"
        plot.fill_between(s.contexts, s.low, s.high, color=color, alpha=0.18, label=label)
    if s.bound:
        label = f"{s.label}: {BOUND}"
        plot.plot(s.contexts, s.bound, linestyle="--", linewidth=1, color=color, label=label)


def plot_file(series: list[Series], out: IO[bytes], kind: str, axes: Axes = DECODE) -> None:
    """A publication-quality SVG or PNG (``kind``, from plot_format) written to ``out``."""
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as pyplot
    except ImportError:
        raise InputError(MISSING_MATPLOTLIB) from None
    from matplotlib.ticker import FuncFormatter

    figure, plot = pyplot.subplots(figsize=(8, 4.8), dpi=150)
    marked = False
    for s in series:
        (line,) = plot.plot(
            s.contexts, s.ms_per_token, marker="o", markersize=3, linewidth=1.6, label=line_label(s)
        )
        _band_and_bound(plot, s, line.get_color())
        if s.crossover:
            label = None if marked else axes.file_marker
            plot.plot(*s.crossover, "X", markersize=9, color="black", zorder=3, label=label)
            marked = True
            plot.annotate(
                f"{s.crossover[0]:,.0f}",
                s.crossover,
                textcoords="offset points",
                xytext=(-8, 9),
                ha="right",
                fontsize=7,
            )
    contexts = [c for s in series for c in s.contexts if c > 0]
    if axes.tokens and contexts and max(contexts) / min(contexts) >= 16:
        plot.set_xscale("log", base=2)
        plot.xaxis.set_major_formatter(FuncFormatter(_tokens_label))
    plot.set_xlabel(axes.x)
    plot.set_ylabel(axes.y)
    plot.set_title(axes.file_title)
    plot.grid(True, which="both", alpha=0.3)
    plot.set_ylim(bottom=0)
    plot.legend(fontsize=8)
    figure.tight_layout()
    try:
        figure.savefig(out, format=kind)
    finally:
        pyplot.close(figure)
