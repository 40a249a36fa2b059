"""Every object the operator backend declares (on the dev stack: the operator backend is the current
stacks'), created on the current stacks' Kubernetes (1.33) API server with
the pinned operator chart's own CRDs (server-side dry run: the CRDs' structural schemas,
defaulting and admission run, nothing is stored); a broken DaskCluster is rejected."""
from __future__ import annotations

import copy

import pytest

from tests.kube.rest import KubeApiError, apply_manifest
from tests.operator.support import OPERATOR
from tests.program.graph import run_program

pytestmark = pytest.mark.apiserver

CONFIGS = {
    "dev": OPERATOR,
    # without TLS nothing is exposed (preview refuses that)
    "cpu-group-no-tls": {**OPERATOR, "cpuWorkers": 2, "daskTls": False, "schedulerServiceType": "ClusterIP",
                         "jupyterServiceType": "ClusterIP"},
    "topology-b-no-autoscaler": {**OPERATOR, "jupyterGpu": True, "gpuWorkers": 0, "daskAutoscale": False},
}


def declared(config: dict) -> list[dict]:
    """The Kubernetes objects of the operator backend (the DaskOperatorCluster component's);
    tests/apiserver/test_program_objects.py covers the rest of the graph."""
    graph = run_program("dev", config=config)
    assert graph.error is None, graph.traceback
    [component] = graph.of_type("DaskOperatorCluster")
    ours = {r.urn for r in graph.descendants(component)}
    return [r.manifest() for r in graph.kubernetes_objects() if r.urn in ours]


def in_namespace(manifest: dict, namespace: str) -> dict:
    m = copy.deepcopy(manifest)
    if m["kind"] != "Namespace":
        m["metadata"]["namespace"] = namespace
    return m


@pytest.mark.parametrize("name", CONFIGS)
def test_every_declared_object_is_accepted(kube_apiserver, operator_crds, kube_namespace, name):
    api = kube_apiserver.api_client
    objects = declared(CONFIGS[name])
    kinds = [m["kind"] for m in objects]
    assert "DaskCluster" in kinds and "NetworkPolicy" in kinds
    assert ("DaskWorkerGroup" in kinds) == (name == "cpu-group-no-tls")
    assert ("DaskAutoscaler" in kinds) == (name != "topology-b-no-autoscaler")
    for manifest in objects:
        if manifest["kind"] == "Namespace":
            continue  # namespaced objects go to the test's namespace
        try:
            answer = apply_manifest(api, in_namespace(manifest, kube_namespace), dry_run=True)
        except KubeApiError as exc:
            pytest.fail(f"{name}: the server refused {manifest['kind']} {manifest['metadata']['name']}: {exc.message}")
        assert answer["metadata"]["name"] == manifest["metadata"]["name"]
        if manifest["kind"] == "DaskCluster":  # the schema kept what the controller reads (no pruning)
            assert answer["spec"] == manifest["spec"]


def _drop_containers(m):
    del m["spec"]["worker"]["spec"]["containers"]


def _string_replicas(m):
    m["spec"]["worker"]["replicas"] = "eight"


def _no_scheduler(m):
    del m["spec"]["scheduler"]


@pytest.mark.parametrize("breakage, words", [
    (_drop_containers, "spec.worker.spec.containers: Required value"),
    (_string_replicas, 'spec.worker.replicas: Invalid value: "string"'),
    (_no_scheduler, "spec.scheduler: Required value"),
], ids=["no-containers", "replicas-not-integer", "no-scheduler"])
def test_a_broken_dask_cluster_is_rejected(kube_apiserver, operator_crds, kube_namespace, breakage, words):
    [cluster] = [m for m in declared(OPERATOR) if m["kind"] == "DaskCluster"]
    broken = in_namespace(cluster, kube_namespace)
    breakage(broken)
    with pytest.raises(KubeApiError) as info:
        apply_manifest(kube_apiserver.api_client, broken, dry_run=True)
    assert info.value.status == 422
    assert words in info.value.message


def test_an_autoscaler_without_bounds_is_rejected(kube_apiserver, operator_crds, kube_namespace):
    [scaler] = [m for m in declared(OPERATOR) if m["kind"] == "DaskAutoscaler"]
    broken = in_namespace(scaler, kube_namespace)
    del broken["spec"]["maximum"]
    with pytest.raises(KubeApiError) as info:
        apply_manifest(kube_apiserver.api_client, broken, dry_run=True)
    assert "spec.maximum: Required value" in info.value.message
