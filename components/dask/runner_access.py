"""The runner's own identity in the guest cluster: a ServiceAccount of the Dask namespace, a
Role holding only what ``python -m workloads.run`` calls, and a kubeconfig built on the
account's token, exported as ``runnerKubeconfig``.

The runner runs on a data scientist's machine, and a Dask client unpickles what workers send
back: a compromised worker reaches that machine. So the credentials there are namespaced,
revocable (delete the token Secret) and unable to read a Secret, exec into a pod or create
one; the cluster's admin kubeconfig (a ``system:masters`` client certificate, revocable only by
rotating the cluster CA) stays in the program's state and is not exported.

What the runner calls, and the rule each needs (``workloads/cluster``):

- ``port_forward.py``: read the scheduler's Service (by name, or listed to find a ClusterIP),
  its Endpoints and the forwarded pod; open ``pods/portforward``. The Python client opens the
  stream as a websocket, an HTTP GET, which RBAC authorizes as ``get``; Kubernetes 1.35 also
  asks for ``create`` on that upgrade (kubernetes/kubernetes#134577, feature gate
  ``AuthorizePodWebsocketUpgradeCreatePermission``, beta and on), so both verbs are granted.
- ``scaling.py`` (operator backend only): the replicas of the DaskCluster's own worker group
  ``<cluster>-default`` through its ``scale`` subresource, and the DaskAutoscaler
  ``<cluster>`` (read, bounds patched, created for an adaptive run and deleted after). The
  pinned chart's CRDs (dask-kubernetes-operator 2026.3.0, ``crds/daskworkergroup.yaml``:
  ``subresources.scale.specReplicasPath: .spec.worker.replicas``; ``crds/daskautoscaler.yaml``:
  group ``kubernetes.dask.org``, plural ``daskautoscalers``) give the names. The scale
  subresource changes the replica count and nothing else: a patch of the group itself could
  rewrite its workers' pod template (image, volumes, service account), pod creation by proxy.
- ``pods/log`` read, for ``kubectl logs`` with the same kubeconfig when a run fails.
- ``workloads/observe/gpu_pods.py``: list the Dask cluster's pods (the ``pods`` read above),
  for what each run held of the GPUs: each pod's requested GPUs, when it was scheduled and
  when it was gone (the record's ``gpu_usage``).

The token is a ``kubernetes.io/service-account-token`` Secret: the token controller fills its
``data.token``, and pulumi-kubernetes waits for that before it reads the Secret back (since
v3.20.0, pulumi/pulumi-kubernetes#2048, ``provider/pkg/await/awaiters.go``,
``untilCoreV1SecretInitialized``; its ``data`` is a secret output). That wait is 5 s there:
a token controller slower than that fails the Secret's creation, and the next ``pulumi up``
reads it back filled. The Secret names the ServiceAccount, so it is created after it (the
token controller deletes a token Secret whose account does not exist).
"""
from __future__ import annotations

import base64
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import pulumi
import pulumi_kubernetes as k8s
import yaml

from components.cluster.providers.kube_api import kubeconfig_document

NAME = "dask-runner"
TOKEN_SECRET = f"{NAME}-token"
TOKEN_TYPE = "kubernetes.io/service-account-token"  # noqa: S105 (a Secret type, not a token)
SERVICE_ACCOUNT_ANNOTATION = "kubernetes.io/service-account.name"
DASK_GROUP = "kubernetes.dask.org"  # the pinned operator chart's CRDs


class RunnerKubeconfigError(ValueError):
    """The runner's kubeconfig cannot be built (the admin kubeconfig or the token is unusable)."""


def default_worker_group(dask_cluster: str) -> str:
    """The DaskCluster's own worker group (dask-kubernetes 2026.3.0, operator/controller/
    controller.py, ``build_default_worker_group_spec``: ``f"{cluster_name}-default"``)."""
    return f"{dask_cluster}-default"


def role_rules(dask_cluster: str | None) -> list[dict[str, Any]]:
    """The Role's rules: what the runner calls (module docstring), in the Role's namespace
    only. ``dask_cluster`` is the operator backend's DaskCluster; None with Helm, which has
    nothing to resize. Nothing on Secrets, pods/exec, pods/attach or pod creation."""
    rules: list[dict[str, Any]] = [
        {"apiGroups": [""], "resources": ["services", "endpoints", "pods"], "verbs": ["get", "list"]},
        {"apiGroups": [""], "resources": ["pods/log"], "verbs": ["get"]},
        {"apiGroups": [""], "resources": ["pods/portforward"], "verbs": ["get", "create"]},
    ]
    if dask_cluster:
        rules += [
            {"apiGroups": [DASK_GROUP], "resources": ["daskworkergroups/scale"],
             "resourceNames": [default_worker_group(dask_cluster)], "verbs": ["get", "patch"]},
            {"apiGroups": [DASK_GROUP], "resources": ["daskautoscalers"], "resourceNames": [dask_cluster],
             "verbs": ["get", "patch", "delete"]},
            # RBAC cannot name an object that does not exist yet: create is granted by type
            {"apiGroups": [DASK_GROUP], "resources": ["daskautoscalers"], "verbs": ["create"]},
        ]
    return rules


