"""The default stacks' workload cluster, a Cluster API ``Cluster`` (cluster.x-k8s.io/v1beta1 on
a VMware ClusterClass), is checked as the TanzuKubernetesCluster is: its GPU pools run a VKr
with vGPU on Ubuntu (``tkc-gpu-pools-vgpu-tkr``), the VM classes and storage classes in its
topology's variables are ones the namespace offers (``namespace-offers-classes-and-policies``),
and its control plane's replicas and its class's required variables are sound
(``workload-cluster-shape``). Before, each rule matched only the TanzuKubernetesCluster types,
so a Cluster that broke one passed.

The bad cases are the program's own Cluster (the dev stack: builtin-generic-v3.4.0, structured
variables; and on tanzukubernetescluster, flat variables) with one thing changed."""
from __future__ import annotations

import copy
from collections.abc import Callable
from typing import Any

import pytest
from pulumi_policy.proxy import UnknownValueError

from components.cluster.manifests import UBUNTU_ANNOTATION
from components.facts import cluster_classes
from components.settings.model import CLUSTER_API
from policy import rules
from policy.rules import common, gpu_pools_on_vgpu_tkr, namespace_offers
from tests.policy.support import UNKNOWN, inputs, resource_args, stack_args, violations
from tests.program.graph import Graph, run_program

OLD_RELEASE = "v1.19.7---vmware.1-tkg.1"
GPU_VGPU_CLASS = "16cpu-64gram-ts-20c-vmxnet3"


@pytest.fixture(scope="module")
def flat() -> Graph:
    """The dev stack on the flat-variable class tanzukubernetescluster."""
    graph = run_program("dev", config={"clusterClass": "tanzukubernetescluster"})
    assert graph.error is None, graph.traceback
    return graph


def shape():
    """``workload-cluster-shape``, looked up when a test runs (so that this module collects
    where the rule does not exist yet, and each test fails on its own)."""
    return rules.workload_cluster_shape


def the_cluster(graph: Graph):
    [cluster] = graph.of_type("cluster.x-k8s.io/v1beta1:Cluster")
    return cluster


def cluster_with(graph: Graph, change: Callable[[dict], Any], config=None):
    cluster = the_cluster(graph)
    props = inputs(cluster)
    change(props)
    return resource_args(cluster, config, inputs=props)


def topology(props: dict) -> dict:
    return props["spec"]["topology"]


def pool(props: dict, index: int) -> dict:
    return topology(props)["workers"]["machineDeployments"][index]


def overrides(props: dict, index: int) -> list[dict]:
    return pool(props, index)["variables"]["overrides"]


def set_variable(variables: list[dict], name: str, value: Any) -> None:
    found = [v for v in variables if v["name"] == name]
    if found:
        found[0]["value"] = value
    else:
        variables.append({"name": name, "value": value})


def drop_variable(variables: list[dict], name: str) -> None:
    variables[:] = [v for v in variables if v["name"] != name]


# --- the program's Clusters pass ------------------------------------------------------------
def test_the_default_stacks_clusters_pass_every_cluster_rule(dev: Graph, full: Graph, flat: Graph) -> None:
    for graph in (dev, full, flat):
        assert the_cluster(graph).type == common.CAPI_CLUSTER
        args = resource_args(the_cluster(graph))
        assert violations(gpu_pools_on_vgpu_tkr, args) == []
        assert violations(shape(), args) == []
        assert violations(namespace_offers, stack_args(graph)) == []


# --- tkc-gpu-pools-vgpu-tkr on a Cluster ----------------------------------------------------
def test_a_gpu_pool_on_an_old_release_fails(dev: Graph) -> None:
    [message] = violations(gpu_pools_on_vgpu_tkr, cluster_with(
        dev, lambda p: topology(p).update(version=OLD_RELEASE)))
    assert message.startswith("Cluster 'vks-dask-dev' (Pulumi resource 'tkc-cluster'): "
                              "spec.topology.workers.machineDeployments[0] ('gpu-worker', a GPU pool by its label "
                              "dask-tkg.io/pool-role=gpu)")
    assert "Kubernetes 1.19.7" in message and "spec.topology.version" in message and "(stack setting tkr)" in message


def test_a_gpu_pool_with_no_or_an_unreadable_release_fails(dev: Graph) -> None:
    [message] = violations(gpu_pools_on_vgpu_tkr, cluster_with(dev, lambda p: topology(p).pop("version")))
    assert "names no VKr" in message
    [message] = violations(gpu_pools_on_vgpu_tkr, cluster_with(dev, lambda p: topology(p).update(version="latest")))
    assert "cannot be read" in message


