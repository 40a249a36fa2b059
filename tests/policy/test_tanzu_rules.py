"""The TanzuKubernetesCluster rule (GPU pools on a vGPU-capable TKR) and the stack rule
(the namespace offers the stack's storage policies and VM classes, and what the cluster uses)."""
from __future__ import annotations

from collections.abc import Callable

import pytest
from pulumi_policy.policy import _NotApplicableError
from pulumi_policy.proxy import UnknownValueError

from policy.rules import gpu_pools_on_vgpu_tkr, namespace_offers
from policy.rules.tanzu import tkr_kubernetes_version
from tests.policy.support import UNKNOWN, inputs, resource_args, stack_args, violations
from tests.program.graph import Graph


def _collect(found: list[str]) -> Callable[[str, str | None], None]:
    """A policy's ``report_violation`` that keeps each message in ``found``."""
    def report(message: str, urn: str | None = None) -> None:
        found.append(message)

    return report

OLD_TKR = "v1.19.7---vmware.1-tkg.1"


def tkc(graph: Graph):
    [cluster] = graph.of_type("TanzuKubernetesCluster")
    return cluster


def tkc_with(graph: Graph, change, config=None):
    cluster = tkc(graph)
    props = inputs(cluster)
    change(props)
    return resource_args(cluster, config, inputs=props)


def set_tkr(props, tkr, pools=(0,), control_plane=False):
    topology = props["spec"]["topology"]
    for i in pools:
        topology["nodePools"][i]["tkr"] = {"reference": {"name": tkr}}
    if control_plane:
        topology["controlPlane"]["tkr"] = {"reference": {"name": tkr}}


# --- tkc-gpu-pools-vgpu-tkr ----------------------------------------------------------------
def test_gpu_pools_on_the_papers_tkr_pass(reference: Graph, reference_dev: Graph, vsphere8: Graph) -> None:
    assert tkc(vsphere8).type == "kubernetes:run.tanzu.vmware.com/v1alpha3:TanzuKubernetesCluster"
    for graph in (reference, reference_dev, vsphere8):
        assert violations(gpu_pools_on_vgpu_tkr, resource_args(tkc(graph))) == []


def test_a_gpu_pool_on_an_old_tkr_fails(reference: Graph) -> None:
    [message] = violations(gpu_pools_on_vgpu_tkr, tkc_with(reference, lambda p: set_tkr(p, OLD_TKR)))
    assert "TanzuKubernetesCluster 'tkg-dask' (Pulumi resource 'tkc-tkc')" in message
    assert "nodePools[0] ('gpu-worker', a GPU pool by its label dask-tkg.io/pool-role=gpu)" in message
    assert "Kubernetes 1.19.7" in message and "v1.20.8---vmware.1-tkg.2" in message


def test_a_cpu_pool_may_run_an_old_tkr(reference: Graph) -> None:
    assert violations(gpu_pools_on_vgpu_tkr, tkc_with(reference, lambda p: set_tkr(p, OLD_TKR, pools=(1,)))) == []


def test_a_pool_without_its_own_tkr_inherits_the_control_planes(reference: Graph) -> None:
    def inherit(props, tkr):
        del props["spec"]["topology"]["nodePools"][0]["tkr"]
        props["spec"]["topology"]["controlPlane"]["tkr"] = {"reference": {"name": tkr}}

    assert violations(gpu_pools_on_vgpu_tkr, tkc_with(reference, lambda p: inherit(p, "v1.21.6+vmware.1-tkg.1"))) == []
    assert len(violations(gpu_pools_on_vgpu_tkr, tkc_with(reference, lambda p: inherit(p, OLD_TKR)))) == 1


def relabel_gpu_pool(props):
    props["spec"]["topology"]["nodePools"][0]["labels"] = {"dask-tkg.io/pool-role": "worker"}
    set_tkr(props, OLD_TKR)


def test_a_pool_on_one_of_the_stacks_vgpu_classes_is_a_gpu_pool(reference: Graph, stack_config) -> None:
    assert violations(gpu_pools_on_vgpu_tkr, tkc_with(reference, relabel_gpu_pool)) == []  # nothing says GPU
    stack_config(vmClasses=["name=16cpu-64gram-ts-20c-vmxnet3,cpus=16,memoryMb=65536,cpuReservation=0,"
                            "memoryReservation=100,vgpuProfile=grid_a100-20c"])
    [message] = violations(gpu_pools_on_vgpu_tkr, tkc_with(reference, relabel_gpu_pool))
    assert "by its vGPU VM class '16cpu-64gram-ts-20c-vmxnet3'" in message


def test_the_policy_config_names_more_vgpu_classes(reference: Graph) -> None:
    config = {"vgpuVmClasses": ["16cpu-64gram-ts-20c-vmxnet3"]}
    assert len(violations(gpu_pools_on_vgpu_tkr, tkc_with(reference, relabel_gpu_pool, config))) == 1


def test_a_gpu_pool_with_no_or_an_unreadable_tkr_fails(reference: Graph) -> None:
    def no_tkr(props):
        topology = props["spec"]["topology"]
        del topology["controlPlane"]["tkr"]
        del topology["nodePools"][0]["tkr"]

    [message] = violations(gpu_pools_on_vgpu_tkr, tkc_with(reference, no_tkr))
    assert "names no TKR" in message
    [message] = violations(gpu_pools_on_vgpu_tkr, tkc_with(reference, lambda p: set_tkr(p, "ubuntu-latest")))
    assert "cannot be read" in message


