"""A VKS-style Cluster API Cluster against Cluster API v1.10.10's own CRDs on a real kube-apiserver of
the current stacks' build (1.33).

The CRDs are the upstream files (fetched unchanged into the cache by scripts/fetch_artifacts.py).
The stand-in checks the OpenAPI schema only: Cluster API's webhooks and controllers, which also
resolve the ClusterClass and its variables, do not run here. Unknown fields are refused where the
client asks for strict field validation (kubectl 1.27+ does) and pruned otherwise.
"""
from __future__ import annotations

import copy

import pytest

from tests.apiserver.support import create_fresh, declared
from tests.kube.binaries import CURRENT as CURRENT_BUILD
from tests.kube.crds import CAPI_CRDS, load_crd
from tests.kube.rest import KubeApiError, apply_manifest, assert_invalid, get_object

pytestmark = pytest.mark.apiserver

API_VERSION = "cluster.x-k8s.io/v1beta1"
CLASS = "builtin-generic-v3.4.0"
CLASS_NAMESPACE = "vmware-system-vks-public"
VERSION = "v1.32.3---vmware.1-fips-vkr.2"
GPU_VM_CLASS_OVERRIDE = [{"name": "vmClass", "value": "vgpu-a100-40c"}]


def paper_cluster(namespace: str, name: str = "dask-cluster") -> dict:
    """The paper's cluster in the VKS form: 3 control-plane nodes, 8 vGPU workers, 2 CPU workers,
    from VKS's built-in ClusterClass, with the node settings as ClusterClass variables."""
    return {
        "apiVersion": API_VERSION,
        "kind": "Cluster",
        "metadata": {"name": name, "namespace": namespace},
        "spec": {
            "clusterNetwork": {
                "pods": {"cidrBlocks": ["192.168.0.0/16"]},
                "services": {"cidrBlocks": ["10.96.0.0/12"]},
                "serviceDomain": "cluster.local",
            },
            "topology": {
                "class": CLASS,
                "classNamespace": CLASS_NAMESPACE,
                "version": VERSION,
                "controlPlane": {
                    "replicas": 3,
                    "metadata": {"annotations": {"run.tanzu.vmware.com/resolve-os-image": "os-name=ubuntu"}},
                },
                "workers": {
                    "machineDeployments": [
                        {"class": "node-pool", "name": "gpu-workers", "replicas": 8,
                         "variables": {"overrides": copy.deepcopy(GPU_VM_CLASS_OVERRIDE)}},
                        {"class": "node-pool", "name": "cpu-workers", "replicas": 2},
                    ],
                },
                "variables": [
                    {"name": "vmClass", "value": "guaranteed-large"},
                    {"name": "storageClass", "value": "vsan-default"},
                    {"name": "volumes", "value": [
                        {"name": "containerd", "mountPath": "/var/lib/containerd",
                         "storageClass": "vsan-default", "capacity": "100Gi"},
                    ]},
                ],
            },
        },
    }


def test_crds_are_served_with_the_upstream_schemas(kube_apiserver, capi_crds):
    """The server keeps every upstream version and schema as written: a schema field newer than
    1.20 would be dropped silently and the stand-in would check less than it claims."""
    assert kube_apiserver.version["gitVersion"] == CURRENT_BUILD.version  # the current stacks' build
    assert sorted(capi_crds) == ["Cluster", "ClusterClass", "MachineDeployment"]
    for file in CAPI_CRDS:
        upstream = load_crd(file)
        held = capi_crds[upstream["spec"]["names"]["kind"]]
        assert held["spec"]["versions"] == upstream["spec"]["versions"], file
        assert [v["name"] for v in held["spec"]["versions"] if v["served"]] == ["v1beta1"]
        assert held["status"]["storedVersions"] == ["v1beta1"]


def test_paper_cluster_accepted_on_dry_run(kube_apiserver, capi_crds, kube_namespace):
    manifest = paper_cluster(kube_namespace)
    answer = apply_manifest(kube_apiserver.api_client, manifest, dry_run=True)
    assert answer["apiVersion"] == API_VERSION
    # nothing pruned: the schema knows every field the cluster sets
    assert answer["spec"] == manifest["spec"]
    # a dry run stores nothing
    with pytest.raises(KubeApiError) as err:
        get_object(kube_apiserver.api_client, API_VERSION, "Cluster", "dask-cluster", kube_namespace)
    assert err.value.status == 404


