"""The workload cluster as a Cluster API Cluster on a VMware ClusterClass (vSphere 8 U3 /
VCF 9): what the builder emits for each class generation, and the settings that must fail at
preview naming their key (docs/reliability.md, Settings, SV12-SV16)."""
from __future__ import annotations

import pytest

from components.cluster.manifests import capi_cluster_manifest
from components.facts import cluster_classes
from components.settings import SettingsError
from components.settings.class_variables import class_variable_problems
from components.settings.model import POOL_ROLE_LABEL
from tests.unit.support import VKR
from tests.unit.support import load_current as load_with

UBUNTU = {"run.tanzu.vmware.com/resolve-os-image": "os-name=ubuntu,os-version=22.04"}  # GPU pools: 22.04, by version


def problems_of(**overrides) -> str:
    with pytest.raises(SettingsError) as info:
        load_with(**overrides)
    return str(info.value)


def variables(items: list[dict]) -> dict:
    return {v["name"]: v["value"] for v in items}


def test_a_structured_class_gets_one_machine_deployment_per_pool_with_its_overrides():
    spec = load_with(clusterClass="builtin-generic-v3.4.0").cluster
    m = capi_cluster_manifest(spec, "dask")
    assert (m["apiVersion"], m["kind"]) == ("cluster.x-k8s.io/v1beta1", "Cluster")
    assert m["metadata"]["annotations"]["pulumi.com/waitFor"] == "condition=Ready"
    topology = m["spec"]["topology"]
    assert (topology["class"], topology["classNamespace"], topology["version"]) == (
        "builtin-generic-v3.4.0", "vmware-system-vks-public", VKR)
    assert topology["controlPlane"] == {"replicas": 3}
    deployments = {d["name"]: d for d in topology["workers"]["machineDeployments"]}
    assert set(deployments) == {"gpu-worker", "cpu-worker"}
    gpu, cpu = deployments["gpu-worker"], deployments["cpu-worker"]
    assert (gpu["class"], gpu["replicas"], cpu["replicas"]) == ("node-pool", 8, 2)
    gpu_vars, cpu_vars = variables(gpu["variables"]["overrides"]), variables(cpu["variables"]["overrides"])
    assert gpu_vars["vmClass"] == "16cpu-64gram-ts-20c-vmxnet3"  # the vGPU class
    assert gpu_vars["node"] == {"labels": {POOL_ROLE_LABEL: "gpu"}}
    assert [(v["name"], v["mountPath"], v["capacity"]) for v in gpu_vars["volumes"]] == [
        ("containerd", "/var/lib/containerd", "100Gi"), ("kubelet", "/var/lib/kubelet", "50Gi")]
    assert gpu["metadata"]["annotations"] == UBUNTU and "metadata" not in cpu  # Ubuntu for the vGPU driver
    assert cpu_vars["vmClass"] == "best-effort-xlarge"
    cluster_vars = variables(topology["variables"])
    assert cluster_vars["vmClass"] == "best-effort-medium" and cluster_vars["storageClass"] == "vsan-r5"
    assert cluster_vars["vsphereOptions"]["persistentVolumes"]["defaultStorageClass"] == "vsan-r5"
    assert cluster_vars["kubernetes"]["security"]["podSecurityStandard"]["enforce"] == "baseline"
    assert class_variable_problems(spec) == []


@pytest.mark.parametrize("class_name, namespace", [("tanzukubernetescluster", None),
                                                    ("builtin-generic-v3.1.0", "vmware-system-vks-public")])
def test_a_flat_class_gets_the_flat_variables(class_name, namespace):
    spec = load_with(clusterClass=class_name).cluster
    topology = capi_cluster_manifest(spec, "dask")["spec"]["topology"]
    assert topology.get("classNamespace") == namespace  # the unversioned class lives in every namespace
    cluster_vars = variables(topology["variables"])
    assert cluster_vars["defaultStorageClass"] == "vsan-r5" and "vsphereOptions" not in cluster_vars
    assert cluster_vars["podSecurityStandard"]["enforce"] == "baseline"
    gpu = next(d for d in topology["workers"]["machineDeployments"] if d["name"] == "gpu-worker")
    overrides = variables(gpu["variables"]["overrides"])
    assert overrides["nodePoolLabels"] == [{"key": POOL_ROLE_LABEL, "value": "gpu"}]
    assert overrides["nodePoolVolumes"][0]["capacity"] == {"storage": "100Gi"}
    assert class_variable_problems(spec) == []


def test_the_generation_follows_the_class_named():
    assert not cluster_classes.generation("tanzukubernetescluster").structured
    assert not cluster_classes.generation("builtin-generic-v3.1.0").structured
    assert all(cluster_classes.generation(f"builtin-generic-v3.{m}.0").structured for m in range(2, 8))


def test_a_variable_of_the_other_generation_or_shape_is_named():
    structured = [{"name": "vmClass", "value": "x"}, {"name": "storageClass", "value": "y"},
                  {"name": "nodePoolVolumes", "value": []},  # flat only
                  {"name": "volumes", "value": [{"name": "c", "mountPath": "/c", "capacity": {"storage": "1Gi"}}]},
                  {"name": "node", "value": {"labels": {"a": 1}}}]
    problems = cluster_classes.check_variables("builtin-generic-v3.4.0", structured, "variables")
    assert any("has no variable 'nodePoolVolumes'" in p for p in problems)
    assert "variables.volumes[0].capacity: must be a string, got {'storage': '1Gi'}" in problems
    assert "variables.node.labels.a: must be a string, got 1" in problems
    missing = cluster_classes.check_variables("tanzukubernetescluster", [], "variables",
                                              cluster_classes.REQUIRED_VARIABLES)
    assert missing == ["variables: variable 'vmClass' is required by tanzukubernetescluster",
                       "variables: variable 'storageClass' is required by tanzukubernetescluster"]


def test_vsphere_9_previews():
    assert load_with(vsphereVersion=9).vsphere.version == 9


@pytest.mark.parametrize("overrides, key, words", [
    ({"clusterClass": "builtin-generic-v3.9.0"}, "clusterClass", "known for v3.1.0 ... v3.7.0 only"),
    ({"clusterClass": "my-class"}, "clusterClass", "is not one of VMware's ClusterClasses"),
    ({"tkr": "v1.33"}, "tkr", "must be a Tanzu Kubernetes release"),
    ({"tkr": "v1.20.8---vmware.1-tkg.2"}, "tkr", "is not compatible with clusterApi cluster.x-k8s.io/v1beta1"),
    ({"vsphereVersion": 7}, "clusterApi", "cluster.x-k8s.io/v1beta1 needs vsphereVersion 8 or 9"),
    ({"nodePools": ["name=gpu-worker,role=gpu,replicas=2,vmClass=best-effort-xlarge,storageClass=vsan-r1-sw8"]},
     "nodePools[0].vmClass", "has no vGPU profile"),
    ({"podSecurityDefault": "strict"}, "podSecurityDefault", "must be one of"),
    ({"tkcApiVersion": "run.tanzu.vmware.com/v1alpha2"}, "tkcApiVersion", "is renamed clusterApi"),
    ({"vsphereVersion": 9, "supervisorId": ""}, "supervisorId", "is required on vSphere 9"),
    ({"cni": "calico"}, "cni", "calico is not applied with clusterApi cluster.x-k8s.io/v1beta1: the Cluster"
                               " carries no CNI and VKS installs its default, Antrea"),
])
def test_a_bad_cluster_api_setting_fails_at_preview_naming_the_key(overrides, key, words):
    message = problems_of(**overrides)
    assert f"dask-tkg:{key}" in message and words in message, message
