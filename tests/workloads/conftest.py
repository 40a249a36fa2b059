"""One real local Dask cluster (worker processes, as the runner starts them) and one
generated Stanford-Dogs-like tree, shared by every test in this folder."""
from __future__ import annotations

from pathlib import Path

import pytest

from tests.workloads.local_cluster import two_worker_processes
from tests.workloads.support import BREEDS, PER_BREED
from workloads.images import synthetic as synth


@pytest.fixture(scope="session")
def data_root(tmp_path_factory) -> Path:
    """A dataset root: ``dogs/Images`` with 4 breeds x 5 images plus one file of every
    broken kind, and the labels file."""
    root = tmp_path_factory.mktemp("data")
    synth.generate(root / "dogs", breeds=BREEDS, images_per_breed=PER_BREED, broken=True, seed=7)
    return root


@pytest.fixture(scope="session")
def manifest(data_root) -> dict:
    return synth.generate(data_root / "dogs", breeds=BREEDS, images_per_breed=PER_BREED, broken=True, seed=7)


@pytest.fixture(scope="session")
def cluster():
    """2 worker processes x 1 thread, made by the runner's own local-cluster code."""
    yield from two_worker_processes()


@pytest.fixture(scope="session")
def client(cluster):
    from distributed import Client

    with Client(cluster) as connected:
        connected.wait_for_workers(2)
        yield connected


@pytest.fixture(scope="session")
def workers(client) -> list[str]:
    return sorted(client.scheduler_info(n_workers=-1)["workers"])