def test_paper_cluster_created_and_read_back_intact(kube_apiserver, capi_crds, kube_namespace):
    """What the program sends is what a Cluster API controller on the Supervisor reads."""
    api = kube_apiserver.api_client
    manifest = paper_cluster(kube_namespace)
    apply_manifest(api, manifest)
    got = get_object(api, API_VERSION, "Cluster", "dask-cluster", kube_namespace)
    topology = got["spec"]["topology"]
    assert (topology["class"], topology["classNamespace"], topology["version"]) == (CLASS, CLASS_NAMESPACE, VERSION)
    assert topology["controlPlane"] == manifest["spec"]["topology"]["controlPlane"]
    pools = {md["name"]: md for md in topology["workers"]["machineDeployments"]}
    assert {n: (md["class"], md["replicas"]) for n, md in pools.items()} == {
        "gpu-workers": ("node-pool", 8), "cpu-workers": ("node-pool", 2)}
    assert pools["gpu-workers"]["variables"]["overrides"] == GPU_VM_CLASS_OVERRIDE
    assert "variables" not in pools["cpu-workers"]
    assert topology["variables"] == manifest["spec"]["topology"]["variables"]
    assert got["spec"] == manifest["spec"]


def _control_plane_replicas_as_word(m):
    m["spec"]["topology"]["controlPlane"]["replicas"] = "three"


def _pool_replicas_as_word(m):
    m["spec"]["topology"]["workers"]["machineDeployments"][0]["replicas"] = "eight"


def _without_class(m):
    del m["spec"]["topology"]["class"]


def _without_version(m):
    del m["spec"]["topology"]["version"]


BAD = {
    "control-plane-replicas-three": (_control_plane_replicas_as_word,
                                     ["spec.topology.controlPlane.replicas", "must be of type integer"]),
    "pool-replicas-eight": (_pool_replicas_as_word,
                            ["spec.topology.workers.machineDeployments[0].replicas", "must be of type integer"]),
    "topology-without-class": (_without_class, ["spec.topology.class", "Required value"]),
    "topology-without-version": (_without_version, ["spec.topology.version", "Required value"]),
}


@pytest.mark.parametrize("case", list(BAD))
def test_broken_cluster_rejected(kube_apiserver, capi_crds, kube_namespace, case):
    mutate, expected = BAD[case]
    manifest = paper_cluster(kube_namespace)
    mutate(manifest)
    assert_invalid(kube_apiserver.api_client, manifest, expected)


@pytest.mark.parametrize("case", list(BAD))
def test_the_programs_cluster_broken_the_same_way_is_rejected(kube_apiserver, capi_crds, kube_namespace, case):
    """The controls on the Cluster the default stack declares: the server's answer is printed
    (``pytest -rA``) as the closing notes quote it."""
    mutate, expected = BAD[case]
    graph, _ = declared("dev")
    manifest = copy.deepcopy(graph.of_type("kubernetes:cluster.x-k8s.io/v1beta1:Cluster")[0].manifest())
    manifest["metadata"]["namespace"] = kube_namespace
    mutate(manifest)
    refused = assert_invalid(kube_apiserver.api_client, manifest, expected)
    print(f"{case}: HTTP {refused.status} {refused.reason}: {refused.message}")


def test_misspelt_machine_health_check_is_refused_where_the_client_asks_strict(kube_apiserver, capi_crds,
                                                                               kube_namespace):
    """``enabled`` (the field is ``enable``): under the strict field validation kubectl (1.27+)
    asks for, the server refuses the Cluster naming the unknown field; under the API's own
    default (Warn) it stores the Cluster without it, as 1.20 always did, silently. The right
    spelling, beside it, is kept."""
    api = kube_apiserver.api_client
    manifest = paper_cluster(kube_namespace)
    topology = manifest["spec"]["topology"]
    topology["controlPlane"]["machineHealthCheck"] = {"enabled": True}
    topology["workers"]["machineDeployments"][0]["machineHealthCheck"] = {"enable": True}
    with pytest.raises(KubeApiError) as refused:
        apply_manifest(api, manifest, dry_run=True, field_validation="Strict")
    assert refused.value.status == 400
    assert 'unknown field "spec.topology.controlPlane.machineHealthCheck.enabled"' in refused.value.message
    apply_manifest(api, manifest)
    got = get_object(api, API_VERSION, "Cluster", "dask-cluster", kube_namespace)["spec"]["topology"]
    assert got["controlPlane"]["machineHealthCheck"] == {}
    assert got["workers"]["machineDeployments"][0]["machineHealthCheck"] == {"enable": True}
    assert got["controlPlane"]["replicas"] == 3


