"""The real Kubernetes cluster of the paper's stacks (1.20, as TKR v1.20.8 runs it: control plane
and one node, PodSecurityPolicy admission) for the tests of the paper's stacks: the reference
Helm release, TKG's pod security policies. It is the same machinery as the current stacks'
cluster (tests/cluster: :mod:`tests.cluster.running`), started after that one is stopped.

Fixtures
  ``kube_cluster`` (package) -> :class:`tests.cluster.node.KubeCluster` of the 1.20 build: the
      name the shared helpers (tests/cluster/*.py) ask for, so that they run unchanged here
  ``dask_release``, ``data_server`` (module): :mod:`tests.cluster.dask_release`, for the
      modules that define ``release_stack`` (the stack and settings to release)
  ``cluster_namespace`` (function) -> str: a fresh namespace (no PodSecurityPolicy granted)
"""
from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.cluster.dask_release import (  # noqa: F401 - fixtures, registered by name
    dask_release,
    data_server,
)
from tests.cluster.node import KubeCluster
from tests.cluster.running import fresh_namespace, running_cluster
from tests.kube.binaries import PAPER


@pytest.fixture(scope="package")
def kube_cluster(tmp_path_factory) -> Iterator[KubeCluster]:
    yield from running_cluster(PAPER, tmp_path_factory)


@pytest.fixture
def cluster_namespace(kube_cluster: KubeCluster, request) -> Iterator[str]:
    """A fresh namespace named after the test, deleted afterwards (its pods with it)."""
    yield from fresh_namespace(kube_cluster, request)
