"""Headless Chromium for the report tests (test_browser.py, test_usage_browser.py): the system's
Chromium and ChromeDriver (scripts/install_system_packages.py installs both), no network of its
own, a fresh profile; and a screenshot of a whole page, for a person to look at."""
from __future__ import annotations

import base64
import shutil
from pathlib import Path
from typing import Any

import pytest

FLAGS = ("--headless", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage", "--no-first-run",
         "--disable-background-networking", "--disable-component-update", "--disable-sync",
         "--window-size=1280,1000", "--hide-scrollbars")


def _find(*names: str) -> str | None:
    for name in names:
        found = shutil.which(name) or (name if Path(name).is_file() else None)
        if found:
            return found
    return None


def start(profile: Path) -> Any:
    """A headless Chromium driven by ChromeDriver; the test fails (never skips) without them."""
    chromium = _find("chromium", "/usr/bin/chromium", "chromium-browser", "google-chrome")
    driver_path = _find("chromedriver", "/usr/bin/chromedriver")
    if not chromium or not driver_path:
        pytest.fail("headless Chromium and ChromeDriver are required for the report's browser test: install "
                    "them with scripts/install_system_packages.py (Debian packages chromium, chromium-driver); "
                    f"found chromium={chromium}, chromedriver={driver_path}", pytrace=False)
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    options = webdriver.ChromeOptions()
    options.binary_location = chromium
    for flag in FLAGS:
        options.add_argument(flag)
    options.add_argument(f"--user-data-dir={profile}")
    # an explicit driver path: Selenium never tries to download one
    driver = webdriver.Chrome(service=Service(executable_path=driver_path), options=options)
    driver.set_page_load_timeout(60)
    return driver


def screenshot(driver: Any, path: Path) -> Path:
    """The whole page, not only the first screenful, as a PNG at ``path``."""
    metrics = driver.execute_cdp_cmd("Page.getLayoutMetrics", {})
    size = metrics.get("cssContentSize") or metrics["contentSize"]
    shot = driver.execute_cdp_cmd("Page.captureScreenshot", {
        "format": "png", "captureBeyondViewport": True,
        "clip": {"x": 0, "y": 0, "width": size["width"], "height": size["height"], "scale": 1}})
    path.write_bytes(base64.b64decode(shot["data"]))
    return path
