"""``GpuPoolsReady`` against Cluster API v1.10.10's MachineDeployment CRD on a real kube-apiserver 1.20.

The MachineDeployments are shaped as Cluster API's topology controller makes them
(exp/topology/desiredstate/desired_state.go, computeMachineDeployment: a generated name, the
labels ``cluster.x-k8s.io/cluster-name``, ``topology.cluster.x-k8s.io/owned`` and
``topology.cluster.x-k8s.io/deployment-name``, ``spec.replicas`` from the topology), and their
status is written through the status subresource, as the MachineDeployment controller writes
it. No Cluster API controller runs: the tests play it. The provider reads the server with a
kubeconfig that carries the server's CA as ``certificate-authority-data`` and a bearer token,
as the Supervisor kubeconfig of ``components/cluster/supervisor_access.py`` does.
"""
from __future__ import annotations

import base64
import secrets
import threading
import time

import pytest
import yaml

from components.cluster.providers.pool_readiness import GpuPoolsReadyProvider, PoolsNotReadyError
from tests.kube.rest import apply_manifest, patch_object, patch_status

pytestmark = pytest.mark.apiserver

API_VERSION = "cluster.x-k8s.io/v1beta1"
CLUSTER = "vks-dask-dev"
VERSION = "v1.32.3---vmware.1-fips-vkr.2"
MACHINES_MESSAGE = "Machine vks-dask-dev-gpu-worker-x7k2p-abcde: waiting for the VM's vGPU to be assigned"
NOW = "2026-12-03T21:00:00Z"


def machine_deployment(namespace: str, pool: str, replicas: int, cluster: str = CLUSTER) -> dict:
    """A MachineDeployment as the topology controller creates it for ``machineDeployments[pool]``."""
    labels = {"cluster.x-k8s.io/cluster-name": cluster, "topology.cluster.x-k8s.io/owned": "",
              "topology.cluster.x-k8s.io/deployment-name": pool}
    template = {"apiVersion": "vmware.infrastructure.cluster.x-k8s.io/v1beta1", "kind": "VSphereMachineTemplate",
                "name": f"{cluster}-{pool}-infra-{secrets.token_hex(3)}"}
    return {
        "apiVersion": API_VERSION, "kind": "MachineDeployment",
        "metadata": {"name": f"{cluster}-{pool}-{secrets.token_hex(3)}", "namespace": namespace, "labels": labels},
        "spec": {
            "clusterName": cluster, "replicas": replicas, "selector": {"matchLabels": dict(labels)},
            "template": {"metadata": {"labels": dict(labels)}, "spec": {
                "clusterName": cluster, "version": VERSION, "infrastructureRef": template,
                "bootstrap": {"configRef": {"apiVersion": "bootstrap.cluster.x-k8s.io/v1beta1",
                                            "kind": "KubeadmConfigTemplate", "name": f"{cluster}-{pool}-bootstrap"}}}},
        },
    }


def scaling_up(ready: int, replicas: int) -> dict:
    """The status while machines are still provisioning: MachinesReady False with its message."""
    return {"observedGeneration": 1, "replicas": replicas, "readyReplicas": ready, "updatedReplicas": replicas,
            "unavailableReplicas": replicas - ready, "phase": "ScalingUp", "conditions": [
                {"type": "Ready", "status": "False", "severity": "Warning", "reason": "WaitingForAvailableMachines",
                 "lastTransitionTime": NOW},
                {"type": "MachinesReady", "status": "False", "severity": "Info",
                 "reason": "WaitingForInfrastructure", "message": MACHINES_MESSAGE, "lastTransitionTime": NOW}]}


def running(replicas: int) -> dict:
    return {"observedGeneration": 1, "replicas": replicas, "readyReplicas": replicas, "availableReplicas": replicas,
            "updatedReplicas": replicas, "unavailableReplicas": 0, "phase": "Running", "conditions": [
                {"type": "Ready", "status": "True", "lastTransitionTime": NOW},
                {"type": "MachinesReady", "status": "True", "lastTransitionTime": NOW}]}


def create(api, namespace: str, pool: str, replicas: int, status: dict, cluster: str = CLUSTER) -> dict:
    created = apply_manifest(api, machine_deployment(namespace, pool, replicas, cluster))
    return patch_status(api, created, status)


def kubeconfig(server, ca_pem: bytes | None = None) -> str:
    """A kubeconfig as supervisor_access writes one: the CA as data, a bearer token."""
    ca = ca_pem if ca_pem is not None else server.ca_file.read_bytes()
    return yaml.safe_dump({
        "apiVersion": "v1", "kind": "Config",
        "clusters": [{"name": "supervisor", "cluster": {
            "server": server.url, "certificate-authority-data": base64.b64encode(ca).decode()}}],
        "users": [{"name": "supervisor-user", "user": {"token": server.token}}],
        "contexts": [{"name": "supervisor", "context": {"cluster": "supervisor", "user": "supervisor-user"}}],
        "current-context": "supervisor"})


def props(server, namespace: str, pools: dict[str, int], timeout_s: float, **extra) -> dict:
    """The provider's inputs as the engine passes them (GpuPoolsReady's properties)."""
    return {"kubeconfig": extra.get("kubeconfig") or kubeconfig(server), "namespace": namespace,
            "cluster_name": CLUSTER, "pools": [{"name": k, "replicas": v} for k, v in pools.items()],
            "revision": "r1", "timeout_seconds": timeout_s, "poll_seconds": 0.2, "ready": None}


def later(delay_s: float, action) -> threading.Thread:
    def act() -> None:
        time.sleep(delay_s)
        action()

    thread = threading.Thread(target=act, daemon=True)
    thread.start()
    return thread


