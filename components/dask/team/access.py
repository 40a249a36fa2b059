"""What a person of ``users`` may do, and hold, in their own namespace: the Role ``dask-user``
and its RoleBinding to their SSO identity, and the ResourceQuota ``dask-quota``. Pure builders
of plain manifests (components/dask/team/person_space.py declares them; tests/apiserver applies
them to a real API server).

The subject: inside a VKS (TKG) cluster a vCenter Single Sign-On user or group is named
``sso:<user>@<domain>`` in a RoleBinding (VMware, "Grant Developers SSO Access to Workload
Clusters", https://vmw-docs.broadcom.com/en/VMware-vSphere/8.0/vsphere-with-tanzu-tkg/
GUID-C213218C-58D2-4F55-8D25-83B84F593E04.html: "sso:USER-NAME@DOMAIN", "sso:GROUP-NAME@DOMAIN").

The Role, rule by rule, for what the person's tools call in that namespace (the runner's own
cluster through dask-kubernetes' ``KubeCluster``, ``kubectl``):
- the four Dask resources of the pinned operator's CRDs (dask-kubernetes-operator 2026.3.0,
  ``crds/``): every verb but ``deletecollection`` (one call deleting every cluster), and a worker
  group's ``scale`` subresource (``KubeCluster.scale``);
- pods, services, endpoints, events and resourcequotas read (the scheduler's pod and Service,
  why a pod waits, the quota the runner checks first); pod logs; ``pods/portforward`` with
  ``get`` and ``create`` (the websocket upgrade is a GET; Kubernetes 1.35 also asks for
  create, kubernetes/kubernetes#134577);
- Secrets: create, get, delete, for the runner's own TLS Secret ``dask-tls-<cluster>``.
  ``resourceNames`` cannot narrow them: RBAC never restricts ``create`` by name (the name is not
  known when it is authorized, Kubernetes "Using RBAC Authorization", "Referring to
  resources"), and it matches names exactly, while each cluster's name is chosen at run time.
  So the person may read any Secret of their own namespace: only theirs live there (the
  program puts none; on clusters before 1.24 the token controller adds the ``default``
  ServiceAccount's token, an account granted nothing). No ``list``/``watch`` on Secrets.
No pod creation, exec or attach (a DaskCluster makes pods through the operator, under the
namespace's Pod Security and quota), nothing on RBAC, nothing outside the namespace.
"""
from __future__ import annotations

from typing import Any

from components.dask.podspec import GPU_RESOURCE
from components.settings.model import DaskSpec, TeamMember
from components.settings.values import cpu_millis, quantity_bytes

ROLE_NAME = "dask-user"
QUOTA_NAME = "dask-quota"
SSO_PREFIX = "sso:"
RBAC_GROUP = "rbac.authorization.k8s.io"
DASK_GROUP = "kubernetes.dask.org"
DASK_RESOURCES = ["daskclusters", "daskworkergroups", "daskautoscalers", "daskjobs"]
ALL_BUT_DELETECOLLECTION = ["get", "list", "watch", "create", "update", "patch", "delete"]
READ = ["get", "list", "watch"]
RULES: list[dict[str, Any]] = [
    {"apiGroups": [DASK_GROUP], "resources": DASK_RESOURCES, "verbs": ALL_BUT_DELETECOLLECTION},
    {"apiGroups": [DASK_GROUP], "resources": ["daskworkergroups/scale"], "verbs": ["get", "update", "patch"]},
    {"apiGroups": [""], "resources": ["pods", "services", "endpoints", "events", "resourcequotas"], "verbs": READ},
    {"apiGroups": [""], "resources": ["pods/log"], "verbs": ["get"]},
    {"apiGroups": [""], "resources": ["pods/portforward"], "verbs": ["get", "create"]},
    {"apiGroups": [""], "resources": ["secrets"], "verbs": ["create", "get", "delete"]},
]
LABELS = {"app.kubernetes.io/managed-by": "dask-tkg", "app.kubernetes.io/component": "team"}


def subject(member: TeamMember) -> dict[str, str]:
    """The person (or SSO group) as VKS names them in a RoleBinding."""
    return {"kind": member.kind, "name": f"{SSO_PREFIX}{member.name}", "apiGroup": RBAC_GROUP}


def person_role(namespace: str) -> dict[str, Any]:
    return {"apiVersion": f"{RBAC_GROUP}/v1", "kind": "Role",
            "metadata": {"name": ROLE_NAME, "namespace": namespace, "labels": dict(LABELS)}, "rules": RULES}


