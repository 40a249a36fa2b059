"""The paper's TanzuKubernetesCluster against the real TKC CRD on a real kube-apiserver 1.20.

v1alpha2 is VMware's generated CRD (fetched unchanged into the cache by scripts/fetch_artifacts.py); v1alpha3 is the
project's own schema (components/cluster/crds/), served by the same CRD object.
"""
from __future__ import annotations

import copy
from datetime import UTC, datetime

import pytest
import yaml

from tests.artifacts import artifact_path
from tests.kube.crds import TKC_CRD_V1ALPHA2, load_tkc_crd
from tests.kube.rest import KubeApiError, apply_manifest, assert_invalid, get_object, patch_status

pytestmark = pytest.mark.apiserver

GROUP = "run.tanzu.vmware.com"
VERSIONS = ["v1alpha2", "v1alpha3"]
TKR = "v1.20.8---vmware.1-tkg.2"
NODE_VOLUMES = [
    {"name": "containerd", "mountPath": "/var/lib/containerd", "capacity": {"storage": "100Gi"}},
    {"name": "kubelet", "mountPath": "/var/lib/kubelet", "capacity": {"storage": "50Gi"}},
]


def paper_tkc(version: str, namespace: str, name: str = "dask-tkc") -> dict:
    """The paper's cluster: 3 control-plane nodes, 8 vGPU workers, 2 CPU workers, antrea."""
    tkr = {"reference": {"name": TKR}}
    return {
        "apiVersion": f"{GROUP}/{version}",
        "kind": "TanzuKubernetesCluster",
        "metadata": {"name": name, "namespace": namespace},
        "spec": {
            "topology": {
                "controlPlane": {
                    "replicas": 3,
                    "vmClass": "best-effort-medium",
                    "storageClass": "vsan-r5",
                    "tkr": copy.deepcopy(tkr),
                },
                "nodePools": [
                    {
                        "name": "gpu-worker",
                        "replicas": 8,
                        "vmClass": "16cpu-64gram-ts-20c-vmxnet3",
                        "storageClass": "vsan-r1-sw8",
                        "tkr": copy.deepcopy(tkr),
                        "volumes": copy.deepcopy(NODE_VOLUMES),
                    },
                    {
                        "name": "cpu-worker",
                        "replicas": 2,
                        "vmClass": "best-effort-xlarge",
                        "storageClass": "vsan-r5",
                        "tkr": copy.deepcopy(tkr),
                        "volumes": copy.deepcopy(NODE_VOLUMES),
                    },
                ],
            },
            "settings": {
                "network": {
                    "cni": {"name": "antrea"},
                    "services": {"cidrBlocks": ["10.96.0.0/12"]},
                    "pods": {"cidrBlocks": ["192.168.0.0/16"]},
                    "serviceDomain": "cluster.local",
                },
            },
        },
    }


def test_shared_crd_is_loaded_unchanged_and_combined():
    """The shared v1alpha2 CRD is used as it is; v1alpha3 is appended, v1alpha2 stays the storage version."""
    shared = yaml.safe_load(artifact_path(TKC_CRD_V1ALPHA2).read_text())
    crd = load_tkc_crd()
    by_name = {v["name"]: v for v in crd["spec"]["versions"]}
    assert list(by_name) == ["v1alpha2", "v1alpha3"]
    assert by_name["v1alpha2"] == shared["spec"]["versions"][0]
    assert [v["name"] for v in crd["spec"]["versions"] if v["storage"]] == ["v1alpha2"]
    assert all(v["subresources"] == {"status": {}} for v in crd["spec"]["versions"])
    assert crd["spec"]["names"] == shared["spec"]["names"]


def test_crd_serves_both_versions(paper_apiserver, tkc_crd):
    assert paper_apiserver.version["gitVersion"].startswith("v1.20.")
    served = {v["name"]: (v["served"], v["storage"]) for v in tkc_crd["spec"]["versions"]}
    assert served == {"v1alpha2": (True, True), "v1alpha3": (True, False)}
    assert tkc_crd["status"]["storedVersions"] == ["v1alpha2"]


@pytest.mark.parametrize("version", VERSIONS)
def test_paper_cluster_accepted_on_dry_run(paper_apiserver, tkc_crd, paper_namespace, version):
    manifest = paper_tkc(version, paper_namespace)
    answer = apply_manifest(paper_apiserver.api_client, manifest, dry_run=True)
    assert answer["apiVersion"] == f"{GROUP}/{version}"
    # nothing pruned: the server kept every field the paper's cluster sets
    assert answer["spec"] == manifest["spec"]
    # a dry run stores nothing
    with pytest.raises(KubeApiError) as err:
        get_object(paper_apiserver.api_client, f"{GROUP}/{version}", "TanzuKubernetesCluster",
                   "dask-tkc", paper_namespace)
    assert err.value.status == 404


def _replicas_as_word(m):
    m["spec"]["topology"]["nodePools"][0]["replicas"] = "eight"


def _pool_without_name(m):
    del m["spec"]["topology"]["nodePools"][0]["name"]


def _vmclass_lowercase(m):
    pool = m["spec"]["topology"]["nodePools"][0]
    pool["vmclass"] = pool.pop("vmClass")


