"""The Dask operator namespaced: what its controller may do, on the pinned chart rendered by the
real Helm engine from the program's values and on the real Kubernetes API server of the current
stacks (1.33).

The chart's default (``rbac.cluster: true``, kopf ``--all-namespaces``) gives the controller a
ClusterRole that creates pods in every namespace, the GPU operator's privileged one included
(root on the node). The program deploys it watching only the Dask namespace, with no chart
RBAC, its own Role there and, cluster-wide, only reading namespaces and CRDs
(components/dask/operator_rbac.py). That the controller reconciles
a DaskCluster with those rights alone is tests/operator/test_controller.py's, whose controller
runs as this account.
"""
from __future__ import annotations

import pytest

from tests.operator.operator_identity import OperatorDeployment, allowed, operator_config
from tests.operator.support import OPERATOR

pytestmark = pytest.mark.apiserver

PODS_RIGHTS = {"pods", "pods/status", "*"}


@pytest.mark.parametrize("stack,config", [("dev", {}), ("reference", OPERATOR)], ids=["dev", "reference-operator"])
def test_the_operator_chart_renders_no_cluster_rights_and_watches_only_the_dask_namespace(stack, config):
    deployment = OperatorDeployment.of_program(stack, {**config, "daskNamespace": "rapidsai"})
    cluster_roles = deployment.chart.of_kind("ClusterRole")
    assert not [r for r in cluster_roles for rule in r["rules"] if PODS_RIGHTS & set(rule["resources"])], (
        "a ClusterRole with pod rights: the controller could start a pod in any namespace")
    assert not deployment.chart.of_kind("ClusterRoleBinding")
    # nothing in the controller's own namespace either: it serves none of its objects there
    assert not deployment.chart.of_kind("Role") and not deployment.chart.of_kind("RoleBinding")
    args = deployment.kopf_args()
    assert "--all-namespaces" not in args and "-A" not in args
    assert [a for a in args if a.startswith("--namespace")] == ["--namespace=rapidsai"]
    assert "--standalone" in args  # one replica: no peering objects to read or write
    # the program's own cluster-wide grant only reads (kopf observes namespaces and CRDs)
    program_cluster = [o for o in deployment.program_rbac() if o["kind"] == "ClusterRole"]
    assert [set(rule["verbs"]) for role in program_cluster for rule in role["rules"]] == [{"list", "watch"}] * 2
    assert {r for role in program_cluster for rule in role["rules"] for r in rule["resources"]} == {
        "namespaces", "customresourcedefinitions"}


def test_the_operator_account_creates_pods_only_in_the_dask_namespace(kube_apiserver, operator_crds, kube_namespace):
    api = kube_apiserver.api_client
    deployment = OperatorDeployment.of_program("dev", {**OPERATOR, **operator_config(kube_namespace)})
    deployment.apply(api)
    user, dask = deployment.user, kube_namespace

    assert allowed(api, user, "create", "pods", dask)  # a DaskJob's runner pod (controller.py L819)
    assert allowed(api, user, "create", "deployments", dask, "apps")
    assert allowed(api, user, "patch", "daskclusters", dask, "kubernetes.dask.org")
    for elsewhere in ("gpu-operator", "default", "kube-system", deployment.operator_namespace):
        assert not allowed(api, user, "create", "pods", elsewhere), f"{user} may create pods in {elsewhere}"
        assert not allowed(api, user, "create", "deployments", elsewhere, "apps"), elsewhere
    assert not allowed(api, user, "create", "pods", None)  # not cluster-wide
    assert not allowed(api, user, "get", "secrets", dask)  # nothing the controller reads
    assert not allowed(api, user, "create", "pods/exec", dask)
    # cluster-wide it only reads namespaces and CRDs (components/dask/operator_rbac.py, OBSERVE_RULES)
    assert allowed(api, user, "watch", "customresourcedefinitions", None, "apiextensions.k8s.io")
    assert allowed(api, user, "list", "namespaces", None)
    for verb in ("create", "patch", "delete"):
        assert not allowed(api, user, verb, "customresourcedefinitions", None, "apiextensions.k8s.io"), verb
        assert not allowed(api, user, verb, "namespaces", None), verb