def test_a_short_release_is_read_as_its_minor(dev: Graph) -> None:
    """VKS resolves ``version: v1.33`` to the newest 1.33 VKr (defaultroute0/vksdemo's example)."""
    assert violations(gpu_pools_on_vgpu_tkr, cluster_with(dev, lambda p: topology(p).update(version="v1.33"))) == []


def test_a_gpu_pool_without_ubuntu_fails(dev: Graph, flat: Graph) -> None:
    for graph in (dev, flat):
        [message] = violations(gpu_pools_on_vgpu_tkr, cluster_with(graph, lambda p: pool(p, 0).pop("metadata")))
        assert "machineDeployments[0] ('gpu-worker'" in message and "needs Ubuntu nodes" in message
        assert "os-name=ubuntu" in message and "machineDeployments[0].metadata.annotations" in message


def relabel_gpu_pool(props: dict) -> None:
    """The GPU pool labelled as a CPU pool, in whichever variable shape the class takes, and
    without Ubuntu: only its VM class still says GPU."""
    for variable in overrides(props, 0):
        if variable["name"] == "node":
            variable["value"] = {"labels": {"dask-tkg.io/pool-role": "cpu"}}
        if variable["name"] == "nodePoolLabels":
            variable["value"] = [{"key": "dask-tkg.io/pool-role", "value": "cpu"}]
    pool(props, 0).pop("metadata")


def test_a_pool_on_a_vgpu_class_is_a_gpu_pool_in_either_variable_shape(dev: Graph, flat: Graph,
                                                                        stack_config) -> None:
    for graph in (dev, flat):
        assert violations(gpu_pools_on_vgpu_tkr, cluster_with(graph, relabel_gpu_pool)) == []  # nothing says GPU
    stack_config(vmClasses=[f"name={GPU_VGPU_CLASS},cpus=16,memoryMb=65536,cpuReservation=0,memoryReservation=100,"
                            "vgpuProfile=grid_a100-20c"])
    for graph in (dev, flat):
        [message] = violations(gpu_pools_on_vgpu_tkr, cluster_with(graph, relabel_gpu_pool))
        assert f"by its vGPU VM class '{GPU_VGPU_CLASS}'" in message and "needs Ubuntu nodes" in message


def test_a_pool_without_its_own_class_takes_the_clusters(dev: Graph) -> None:
    """A machineDeployment without a vmClass override runs on the topology's vmClass variable."""
    def on_the_clusters_class(props: dict) -> None:
        relabel_gpu_pool(props)
        drop_variable(overrides(props, 0), "vmClass")
        set_variable(topology(props)["variables"], "vmClass", GPU_VGPU_CLASS)

    config = {"vgpuVmClasses": [GPU_VGPU_CLASS]}
    [message] = violations(gpu_pools_on_vgpu_tkr, cluster_with(dev, on_the_clusters_class, config))
    assert f"machineDeployments[0] ('gpu-worker', a GPU pool by its vGPU VM class '{GPU_VGPU_CLASS}')" in message


def test_a_label_on_the_clusters_variables_marks_every_pool(flat: Graph) -> None:
    def cluster_wide(props: dict) -> None:
        for i in (0, 1):
            drop_variable(overrides(props, i), "nodePoolLabels")
        set_variable(topology(props)["variables"], "nodePoolLabels", [{"key": "dask-tkg.io/pool-role", "value": "gpu"}])

    [message] = violations(gpu_pools_on_vgpu_tkr, cluster_with(flat, cluster_wide))
    assert "machineDeployments[1] ('cpu-worker', a GPU pool by its label" in message  # no Ubuntu there


# --- namespace-offers-classes-and-policies on a Cluster -------------------------------------
def cluster_state(graph: Graph, change: Callable[[dict], Any]) -> dict:
    cluster = the_cluster(graph)
    state = copy.deepcopy(cluster.raw["state"])
    change(state)
    return {cluster.name: state}


def test_a_cluster_using_a_vm_class_the_namespace_lacks_fails(dev: Graph) -> None:
    def change(state: dict) -> None:
        set_variable(topology(state)["variables"], "vmClass", "guaranteed-8xlarge")
        set_variable(overrides(state, 1), "vmClass", "best-effort-8xlarge")

    found = violations(namespace_offers, stack_args(dev, state=cluster_state(dev, change)))
    assert len(found) == 2
    assert found[0].startswith("Cluster 'vks-dask-dev' (Pulumi resource 'tkc-cluster'): spec.topology.variables "
                               "vmClass (the control plane's) uses VM class 'guaranteed-8xlarge', which Supervisor "
                               "namespace 'dask-dev'")
    assert "spec.topology.workers.machineDeployments[1] ('cpu-worker') variables.overrides vmClass uses VM class " \
           "'best-effort-8xlarge'" in found[1]


