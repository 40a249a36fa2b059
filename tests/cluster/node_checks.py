"""The checks of the real cluster itself, the same for each build (tests/cluster on the current
stacks' 1.33, tests/paper_cluster on the paper's 1.20): a Ready node running the built
Kubernetes, real pods on the bridge, nothing reaching outside loopback and the bridge."""
from __future__ import annotations

import ipaddress
import subprocess
from pathlib import Path

from tests.cluster.kube import enforces_psp, install_tkg_pod_security, pods, wait_default_service_account, wait_running
from tests.cluster.network import ClusterNetwork
from tests.cluster.node import REAL_NODE_TOLERATION, KubeCluster
from tests.kube.rest import api_request, apply_manifest


def check_node_runs_its_build(cluster: KubeCluster) -> None:
    node = api_request(cluster.api_client, "GET", f"/api/v1/nodes/{cluster.node_name}")
    info = node["status"]["nodeInfo"]
    release = cluster.release
    assert release is not None, "a running cluster has its release"
    version = release.version
    assert info["kubeletVersion"] == version, info
    # the node's kubeProxyVersion is left empty from 1.31 (KEP-4004): ask the running binary
    assert info["kubeProxyVersion"] == (version if release.minor < 31 else ""), info
    proxy = Path(f"/proc/{cluster.pids()['kube-proxy']}/cmdline").read_bytes().split(b"\0")[0].decode()
    assert proxy == str(release.binary("kube-proxy")), proxy
    said = subprocess.run([proxy, "--version"], capture_output=True, text=True, check=True, timeout=30).stdout
    assert said.split() == ["Kubernetes", version], said
    assert info["containerRuntimeVersion"].startswith("containerd://1.6")
    assert {"type": "InternalIP", "address": cluster.net.bridge_ip} in node["status"]["addresses"]
    ready = {c["type"]: c["status"] for c in node["status"]["conditions"]}
    assert ready["Ready"] == "True", node["status"]["conditions"]
    assert api_request(cluster.api_client, "GET", "/version")["gitVersion"] == version
    print(f"control plane + node {version} Ready in {cluster.start_s:.1f} s")


def pause_deployment(name: str, image: str, replicas: int = 2, seccomp: bool = True) -> dict:
    """Pause pods as restricted as Pod Security's restricted level asks (the seccomp profile only
    where no PodSecurityPolicy refuses a pod that names one)."""
    labels = {"app": name}
    pod_security = {"runAsNonRoot": True, "runAsUser": 65535, **(
        {"seccompProfile": {"type": "RuntimeDefault"}} if seccomp else {})}
    container = {"name": "pause", "image": image, "imagePullPolicy": "Never", "securityContext": {
        "allowPrivilegeEscalation": False, "capabilities": {"drop": ["ALL"]}}}
    return {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": name},
            "spec": {"replicas": replicas, "selector": {"matchLabels": labels},
                     "template": {"metadata": {"labels": labels},
                                  "spec": {"containers": [container], "securityContext": pod_security,
                                           "tolerations": [REAL_NODE_TOLERATION],
                                           "automountServiceAccountToken": False}}}}


def restrict(cluster: KubeCluster, namespace: str) -> None:
    """The namespace at the restricted level: TKG's restricted policy bound where PodSecurityPolicy
    admits pods, else the Pod Security label the program gives its own namespaces."""
    api = cluster.api_client
    if enforces_psp(api):
        install_tkg_pod_security(api)
        apply_manifest(api, {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "RoleBinding",
                             "metadata": {"name": "psp-restricted", "namespace": namespace},
                             "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole",
                                         "name": "psp:vmware-system-restricted"},
                             "subjects": [{"apiGroup": "rbac.authorization.k8s.io", "kind": "Group",
                                           "name": f"system:serviceaccounts:{namespace}"}]})
    else:
        api_request(api, "PATCH", f"/api/v1/namespaces/{namespace}", content_type="application/merge-patch+json",
                    body={"metadata": {"labels": {"pod-security.kubernetes.io/enforce": "restricted"}}})


def check_a_deployment_runs_real_pods_on_the_bridge(cluster: KubeCluster, namespace: str) -> None:
    api = cluster.api_client
    restrict(cluster, namespace)
    wait_default_service_account(api, namespace)
    apply_manifest(api, pause_deployment("pause", cluster.pause_ref, seccomp=not enforces_psp(api)),
                   namespace=namespace)
    running = wait_running(api, namespace, "app=pause", 2)
    pod_network = ipaddress.ip_network(cluster.net.pod_cidr)
    for pod in running:
        assert pod["spec"]["nodeName"] == cluster.node_name
        assert ipaddress.ip_address(pod["status"]["podIP"]) in pod_network
        if enforces_psp(api):
            assert pod["metadata"]["annotations"]["kubernetes.io/psp"] == "vmware-system-restricted"
    assert len({p["status"]["podIP"] for p in running}) == 2
    # a deleted pod is replaced by the ReplicaSet and runs again
    gone = running[0]["metadata"]["name"]
    api_request(api, "DELETE", f"/api/v1/namespaces/{namespace}/pods/{gone}")
    again = wait_running(api, namespace, "app=pause", 2)
    assert gone not in {p["metadata"]["name"] for p in again}
    assert len(pods(api, namespace, "app=pause")) >= 2


def peers(ss_output: str) -> list[tuple[str, str, str]]:
    """(peer address, local address, process) of each socket in ``ss -H -tuanp`` output."""
    found = []
    for line in ss_output.splitlines():
        columns = line.split()
        if len(columns) < 6:
            continue
        local, peer = columns[4], columns[5]
        address = peer.rsplit(":", 1)[0].strip("[]")
        found.append((address, local, " ".join(columns[6:])))
    return found


def outside(net: ClusterNetwork, sockets: list[tuple[str, str, str]]) -> list[tuple[str, str, str]]:
    return [s for s in sockets if s[0] != "*" and not net.allows(s[0])]


def check_nothing_connects_outside(cluster: KubeCluster) -> None:
    net = cluster.net
    sockets = peers(net.ns("ss", "-H", "-tuanp").stdout)
    assert sockets, "ss saw no sockets in the cluster's namespace"
    assert any("kubelet" in s[2] for s in sockets) and any("kube-apiserver" in s[2] for s in sockets)
    assert outside(net, sockets) == []
    counted = net.guard_drops()
    print(f"guard counters: {counted}")
    drops = {k: counted[k] for k in ("cloud-metadata", "outside")}
    assert drops == {"cloud-metadata": 0, "outside": 0}, (
        f"the cluster's guard chain dropped packets bound outside: {drops}")
