"""The Dask operator's controller, namespaced: the kopf flags that make it watch only the
namespaces it serves, and the Role (with its RoleBinding) it needs in each of them.

The pinned chart (dask-kubernetes-operator 2026.3.0, ``values.yaml``) defaults to
``rbac.cluster: true`` and kopf ``--all-namespaces``: a ClusterRole with ``*`` on pods,
services and deployments in every namespace, the GPU operator's privileged one included. With
``rbac.cluster: false`` the chart makes the same rules a Role in its own namespace
(``templates/role.yaml``), where the controller serves nothing. So the program turns the
chart's RBAC off (``rbac.create: false``) and grants, in each namespace it serves, exactly
what the controller does there; its account is the chart's ServiceAccount, named here.

Each rule, from the controller it serves (dask-kubernetes 2026.3.0,
``dask_kubernetes/operator/controller/controller.py``, and kopf 1.38, which runs it):
- kopf watches every resource a handler names (list, watch) and patches the objects it handles
  (finalizers, ``kopf.zalando.org/*`` annotations, ``status``): the four Dask resources, Services
  (``@kopf.on.field("service", ...)``, L403) and Pods (the job runner's phase, L827-L877);
- DaskCluster: create (a DaskJob's cluster, L797), delete (a finished DaskJob's, L864, L890),
  patch of ``status.phase`` (L423; no status subresource in the chart's CRD);
- DaskWorkerGroup: create (the default group, L397), patch (adopted by its cluster, L433;
  ``scale`` patches ``spec.worker.replicas``, kr8s 0.20 ``APIObject.async_scale``; L641, L976);
- DaskAutoscaler: patch (adopted by its cluster: ownerReferences, L910; its cooldown
  annotation, L980);
- DaskJob: patch of the ``status`` subresource (L840, L866, L892);
- Deployments: create (scheduler L370, workers L711), list (L504, L671), delete (L732);
- Services: create (the scheduler's, L382), get (``networking.get_scheduler_address``);
- Pods: create (a DaskJob's runner, L819), list (the scheduler pod, ``daskautoscaler_adapt``);
- Events: create (kopf posts each handler's outcome to the object's namespace,
  ``settings.posting``, kopf ``_cogs/clients/events.py``).

Cluster-wide, only reading namespaces and CRDs (``OBSERVE_RULES``): with exact ``--namespace``
names kopf still lists namespaces (kopf 1.38 ``_core/reactor/observation.py`` L52,
``namespace_observer``) and watches CRDs (L128, ``resource_observer``) to notice them change.
Forbidden, it falls back to the names given and one discovery at start, but only after
retrying each call nine times (``settings.networking.error_backoffs``, 1+1+2+3+5+8+13+21 s,
``_cogs/configs/configuration.py`` L353): about 55 s at every start in which no handler runs,
measured on the test API server. Names of namespaces and CRD schemas start nothing and hold no
secret. Discovery (``/api``, ``/apis``) is open to every authenticated user anyway (the bootstrap
``system:discovery`` ClusterRole). ``--standalone``: the chart runs one replica (strategy
Recreate), so kopf needs no peering objects (the chart's ``clusterkopfpeerings`` rule).
"""
from __future__ import annotations

from typing import Any

SERVICE_ACCOUNT = "dask-kubernetes-operator"  # the chart's ServiceAccount, named by the program
ROLE_NAME = "dask-kubernetes-operator"  # the program's Role and RoleBinding in each served namespace
_READ = ["get", "list", "watch"]

RULES: list[dict[str, Any]] = [
    {"apiGroups": ["kubernetes.dask.org"], "resources": ["daskclusters"],
     "verbs": [*_READ, "patch", "create", "delete"]},
    {"apiGroups": ["kubernetes.dask.org"], "resources": ["daskworkergroups"], "verbs": [*_READ, "patch", "create"]},
    {"apiGroups": ["kubernetes.dask.org"], "resources": ["daskautoscalers", "daskjobs"], "verbs": [*_READ, "patch"]},
    {"apiGroups": ["kubernetes.dask.org"], "resources": ["daskjobs/status"], "verbs": ["patch"]},
    {"apiGroups": ["apps"], "resources": ["deployments"], "verbs": ["get", "list", "create", "delete"]},
    {"apiGroups": [""], "resources": ["services", "pods"], "verbs": [*_READ, "patch", "create"]},
    {"apiGroups": [""], "resources": ["events"], "verbs": ["create"]},
]


OBSERVE_NAME = "dask-kubernetes-operator-observe"  # the ClusterRole and its binding
OBSERVE_RULES: list[dict[str, Any]] = [
    {"apiGroups": [""], "resources": ["namespaces"], "verbs": ["list", "watch"]},
    {"apiGroups": ["apiextensions.k8s.io"], "resources": ["customresourcedefinitions"], "verbs": ["list", "watch"]},
]


def kopf_args(namespaces: list[str]) -> list[str]:
    """The chart's ``kopfArgs``: one replica, the served namespaces only."""
    return ["--standalone", *(f"--namespace={ns}" for ns in namespaces)]


def rbac_values() -> dict[str, Any]:
    """The chart's RBAC off (the program grants it per namespace), its account named."""
    return {"rbac": {"create": False, "cluster": False},
            "serviceAccount": {"create": True, "name": SERVICE_ACCOUNT}}


def operator_role(namespace: str) -> dict[str, Any]:
    return {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "Role",
            "metadata": {"name": ROLE_NAME, "namespace": namespace}, "rules": RULES}


def operator_role_binding(namespace: str, operator_namespace: str) -> dict[str, Any]:
    return {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "RoleBinding",
            "metadata": {"name": ROLE_NAME, "namespace": namespace},
            "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": ROLE_NAME},
            "subjects": [{"kind": "ServiceAccount", "name": SERVICE_ACCOUNT, "namespace": operator_namespace}]}


def observe_cluster_role() -> dict[str, Any]:
    return {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole",
            "metadata": {"name": OBSERVE_NAME}, "rules": OBSERVE_RULES}


def observe_binding(operator_namespace: str) -> dict[str, Any]:
    return {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRoleBinding",
            "metadata": {"name": OBSERVE_NAME},
            "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": OBSERVE_NAME},
            "subjects": [{"kind": "ServiceAccount", "name": SERVICE_ACCOUNT, "namespace": operator_namespace}]}
