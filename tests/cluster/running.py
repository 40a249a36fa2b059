"""One real cluster (control plane and node) of one Kubernetes build, for as long as a folder's
tests need it: ``tests/cluster`` runs the current stacks' (1.33), ``tests/paper_cluster`` the
paper's (1.20). Each folder's conftest holds it in a package-scoped ``kube_cluster`` fixture, so
one cluster is torn down before the next folder's starts: both use the machine's
``kubepods`` cgroups, and one at a time keeps the machine's 2 cores for the tests.

Needs root (network namespaces, mounts, cgroups), the build's binaries and the packages and
images of ``scripts/build_kube_node.sh``; what is missing is built before the first test.
Nothing here is skipped: a machine that cannot run the cluster fails these tests with the reason.
"""
from __future__ import annotations

import os
import signal
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.cluster import network
from tests.cluster.node import KubeCluster, start_cluster
from tests.kube.binaries import REPO, KubeRelease
from tests.kube.fixtures import namespace_for
from tests.kube.processes import log_tail
from tests.kube.rest import api_request, apply_manifest

NODE_LABELS = {"dask-tkg.test/node": "real"}
NODE_BUILD = REPO / "scripts" / "build_kube_node.sh"


def _build(release: KubeRelease) -> None:
    """Run the build scripts (each a no-op when its cache is complete); fail with the log's tail."""
    release.cache.mkdir(parents=True, exist_ok=True)
    for script in (release.build_script, NODE_BUILD):
        log = release.cache / f"{script.stem}.log"
        with log.open("w") as out:
            rc = subprocess.run(["bash", str(script)], stdin=subprocess.DEVNULL, stdout=out, check=False,
                                stderr=subprocess.STDOUT, cwd=REPO, timeout=45 * 60).returncode
        if rc != 0:
            pytest.fail(f"{script.relative_to(REPO)} failed (exit {rc}); log {log}:\n{log_tail(log, 20)}",
                        pytrace=False)


def _terminated(signum, frame):
    raise KeyboardInterrupt(f"signal {signum}")


def _host_mounts_under(path: Path) -> list[str]:
    return [line for line in Path("/proc/self/mounts").read_text().splitlines() if f" {path}" in line]


def running_cluster(release: KubeRelease, tmp_path_factory) -> Iterator[KubeCluster]:
    """Start ``release``'s cluster, yield it, and stop it, failing on anything it left behind."""
    if os.geteuid() != 0:
        pytest.fail("the real-cluster tests need root (network namespace, mounts, cgroups)", pytrace=False)
    _build(release)
    missing = release.missing()
    if missing:
        pytest.fail(f"not built into {release.bin_dir}: {missing}", pytrace=False)
    # a SIGTERM (a CI timeout) must still run the teardown below: the pods' shims, kubelet's
    # cgroups and sysctls outlive the components otherwise
    previous = signal.signal(signal.SIGTERM, _terminated)
    net = network.allocate()
    workdir = tmp_path_factory.mktemp(f"kube-cluster-{release.key}")
    cluster = None
    try:
        started = time.monotonic()
        cluster = start_cluster(release, workdir, net, NODE_LABELS)
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


def fresh_namespace(cluster: KubeCluster, request) -> Iterator[str]:
    """A fresh namespace named after the test, deleted afterwards (its pods with it)."""
    name = namespace_for(request.node.name, 40)
    apply_manifest(cluster.api_client, {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name}})
    try:
        yield name
    finally:
        api_request(cluster.api_client, "DELETE", f"/api/v1/namespaces/{name}")
