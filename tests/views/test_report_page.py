"""The HTML report page (--report FILE.html, decodecalc report): one self-contained file,
checked in a real browser for what a person sees: the chart drawn with its traces, hover
text that matches --json, the crossover and memory marks where they belong, and not one
request leaving the machine."""

from __future__ import annotations

import contextlib
import io
import json
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from decodecalc.cli import main
from tests.conftest import Run
from tests.project.test_architecture import imported_after, quietly
from tests.views.browser import MISSING, PAGES, Browser

TRACES = {"estimate": 4, "compare": 6, "serving": 3, "plan": 2}
"""Traces each page's chart draws: estimate the expected band and line, the roofline and
the crossover marker; compare a band and a line for each of its 3 scenarios; serving a
panel each for TPOT, TTFT and throughput; plan the options that meet the targets and
those that miss one."""

MAX_PAGE_BYTES = 5_000_000


def run(*args: str) -> str:
    """A command's stdout, run in-process (its notes on stderr are not needed here)."""
    out = io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(io.StringIO()):
        assert main(list(args)) == 0
    return out.getvalue()


@pytest.fixture(scope="module")
def pages(tmp_path_factory: pytest.TempPathFactory) -> dict[str, tuple[Path, dict[str, Any]]]:
    """Each page kind, written by its command's --report, with the command's --json."""
    folder = tmp_path_factory.mktemp("pages")
    made = {}
    for kind, args in PAGES.items():
        path = folder / f"{kind}.html"
        run(*args, "--report", str(path))
        made[kind] = (path, json.loads(run(*args, "--json")))
    return made


def figures_of(page: Path) -> dict[str, Any]:
    text = page.read_text(encoding="utf-8")
    found = re.search(r'<script type="application/json" id="figures">(.*?)</script>', text)
    assert found
    figures: dict[str, Any] = json.loads(found.group(1))
    return figures


