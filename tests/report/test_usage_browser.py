"""The usage report (``dask-tkg usage`` over three people's records) in headless Chromium: both
figures load and are shown, nothing is fetched, the per-person table reads as the numbers
computed by hand, and a screenshot stays in the test artifacts for a person to look at.

Fails (rather than skips) without Chromium and ChromeDriver, as tests/report/test_browser.py does."""
from __future__ import annotations

import pytest

from workloads.report import usage

from . import chromium
from .support import PNG_SIGNATURE, png_size
from .usage_records import write_team

pytestmark = pytest.mark.browser


def test_the_usage_report_in_chromium(browser, tmp_path, artifacts_dir, capsys):
    from selenium.webdriver.support.ui import WebDriverWait

    team = write_team(tmp_path / "team")
    assert usage.main([*(str(team[p]) for p in ("alice", "bob", "carol")), "--rate", "2.5", "--currency", "EUR",
                       "--output", str(tmp_path / "out")]) == 0
    browser.get((tmp_path / "out" / "usage.html").as_uri())
    WebDriverWait(browser, 30).until(lambda d: d.execute_script(
        "return document.readyState === 'complete' && Array.from(document.images).every(i => i.complete)"))
    images = browser.execute_script(
        "return Array.from(document.images).map(i => ({alt: i.alt, w: i.naturalWidth, h: i.naturalHeight,"
        " shown: i.getBoundingClientRect().width}))")
    assert [i["alt"] for i in images] == ["GPU-hours held and busy per person", "GPU-hours held per week, by person"]
    assert all(i["w"] > 0 and i["h"] > 0 and i["shown"] > 300 for i in images), images
    fetched = browser.execute_script(
        "return performance.getEntriesByType('resource').map(e => e.name).filter(n => !n.startsWith('data:'))")
    assert fetched == [], f"the page fetched {fetched}"
    assert browser.find_element("css selector", "h1").text == "GPU usage: GPU-hours held and busy"
    people = [row.text for row in browser.find_elements("css selector", "#people-table tbody tr")]
    assert people == ["alice 2 2 2 3.50 0.25 2.58 0.67 1.50 43% 8.75 EUR",
                      "bob 1 0 4 4.00 0.33 3.00 0.67 not measured not measured 10.00 EUR",
                      "carol 2 1 1 0.50 0.03 0.42 0.05 0.40 80% 1.25 EUR"]
    assert len(browser.find_elements("css selector", "#runs-table tbody tr")) == 5
    assert "1 run(s) without gpu_usage" in browser.find_element("css selector", ".notes").text

    path = chromium.screenshot(browser, artifacts_dir / "usage-fixture.png")
    assert path.read_bytes()[:8] == PNG_SIGNATURE
    width, height = png_size(path)
    assert width >= 1000 and height > 1200, (width, height)
