"""One person's namespace (a ``users`` entry): everything they need to run Dask clusters of
their own, under their own identity, and nothing beyond it.

- the namespace, Pod Security ``restricted`` (``GuestNamespace``), with the Dask
  NetworkPolicies of any DaskCluster there (``network_policy.dask_network_policies``: default
  deny, DNS, the scheduler and workers as in the Dask namespace, a DaskJob's runner pod as
  their client; nothing exposed: the person reaches their scheduler by port-forward);
- the ResourceQuota ``dask-quota`` (GPUs, CPU, memory, pods; no LoadBalancer or NodePort
  Service, no claim but the read-only ones, nothing on the RWX class), a quota of no pods at the
  system priority classes, the LimitRange ``dask-limits``, the Role ``dask-user`` and its
  RoleBinding to ``sso:<name>`` (``team_access``);
- the parameters the team's admission policies read there (``team_admission.PARAMS``: the
  person's idle timeout, the taints they may tolerate);
- the team's reclaimer's Role and RoleBinding there (``team_reclaim``: list and delete
  DaskClusters, which it does to those older than the person's ``maxLifetime``);
- the Dask operator's Role and RoleBinding there (``operator_rbac``), the controller's rights
  in each namespace it serves;
- the dataset and the prepared environment, read-only (``team_volumes``).
"""
from __future__ import annotations

import dataclasses
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

import pulumi
import pulumi_kubernetes as k8s

from components.dask import operator_rbac
from components.dask.team import access as team_access
from components.dask.team import admission as team_admission
from components.dask.team import reclaim as team_reclaim
from components.dask.team import volumes as team_volumes
from components.kube.exposure import guard_namespace
from components.kube.network_policy import DaskPodSelectors, NamespaceNetwork, dask_network_policies
from components.kube.network_settings import namespace_network
from components.kube.pod_security import GuestNamespace, GuestNamespaceArgs
from components.settings.model import Settings, TeamMember

POLICY_PREFIX = "dask"
# Taint keys a person's pods may tolerate: the GPU pools' (the program taints no pool today)
TOLERATED_TAINTS: tuple[str, ...] = ()


@dataclass(frozen=True)
class SharedVolume:
    """A shared claim of the Dask namespace and the spec of the volume it is bound to."""

    claim: pulumi.Input[str]
    spec: pulumi.Input[dict[str, Any]]  # what team_volumes needs of the bound volume's spec (``team.bound_spec``)


@dataclass(frozen=True)
class PersonSpaceArgs:
    member: TeamMember
    settings: Settings
    shared_volumes: Mapping[str, SharedVolume]  # by a short label (dataset, pip-cache)


def person_network(s: Settings) -> NamespaceNetwork:
    """The Dask namespace's network less any exposure: a person's scheduler is reached by
    port-forward, which arrives through the kubelet."""
    return dataclasses.replace(namespace_network(s), scheduler_exposed=False, dashboard_exposed=False,
                               jupyter_exposed=False, source_ranges=())


def _declare(kind: Callable[..., pulumi.Resource], name: str, manifest: Mapping[str, Any],
             opts: pulumi.ResourceOptions) -> pulumi.Resource:
    """A plain manifest as its pulumi-kubernetes resource (every field but apiVersion/kind)."""
    fields = {k: v for k, v in manifest.items() if k not in ("apiVersion", "kind")}
    if "roleRef" in fields:
        fields["role_ref"] = fields.pop("roleRef")
    return kind(name, **fields, opts=opts)


