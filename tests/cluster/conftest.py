"""The real Kubernetes cluster of the current stacks (the default VKr's minor, 1.33: control plane
and one node running real pods) for the ``cluster`` tests; the paper's stacks have theirs in
``tests/paper_cluster``. See :mod:`tests.cluster.running` for its life, :mod:`tests.cluster.node`
for what runs and :mod:`tests.cluster.network` for how it is kept on loopback and its own bridge.

Fixtures
  ``kube_cluster`` (package) -> :class:`tests.cluster.node.KubeCluster`
  ``dask_release``, ``data_server`` (module): :mod:`tests.cluster.dask_release`, for the
      modules that define ``release_stack`` (the stack and settings to release)
  ``cluster_namespace`` (function) -> str: a fresh namespace (no Pod Security label of its own)
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
from tests.kube.binaries import CURRENT


@pytest.fixture(scope="package")
def kube_cluster(tmp_path_factory) -> Iterator[KubeCluster]:
    yield from running_cluster(CURRENT, tmp_path_factory)


@pytest.fixture
def cluster_namespace(kube_cluster: KubeCluster, request) -> Iterator[str]:
    """A fresh namespace named after the test, deleted afterwards (its pods with it)."""
    yield from fresh_namespace(kube_cluster, request)
