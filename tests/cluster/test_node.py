"""The current stacks' real cluster itself (1.33): a Ready node running the built Kubernetes,
restricted pods that run on the bridge (tests/paper_cluster/test_node.py: the same on 1.20)."""
from __future__ import annotations

from tests.cluster.node_checks import check_a_deployment_runs_real_pods_on_the_bridge, check_node_runs_its_build
from tests.kube.binaries import CURRENT


def test_the_node_is_ready_and_runs_the_built_kubernetes(kube_cluster):
    assert kube_cluster.release is CURRENT
    check_node_runs_its_build(kube_cluster)


def test_a_deployment_runs_real_pods_on_the_bridge(kube_cluster, cluster_namespace):
    check_a_deployment_runs_real_pods_on_the_bridge(kube_cluster, cluster_namespace)