def test_v1alpha3_gpu_pools_need_ubuntu(vsphere8: Graph) -> None:
    def photon(props):
        del props["metadata"]["annotations"]["run.tanzu.vmware.com/resolve-os-image"]

    [message] = violations(gpu_pools_on_vgpu_tkr, tkc_with(vsphere8, photon))
    assert "needs Ubuntu nodes" in message and "os-name=ubuntu" in message


def test_tkr_versions() -> None:
    assert tkr_kubernetes_version("v1.20.8---vmware.1-tkg.2") == (1, 20, 8)
    assert tkr_kubernetes_version("v1.26.5+vmware.2-fips.1-tkg.1") == (1, 26, 5)
    assert tkr_kubernetes_version("v1.20") is None


# --- namespace-offers-classes-and-policies -------------------------------------------------
def test_the_programs_namespaces_offer_everything(reference: Graph, dev: Graph, vsphere8: Graph,
                                                  topology_b: Graph) -> None:
    assert vsphere8.of_type("vsphere:index/namespace:Namespace")
    for graph in (reference, dev, vsphere8, topology_b):
        assert violations(namespace_offers, stack_args(graph)) == []


def namespace_state(graph: Graph, change) -> dict:
    [namespace] = [r for r in graph.resources if r.type in (
        "pulumi-python:dynamic/vsphere:SupervisorNamespace", "vsphere:index/namespace:Namespace")]
    state = dict(namespace.raw["state"])
    change(state)
    return {namespace.name: state}


def test_a_storage_policy_left_out_of_the_namespace_fails(reference: Graph) -> None:
    def drop(state):
        state["storage_specs"] = [s for s in state["storage_specs"] if s["policy"] != "pbm-vsan-r1-sw8"]

    found = violations(namespace_offers, stack_args(reference, state=namespace_state(reference, drop)))
    assert any("VsanStoragePolicy 'vsan-r1-sw8' (Pulumi resource 'vsphere-policies-vsan-r1-sw8', id 'pbm-vsan-r1-sw8')"
               " is not attached to Supervisor namespace 'dask'" in m for m in found)
    # ... and the cluster's GPU pool, which uses that storage class, fails too.
    assert any("nodePools[0] ('gpu-worker').storageClass is storage class 'vsan-r1-sw8'" in m for m in found)


def test_a_vm_class_left_out_of_the_namespace_fails(reference: Graph) -> None:
    def drop(state):
        state["vm_classes"] = [c for c in state["vm_classes"] if c != "16cpu-64gram-ts-20c-vmxnet3"]

    found = violations(namespace_offers, stack_args(reference, state=namespace_state(reference, drop)))
    assert any(m.startswith("VM class '16cpu-64gram-ts-20c-vmxnet3' (Pulumi resource "
                            "'vsphere-vmclasses-16cpu-64gram-ts-20c-vmxnet3') is not offered") for m in found)
    assert any("uses VM class '16cpu-64gram-ts-20c-vmxnet3', which Supervisor namespace 'dask'" in m for m in found)


def test_a_vsphere8_namespace_without_a_policy_fails(vsphere8: Graph) -> None:
    def drop(state):
        state["storagePolicies"] = ["pbm-vsan-r1-sw8"]

    found = violations(namespace_offers, stack_args(vsphere8, state=namespace_state(vsphere8, drop)))
    assert any("VsanStoragePolicy 'vsan-r5'" in m and "storagePolicies" in m for m in found)


def test_a_cluster_using_classes_the_namespace_lacks_fails(reference: Graph) -> None:
    cluster = tkc(reference)
    state = dict(cluster.raw["state"])
    state["spec"] = dict(state["spec"], topology={
        **state["spec"]["topology"],
        "controlPlane": {**state["spec"]["topology"]["controlPlane"], "vmClass": "guaranteed-8xlarge",
                         "storageClass": "vsan-gold"}})
    found = violations(namespace_offers, stack_args(reference, state={cluster.name: state}))
    assert len(found) == 2
    assert "spec.topology.controlPlane uses VM class 'guaranteed-8xlarge'" in found[0] and "Fix:" in found[0]
    assert "spec.topology.controlPlane.storageClass is storage class 'vsan-gold'" in found[1]


def test_unknown_ids_during_preview_skip_only_their_check(reference: Graph) -> None:
    policy = reference.named("vsphere-policies-vsan-r5")
    unknown_id = dict(policy.raw["state"], policy_id=UNKNOWN)

    def drop_class(state):
        state["vm_classes"] = [c for c in state["vm_classes"] if c != "16cpu-64gram-ts-20c-vmxnet3"]

    state = {policy.name: unknown_id, **namespace_state(reference, drop_class)}
    found: list[str] = []
    with pytest.raises(UnknownValueError):  # the SDK turns this into "can't run policy during preview"
        namespace_offers.validate(stack_args(reference, state=state), _collect(found))
    assert found and all("VsanStoragePolicy" not in m for m in found)
    assert any("VM class '16cpu-64gram-ts-20c-vmxnet3'" in m for m in found)


def test_an_unknown_namespace_offering_reports_nothing(reference: Graph) -> None:
    state = namespace_state(reference, lambda s: s.update(storage_specs=UNKNOWN))
    found: list[str] = []
    with pytest.raises(UnknownValueError):
        namespace_offers.validate(stack_args(reference, state=state), _collect(found))
    assert found == []


def test_a_stack_without_a_namespace_is_not_applicable(reference: Graph) -> None:
    args = stack_args(reference)
    args.resources = [r for r in args.resources if "Namespace" not in r.resource_type or r.resource_type.startswith(
        "kubernetes:")]
    with pytest.raises(_NotApplicableError):
        violations(namespace_offers, args)
