"""The real cluster itself: a Ready node, pods that run, nothing reaching outside loopback and the bridge."""
from __future__ import annotations

import ipaddress

from tests.kube.rest import api_request, apply_manifest
from tests.cluster.node import REAL_NODE_TOLERATION
from tests.cluster.kube import install_tkg_pod_security, pods, wait_default_service_account, wait_running


def test_the_node_is_ready_and_runs_the_built_kubernetes(kube_cluster):
    node = api_request(kube_cluster.api_client, "GET", f"/api/v1/nodes/{kube_cluster.node_name}")
    info = node["status"]["nodeInfo"]
    assert info["kubeletVersion"] == "v1.20.2" and info["kubeProxyVersion"] == "v1.20.2"
    assert info["containerRuntimeVersion"].startswith("containerd://1.6")
    assert {"type": "InternalIP", "address": kube_cluster.net.bridge_ip} in node["status"]["addresses"]
    ready = {c["type"]: c["status"] for c in node["status"]["conditions"]}
    assert ready["Ready"] == "True", node["status"]["conditions"]
    version = api_request(kube_cluster.api_client, "GET", "/version")
    assert version["gitVersion"] == "v1.20.2"
    print(f"control plane + node Ready in {kube_cluster.start_s:.1f} s")


def pause_deployment(name: str, image: str, replicas: int = 2) -> dict:
    labels = {"app": name}
    return {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": name},
            "spec": {"replicas": replicas, "selector": {"matchLabels": labels},
                     "template": {"metadata": {"labels": labels},
                                  "spec": {"containers": [{"name": "pause", "image": image,
                                                           "imagePullPolicy": "Never"}],
                                           "tolerations": [REAL_NODE_TOLERATION],
                                           "automountServiceAccountToken": False}}}}


def test_a_deployment_runs_real_pods_on_the_bridge(kube_cluster, cluster_namespace):
    api = kube_cluster.api_client
    install_tkg_pod_security(api)
    wait_default_service_account(api, cluster_namespace)
    apply_manifest(api, {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "RoleBinding",
                         "metadata": {"name": "psp-restricted", "namespace": cluster_namespace},
                         "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole",
                                     "name": "psp:vmware-system-restricted"},
                         "subjects": [{"apiGroup": "rbac.authorization.k8s.io", "kind": "Group",
                                       "name": f"system:serviceaccounts:{cluster_namespace}"}]})
    apply_manifest(api, pause_deployment("pause", kube_cluster.pause_ref), namespace=cluster_namespace)
    running = wait_running(api, cluster_namespace, "app=pause", 2)
    pod_network = ipaddress.ip_network(kube_cluster.net.pod_cidr)
    for pod in running:
        assert pod["spec"]["nodeName"] == kube_cluster.node_name
        assert ipaddress.ip_address(pod["status"]["podIP"]) in pod_network
        assert pod["metadata"]["annotations"]["kubernetes.io/psp"] == "vmware-system-restricted"
    assert len({p["status"]["podIP"] for p in running}) == 2
    # a deleted pod is replaced by the ReplicaSet and runs again
    gone = running[0]["metadata"]["name"]
    api_request(api, "DELETE", f"/api/v1/namespaces/{cluster_namespace}/pods/{gone}")
    again = wait_running(api, cluster_namespace, "app=pause", 2)
    assert gone not in {p["metadata"]["name"] for p in again}
    assert len(pods(api, cluster_namespace, "app=pause")) >= 2
