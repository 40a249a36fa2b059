"""The rendered report in headless Chromium: every figure loads, nothing is fetched, and
a screenshot is left in the test artifacts for a person to look at.

This test fails (rather than skips) without Chromium and ChromeDriver: CI installs them
with scripts/install_system_packages.py, and a report nobody opened is not tested.
"""
from __future__ import annotations

import base64
import shutil
from pathlib import Path

import pytest

from .support import PNG_SIGNATURE, png_size

pytestmark = pytest.mark.browser

FLAGS = ("--headless", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage", "--no-first-run",
         "--disable-background-networking", "--disable-component-update", "--disable-sync",
         "--window-size=1280,1000", "--hide-scrollbars")


def _find(*names: str) -> str | None:
    for name in names:
        found = shutil.which(name) or (name if Path(name).is_file() else None)
        if found:
            return found
    return None


@pytest.fixture
def browser(tmp_path):
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
    options.add_argument(f"--user-data-dir={tmp_path / 'chromium-profile'}")
    # an explicit driver path: Selenium never tries to download one
    driver = webdriver.Chrome(service=Service(executable_path=driver_path), options=options)
    driver.set_page_load_timeout(60)
    yield driver
    driver.quit()


def test_every_figure_loads_in_chromium(browser, rendered, artifacts_dir):
    from selenium.webdriver.support.ui import WebDriverWait

    browser.get(rendered.as_uri())
    WebDriverWait(browser, 30).until(lambda d: d.execute_script(
        "return document.readyState === 'complete' && Array.from(document.images).every(i => i.complete)"))
    images = browser.execute_script(
        "return Array.from(document.images).map(i => ({alt: i.alt, w: i.naturalWidth, h: i.naturalHeight,"
        " shown: i.getBoundingClientRect().width}))")
    assert len(images) == 8
    broken = [i["alt"] for i in images if not (i["w"] > 0 and i["h"] > 0)]
    assert not broken, f"figures that did not load: {broken}"
    assert all(i["shown"] > 300 for i in images), images
    fetched = browser.execute_script(
        "return performance.getEntriesByType('resource').map(e => e.name).filter(n => !n.startsWith('data:'))")
    assert fetched == [], f"the report fetched {fetched}"
    assert browser.find_element("css selector", "h1").text.startswith("Dask on vSphere with Tanzu")
    assert len(browser.find_elements("css selector", "#runs tbody tr")) == 12

    # the whole page, not only the first screenful
    metrics = browser.execute_cdp_cmd("Page.getLayoutMetrics", {})
    size = metrics.get("cssContentSize") or metrics["contentSize"]
    shot = browser.execute_cdp_cmd("Page.captureScreenshot", {
        "format": "png", "captureBeyondViewport": True,
        "clip": {"x": 0, "y": 0, "width": size["width"], "height": size["height"], "scale": 1}})
    path = artifacts_dir / "report-fixture.png"
    path.write_bytes(base64.b64decode(shot["data"]))
    assert path.read_bytes()[:8] == PNG_SIGNATURE
    width, height = png_size(path)
    assert width >= 1000 and height > 3000, (width, height)


def test_the_default_runs_report_in_chromium(browser, tmp_path, artifacts_dir):
    """The report of ``python -m workloads.run`` (local, smoke, CPU: fixtures/local-smoke) as a
    person opens it: titled for the local cluster, every figure loaded, the accuracy's reason in
    the runs table; the screenshot stays in the test artifacts."""
    from selenium.webdriver.support.ui import WebDriverWait

    from workloads.report import render

    from .support import FIXTURES

    browser.get(render(FIXTURES / "local-smoke", output=tmp_path).as_uri())
    WebDriverWait(browser, 30).until(lambda d: d.execute_script(
        "return document.readyState === 'complete' && Array.from(document.images).every(i => i.complete)"))
    heading = browser.find_element("css selector", "h1").text
    assert heading.startswith("A local Dask cluster") and "vSphere" not in heading
    sizes = browser.execute_script("return Array.from(document.images).map(i => i.naturalWidth * i.naturalHeight)")
    assert len(sizes) == 6 and all(sizes), sizes
    accuracy = [row.text for row in browser.find_elements("css selector", "#runs tbody tr") if "accuracy" in row.text]
    assert len(accuracy) == 1 and "pass --weights" in accuracy[0]
    path = artifacts_dir / "report-local-smoke.png"
    metrics = browser.execute_cdp_cmd("Page.getLayoutMetrics", {})
    size = metrics.get("cssContentSize") or metrics["contentSize"]
    shot = browser.execute_cdp_cmd("Page.captureScreenshot", {
        "format": "png", "captureBeyondViewport": True,
        "clip": {"x": 0, "y": 0, "width": size["width"], "height": size["height"], "scale": 1}})
    path.write_bytes(base64.b64decode(shot["data"]))
    assert path.read_bytes()[:8] == PNG_SIGNATURE
