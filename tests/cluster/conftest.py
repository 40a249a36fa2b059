"""A real Kubernetes 1.20 cluster (control plane + one node running real pods) for the ``cluster`` tests.

See :mod:`tests.cluster.node` for what runs and :mod:`tests.cluster.network` for how it is
kept on loopback and its own bridge. Needs root (network namespaces, mounts, cgroups) and
the binaries of ``scripts/build_kube_apiserver.sh`` plus the packages and images of
``scripts/build_kube_node.sh``; when missing they are built before the first test. Nothing
here is skipped: a machine that cannot run the cluster fails these tests with the reason.

Fixtures
  ``kube_cluster`` (session) -> :class:`tests.cluster.node.KubeCluster`
  ``cluster_namespace`` (function) -> str: a fresh namespace (no PodSecurityPolicy granted)
"""
from __future__ import annotations

import os
import signal
import subprocess
import time
from pathlib import Path
from typing import Iterator

import pytest

from tests.cluster import network
from tests.cluster.node import KubeCluster, start_cluster
from tests.kube.binaries import KUBE_CACHE, REPO
from tests.kube.fixtures import namespace_for
from tests.kube.processes import log_tail
from tests.kube.rest import api_request, apply_manifest

BINARIES = ("etcd", "kube-apiserver", "kube-controller-manager", "kube-scheduler", "kubelet", "kube-proxy",
            "kubectl")
BUILD_STEPS = (REPO / "scripts" / "build_kube_apiserver.sh", REPO / "scripts" / "build_kube_node.sh")
NODE_LABELS = {"dask-tkg.test/node": "real"}


def _binaries_missing() -> list[str]:
    return [b for b in BINARIES if not os.access(KUBE_CACHE / "bin" / b, os.X_OK)]


def _build() -> None:
    """Run the build scripts (each a no-op when its cache is complete); fail with the log's tail."""
    for script in BUILD_STEPS:
        log = KUBE_CACHE / f"{script.stem}.log"
        KUBE_CACHE.mkdir(parents=True, exist_ok=True)
        with log.open("w") as out:
            rc = subprocess.run(["bash", str(script)], stdin=subprocess.DEVNULL, stdout=out,
                                stderr=subprocess.STDOUT, cwd=REPO, timeout=45 * 60).returncode
        if rc != 0:
            pytest.fail(f"{script.relative_to(REPO)} failed (exit {rc}); log {log}:\n{log_tail(log, 20)}",
                        pytrace=False)


def _terminated(signum, frame):
    raise KeyboardInterrupt(f"signal {signum}")


def _host_mounts_under(path: Path) -> list[str]:
    return [line for line in Path("/proc/self/mounts").read_text().splitlines() if f" {path}" in line]


@pytest.fixture(scope="session")
def kube_cluster(tmp_path_factory) -> Iterator[KubeCluster]:
    if os.geteuid() != 0:
        pytest.fail("the real-cluster tests need root (network namespace, mounts, cgroups)", pytrace=False)
    _build()
    missing = _binaries_missing()
    if missing:
        pytest.fail(f"not built into {KUBE_CACHE / 'bin'}: {missing}", pytrace=False)
    # a SIGTERM (a CI timeout) must still run the teardown below: the pods' shims, kubelet's
    # cgroups and sysctls outlive the components otherwise
    previous = signal.signal(signal.SIGTERM, _terminated)
    net = network.allocate()
    workdir = tmp_path_factory.mktemp("kube-cluster")
    cluster = None
    try:
        started = time.monotonic()
        cluster = start_cluster(workdir, net, NODE_LABELS)
        cluster.start_s = time.monotonic() - started
        yield cluster
    finally:
        problems = []
        if cluster is not None:
            # the isolation test looks at one moment; this covers the whole session
            counted = net.guard_drops()
            if counted["cloud-metadata"] or counted["outside"]:
                problems.append(f"the guard chain dropped packets bound outside during the session: {counted}")
            problems += cluster.stop()
        net.destroy()
        problems += net.leftovers() + [f"mount {m}" for m in _host_mounts_under(workdir)]
        signal.signal(signal.SIGTERM, previous)
        if problems:
            raise AssertionError("the cluster left things behind:\n" + "\n".join(problems))


@pytest.fixture
def cluster_namespace(kube_cluster: KubeCluster, request) -> Iterator[str]:
    """A fresh namespace named after the test, deleted afterwards (its pods with it)."""
    name = namespace_for(request.node.name, 40)
    apply_manifest(kube_cluster.api_client, {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name}})
    try:
        yield name
    finally:
        api_request(kube_cluster.api_client, "DELETE", f"/api/v1/namespaces/{name}")