def _current_cluster(doc: Mapping[str, Any]) -> tuple[str, dict[str, Any]]:
    """The name and entry of the admin kubeconfig's current context's cluster."""
    contexts = {c.get("name"): c.get("context") or {} for c in doc.get("contexts") or [] if isinstance(c, dict)}
    context = contexts.get(doc.get("current-context")) or (next(iter(contexts.values())) if len(contexts) == 1 else {})
    clusters = {c.get("name"): c.get("cluster") or {} for c in doc.get("clusters") or [] if isinstance(c, dict)}
    name = context.get("cluster") or (next(iter(clusters)) if len(clusters) == 1 else None)
    if name not in clusters:
        raise RunnerKubeconfigError("the cluster's kubeconfig names no cluster for its current context")
    return str(name), clusters[name]


def runner_kubeconfig(cluster_kubeconfig: str, token_b64: str | None, namespace: str) -> str:
    """A kubeconfig for the runner: the cluster's server and CA from the admin kubeconfig
    (nothing else of it: no client certificate, no key), the ServiceAccount's token as the
    user, the Dask namespace as the context's namespace. ``token_b64`` is the token
    Secret's ``data.token`` (base64, as the API returns Secret data)."""
    if not token_b64:
        raise RunnerKubeconfigError(
            f"Secret {namespace}/{TOKEN_SECRET} has no data.token: the guest cluster's token controller did not"
            " fill it (kube-controller-manager needs --service-account-private-key-file); run pulumi up again"
            " once it does")
    doc = kubeconfig_document(cluster_kubeconfig, "the cluster's kubeconfig", RunnerKubeconfigError)
    name, cluster = _current_cluster(doc)
    if not cluster.get("server") or not cluster.get("certificate-authority-data"):
        raise RunnerKubeconfigError(f"the cluster's kubeconfig gives cluster {name!r} no server or no"
                                    " certificate-authority-data: the runner's kubeconfig would not verify it")
    user = f"{NAME}@{name}"
    text: str = yaml.safe_dump({
        "apiVersion": "v1", "kind": "Config",
        "clusters": [{"name": name, "cluster": {"server": cluster["server"],
                                                "certificate-authority-data": cluster["certificate-authority-data"]}}],
        "users": [{"name": user, "user": {"token": base64.b64decode(token_b64).decode()}}],
        "contexts": [{"name": user, "context": {"cluster": name, "user": user, "namespace": namespace}}],
        "current-context": user,
    }, sort_keys=False)
    return text


@dataclass(frozen=True)
class RunnerAccessArgs:
    namespace: pulumi.Input[str]  # the Dask namespace
    cluster_kubeconfig: pulumi.Input[str]  # secret: the admin kubeconfig; only its server and CA are kept
    dask_cluster: str | None = None  # the operator backend's DaskCluster; None with Helm


class RunnerAccess(pulumi.ComponentResource):
    kubeconfig: pulumi.Output[str]  # secret: the runner's kubeconfig (token user, Dask namespace)
    service_account: pulumi.Output[str]

    def __init__(self, name: str, args: RunnerAccessArgs, opts: pulumi.ResourceOptions | None = None):
        super().__init__("dask-tkg:dask:RunnerAccess", name, None, opts)
        child = pulumi.ResourceOptions(parent=self)
        namespace = pulumi.Output.from_input(args.namespace)
        labels = {"app.kubernetes.io/managed-by": "dask-tkg", "app.kubernetes.io/component": "runner"}
        account = k8s.core.v1.ServiceAccount(
            f"{name}-account", metadata={"name": NAME, "namespace": namespace, "labels": labels},
            automount_service_account_token=False, opts=child)
        self.service_account = account.metadata.apply(lambda m: m["name"])
        role = k8s.rbac.v1.Role(
            f"{name}-role", metadata={"name": NAME, "namespace": namespace, "labels": labels},
            rules=role_rules(args.dask_cluster), opts=child)
        k8s.rbac.v1.RoleBinding(
            f"{name}-binding", metadata={"name": NAME, "namespace": namespace, "labels": labels},
            role_ref={"apiGroup": "rbac.authorization.k8s.io", "kind": "Role",
                      "name": role.metadata.apply(lambda m: m["name"])},
            subjects=[{"kind": "ServiceAccount", "name": self.service_account, "namespace": namespace}], opts=child)
        token = k8s.core.v1.Secret(
            f"{name}-token", type=TOKEN_TYPE,
            metadata={"name": TOKEN_SECRET, "namespace": namespace, "labels": labels,
                      "annotations": {SERVICE_ACCOUNT_ANNOTATION: self.service_account}},
            opts=pulumi.ResourceOptions(parent=self, depends_on=[account]))
        self.kubeconfig = pulumi.Output.secret(pulumi.Output.all(args.cluster_kubeconfig, token.data, namespace).apply(
            lambda a: runner_kubeconfig(a[0], (a[1] or {}).get("token"), a[2])))
        self.register_outputs({"kubeconfig": self.kubeconfig, "service_account": self.service_account})