def person_binding(member: TeamMember) -> dict[str, Any]:
    return {"apiVersion": f"{RBAC_GROUP}/v1", "kind": "RoleBinding",
            "metadata": {"name": ROLE_NAME, "namespace": member.namespace, "labels": dict(LABELS)},
            "roleRef": {"apiGroup": RBAC_GROUP, "kind": "Role", "name": ROLE_NAME}, "subjects": [subject(member)]}


def quota_hard(member: TeamMember, dask: DaskSpec) -> dict[str, str]:
    """The namespace's caps: ``gpus`` GPUs, and the pods, CPU and memory of one cluster with as
    many workers as those GPUs fill (the stack's worker spec) and the stack's scheduler. Extended
    resources are quota'd by their requests only (Kubernetes "Resource Quotas", "Resource quota
    for extended resources")."""
    workers = member.gpus // dask.workers.gpus
    millis = workers * dask.workers.cpu * 1000 + cpu_millis(dask.scheduler.cpu)
    memory = workers * quantity_bytes(dask.workers.memory) + quantity_bytes(dask.scheduler.memory)
    return {f"requests.{GPU_RESOURCE}": str(member.gpus), "pods": str(workers + 1),
            "requests.cpu": str(millis // 1000) if millis % 1000 == 0 else f"{millis}m",
            "requests.memory": _binary_quantity(memory)}


def object_caps(claims: int, rwx_class: str) -> dict[str, str]:
    """What the namespace may hold besides pods: no LoadBalancer nor NodePort Service (the
    admission policies refuse them first: components/dask/team/admission.py; the quota holds
    should a policy be unbound), the ``claims`` read-only claims the program makes and no other,
    nothing at all on the shared RWX class (Kubernetes "Resource Quotas": storage resource quota,
    ``<class>.storageclass.storage.k8s.io/...``)."""
    rwx = f"{rwx_class}.storageclass.storage.k8s.io"
    return {"services.loadbalancers": "0", "services.nodeports": "0", "persistentvolumeclaims": str(claims),
            f"{rwx}/persistentvolumeclaims": "0", f"{rwx}/requests.storage": "0"}


def person_quota(member: TeamMember, dask: DaskSpec, claims: int, rwx_class: str) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "ResourceQuota",
            "metadata": {"name": QUOTA_NAME, "namespace": member.namespace, "labels": dict(LABELS)},
            "spec": {"hard": {**quota_hard(member, dask), **object_caps(claims, rwx_class)}}}


SYSTEM_PRIORITY_QUOTA = "dask-system-priority"
SYSTEM_PRIORITY_CLASSES = ["system-node-critical", "system-cluster-critical"]


def system_priority_quota(namespace: str) -> dict[str, Any]:
    """No pod of the system priority classes (Kubernetes "Resource Quotas", "Limit Priority Class
    consumption by default"): a second line behind the admission policy's ``no-priority-class``."""
    return {"apiVersion": "v1", "kind": "ResourceQuota",
            "metadata": {"name": SYSTEM_PRIORITY_QUOTA, "namespace": namespace, "labels": dict(LABELS)},
            "spec": {"hard": {"pods": "0"}, "scopeSelector": {"matchExpressions": [
                {"scopeName": "PriorityClass", "operator": "In", "values": SYSTEM_PRIORITY_CLASSES}]}}}


LIMIT_RANGE = "dask-limits"


def person_limit_range(namespace: str, dask: DaskSpec) -> dict[str, Any]:
    """No container runs unbounded: without limits of its own it gets the scheduler's, and none may
    ask for more CPU or memory than one GPU worker (the stack's worker spec). GPUs are left to the
    quota: the API server defaults a missing ``default`` to ``max`` (``SetDefaults_LimitRangeItem``),
    so a GPU maximum would give every container without a GPU limit one GPU (the scheduler too:
    seen on the 1.33 node, where it took half of a person's GPU quota)."""
    scheduler = {"cpu": str(dask.scheduler.cpu), "memory": dask.scheduler.memory}
    largest = {"cpu": str(dask.workers.cpu), "memory": dask.workers.memory}
    return {"apiVersion": "v1", "kind": "LimitRange",
            "metadata": {"name": LIMIT_RANGE, "namespace": namespace, "labels": dict(LABELS)},
            "spec": {"limits": [{"type": "Container", "default": dict(scheduler), "defaultRequest": dict(scheduler),
                                 "max": largest}]}}


def _binary_quantity(amount: int) -> str:
    """``amount`` bytes in the largest binary unit that holds it whole (``100Gi``)."""
    for unit, size in (("Ti", 2**40), ("Gi", 2**30), ("Mi", 2**20), ("Ki", 2**10)):
        if amount and amount % size == 0:
            return f"{amount // size}{unit}"
    return str(amount)
