"""Every Kubernetes object the program declares (both stack files, Supervisor and guest
side, all but Helm releases) is accepted by a real Kubernetes 1.20 API server:
the paper's stacks' build, as every stack here asks for a TKR 1.20 or 1.21 (the current stacks'
objects: test_capi_cluster.py, on 1.33)."""
from __future__ import annotations

import copy

import pytest

from tests.apiserver.readiness import satisfied
from tests.apiserver.support import create_fresh, declared
from tests.kube.rest import KubeApiError, apply_manifest, get_object, patch_status

pytestmark = pytest.mark.apiserver

# On vSphere 8 the 1.20 TKRs are not compatible with v1alpha3: the program refuses them at preview.
TKR_FOR_V1ALPHA3 = "v1.21.6---vmware.1-tkg.1"

# Objects that would start something are only dry-run (there is no scheduler or kubelet,
# but a dry run still runs defaulting, admission and schema validation).
DRY_RUN_KINDS = {"Job", "Pod", "Deployment", "DaemonSet", "StatefulSet"}


def supervisor_namespace(graph) -> str:
    return graph.of_type("TanzuKubernetesCluster")[0].manifest()["metadata"]["namespace"]


@pytest.mark.parametrize("stack, config", [
    ("reference", {}),
    ("reference-dev", {}),
    ("reference", {"jupyterGpu": True, "gpuWorkers": 0}),  # topology B
    ("reference", {"vsphereVersion": 8, "supervisorId": "sv-1", "clusterApi": "run.tanzu.vmware.com/v1alpha3",
                   "tkr": TKR_FOR_V1ALPHA3,
                   "daskTls": False, "schedulerServiceType": "ClusterIP", "jupyterServiceType": "ClusterIP",
                   "rwxProvisioner": "vsphere-csi"}),  # without TLS, so not exposed: preview refuses that
], ids=["reference", "reference-dev", "topology-b", "vsphere8-csi"])
def test_every_declared_object_is_accepted(paper_apiserver, tkc_crd, stack, config):
    api = paper_apiserver.api_client
    graph, objects = declared(stack, **config)
    kinds = {o.manifest()["kind"] for o in objects}
    assert {"TanzuKubernetesCluster", "Namespace", "PersistentVolumeClaim", "Secret", "Job"} <= kinds
    # The Supervisor namespace is vSphere's (the vSphere layer creates it).
    apply_manifest(api, {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": supervisor_namespace(graph)}},
                   update_existing=True)
    ordered = sorted(objects, key=lambda o: o.manifest()["kind"] != "Namespace")
    accepted = []
    for resource in ordered:
        manifest = resource.manifest()
        kind = manifest["kind"]
        try:
            answer = create_fresh(api, manifest, dry_run=kind in DRY_RUN_KINDS)
        except KubeApiError as exc:
            pytest.fail(f"{stack}: the server refused {kind} {resource.name}: {exc.message}")
        assert answer["metadata"]["name"] == manifest["metadata"]["name"]
        accepted.append(kind)
    assert len(accepted) == len(objects) >= 12


@pytest.mark.parametrize("breakage, words", [
    (lambda m: m["spec"]["topology"]["nodePools"][0].__setitem__("replicas", "eight"), "replicas"),
    (lambda m: m["spec"]["topology"]["nodePools"][1].pop("name"), "name"),
    (lambda m: m["spec"]["topology"]["controlPlane"].pop("vmClass"), "vmClass"),
], ids=["replicas-wrong-type", "pool-without-name", "control-plane-without-vm-class"])
def test_the_programs_tkc_broken_is_rejected(paper_apiserver, tkc_crd, breakage, words):
    graph, _ = declared("reference")
    manifest = copy.deepcopy(graph.of_type("TanzuKubernetesCluster")[0].manifest())
    breakage(manifest)
    apply_manifest(paper_apiserver.api_client, {"apiVersion": "v1", "kind": "Namespace",
                                               "metadata": {"name": manifest["metadata"]["namespace"]}},
                   update_existing=True)
    with pytest.raises(KubeApiError) as info:
        apply_manifest(paper_apiserver.api_client, manifest, dry_run=True)
    assert info.value.status == 422 and words in info.value.message


@pytest.mark.parametrize("stack, config, ready_status", [
    ("reference", {}, {"phase": "running"}),
    ("reference", {"vsphereVersion": 8, "supervisorId": "sv-1", "clusterApi": "run.tanzu.vmware.com/v1alpha3",
                   "tkr": TKR_FOR_V1ALPHA3},
     {"conditions": [{"type": "Ready", "status": "True", "lastTransitionTime": "2026-11-29T00:00:00Z"}]}),
], ids=["v1alpha2-phase", "v1alpha3-condition"])
def test_readiness_wait_matches_a_real_ready_cluster(paper_apiserver, tkc_crd, paper_namespace, stack, config,
                                                     ready_status):
    api = paper_apiserver.api_client
    graph, _ = declared(stack, **config)
    manifest = copy.deepcopy(graph.of_type("TanzuKubernetesCluster")[0].manifest())
    manifest["metadata"]["namespace"] = paper_namespace
    wait_for = manifest["metadata"]["annotations"]["pulumi.com/waitFor"]
    created = apply_manifest(api, manifest)
    assert not satisfied(created, wait_for), "a new cluster must not look ready"
    patch_status(api, created, {"phase": "creating"} if "phase" in ready_status else
                 {"conditions": [{"type": "Ready", "status": "False", "lastTransitionTime": "2026-11-29T00:00:00Z"}]})
    creating = get_object(api, manifest["apiVersion"], "TanzuKubernetesCluster", manifest["metadata"]["name"],
                          paper_namespace)
    assert not satisfied(creating, wait_for)
    patch_status(api, created, ready_status)
    ready = get_object(api, manifest["apiVersion"], "TanzuKubernetesCluster", manifest["metadata"]["name"],
                       paper_namespace)
    assert satisfied(ready, wait_for), (wait_for, ready.get("status"))