@pytest.mark.parametrize("graph_name, change, where", [
    ("dev", lambda s: set_variable(topology(s)["variables"], "storageClass", "vsan-gold"),
     "spec.topology.variables storageClass is storage class 'vsan-gold'"),
    ("dev", lambda s: set_variable(overrides(s, 0), "storageClass", "vsan-gold"),
     "machineDeployments[0] ('gpu-worker') variables.overrides storageClass is storage class 'vsan-gold'"),
    ("dev", lambda s: overrides(s, 1)[3]["value"][0].update(storageClass="vsan-gold"),
     "machineDeployments[1] ('cpu-worker') variables.overrides volumes[0].storageClass is storage class"),
    ("dev", lambda s: topology(s)["variables"][2]["value"]["persistentVolumes"]["availableStorageClasses"].append(
        "vsan-gold"), "spec.topology.variables vsphereOptions.persistentVolumes.availableStorageClasses[2] is"),
    ("flat", lambda s: set_variable(topology(s)["variables"], "defaultStorageClass", "vsan-gold"),
     "spec.topology.variables defaultStorageClass is storage class 'vsan-gold'"),
    ("flat", lambda s: overrides(s, 0)[3]["value"][1].update(storageClass="vsan-gold"),
     "machineDeployments[0] ('gpu-worker') variables.overrides nodePoolVolumes[1].storageClass is"),
], ids=["cluster", "pool", "volume", "available", "flat-default", "flat-volume"])
def test_a_cluster_using_a_storage_class_the_namespace_lacks_fails(graph_name: str, change, where: str,
                                                                   request: pytest.FixtureRequest) -> None:
    graph: Graph = request.getfixturevalue(graph_name)
    [message] = violations(namespace_offers, stack_args(graph, state=cluster_state(graph, change)))
    assert where in message and "Fix:" in message


# --- workload-cluster-shape -----------------------------------------------------------------
@pytest.mark.parametrize("replicas", [2, 0, 4])
def test_a_control_plane_of_an_even_or_no_number_of_nodes_fails(dev: Graph, reference: Graph, replicas) -> None:
    [message] = violations(shape(), cluster_with(dev, lambda p: topology(p)["controlPlane"].update(replicas=replicas)))
    assert message.startswith("Cluster 'vks-dask-dev' (Pulumi resource 'tkc-cluster'): spec.topology.controlPlane."
                              f"replicas is {replicas}")
    assert "controlPlaneReplicas" in message
    [tkc] = reference.of_type("TanzuKubernetesCluster")
    props = inputs(tkc)
    props["spec"]["topology"]["controlPlane"]["replicas"] = replicas
    [message] = violations(shape(), resource_args(tkc, inputs=props))
    assert message.startswith("TanzuKubernetesCluster 'tkg-dask'") and f"replicas is {replicas}" in message


@pytest.mark.parametrize("variable", ["vmClass", "storageClass"])
def test_a_cluster_without_a_variable_its_class_requires_fails(dev: Graph, flat: Graph, variable: str) -> None:
    for graph in (dev, flat):
        [message] = violations(shape(),
                               cluster_with(graph, lambda p: drop_variable(topology(p)["variables"], variable)))
        assert f"sets no {variable!r} variable" in message and "requires" in message


def test_a_class_that_is_not_vmwares_is_not_judged_on_its_variables(dev: Graph) -> None:
    def custom(props: dict) -> None:
        topology(props)["class"] = "site-gpu-class"
        drop_variable(topology(props)["variables"], "storageClass")

    assert violations(shape(), cluster_with(dev, custom)) == []


def test_an_unknown_release_during_preview_is_not_a_violation(dev: Graph) -> None:
    with pytest.raises(UnknownValueError):
        violations(gpu_pools_on_vgpu_tkr, cluster_with(dev, lambda p: topology(p).update(version=UNKNOWN)))


def test_the_cluster_rules_constants_are_the_programs() -> None:
    assert f"kubernetes:{CLUSTER_API}:Cluster" == common.CAPI_CLUSTER
    assert tuple(rules.clusters.REQUIRED_VARIABLES) == cluster_classes.REQUIRED_VARIABLES
    assert rules.clusters.UNVERSIONED_CLASS == cluster_classes.UNVERSIONED_CLASS
    annotation = rules.clusters.OS_IMAGE_ANNOTATION
    assert {annotation: "os-name=ubuntu"} == UBUNTU_ANNOTATION
