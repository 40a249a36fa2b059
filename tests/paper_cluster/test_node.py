"""The paper's stacks' real cluster itself (1.20): a Ready node running the built Kubernetes,
restricted pods that run on the bridge under TKG's restricted PodSecurityPolicy, nothing
reaching outside loopback and the bridge (tests/cluster/node_checks.py)."""
from __future__ import annotations

from pathlib import Path

from tests.cluster.node_checks import (
    check_a_deployment_runs_real_pods_on_the_bridge,
    check_node_runs_its_build,
    check_nothing_connects_outside,
)
from tests.kube.binaries import PAPER


def test_the_node_is_ready_and_runs_the_built_kubernetes(kube_cluster):
    assert kube_cluster.release is PAPER
    check_node_runs_its_build(kube_cluster)


def test_a_deployment_runs_real_pods_on_the_bridge(kube_cluster, cluster_namespace):
    check_a_deployment_runs_real_pods_on_the_bridge(kube_cluster, cluster_namespace)


def test_no_component_connects_outside_loopback_and_the_bridge(kube_cluster):
    check_nothing_connects_outside(kube_cluster)


def test_kubelet_runs_with_cloud_metadata_disabled(kube_cluster):
    """kubelet 1.20's in-tree AWS credential provider probes 169.254.169.254 on start unless told
    not to (the provider is gone from 1.27, so the current stacks' kubelet needs nothing)."""
    pid = kube_cluster.pids()["kubelet"]
    environ = dict(entry.split("=", 1) for entry in
                   Path(f"/proc/{pid}/environ").read_bytes().decode().split("\0") if "=" in entry)
    assert environ.get("AWS_EC2_METADATA_DISABLED") == "true"
