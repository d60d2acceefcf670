"""Headless Chromium for the viewer's tests and benchmark: Debian's `chromium` and
`chromium-driver` (/usr/bin), driven by selenium; nothing is downloaded.

`browser()` yields a WebDriver with the flags that keep Chromium off the network. When the
browser, the driver or selenium is missing the test is skipped, except under CI=true, where it
fails (.ci/run installs them). `artifacts_dir()` is where screenshots go (printed by the test).
"""

from __future__ import annotations

import contextlib
import os
import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from .corpus import in_ci

CHROMIUM = os.environ.get("CTX_CHROMIUM", "/usr/bin/chromium")
CHROMEDRIVER = os.environ.get("CTX_CHROMEDRIVER", "/usr/bin/chromedriver")
FLAGS = ("--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
         "--disable-background-networking", "--disable-component-update", "--disable-sync",
         "--disable-dev-shm-usage", "--window-size=1400,1000")


def missing() -> str | None:
    try:
        import selenium  # noqa: F401
    except ImportError:
        return "selenium is not installed (pip install -e '.[dev,viewer]')"
    for path in (CHROMIUM, CHROMEDRIVER):
        if not Path(path).exists():
            return f"{path} is missing (apt-get install chromium chromium-driver)"
    return None


def require_browser() -> None:
    why = missing()
    if why is None:
        return
    if in_ci():
        pytest.fail(f"browser tests cannot run: {why}", pytrace=False)
    pytest.skip(why)


@contextlib.contextmanager
def browser() -> Iterator:
    """A headless Chromium WebDriver with its own profile directory (removed afterwards)."""
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    profile = tempfile.mkdtemp(prefix="ctx-chromium-")
    opts = webdriver.ChromeOptions()
    opts.binary_location = CHROMIUM
    for flag in FLAGS:
        opts.add_argument(flag)
    opts.add_argument(f"--user-data-dir={profile}")
    opts.set_capability("goog:loggingPrefs", {"browser": "ALL"})
    driver = webdriver.Chrome(service=Service(CHROMEDRIVER), options=opts)
    try:
        yield driver
    finally:
        driver.quit()
        shutil.rmtree(profile, ignore_errors=True)


def artifacts_dir() -> Path:
    """Where screenshots are saved: $CTX_TEST_ARTIFACTS, else <tmp>/ctx-test-artifacts/viewer."""
    root = Path(os.environ.get("CTX_TEST_ARTIFACTS") or Path(tempfile.gettempdir()) /
                "ctx-test-artifacts") / "viewer"
    root.mkdir(parents=True, exist_ok=True)
    return root


def wait_ready(driver, timeout: float = 30.0) -> None:
    """Until the page says it has drawn its first view (body[data-ready])."""
    from selenium.webdriver.support.ui import WebDriverWait

    WebDriverWait(driver, timeout).until(
        lambda d: d.execute_script("return document.body.getAttribute('data-ready')") == "1")


def console_errors(driver) -> list[dict]:
    return [e for e in driver.get_log("browser") if e.get("level") == "SEVERE"]
