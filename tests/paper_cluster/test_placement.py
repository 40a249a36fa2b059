"""The paper's stacks on the paper's 1.20 cluster: the real kube-scheduler places every pod of a stack on
Nodes shaped like the stack's VM classes.

Besides the real node, Node objects with the vCPUs, memory and vGPU of each pool's VM class
and the pool's role label (tests.cluster.program.vm_class_nodes) are created, with no
kubelet behind them; the program's guest objects for the Dask namespace and its Helm release
(values unchanged) are applied, and the scheduler binds each pod or reports why not. The
shared claims are bound to PersistentVolumes standing in for the NFS share (static PVs,
pre-bound by claimRef: the scheduler needs bound claims, not a share that works; hostPath,
because this machine's kernel has no ``nfs`` filesystem for kubelet to mount one with).

The pods covered: the Dask release (scheduler, workers, Jupyter) and the data Job. The GPU
operator's and the NFS provisioner's pods are DaemonSets/Deployments of other charts and
are not part of this check.
"""
from __future__ import annotations

import pytest

from tests.artifacts import DASK_CHART, artifact_path
from tests.cluster import helm
from tests.cluster.kube import delete_namespace, in_namespace, install_tkg_pod_security, pods, wait_for
from tests.cluster.node import untaint_ready_node
from tests.cluster.program import DeclaredStack, declared_stack, vm_class_nodes
from tests.cluster.support import apply_guest_half, shared_volume_stand_ins
from tests.kube.rest import KubeApiError, api_request, apply_manifest

READY = [{"type": "Ready", "status": "True", "reason": "KubeletReady", "message": "VM-class-shaped stand-in",
          "lastHeartbeatTime": "2026-12-01T00:00:00Z", "lastTransitionTime": "2026-12-01T00:00:00Z"}]


def placement(api, namespace: str) -> dict[str, str]:
    """pod name -> the node it was bound to, or "unschedulable: <the scheduler's message>"."""
    out = {}
    for pod in pods(api, namespace):
        node = pod["spec"].get("nodeName")
        if node:
            out[pod["metadata"]["name"]] = node
            continue
        condition = next((c for c in pod["status"].get("conditions", []) if c["type"] == "PodScheduled"), None)
        if condition and condition.get("reason") == "Unschedulable":
            out[pod["metadata"]["name"]] = f"unschedulable: {condition['message']}"
    return out


def place_stack(kube_cluster, stack: DeclaredStack, tmp_path, missing_nodes: tuple[str, ...] = ()) -> dict[str, str]:
    api = kube_cluster.api_client
    ns = stack.dask_namespace
    nodes = [n for n in vm_class_nodes(stack.settings) if n["metadata"]["name"] not in missing_nodes]
    volumes = shared_volume_stand_ins(stack, tmp_path)
    install_tkg_pod_security(api)
    try:
        for node in nodes:
            created = apply_manifest(api, {**node, "status": {**node["status"], "conditions": READY}})
            untaint_ready_node(api, created)  # the TaintNodesByCondition admission plugin's not-ready taint
        for volume in volumes:
            apply_manifest(api, volume)
        apply_guest_half(api, stack)
        helm.install(kube_cluster, "dask", artifact_path(DASK_CHART), ns, stack.dask_release["values"])
        for job in in_namespace(stack.objects, "Job", ns):
            apply_manifest(api, job)
        deployments = api_request(api, "GET", f"/apis/apps/v1/namespaces/{ns}/deployments")["items"]
        expected = sum(d["spec"]["replicas"] for d in deployments) + len(in_namespace(stack.objects, "Job", ns))

        def decided():
            found = placement(api, ns)
            return found if len(found) >= expected else None

        return wait_for(f"the scheduler's decision on {expected} pods", decided, 90,
                        explain=lambda: repr(placement(api, ns)))
    finally:
        delete_namespace(api, ns)
        for obj in [*nodes, *volumes]:
            try:
                api_request(api, "DELETE", f"/api/v1/{obj['kind'].lower()}s/{obj['metadata']['name']}")
            except KubeApiError as exc:
                if exc.status != 404:
                    raise


def by_pool(decisions: dict[str, str]) -> dict[str, list[str]]:
    grouped: dict[str, list[str]] = {}
    for pod, node in sorted(decisions.items()):
        grouped.setdefault(pod.rsplit("-", 2)[0] if "unschedulable" not in node else "UNPLACED", []).append(
            f"{pod} -> {node}")
    return grouped


@pytest.mark.parametrize("stack_name", ["reference", "topology-b", "reference-dev"])
def test_every_pod_of_the_stack_is_placed_on_vm_class_nodes(kube_cluster, stack_name, tmp_path):
    stack = declared_stack(stack_name)
    decisions = place_stack(kube_cluster, stack, tmp_path)
    print(f"{stack_name}: " + repr(by_pool(decisions)))
    unplaced = {p: n for p, n in decisions.items() if n.startswith("unschedulable")}
    assert unplaced == {}, f"{stack_name}: the scheduler could not place {unplaced}"
    assert all(n.startswith("vmc-") for n in decisions.values()), decisions
    workers = [n for p, n in decisions.items() if p.startswith("dask-worker")]
    gpu_workers = stack.dask_release["values"]["worker"]["replicas"]
    assert len(workers) == gpu_workers and len(set(workers)) == gpu_workers  # one GPU each: one per node
    assert all(n.startswith("vmc-gpu-worker") for n in workers)


def test_a_shortfall_is_reported_with_the_schedulers_reason(kube_cluster, tmp_path):
    """The dev stack with one of its two GPU nodes missing: one worker cannot be placed."""
    stack = declared_stack("reference-dev")
    decisions = place_stack(kube_cluster, stack, tmp_path, missing_nodes=("vmc-gpu-worker-1",))
    print("dev minus a GPU node: " + repr(by_pool(decisions)))
    unplaced = {p: n for p, n in decisions.items() if n.startswith("unschedulable")}
    assert len(unplaced) == 1 and next(iter(unplaced)).startswith("dask-worker"), decisions
    assert "Insufficient nvidia.com/gpu" in next(iter(unplaced.values())), unplaced