# --- the program's own Clusters -----------------------------------------------------------

PROGRAM_VKR = "v1.32.3---vmware.1-fips-vkr.2"
CURRENT = {"vsphereVersion": 8, "supervisorId": "sv-1", "clusterApi": API_VERSION, "tkr": PROGRAM_VKR}


# Each current-platform stack as it is (Pulumi.yaml's defaults), and with each class generation.
@pytest.mark.parametrize("stack", ["dev", "full"])
@pytest.mark.parametrize("cluster_class",
                         ["builtin-generic-v3.4.0", "builtin-generic-v3.1.0", "tanzukubernetescluster"])
def test_every_object_of_a_current_platform_stack_is_accepted(kube_apiserver, capi_crds, operator_crds, stack,
                                                             cluster_class):
    """The stack on vSphere 8 with a Cluster: the Cluster is created and read back with the
    spec the program sent (nothing pruned), and every other object the program declares is
    accepted as on the paper's stack."""
    api = kube_apiserver.api_client
    _graph, objects = declared(stack, clusterClass=cluster_class)
    (cluster,) = [o for o in objects if o.manifest()["kind"] == "Cluster"]
    assert not [o for o in objects if o.manifest()["kind"] == "TanzuKubernetesCluster"]
    manifest = cluster.manifest()
    apply_manifest(api, {"apiVersion": "v1", "kind": "Namespace",
                         "metadata": {"name": manifest["metadata"]["namespace"]}}, update_existing=True)
    stored = create_fresh(api, manifest, dry_run=False)
    assert stored["spec"] == manifest["spec"]  # accepted whole: no field pruned as unknown
    for resource in sorted(objects, key=lambda o: o.manifest()["kind"] != "Namespace"):
        if resource is cluster:
            continue
        other = resource.manifest()
        try:
            create_fresh(api, other, dry_run=other["kind"] in {"Job", "Pod", "Deployment", "DaemonSet", "StatefulSet"})
        except KubeApiError as exc:
            pytest.fail(f"{stack}/{cluster_class}: the server refused {other['kind']} {resource.name}: {exc.message}")


def test_the_programs_readiness_wait_matches_a_ready_cluster_api_cluster(kube_apiserver, capi_crds, kube_namespace):
    """``pulumi.com/waitFor`` on the program's Cluster names a condition Cluster API's status
    schema carries: not met on a new or provisioning Cluster, met once Ready is True."""
    from tests.apiserver.readiness import satisfied
    from tests.kube.rest import patch_status

    api = kube_apiserver.api_client
    graph, _ = declared("dev")
    manifest = copy.deepcopy(graph.of_type("kubernetes:cluster.x-k8s.io/v1beta1:Cluster")[0].manifest())
    manifest["metadata"]["namespace"] = kube_namespace
    wait_for = manifest["metadata"]["annotations"]["pulumi.com/waitFor"]
    created = apply_manifest(api, manifest)
    assert not satisfied(created, wait_for), "a new cluster must not look ready"

    def with_ready(status: str) -> dict:
        patch_status(api, created, {"phase": "Provisioned" if status == "True" else "Provisioning",
                                    "conditions": [{"type": "Ready", "status": status,
                                                    "lastTransitionTime": "2026-12-02T00:00:00Z"}]})
        return get_object(api, API_VERSION, "Cluster", manifest["metadata"]["name"], kube_namespace)

    assert not satisfied(with_ready("False"), wait_for)
    ready = with_ready("True")
    assert satisfied(ready, wait_for), (wait_for, ready.get("status"))
    assert ready["status"]["conditions"][0]["type"] == "Ready"  # kept by the schema, not pruned
