"""Shared by the report tests: the committed fixture results and one rendering of them."""
from __future__ import annotations

from pathlib import Path

import pytest

from tests.report import chromium
from tests.report.support import BASELINE, FIXTURES


@pytest.fixture(scope="session")
def rendered(tmp_path_factory) -> Path:
    """report.html rendered from the fixture, compared with the baseline fixture."""
    from workloads.report import render

    return render(FIXTURES, compare=BASELINE, output=tmp_path_factory.mktemp("report"))


@pytest.fixture(scope="session")
def dask_client():
    """A real local cluster: 2 worker processes x 1 thread, dashboard on a free port."""
    from distributed import Client, LocalCluster

    with (LocalCluster(n_workers=2, threads_per_worker=1, processes=True, dashboard_address=":0") as cluster,
          Client(cluster) as client):
        client.wait_for_workers(2, timeout=60)
        yield client


@pytest.fixture
def browser(tmp_path):
    """Headless Chromium for the page tests (tests/report/chromium.py), closed after the test."""
    driver = chromium.start(tmp_path / "chromium-profile")
    yield driver
    driver.quit()
