"""Small helpers over the API for the cluster tests: what TKG ships, pods, waiting."""
from __future__ import annotations

import copy
import time
from collections.abc import Callable
from typing import Any

import kubernetes.client

from tests.kube.rest import KubeApiError, api_request, apply_manifest

# What a TKG cluster with Kubernetes up to 1.24 ships for PodSecurityPolicy (VMware,
# "Using Pod Security Policies with Tanzu Kubernetes Clusters", vSphere with Tanzu 7.0
# docs): two default policies, vmware-system-privileged ("equivalent to running a cluster
# without the PSP admission controller enabled") and vmware-system-restricted, each with a
# ClusterRole psp:<name> granting `use`, and no binding for user workloads: "By default,
# ... no bindings exist for authenticated users", so a Deployment's pods are refused until
# the namespace's service accounts are bound to one of the roles.
PRIVILEGED_PSP: dict[str, Any] = {
    "apiVersion": "policy/v1beta1", "kind": "PodSecurityPolicy",
    "metadata": {"name": "vmware-system-privileged"},
    "spec": {"privileged": True, "allowPrivilegeEscalation": True, "allowedCapabilities": ["*"],
             "volumes": ["*"], "hostNetwork": True, "hostPorts": [{"min": 0, "max": 65535}],
             "hostIPC": True, "hostPID": True, "runAsUser": {"rule": "RunAsAny"},
             "seLinux": {"rule": "RunAsAny"}, "supplementalGroups": {"rule": "RunAsAny"},
             "fsGroup": {"rule": "RunAsAny"}},
}
RESTRICTED_PSP: dict[str, Any] = {
    "apiVersion": "policy/v1beta1", "kind": "PodSecurityPolicy",
    "metadata": {"name": "vmware-system-restricted"},
    "spec": {"privileged": False, "allowPrivilegeEscalation": False, "requiredDropCapabilities": ["ALL"],
             "volumes": ["configMap", "emptyDir", "projected", "secret", "downwardAPI", "persistentVolumeClaim"],
             "hostNetwork": False, "hostIPC": False, "hostPID": False,
             "runAsUser": {"rule": "MustRunAsNonRoot"}, "seLinux": {"rule": "RunAsAny"},
             "supplementalGroups": {"rule": "MustRunAs", "ranges": [{"min": 1, "max": 65535}]},
             "fsGroup": {"rule": "MustRunAs", "ranges": [{"min": 1, "max": 65535}]},
             "readOnlyRootFilesystem": False},
}


def psp_cluster_role(psp_name: str) -> dict:
    return {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole",
            "metadata": {"name": f"psp:{psp_name}"},
            "rules": [{"apiGroups": ["policy"], "resources": ["podsecuritypolicies"], "verbs": ["use"],
                       "resourceNames": [psp_name]}]}


# The stand-in's own policy: TKG's restricted one plus exactly what the stand-in adds to the
# program's pods (tests/cluster/post_render.py): read-only hostPath mounts of the node's prepared
# Python environment, and a seccomp profile, which a 1.25+ stack's pods name (Pod Security
# Admission's restricted level wants runtime/default; under PodSecurityPolicy a pod may name
# only the profiles its policy's annotation allows, Kubernetes 1.20
# pkg/security/podsecuritypolicy/seccomp). Bound beside the program's own binding, so the pods
# still run as non-root, without escalation and with every capability dropped.
STAND_IN_PSP_NAME = "stand-in-restricted-with-host-mounts"


def stand_in_psp(host_paths: list[str]) -> dict:
    spec = copy.deepcopy(RESTRICTED_PSP["spec"])
    spec["volumes"] = [*spec["volumes"], "hostPath"]
    spec["allowedHostPaths"] = [{"pathPrefix": path, "readOnly": True} for path in sorted(set(host_paths))]
    return {"apiVersion": "policy/v1beta1", "kind": "PodSecurityPolicy",
            "metadata": {"name": STAND_IN_PSP_NAME,
                         # "*": a 1.25+ stack's pods name runtime/default, a PSP stack's name none
                         # (a list without the empty profile refuses those: seen on this node)
                         "annotations": {"seccomp.security.alpha.kubernetes.io/allowedProfileNames": "*"}},
            "spec": spec}


