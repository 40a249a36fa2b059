"""Guest-cluster namespaces with the pod security their workloads need.

TKG up to Kubernetes 1.24 enforces PodSecurityPolicy: service accounts need a binding to
``psp:vmware-system-privileged`` (what the paper applied by hand). From 1.25 on, Pod
Security Admission reads namespace labels instead.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Mapping

import pulumi
import pulumi_kubernetes as k8s

PSP_CLUSTER_ROLE = "psp:vmware-system-privileged"


def psa_labels(level: str) -> dict[str, str]:
    return {f"pod-security.kubernetes.io/{mode}": level for mode in ("enforce", "audit", "warn")}


@dataclass(frozen=True)
class GuestNamespaceArgs:
    namespace: str
    level: str  # privileged | baseline | restricted (Pod Security Standards)
    enforces_psp: bool
    labels: Mapping[str, str] | None = None  # extra namespace labels (e.g. for NetworkPolicy selectors)


class GuestNamespace(pulumi.ComponentResource):
    name: pulumi.Output[str]

    def __init__(self, name: str, args: GuestNamespaceArgs, opts: pulumi.ResourceOptions | None = None):
        super().__init__("dask-tkg:cluster:GuestNamespace", name, None, opts)
        child = pulumi.ResourceOptions(parent=self)
        labels = {"app.kubernetes.io/managed-by": "dask-tkg", **(args.labels or {})}
        if not args.enforces_psp:
            labels.update(psa_labels(args.level))
        self.namespace = k8s.core.v1.Namespace(
            f"{name}-ns", metadata={"name": args.namespace, "labels": labels}, opts=child)
        self.name = self.namespace.metadata.apply(lambda m: m["name"])
        if args.enforces_psp:
            k8s.rbac.v1.RoleBinding(
                f"{name}-psp",
                metadata={"name": "psp-vmware-system-privileged", "namespace": self.name},
                role_ref={"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": PSP_CLUSTER_ROLE},
                subjects=[{"apiGroup": "rbac.authorization.k8s.io", "kind": "Group",
                           "name": f"system:serviceaccounts:{args.namespace}"}],
                opts=child,
            )
        self.register_outputs({"name": self.name})
