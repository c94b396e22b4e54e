"""Headless Chromium for the report page: Debian's ``chromium`` and ``chromium-driver``
driven by Selenium, for tests/views/test_report_page.py and docs/screenshots.py.

Every request that would leave the machine is blocked (DevTools' Network.setBlockedURLs)
and every request the page makes is recorded from the performance log, so a test can
say the page asked for nothing but itself.
"""

from __future__ import annotations

import json
import shutil
import tempfile
from pathlib import Path
from typing import Any

CHROMIUM = shutil.which("chromium")
DRIVER = shutil.which("chromedriver")
MISSING = (
    None
    if CHROMIUM and DRIVER
    else "needs Debian's chromium and chromium-driver (apt-get install chromium chromium-driver)"
)
FLAGS = (
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
    "--hide-scrollbars",
)
BLOCKED = ("http://*", "https://*", "ws://*", "wss://*", "ftp://*")

PAGES = {
    "estimate": (
        *("estimate", "-m", "llama-3.1-70b", "-g", "h100-sxm"),
        *("-w", "fp8", "-k", "fp8", "-c", "1K..1M"),
    ),
    "compare": (
        "compare",
        "-m",
        "llama-3.1-8b,qwen3-8b,mistral-7b",
        "-g",
        "h100-sxm",
        "-c",
        "1K..256K",
    ),
    "serving": (
        *("serving", "-m", "llama-3.1-8b", "-g", "h100-sxm", "--input-len", "1000"),
        *("--output-len", "500", "--concurrency", "1,4,16,64,128,256,512"),
    ),
    "plan": (
        *("plan", "-m", "llama-3.1-70b", "--gpus", "h100-sxm,h200,a100-80gb,b200", "-c", "32K"),
        *("--max-ms-per-token", "50", "--min-throughput", "2000"),
    ),
}
"""One page of each kind, for the tests and the docs' screenshots (docs/report.md)."""


class Browser:
    """One Chromium with a fresh profile; ``open`` loads a page and returns its requests."""

    def __init__(self, width: int = 1100, height: int = 900) -> None:
        from selenium import webdriver
        from selenium.webdriver.chrome.service import Service

        self._profile = tempfile.mkdtemp(prefix="decodecalc-chromium-")
        options = webdriver.ChromeOptions()
        options.binary_location = str(CHROMIUM)
        for flag in (*FLAGS, f"--user-data-dir={self._profile}", f"--window-size={width},{height}"):
            options.add_argument(flag)
        options.set_capability("goog:loggingPrefs", {"performance": "ALL", "browser": "ALL"})
        # The driver named outright: Selenium Manager (which downloads drivers) never runs.
        self.driver = webdriver.Chrome(service=Service(str(DRIVER)), options=options)
        self.driver.execute_cdp_cmd("Network.enable", {})
        self.driver.execute_cdp_cmd("Network.setBlockedURLs", {"urls": list(BLOCKED)})

    def open(self, page: Path) -> list[str]:
        """Load the page, wait until every chart is drawn, and return the URL of every
        request it made (the page's own file among them)."""
        from selenium.webdriver.support.ui import WebDriverWait

        self.driver.get_log("performance")  # drop what earlier pages logged
        self.driver.get(page.resolve().as_uri())
        WebDriverWait(self.driver, 30).until(
            lambda d: d.execute_script(
                "const charts = document.querySelectorAll('.chart');"
                "return charts.length > 0 && [...charts].every(c => c.querySelector('.main-svg'))"
            )
        )
        urls = []
        for entry in self.driver.get_log("performance"):
            message = json.loads(entry["message"])["message"]
            if message["method"] == "Network.requestWillBeSent":
                urls.append(message["params"]["request"]["url"])
        return urls

    def script(self, code: str, *args: Any) -> Any:
        return self.driver.execute_script(code, *args)

    def errors(self) -> list[str]:
        """What the page's console said at level SEVERE (a script error, a blocked load)."""
        return [e["message"] for e in self.driver.get_log("browser") if e["level"] == "SEVERE"]

    def hover(self, x: float, y: float) -> None:
        """Move the mouse to a point of the viewport, as a person's pointer would."""
        self.driver.execute_cdp_cmd(
            "Input.dispatchMouseEvent", {"type": "mouseMoved", "x": x, "y": y}
        )

    def screenshot(self, path: Path) -> None:
        self.driver.save_screenshot(str(path))

    def close(self) -> None:
        self.driver.quit()
        shutil.rmtree(self._profile, ignore_errors=True)