def server_minor(api: kubernetes.client.ApiClient) -> int:
    """The Kubernetes minor of the server behind ``api`` (its ``/version``)."""
    return int(api_request(api, "GET", "/version")["minor"].rstrip("+"))


def enforces_psp(api: kubernetes.client.ApiClient) -> bool:
    """Whether pods are admitted by PodSecurityPolicy there (the paper's 1.20; removed in 1.25,
    where Pod Security Admission reads the namespaces' labels instead)."""
    return server_minor(api) < 25


def bind_stand_in_pod_security(api: kubernetes.client.ApiClient, namespace: str, host_paths: list[str]) -> None:
    """The stand-in policy (above) for the namespace's service accounts, beside the program's,
    where PodSecurityPolicy admits pods (nothing to do on a 1.25+ server)."""
    if not enforces_psp(api):
        return
    apply_manifest(api, stand_in_psp(host_paths), update_existing=True)
    apply_manifest(api, psp_cluster_role(STAND_IN_PSP_NAME), update_existing=True)
    apply_manifest(api, {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "RoleBinding",
                         "metadata": {"name": STAND_IN_PSP_NAME, "namespace": namespace},
                         "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole",
                                     "name": f"psp:{STAND_IN_PSP_NAME}"},
                         "subjects": [{"apiGroup": "rbac.authorization.k8s.io", "kind": "Group",
                                       "name": f"system:serviceaccounts:{namespace}"}]}, update_existing=True)


def install_tkg_pod_security(api: kubernetes.client.ApiClient) -> None:
    """TKG 1.20's two policies and their ClusterRoles (nothing to do on a 1.25+ server: no PSP)."""
    if not enforces_psp(api):
        return
    for psp in (PRIVILEGED_PSP, RESTRICTED_PSP):
        apply_manifest(api, psp, update_existing=True)
        apply_manifest(api, psp_cluster_role(psp["metadata"]["name"]), update_existing=True)


def wait_for(what: str, probe: Callable[[], Any], timeout_s: float, interval_s: float = 0.5,
             explain: Callable[[], str] | None = None) -> Any:
    """Poll ``probe`` until it returns something truthy; TimeoutError naming ``what`` otherwise."""
    deadline = time.monotonic() + timeout_s
    last: Any = None
    while True:
        try:
            last = probe()
            if last:
                return last
        except KubeApiError as exc:
            last = exc
        if time.monotonic() > deadline:
            detail = explain() if explain else repr(last)
            raise TimeoutError(f"{what}: not after {timeout_s:.0f} s ({detail})")
        time.sleep(interval_s)


def pods(api: kubernetes.client.ApiClient, namespace: str, selector: str | None = None) -> list[dict]:
    return api_request(api, "GET", f"/api/v1/namespaces/{namespace}/pods",
                       query={"labelSelector": selector})["items"]


def events(api: kubernetes.client.ApiClient, namespace: str) -> list[dict]:
    return api_request(api, "GET", f"/api/v1/namespaces/{namespace}/events")["items"]


def event_summary(api: kubernetes.client.ApiClient, namespace: str) -> str:
    return "; ".join(f"{e['involvedObject']['kind']}/{e['involvedObject']['name']} {e['reason']}: {e['message']}"
                     for e in events(api, namespace))[-3000:]


def running(pod: dict) -> bool:
    status = pod.get("status", {})
    return status.get("phase") == "Running" and all(c.get("ready") for c in status.get("containerStatuses", []))


def wait_running(api: kubernetes.client.ApiClient, namespace: str, selector: str, count: int,
                 timeout_s: float = 90.0) -> list[dict]:
    def probe():
        found = [p for p in pods(api, namespace, selector) if not p["metadata"].get("deletionTimestamp")]
        return found if len(found) >= count and all(running(p) for p in found) else None

    def explain():
        states = [(p["metadata"]["name"], p["status"].get("phase"),
                   [c.get("state") for c in p["status"].get("containerStatuses", [])])
                  for p in pods(api, namespace, selector)]
        return f"pods {states}; events: {event_summary(api, namespace)}"

    return wait_for(f"{count} running pod(s) {selector!r} in {namespace}", probe, timeout_s, explain=explain)


