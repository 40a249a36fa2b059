"""The rendered report in headless Chromium: every figure loads, nothing is fetched, and
a screenshot is left in the test artifacts for a person to look at.

This test fails (rather than skips) without Chromium and ChromeDriver: CI installs them
with scripts/install_system_packages.py, and a report nobody opened is not tested.
"""
from __future__ import annotations

import pytest

from . import chromium
from .support import PNG_SIGNATURE, png_size

pytestmark = pytest.mark.browser

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

    path = chromium.screenshot(browser, artifacts_dir / "report-fixture.png")  # the whole page
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
    path = chromium.screenshot(browser, artifacts_dir / "report-local-smoke.png")
    assert path.read_bytes()[:8] == PNG_SIGNATURE
