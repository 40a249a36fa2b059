"""Guest-cluster namespaces with the pod security their workloads need (the pods' own
hardening: ``pod_hardening.py``).

TKG up to Kubernetes 1.24 enforces PodSecurityPolicy: a namespace's service accounts need a
binding to one of the two policies TKG ships (VMware, "Using Pod Security Policies with Tanzu
Kubernetes Clusters"): ``psp:vmware-system-privileged`` for the namespaces NVIDIA's operator
and the NFS provisioner need privileged (the paper bound every namespace to it by hand),
``psp:vmware-system-restricted`` (non-root, no escalation, every capability dropped, no host
volumes) for the restricted ones (TKG ships no baseline policy). From 1.25 on, Pod Security
Admission reads the namespace labels, which every namespace of the program carries there.
"""
from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

import pulumi
import pulumi_kubernetes as k8s

PSP_CLUSTER_ROLES = {"privileged": "psp:vmware-system-privileged", "restricted": "psp:vmware-system-restricted"}


def psp_cluster_role(level: str) -> str:
    """TKG's policy for a Pod Security level. TKG has no baseline policy, and its restricted one
    refuses what baseline allows (root, an ``nfs`` volume): only ``restricted`` gets it."""
    return PSP_CLUSTER_ROLES["restricted" if level == "restricted" else "privileged"]


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
        # Under PodSecurityPolicy the namespace's binding (below) is its level: TKG enables Pod
        # Security Admission only from TKR 1.25 (VMware, "Configure PSA for TKR 1.25 and Later").
        labels = {"app.kubernetes.io/managed-by": "dask-tkg", **(args.labels or {})}
        if not args.enforces_psp:
            labels.update(psa_labels(args.level))
        self.namespace = k8s.core.v1.Namespace(
            f"{name}-ns", metadata={"name": args.namespace, "labels": labels}, opts=child)
        self.name = self.namespace.metadata.apply(lambda m: m["name"])
        if args.enforces_psp:
            role = psp_cluster_role(args.level)
            k8s.rbac.v1.RoleBinding(
                f"{name}-psp",
                metadata={"name": role.replace(":", "-"), "namespace": self.name},
                role_ref={"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": role},
                subjects=[{"apiGroup": "rbac.authorization.k8s.io", "kind": "Group",
                           "name": f"system:serviceaccounts:{args.namespace}"}],
                opts=child,
            )
        self.register_outputs({"name": self.name})