def wait_default_service_account(api: kubernetes.client.ApiClient, namespace: str, timeout_s: float = 30.0) -> None:
    """Pods are refused until the controller-manager has made the namespace's default ServiceAccount
    (and, before 1.24, its token Secret: later servers give pods bound tokens instead)."""
    needs_secret = server_minor(api) < 24

    def made():
        account = api_request(api, "GET", f"/api/v1/namespaces/{namespace}/serviceaccounts/default")
        return account.get("secrets") if needs_secret else account

    wait_for(f"ServiceAccount default in {namespace}", made, timeout_s)


def delete_namespace(api: kubernetes.client.ApiClient, namespace: str, timeout_s: float = 60.0) -> None:
    """Delete a namespace and wait until it is gone. Pods bound to kubelet-less Nodes never
    confirm their deletion, so every pod is deleted with grace period 0 first (and again while the
    namespace goes: a controller may make one more). A pod that is gone before its deletion is
    fine; the namespace's own deletion is sent whatever became of its pods."""
    force_delete_pods(api, namespace)
    try:
        api_request(api, "DELETE", f"/api/v1/namespaces/{namespace}")
    except KubeApiError as exc:
        if exc.status != 404:
            raise

    def gone():
        try:
            api_request(api, "GET", f"/api/v1/namespaces/{namespace}")
        except KubeApiError as exc:
            return exc.status == 404
        force_delete_pods(api, namespace)  # created after the first sweep
        return False

    wait_for(f"namespace {namespace} deleted", gone, timeout_s, interval_s=1.0,
             explain=lambda: namespace_left(api, namespace))


def delete_namespaces(api: kubernetes.client.ApiClient, namespaces: list[str], timeout_s: float = 120.0) -> None:
    """Each of ``namespaces`` deleted and waited for, whatever became of the ones before it (a
    teardown that stops at the first leaves the rest to the next module); every failure is raised
    together at the end."""
    failures = []
    for namespace in namespaces:
        try:
            delete_namespace(api, namespace, timeout_s)
        except (KubeApiError, TimeoutError) as exc:
            failures.append(f"{namespace}: {exc}")
    if failures:
        raise TimeoutError("; ".join(failures))


def force_delete_pods(api: kubernetes.client.ApiClient, namespace: str) -> None:
    """Every pod of ``namespace`` deleted with grace period 0; one already gone (or the whole
    namespace) is not an error: pods go on their own while a cluster is torn down."""
    try:
        listed = pods(api, namespace)
    except KubeApiError as exc:
        if exc.status == 404:
            return
        raise
    for pod in listed:
        try:
            api_request(api, "DELETE", f"/api/v1/namespaces/{namespace}/pods/{pod['metadata']['name']}",
                        body={"gracePeriodSeconds": 0})
        except KubeApiError as exc:
            if exc.status != 404:
                raise


def namespace_left(api: kubernetes.client.ApiClient, namespace: str) -> str:
    """What holds a terminating namespace, in the namespace controller's own words: the
    conditions it writes (content remaining, finalizers remaining, discovery or deletion failures)."""
    try:
        space = api_request(api, "GET", f"/api/v1/namespaces/{namespace}")
    except KubeApiError as exc:
        return f"namespace {namespace}: {exc}"
    conditions = [f"{c['type']}={c['status']}: {c.get('message', '')}"
                  for c in space.get("status", {}).get("conditions", []) if c.get("status") == "True"]
    return f"phase {space.get('status', {}).get('phase')}; {'; '.join(conditions) or 'no condition yet'}"


def delete_volumes(api: kubernetes.client.ApiClient, volumes: list[dict]) -> None:
    """Delete cluster-scoped PersistentVolumes a test created (one already gone is fine)."""
    for volume in volumes:
        try:
            api_request(api, "DELETE", f"/api/v1/persistentvolumes/{volume['metadata']['name']}")
        except KubeApiError as exc:
            if exc.status != 404:
                raise


def in_namespace(objects: list[dict], kind: str, namespace: str | None) -> list[dict]:
    return [o for o in objects if o["kind"] == kind and o["metadata"].get("namespace") == namespace]
