"""One real local Dask cluster for this folder (2 worker processes x 1 thread under
nannies, as the runner starts them), the fault directory its workers watch, and small
generated datasets of both benchmarks."""
from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.workloads.local_cluster import two_worker_processes
from workloads.images import synthetic as synth_images
from workloads.taxi import synthetic as synth_taxi

from .faults import FAULTS_ENV


@pytest.fixture(scope="session")
def faults_dir(tmp_path_factory) -> Iterator[Path]:
    """Set before the cluster starts: workers (and the ones nannies restart) inherit it."""
    directory = tmp_path_factory.mktemp("faults")
    previous = os.environ.get(FAULTS_ENV)
    os.environ[FAULTS_ENV] = str(directory)
    yield directory
    if previous is None:
        os.environ.pop(FAULTS_ENV, None)
    else:
        os.environ[FAULTS_ENV] = previous


@pytest.fixture(scope="session")
def cluster(faults_dir):
    yield from two_worker_processes()


@pytest.fixture(scope="session")
def client(cluster):
    """The tests' own client: not the default, and not entered as a context (which would
    make it the *current* client in this thread, so that distributed's helpers that take
    the current client, ``wait`` and ``as_completed``, would use it, and its event loop,
    for the runner's futures)."""
    from distributed import Client

    connected = Client(cluster, set_as_default=False)
    connected.wait_for_workers(2)
    yield connected
    connected.close()


@pytest.fixture(scope="session")
def data_root(tmp_path_factory) -> Path:
    """``dogs/`` (4 breeds x 5 images and one file of every broken kind) and ``taxi/``
    (two months, one CSV and one Parquet, 15,000 rows each)."""
    root = tmp_path_factory.mktemp("data")
    synth_images.generate(root / "dogs", breeds=4, images_per_breed=5, broken=True, seed=7)
    synth_taxi.generate(root, ["2017-06.csv", "2019-02.parquet"], 15_000)
    return root
