"""Shared taxi fixtures: a generated dataset root with every kind of bad file, what plain
pandas says about it, and a real local Dask cluster (2 worker processes x 1 thread) per
test module."""
from __future__ import annotations

import pytest

from tests.taxi.support import (
    TaxiData,
    make_dataset,
)


@pytest.fixture(scope="session")
def taxi_data(tmp_path_factory) -> TaxiData:
    return make_dataset(tmp_path_factory.mktemp("taxi-data"))


@pytest.fixture(scope="module")
def client():
    """A real local cluster: 2 worker processes x 1 thread, one per test module."""
    from distributed import Client, LocalCluster

    with LocalCluster(n_workers=2, threads_per_worker=1, dashboard_address=":0",
                      processes=True) as cluster, Client(cluster) as connected:
        connected.wait_for_workers(2)
        yield connected