BAD = {
    "replicas-eight": (_replicas_as_word, ["spec.topology.nodePools.replicas", "must be of type integer"]),
    "pool-without-name": (_pool_without_name, ["spec.topology.nodePools.name", "Required value"]),
    # 1.20 prunes the unknown `vmclass`; the pool is then missing its required vmClass
    "vmclass-lowercase": (_vmclass_lowercase, ["spec.topology.nodePools.vmClass", "Required value"]),
}


@pytest.mark.parametrize("version", VERSIONS)
@pytest.mark.parametrize("case", list(BAD))
def test_broken_cluster_rejected(paper_apiserver, tkc_crd, paper_namespace, version, case):
    mutate, expected = BAD[case]
    manifest = paper_tkc(version, paper_namespace)
    mutate(manifest)
    assert_invalid(paper_apiserver.api_client, manifest, expected)


def test_each_version_validates_with_its_own_schema(paper_apiserver, tkc_crd, paper_namespace):
    """failureDomain exists only in v1alpha3: checked there, pruned as unknown in v1alpha2.

    Caveat of this stand-in: with no conversion webhook (strategy None) objects are
    stored as v1alpha2, so a v1alpha3-only field is validated but not kept.
    """
    api = paper_apiserver.api_client
    v3 = paper_tkc("v1alpha3", paper_namespace)
    v3["spec"]["topology"]["nodePools"][0]["failureDomain"] = 5
    with pytest.raises(KubeApiError) as err:
        apply_manifest(api, v3, dry_run=True)
    assert "spec.topology.nodePools.failureDomain" in err.value.message
    assert "must be of type string" in err.value.message

    v3["spec"]["topology"]["nodePools"][0]["failureDomain"] = "zone-a"
    apply_manifest(api, v3, dry_run=True)

    v2 = paper_tkc("v1alpha2", paper_namespace)
    v2["spec"]["topology"]["nodePools"][0]["failureDomain"] = 5
    answer = apply_manifest(api, v2, dry_run=True)
    assert "failureDomain" not in answer["spec"]["topology"]["nodePools"][0]


def test_status_subresource_round_trip(paper_apiserver, tkc_crd, paper_namespace):
    """Create a real v1alpha2 TKC, then play the TKG controller: set phase running + Ready."""
    api = paper_apiserver.api_client
    manifest = paper_tkc("v1alpha2", paper_namespace, name="tkc-status")
    manifest["status"] = {"phase": "running"}  # ignored on create: status is a subresource
    created = apply_manifest(api, manifest)
    assert "phase" not in (created.get("status") or {})

    now = datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
    patched = patch_status(api, created, {
        "phase": "running",
        "conditions": [{"type": "Ready", "status": "True", "lastTransitionTime": now}],
        "apiEndpoints": [{"host": "10.0.0.10", "port": 6443}],
        "totalWorkerReplicas": 10,
    })
    assert patched["status"]["phase"] == "running"
    assert int(patched["metadata"]["generation"]) == int(created["metadata"]["generation"])

    for version in VERSIONS:  # stored once, read back in both versions
        got = get_object(api, f"{GROUP}/{version}", "TanzuKubernetesCluster", "tkc-status", paper_namespace)
        ready = [c for c in got["status"]["conditions"] if c["type"] == "Ready"]
        assert ready and ready[0]["status"] == "True"
        assert got["status"]["apiEndpoints"] == [{"host": "10.0.0.10", "port": 6443}]
        assert got["spec"]["topology"]["nodePools"][0]["replicas"] == 8
    v2 = get_object(api, f"{GROUP}/v1alpha2", "TanzuKubernetesCluster", "tkc-status", paper_namespace)
    assert v2["status"]["phase"] == "running"


def test_apply_manifest_core_objects_and_errors(paper_apiserver, paper_namespace):
    """The helper works for built-in kinds too, and surfaces the server's own message."""
    api = paper_apiserver.api_client
    cm = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "cfg"}, "data": {"k": "v"}}
    created = apply_manifest(api, cm, namespace=paper_namespace)
    assert created["metadata"]["namespace"] == paper_namespace
    with pytest.raises(KubeApiError) as err:
        apply_manifest(api, cm, namespace=paper_namespace)
    assert err.value.status == 409 and "already exists" in err.value.message
    cm2 = dict(cm, data={"k": "v2"})
    replaced = apply_manifest(api, cm2, namespace=paper_namespace, update_existing=True)
    assert replaced["data"] == {"k": "v2"}

    role = {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole",
            "metadata": {"name": f"{paper_namespace}-reader"},
            "rules": [{"apiGroups": [""], "resources": ["pods"], "verbs": ["get"]}]}
    assert apply_manifest(api, role, dry_run=True)["metadata"]["name"] == role["metadata"]["name"]

    bad = {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "no-selector"},
           "spec": {"template": {"metadata": {"labels": {"a": "b"}},
                                 "spec": {"containers": [{"name": "c", "image": "busybox"}]}}}}
    with pytest.raises(KubeApiError) as err:
        apply_manifest(api, bad, namespace=paper_namespace, dry_run=True)
    assert err.value.status == 422 and "spec.selector" in err.value.message

    with pytest.raises(KubeApiError) as err:
        apply_manifest(api, {"apiVersion": "example.com/v1", "kind": "Nope", "metadata": {"name": "x"}},
                       discovery_wait_s=0.5)
    assert err.value.status == 404