class PersonSpace(pulumi.ComponentResource):
    namespace: pulumi.Output[str]

    def __init__(self, name: str, args: PersonSpaceArgs, opts: pulumi.ResourceOptions | None = None):
        super().__init__("dask-tkg:dask:PersonSpace", name, None, opts)
        m, s = args.member, args.settings
        self.space = GuestNamespace(f"{name}-namespace", GuestNamespaceArgs(
            m.namespace, "restricted", s.cluster.enforces_psp, labels={**team_access.LABELS}),
            pulumi.ResourceOptions(parent=self))
        self.namespace = self.space.name
        inside = pulumi.ResourceOptions(parent=self, depends_on=[self.space])
        claims = len(args.shared_volumes)
        _declare(k8s.core.v1.ResourceQuota, f"{name}-quota",
                 team_access.person_quota(m, s.dask, claims, s.storage.storage_class), inside)
        _declare(k8s.core.v1.ResourceQuota, f"{name}-system-priority", team_access.system_priority_quota(m.namespace),
                 inside)
        _declare(k8s.core.v1.LimitRange, f"{name}-limits", team_access.person_limit_range(m.namespace, s.dask), inside)
        _declare(k8s.core.v1.ConfigMap, f"{name}-admission-params",
                 team_admission.params(m.namespace, m.idle_timeout, TOLERATED_TAINTS), inside)
        reclaimer = _declare(k8s.rbac.v1.Role, f"{name}-reclaimer-role", team_reclaim.role(m.namespace), inside)
        _declare(k8s.rbac.v1.RoleBinding, f"{name}-reclaimer-binding",
                 team_reclaim.role_binding(m.namespace, s.dask.operator.namespace if s.dask.operator else ""),
                 pulumi.ResourceOptions(parent=self, depends_on=[self.space, reclaimer]))
        role = _declare(k8s.rbac.v1.Role, f"{name}-role", team_access.person_role(m.namespace), inside)
        _declare(k8s.rbac.v1.RoleBinding, f"{name}-binding", team_access.person_binding(m),
                 pulumi.ResourceOptions(parent=self, depends_on=[self.space, role]))
        if s.dask.operator is None:
            raise ValueError("a person's space needs daskBackend=operator (components/settings/team.py says so)")
        operator_namespace = s.dask.operator.namespace
        self.operator_rights = [
            _declare(k8s.rbac.v1.Role, f"{name}-operator-role", operator_rbac.operator_role(m.namespace), inside),
            _declare(k8s.rbac.v1.RoleBinding, f"{name}-operator-binding",
                     operator_rbac.operator_role_binding(m.namespace, operator_namespace), inside)]
        network = person_network(s)
        self.network_policies = guard_namespace(name, self.namespace, lambda ns: dask_network_policies(
            ns, DaskPodSelectors.for_any_operator_cluster(), operator_namespace=operator_namespace, network=network,
            name_prefix=POLICY_PREFIX), POLICY_PREFIX, pulumi.ResourceOptions(parent=self))
        self.claims = [self._read_only(name, label, volume, inside) for label, volume in args.shared_volumes.items()]
        self.register_outputs({"namespace": self.namespace})

    def _read_only(self, name: str, label: str, shared: SharedVolume,
                   inside: pulumi.ResourceOptions) -> pulumi.Resource:
        """The person's read-only copy of one shared claim: its volume, then its claim."""
        namespace = self.namespace
        built = pulumi.Output.all(namespace, shared.claim, shared.spec).apply(
            lambda a: team_volumes.read_only_volume(a[2], a[0], a[1]))
        volume = k8s.core.v1.PersistentVolume(
            f"{name}-{label}-volume", metadata=built.apply(lambda v: v["metadata"]),
            spec=built.apply(lambda v: v["spec"]), opts=inside)
        claim = pulumi.Output.all(namespace, shared.claim, built).apply(
            lambda a: team_volumes.read_only_claim(a[0], a[1], a[2]["spec"]["capacity"]["storage"]))
        claim_resource: pulumi.Resource = k8s.core.v1.PersistentVolumeClaim(
            f"{name}-{label}-claim", metadata=claim.apply(lambda c: c["metadata"]),
            spec=claim.apply(lambda c: c["spec"]),
            opts=pulumi.ResourceOptions(parent=self, depends_on=[self.space, volume]))
        return claim_resource