class TestThePageFile:
    """The file itself, without a browser."""

    @pytest.mark.parametrize("kind", PAGES)
    def test_it_is_one_file_under_5_mb_that_names_no_server(
        self, pages: dict[str, tuple[Path, dict[str, Any]]], kind: str
    ) -> None:
        """Nothing to fetch: no src or href to a server, no stylesheet link, and a policy
        that forbids every request (links in the sources table are anchors a reader may
        follow, never loaded)."""
        path, _ = pages[kind]
        text = path.read_text(encoding="utf-8")
        assert path.stat().st_size < MAX_PAGE_BYTES
        assert not re.search(r"""\ssrc=["']?(https?:)?//""", text)
        assert "<link" not in text and "@import" not in text
        assert "default-src 'none'" in text

    @pytest.mark.parametrize("kind", PAGES)
    def test_it_names_the_command_and_version(
        self, pages: dict[str, tuple[Path, dict[str, Any]]], kind: str
    ) -> None:
        from html import escape

        from decodecalc import __version__

        path, _ = pages[kind]
        text = path.read_text(encoding="utf-8")
        command = " ".join(["decodecalc", *PAGES[kind], "--report", str(path)])
        assert f"decodecalc {__version__}" in text
        assert escape(command) in text

    def test_every_preset_has_its_source(
        self, pages: dict[str, tuple[Path, dict[str, Any]]]
    ) -> None:
        """Llama-3.1-70B's config.json and the H100's datasheet, as the presets cite them."""
        text = pages["estimate"][0].read_text(encoding="utf-8")
        assert "https://huggingface.co/meta-llama/Llama-3.1-70B/blob/main/config.json" in text
        assert "nvidia-tensor-core-gpu-datasheet" in text

    def test_the_worked_step_lists_the_bytes_of_each_tensor_group(
        self, cli: Run, pages: dict[str, tuple[Path, dict[str, Any]]]
    ) -> None:
        """Llama-3.1-70B in FP8 (1 byte a parameter): LM head 8,192 x 128,256; attention q
        and o 80 x 2 x 8,192 x 8,192; k and v 80 x 2 x 8,192 x 1,024; MLP 80 x 3 x 8,192 x
        28,672; norms 1,318,912. Their sum is the step's 69,503,033,344 weight bytes."""
        hand = {
            "LM head": 8_192 * 128_256,
            "attention q, o": 80 * 2 * 8_192 * 8_192,
            "attention k, v": 80 * 2 * 8_192 * 1_024,
            "mlp": 80 * 3 * 8_192 * 28_672,
            "norms and biases": 1_318_912,
            "embedding": 0,  # a step gathers rows: not read
        }
        args = ("explain", *PAGES["estimate"][1:-2], "-c", "1M", "--json")
        groups = json.loads(cli(*args).out)["weight_groups"]
        assert {g["group"]: g["read_bytes"] for g in groups} == hand
        assert sum(hand.values()) == 69_503_033_344
        text = pages["estimate"][0].read_text(encoding="utf-8")
        for group, read in hand.items():
            assert f"<td>{group}</td>" in text and f'<td class="num">{read:,}</td>' in text

    def test_a_scenario_without_a_gpu_cites_its_engine_profiles(
        self, cli: Run, tmp_path: Path
    ) -> None:
        """With a bare bandwidth the typical band spans every profile on every family it
        was measured on ("gpt-fast (nvidia-datacenter)"): each is cited by its preset."""
        path = tmp_path / "bandwidth.html"
        r = cli("estimate", "-m", "llama-3.1-8b", "-b", "1TB/s", "--report", str(path))
        assert r.code == 0, r.err
        text = path.read_text(encoding="utf-8")
        assert "<td>engine</td><td>gpt-fast</td>" in text

    def test_text_in_the_figures_cannot_end_their_script(self) -> None:
        from decodecalc.views.figures import Figure
        from decodecalc.views.html import page_html
        from decodecalc.views.page import Page, Section

        hostile = "</script><script>alert(1)</script><!--"
        figure = Figure(({"type": "scatter", "name": hostile, "x": [1], "y": [2]},), {})
        text = page_html(Page("estimate", "t", (Section("", figure=figure),), "c", "0"))
        found = re.search(r'id="figures">(.*?)</script>', text)
        assert found and "alert" in found.group(1)
        assert json.loads(found.group(1))["chart-0"]["data"][0]["name"] == hostile

    def test_the_report_command_draws_what_the_option_draws(
        self, cli: Run, pages: dict[str, tuple[Path, dict[str, Any]]], tmp_path: Path
    ) -> None:
        path = tmp_path / "serving.html"
        r = cli("report", *PAGES["serving"], "-o", str(path))
        assert r.code == 0 and r.out == "", r.err
        # the last line names the file, after the run's own notes
        assert r.err.splitlines()[-1] == f"decodecalc: note: wrote {path}", r.err
        assert len(r.err.splitlines()) > 1
        assert figures_of(path) == figures_of(pages["serving"][0])

    def test_the_report_command_draws_estimate_when_no_command_is_named(
        self, cli: Run, pages: dict[str, tuple[Path, dict[str, Any]]], tmp_path: Path
    ) -> None:
        path = tmp_path / "estimate.html"
        r = cli("report", *PAGES["estimate"][1:], "-o", str(path))
        assert r.code == 0 and r.out == "" and f"wrote {path}" in r.err, r.err
        assert figures_of(path) == figures_of(pages["estimate"][0])

    @pytest.mark.parametrize(
        ("args", "message"),
        [
            (["sweep", "-m", "llama-3.1-8b", "-o", "x.html"], "report draws a page of estimate"),
            (["-m", "llama-3.1-8b", "-g", "h100"], "Missing option '--output'"),
            (["-m", "no-such-model", "-g", "h100", "-o", "x.html"], "unknown model"),
            # the page is the only output: a format for stdout would be dropped unseen
            (
                ["-m", "llama-3.1-8b", "-g", "h100", "-o", "x.html", "--json"],
                "--json: report writes only the HTML page (-o FILE.html); "
                "did you mean 'decodecalc estimate ... --json'?",
            ),
            (
                ["compare", "-m", "llama-3.1-8b", "-g", "h100,h200", "-o", "x.html", "-f", "csv"],
                "did you mean 'decodecalc compare ... -f csv'?",
            ),
            (["-m", "llama-3.1-8b", "-o", "x.html", "--format=csv"], "--format=csv: report"),
            # a name that says another format is not filled with HTML
            (["-m", "llama-3.1-8b", "-o", "s.txt"], "'s.txt': the page is HTML; name it 's.html'"),
            (["-m", "llama-3.1-8b", "-o", "page"], "'page': the page is HTML; name it 'page.html'"),
        ],
    )
    def test_bad_use_is_one_line(
        self, cli: Run, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, args: list[str],
        message: str,
    ) -> None:  # fmt: skip
        monkeypatch.chdir(tmp_path)
        r = cli("report", *args)
        assert r.code == 2 and r.out == ""
        assert len(r.err.splitlines()) == 1 and message in r.err
        assert not list(tmp_path.iterdir())  # nothing written

    def test_a_report_option_not_named_html_is_refused(self, cli: Run, tmp_path: Path) -> None:
        r = cli("estimate", "-m", "llama-3.1-8b", "-g", "h100", "--report", str(tmp_path / "r.txt"))
        assert (r.code, r.out) == (2, "") and "the page is HTML; name it" in r.err
        assert not list(tmp_path.iterdir())

    def test_without_plotly_it_says_what_to_install(
        self, cli: Run, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        import importlib.util

        from decodecalc.views.html import plotly_script

        plotly_script.cache_clear()  # packed once per process: this run looks for it again
        real = importlib.util.find_spec

        def no_plotly(name: str, *rest: Any) -> Any:
            return None if name == "plotly" else real(name, *rest)

        monkeypatch.setattr(importlib.util, "find_spec", no_plotly)
        r = cli(
            "estimate", "-m", "llama-3.1-8b", "-g", "h100", "--report", str(tmp_path / "p.html")
        )
        assert r.code == 2 and "pip install 'decodecalc[report]'" in r.err

    def test_a_plain_query_imports_nothing_of_the_page(self) -> None:
        loaded = imported_after(quietly("['estimate', '-m', 'llama-3.1-8b', '-g', 'h100']"))
        page = {"decodecalc.cli.report", "decodecalc.views.page", "decodecalc.views.html"}
        assert not page & loaded
        assert "plotly" not in {m.split(".")[0] for m in loaded}


POINT = """
const gd = document.getElementById(arguments[0]);
gd.scrollIntoView({block: "center"});
const trace = gd._fullData[arguments[1]], j = arguments[2], layout = gd._fullLayout;
const xa = layout["xaxis" + trace.xaxis.slice(1)], ya = layout["yaxis" + trace.yaxis.slice(1)];
const box = gd.getBoundingClientRect();
return [box.left + xa._offset + xa.d2p(trace.x[j]), box.top + ya._offset + ya.d2p(trace.y[j])];
"""
"""Where on the screen a trace's point is drawn, from the chart's own axes."""


@pytest.fixture(scope="module")
def browser() -> Iterator[Browser]:
    if MISSING:
        pytest.skip(MISSING)
    chromium = Browser()
    yield chromium
    chromium.close()


@pytest.mark.slow
class TestInTheBrowser:
    """Headless Chromium opens each page with every request off the machine blocked."""

    @pytest.mark.parametrize("kind", PAGES)
    def test_the_chart_is_drawn_offline(
        self, browser: Browser, pages: dict[str, tuple[Path, dict[str, Any]]], kind: str
    ) -> None:
        path, _ = pages[kind]
        requests = browser.open(path)
        assert requests == [path.resolve().as_uri()]  # the page itself, and nothing else
        assert browser.errors() == []
        drawn = browser.script(
            "return document.querySelectorAll('#chart-0 .main-svg .scatterlayer .trace').length"
        )
        assert drawn == TRACES[kind]

    @pytest.mark.parametrize(
        ("kind", "trace", "point", "fields"),
        [
            ("estimate", 1, 5, ("expected_ms_per_token", "roofline_ms_per_token")),
            ("compare", 3, 4, ("expected_ms_per_token",)),
            ("serving", 0, 3, ("tpot_ms",)),
        ],
        ids=["estimate at 32K", "compare, qwen3-8b at 16K", "serving at concurrency 64"],
    )
    def test_hover_shows_the_json_figure(
        self,
        browser: Browser,
        pages: dict[str, tuple[Path, dict[str, Any]]],
        kind: str,
        trace: int,
        point: int,
        fields: tuple[str, ...],
    ) -> None:
        """The pointer on a point: its label holds the figures --json gives for that row,
        with the tables' 3 decimals."""
        path, doc = pages[kind]
        browser.open(path)
        browser.hover(*browser.script(POINT, "chart-0", trace, point))
        shown = browser.script("return document.querySelector('#chart-0 .hoverlayer').textContent")
        x = browser.script(f"return document.getElementById('chart-0').data[{trace}].x[{point}]")
        key = {"serving": "concurrency"}.get(kind, "context")
        name = browser.script(f"return document.getElementById('chart-0').data[{trace}].name")
        row = next(
            r
            for r in doc["rows"]
            if r[key] == x and (kind != "compare" or name.endswith(r["label"]))
        )
        for field in fields:
            assert f"{row[field]:.3f}" in shown

    def test_hover_on_a_plan_option_shows_its_cost(
        self, browser: Browser, pages: dict[str, tuple[Path, dict[str, Any]]]
    ) -> None:
        path, doc = pages["plan"]
        browser.open(path)
        browser.hover(*browser.script(POINT, "chart-0", 0, 0))
        shown = browser.script("return document.querySelector('#chart-0 .hoverlayer').textContent")
        # The first point is rank 1; a neighbour whose marker overlaps it (rank 2 here, 0.1
        # ms and 2 cents away) may take the hover: the label names the option it shows.
        found = re.search(r"#(\d+) ", shown)
        assert found is not None and int(found.group(1)) <= 2
        shown_row = next(r for r in doc["rows"] if r["rank"] == int(found.group(1)))
        assert f"{shown_row['ms_per_token']:.3f} ms/token" in shown
        assert f"${shown_row['cost_per_million_tokens']:,.2f}" in shown

    def test_the_crossover_marker_sits_at_the_crossover_context(
        self, browser: Browser, pages: dict[str, tuple[Path, dict[str, Any]]]
    ) -> None:
        """Llama-3.1-70B FP8/FP8 on one H100: T* = 69,503,033,344 weight bytes / 163,840
        KV bytes per token (80 layers x 2 x 8 heads x 128 x 1 byte) = 424,212.85 tokens.
        The marker is drawn where the chart's x axis puts that context."""
        path, doc = pages["estimate"]
        assert doc["crossover_context"] == pytest.approx(69_503_033_344 / 163_840)
        browser.open(path)
        marked, drawn_at, axis_at = browser.script(
            "const gd = document.getElementById('chart-0');"
            "const marker = gd.data[gd.data.length - 1];"
            "const point = gd.querySelector('.scatterlayer .trace:last-child .point');"
            "const x = +point.getAttribute('transform').match(/translate\\(([-\\d.]+)/)[1];"
            "return [marker.x[0], x, gd._fullLayout.xaxis.d2p(marker.x[0])];"
        )
        assert marked == doc["crossover_context"]
        assert drawn_at == pytest.approx(axis_at, abs=0.5)

    def test_the_memory_limit_is_marked(
        self, browser: Browser, pages: dict[str, tuple[Path, dict[str, Any]]]
    ) -> None:
        """74,305,608,089 usable bytes (the room a server leaves on an H100,
        tests/step/test_memory.py) less 70,553,706,496 bytes of stored weights leave
        3,751,901,593 bytes: 1,431 whole blocks of 16 tokens of 163,840 bytes, 22,896 tokens."""
        path, doc = pages["estimate"]
        assert doc["max_context_that_fits"] == 3_751_901_593 // (16 * 163_840) * 16
        browser.open(path)
        text = browser.script("return document.getElementById('chart-0').textContent")
        assert "memory full past 22,896 tokens" in text
        assert "crossover 424,213" in text

    def test_it_reads_on_a_phone(
        self, browser: Browser, pages: dict[str, tuple[Path, dict[str, Any]]]
    ) -> None:
        """At a phone's 390 pixels the page never scrolls sideways: the chart fits the
        width and wide tables scroll inside their own box."""
        browser.driver.set_window_size(390, 844)
        try:
            browser.open(pages["estimate"][0])
            page, chart, window = browser.script(
                "return [document.documentElement.scrollWidth,"
                " document.querySelector('#chart-0 .main-svg').getBoundingClientRect().right,"
                " window.innerWidth]"
            )
        finally:
            browser.driver.set_window_size(1100, 900)
        assert page <= window and chart <= window

    def test_it_prints_without_the_toolbar(
        self, browser: Browser, pages: dict[str, tuple[Path, dict[str, Any]]]
    ) -> None:
        """Printed (the print stylesheet): the chart stays, the chart's toolbar goes."""
        browser.open(pages["compare"][0])
        browser.driver.execute_cdp_cmd("Emulation.setEmulatedMedia", {"media": "print"})
        try:
            toolbar, chart = browser.script(
                "return [getComputedStyle(document.querySelector('.modebar-container')).display,"
                " document.querySelector('#chart-0 .main-svg').getBoundingClientRect().height]"
            )
        finally:
            browser.driver.execute_cdp_cmd("Emulation.setEmulatedMedia", {"media": ""})
        assert toolbar == "none" and chart > 100

    @pytest.mark.parametrize(
        ("kind", "marks"),
        [
            ("serving", lambda d: [f"knee {d['knee_concurrency']:g}", "KV pool full 295.5"]),
            ("plan", lambda d: [f"latency target {d['targets']['max_ms_per_token']:g} ms"]),
        ],
        ids=["serving: knee and KV pool", "plan: latency target"],
    )
    def test_the_limits_are_drawn(
        self,
        browser: Browser,
        pages: dict[str, tuple[Path, dict[str, Any]]],
        kind: str,
        marks: Any,
    ) -> None:
        """serving: the knee at the concurrency --json names, and the KV pool's limit at
        max_concurrency_kv (295.46 requests of 1,500 tokens, to 4 digits); plan: the
        latency target."""
        path, doc = pages[kind]
        if kind == "serving":
            assert f"{doc['max_concurrency_kv']:.4g}" == "295.5"
        browser.open(path)
        text = browser.script("return document.getElementById('chart-0').textContent")
        for mark in marks(doc):
            assert mark in text
