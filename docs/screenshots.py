"""Screenshots of the report page for docs/report.md: one page of each kind (estimate,
compare, serving, plan), written by its command's --report and opened in headless
Chromium (Debian's chromium and chromium-driver), the top of each saved as
docs/report-KIND.png.

    python docs/screenshots.py
"""

from __future__ import annotations

import contextlib
import io
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))  # tests/views/browser.py: the Chromium the tests drive, and PAGES

from decodecalc.cli import main  # noqa: E402
from tests.views.browser import MISSING, PAGES, Browser  # noqa: E402

WIDTH, HEIGHT = 1000, 1000
"""The window: a laptop's width, tall enough for the title and the chart (serving's three
panels too)."""


def shrink(path: Path) -> None:
    """A palette of 256 colours: a page's flat colours lose nothing, the file two thirds
    (skipped where Pillow, which matplotlib brings, is not installed)."""
    try:
        from PIL import Image
    except ImportError:
        return
    with Image.open(path) as image:
        small = image.convert("RGB").quantize(colors=256)
    small.save(path, optimize=True)


def main_() -> int:
    if MISSING:
        print(f"screenshots: {MISSING}", file=sys.stderr)
        return 2
    browser = Browser(WIDTH, HEIGHT)
    try:
        with tempfile.TemporaryDirectory() as folder:
            for kind, args in PAGES.items():
                page = Path(folder) / f"{kind}.html"
                with contextlib.redirect_stdout(io.StringIO()):
                    if main([*args, "--report", str(page)]) != 0:
                        return 1
                browser.open(page)
                target = ROOT / "docs" / f"report-{kind}.png"
                browser.screenshot(target)
                shrink(target)
                print(f"wrote {target.relative_to(ROOT)}")
    finally:
        browser.close()
    return 0


if __name__ == "__main__":
    sys.exit(main_())