@pytest.fixture
def api(kube_apiserver, capi_crds):
    return kube_apiserver.api_client


def test_waits_while_a_gpu_pool_is_half_ready_and_returns_once_it_is_ready(api, kube_apiserver, kube_namespace):
    gpu = create(api, kube_namespace, "gpu-worker", 2, scaling_up(1, 2))
    create(api, kube_namespace, "cpu-worker", 1, scaling_up(0, 1))  # not a GPU pool: not waited for
    started = time.monotonic()
    thread = later(2.0, lambda: patch_status(api, gpu, running(2)))
    result = GpuPoolsReadyProvider().create(props(kube_apiserver, kube_namespace, {"gpu-worker": 2}, 60))
    thread.join()
    assert time.monotonic() - started >= 2.0
    assert result.outs["ready"] == {"gpu-worker": "2/2"}
    assert result.id == f"{kube_namespace}/{CLUSTER}/gpu-pools"


def test_a_gpu_pool_that_stays_half_ready_fails_naming_it(api, kube_apiserver, kube_namespace):
    gpu = create(api, kube_namespace, "gpu-worker", 2, scaling_up(1, 2))
    name = gpu["metadata"]["name"]
    started = time.monotonic()
    with pytest.raises(PoolsNotReadyError) as caught:
        GpuPoolsReadyProvider().create(props(kube_apiserver, kube_namespace, {"gpu-worker": 2}, 2))
    assert 2 <= time.monotonic() - started < 15
    message = str(caught.value)
    assert f"the GPU pools of Cluster {kube_namespace}/{CLUSTER} were not ready after" in message
    assert "(gpuPoolsReadyTimeoutMinutes)" in message
    assert f"the GPU pools of Cluster {kube_namespace}/{CLUSTER} were not ready after 2 s" in message
    assert (f"GPU pool 'gpu-worker' (MachineDeployment {name}): 1/2 replicas ready, phase ScalingUp;"
            " Ready False (WaitingForAvailableMachines);"
            f" MachinesReady False (WaitingForInfrastructure): {MACHINES_MESSAGE}") in message


def test_only_gpu_pools_are_waited_for(api, kube_apiserver, kube_namespace):
    create(api, kube_namespace, "gpu-worker", 2, running(2))
    create(api, kube_namespace, "cpu-worker", 2, scaling_up(0, 2))
    result = GpuPoolsReadyProvider().create(props(kube_apiserver, kube_namespace, {"gpu-worker": 2}, 5))
    assert result.outs["ready"] == {"gpu-worker": "2/2"}


def test_a_missing_machine_deployment_is_named(api, kube_apiserver, kube_namespace):
    create(api, kube_namespace, "gpu-worker", 2, running(2))
    create(api, kube_namespace, "gpu-large", 1, running(1), cluster="another-cluster")  # not this cluster's
    with pytest.raises(PoolsNotReadyError) as caught:
        GpuPoolsReadyProvider().create(props(kube_apiserver, kube_namespace, {"gpu-worker": 2, "gpu-large": 1}, 1))
    message = str(caught.value)
    assert ("GPU pool 'gpu-large': no MachineDeployment labelled"
            " topology.cluster.x-k8s.io/deployment-name=gpu-large (1 replicas wanted)") in message
    assert "'gpu-worker'" not in message


def test_a_spec_its_controller_has_not_seen_is_not_ready(api, kube_apiserver, kube_namespace):
    gpu = create(api, kube_namespace, "gpu-worker", 2, running(2))
    changed = patch_object(api, API_VERSION, "MachineDeployment", gpu["metadata"]["name"],
                           {"spec": {"template": {"spec": {"version": "v1.33.1---vmware.1-fips-vkr.1"}}}},
                           namespace=kube_namespace)
    assert changed["metadata"]["generation"] == 2
    with pytest.raises(PoolsNotReadyError, match="its controller has not seen the current spec yet"):
        GpuPoolsReadyProvider().create(props(kube_apiserver, kube_namespace, {"gpu-worker": 2}, 1))


def test_the_wait_also_needs_the_replicas_the_program_declares(api, kube_apiserver, kube_namespace):
    """The topology controller has not copied a new count (2 -> 4) to the MachineDeployment yet."""
    create(api, kube_namespace, "gpu-worker", 2, running(2))
    with pytest.raises(PoolsNotReadyError, match=r"2/4 replicas ready, phase Running"):
        GpuPoolsReadyProvider().create(props(kube_apiserver, kube_namespace, {"gpu-worker": 4}, 1))


def test_the_kubeconfig_ca_is_the_one_trusted(api, kube_apiserver, kube_namespace, tmp_path):
    from tests.kube.pki import make_pki

    make_pki(tmp_path / "other")
    other_ca = (tmp_path / "other" / "ca.crt").read_bytes()
    wrong = kubeconfig(kube_apiserver, other_ca)
    with pytest.raises(PoolsNotReadyError, match=r"CERTIFICATE_VERIFY_FAILED|certificate verify failed"):
        GpuPoolsReadyProvider().create(props(kube_apiserver, kube_namespace, {"gpu-worker": 2}, 1, kubeconfig=wrong))


def test_refused_credentials_fail_at_once(api, kube_apiserver, kube_namespace):
    bob = kube_apiserver.users["bob"]  # no RBAC grant: 403
    text = kubeconfig(kube_apiserver).replace(kube_apiserver.token, bob)
    started = time.monotonic()
    with pytest.raises(PoolsNotReadyError, match="HTTP 403"):
        GpuPoolsReadyProvider().create(props(kube_apiserver, kube_namespace, {"gpu-worker": 2}, 30, kubeconfig=text))
    assert time.monotonic() - started < 10
