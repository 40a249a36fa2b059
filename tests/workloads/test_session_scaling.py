"""The runner's cluster session with a scaler (the operator backend's ClusterScaler, tested
against the real controller in tests/operator): ``--workers`` resizes the cluster and waits
for exactly that many workers; the deployed bounds come back when the session closes, also
after a failure. Here the scaler resizes a real LocalCluster, so workers really come and go."""
from __future__ import annotations

import pytest
from distributed import LocalCluster

from workloads.cluster import endpoint, scaling
from workloads.cluster.session import ClusterSession
from workloads.core.errors import EndpointError


class LocalClusterScaler:
    """``pin``/``adapt``/``restore`` as ClusterScaler has them, acting on a LocalCluster."""

    def __init__(self, cluster: LocalCluster):
        self.cluster = cluster
        self.calls: list[tuple[str | int, ...]] = []

    def pin(self, workers: int) -> None:
        self.calls.append(("pin", workers))
        self.cluster.scale(workers)

    def adapt(self, minimum: int, maximum: int) -> None:
        self.calls.append(("adapt", minimum, maximum))

    def restore(self) -> None:
        self.calls.append(("restore",))


@pytest.fixture
def cluster():
    with LocalCluster(n_workers=2, threads_per_worker=1, processes=False, dashboard_address=":0") as started:
        yield started


def test_scale_pins_the_size_and_waits_for_exactly_that_many(cluster):
    session = ClusterSession(endpoint.from_address(cluster.scheduler_address), echo=lambda *a, **k: None)
    session.connect()
    session.scaler = scaler = LocalClusterScaler(cluster)
    try:
        assert session.scale(1, timeout=60) and len(session.workers()) == 1
        assert session.scale(2, timeout=60) and len(session.workers()) == 2
    finally:
        session.close()
    assert scaler.calls == [("pin", 1), ("pin", 2), ("restore",)]


def test_without_a_scaler_a_bare_address_cannot_scale_and_says_so_once(cluster):
    said = []
    session = ClusterSession(endpoint.from_address(cluster.scheduler_address), echo=said.append)
    with session:
        session.connect()
        assert not session.scale(1, timeout=5)
        session.say_restricted(2)
        session.say_restricted(2)
        with pytest.raises(EndpointError, match="--adaptive needs the Dask operator backend"):
            session.adapt(1, 2)
    assert [s for s in said if "Helm backend" in s] == [scaling.helm_restriction_notice(2)]
