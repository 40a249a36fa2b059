"""A stack rule: the Supervisor namespace offers what the stack builds for it and what the
cluster in it uses.

- every ``VsanStoragePolicy`` (its ``policy_id``) is attached to a namespace
  (``storage_specs[].policy`` of the vSphere 7 ``SupervisorNamespace``, ``storagePolicies``
  of the vSphere 8 ``vsphere.Namespace``);
- every ``VirtualMachineClass`` is offered by a namespace (``vm_classes`` / ``vmServices[].vmClasses``);
- each workload cluster in a namespace of the stack, a TanzuKubernetesCluster or a Cluster API
  ``Cluster`` (read alike by ``clusters.read``: a Cluster's VM and storage classes are in its
  topology's variables and each pool's overrides), uses only VM classes and storage classes
  that namespace offers (a storage class is the Kubernetes name of an attached policy, known
  here for the stack's own ``VsanStoragePolicy`` resources).

Stack rules see the resources' outputs. A value unknown during a preview of a new stack
skips the check that needs it (all of them while the namespace's own offering is unknown);
the SDK then notes that the policy could not run fully during preview.
"""
from __future__ import annotations

import re
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field

from pulumi_policy import EnforcementLevel, PolicyResource, ReportViolation, StackValidationArgs, StackValidationPolicy
from pulumi_policy.proxy import UnknownValueError

from .clusters import read as read_cluster
from .common import (
    CLUSTER_TYPES,
    SUPERVISOR_NAMESPACE,
    VM_CLASS,
    VSAN_POLICY,
    VSPHERE_NAMESPACE,
    as_list,
    as_map,
    dig,
    where,
)


@dataclass
class Offer:
    """What one Supervisor namespace offers."""

    name: str
    resource: PolicyResource
    policy_ids: set[str] = field(default_factory=set)
    vm_classes: set[str] = field(default_factory=set)

    @property
    def label(self) -> str:
        return where("Supervisor namespace", self.name, self.resource.name)

    @property
    def class_key(self) -> str:
        return "vm_classes" if self.resource.resource_type == SUPERVISOR_NAMESPACE else "vmServices[].vmClasses"

    @property
    def policy_key(self) -> str:
        return "storage_specs" if self.resource.resource_type == SUPERVISOR_NAMESPACE else "storagePolicies"


def storage_class_name(policy_name: str) -> str:
    """The Kubernetes storage class vSphere makes of a storage policy in a namespace."""
    return re.sub(r"[^a-z0-9.-]+", "-", policy_name.lower()).strip("-")


class _Parts:
    """Runs independent checks; one that meets an unknown value is skipped, and the first
    such error is raised at the end so the SDK reports the policy as not fully run."""

    def __init__(self) -> None:
        self.unknown: UnknownValueError | None = None

    @contextmanager
    def part(self) -> Iterator[None]:
        try:
            yield
        except UnknownValueError as error:
            self.unknown = self.unknown or error

    def finish(self) -> None:
        if self.unknown is not None:
            raise self.unknown


def _offer(resource: PolicyResource) -> Offer:
    props = resource.props
    if resource.resource_type == SUPERVISOR_NAMESPACE:
        offer = Offer(str(props.get("namespace") or resource.name), resource)
        offer.policy_ids = {str(as_map(s).get("policy")) for s in as_list(props.get("storage_specs"))}
        offer.vm_classes = {str(c) for c in as_list(props.get("vm_classes"))}
    else:
        offer = Offer(str(props.get("name") or resource.name), resource)
        offer.policy_ids = {str(p) for p in as_list(props.get("storagePolicies"))}
        offer.vm_classes = {str(c) for service in as_list(props.get("vmServices"))
                            for c in as_list(as_map(service).get("vmClasses"))}
    return offer


def _check_cluster(resource: PolicyResource, offer: Offer, storage_classes: set[str] | None,
                   report: ReportViolation) -> None:
    cluster = read_cluster(resource.resource_type, resource.props, resource.name)
    if cluster is None:
        return
    groups = [cluster.control_plane, *cluster.pools]
    offered_classes = ", ".join(sorted(offer.vm_classes)) or "none"
    reported: set[tuple[str, str]] = set()
    for group in groups:
        vm_class = group.vm_class
        if vm_class is not None and vm_class not in offer.vm_classes and (group.vm_class_at, vm_class) not in reported:
            reported.add((group.vm_class_at, vm_class))  # a Cluster's pools may share the topology's vmClass
            report(f"{cluster.label}: {group.vm_class_at} uses VM class {vm_class!r}, which {offer.label} does not "
                   f"offer (it offers: {offered_classes}); its nodes would never be created. Fix: use an offered class "
                   f"or add {vm_class!r} to the namespace's {offer.class_key} (stack settings vmClasses/"
                   "predefinedVmClasses).", resource.urn)
    if storage_classes is None:
        return
    used = list(dict.fromkeys([*(u for g in groups for u in g.storage), *cluster.storage]))
    offered_storage = ", ".join(sorted(storage_classes)) or "none"
    for where_, storage_class in used:
        if storage_class is not None and storage_class not in storage_classes:
            report(f"{cluster.label}: {where_} is storage class {storage_class!r}, which {offer.label} does not offer "
                   f"(it offers: {offered_storage}). Fix: use an offered class or attach the storage policy to the "
                   f"namespace's {offer.policy_key} (stack setting storagePolicies).", resource.urn)


def _check_namespace(args: StackValidationArgs, report: ReportViolation) -> None:
    resources = list(args.resources)
    namespaces = [r for r in resources if r.resource_type in (SUPERVISOR_NAMESPACE, VSPHERE_NAMESPACE)]
    if not namespaces:
        args.not_applicable("the stack declares no Supervisor namespace")
    parts = _Parts()
    offers: list[Offer] = []
    for resource in namespaces:
        with parts.part():
            offers.append(_offer(resource))
    if len(offers) < len(namespaces):
        parts.finish()  # what a namespace offers is not known yet: nothing can be judged
    attached = set().union(*(o.policy_ids for o in offers))
    offered = set().union(*(o.vm_classes for o in offers))
    names = ", ".join(o.label for o in offers)

    policy_names: dict[str, str] = {}  # policy id -> storage class name
    for policy in (r for r in resources if r.resource_type == VSAN_POLICY):
        with parts.part():
            policy_id, name = policy.props.get("policy_id"), policy.props.get("policy_name") or policy.name
            policy_names[str(policy_id)] = storage_class_name(str(name))
            if str(policy_id) not in attached:
                report(f"VsanStoragePolicy {name!r} (Pulumi resource {policy.name!r}, id {policy_id!r}) is not "
                       f"attached to {names}: nothing in the namespace can use storage class "
                       f"{storage_class_name(str(name))!r}. "
                       "Fix: add the policy id to the namespace's storage_specs (vSphere 7) or storagePolicies "
                       "(vSphere 8).", policy.urn)

    for vm_class in (r for r in resources if r.resource_type == VM_CLASS):
        with parts.part():
            name = vm_class.props.get("name") or vm_class.name
            if str(name) not in offered:
                report(f"VM class {name!r} (Pulumi resource {vm_class.name!r}) is not offered by {names}: no cluster "
                       "node can use it. Fix: add it to the namespace's vm_classes (vSphere 7) or "
                       "vmServices[].vmClasses (vSphere 8).", vm_class.urn)

    by_name = {o.name: o for o in offers}
    for cluster in (r for r in resources if r.resource_type in CLUSTER_TYPES):
        with parts.part():
            offer = by_name.get(str(dig(cluster.props, "metadata", "namespace")))
            if offer is None:
                continue  # a namespace this stack does not manage
            # Storage classes are only known when every attached policy is one of the stack's.
            known = offer.policy_ids <= set(policy_names)
            storage_classes = {policy_names[i] for i in offer.policy_ids} if known else None
            _check_cluster(cluster, offer, storage_classes, report)
    parts.finish()


namespace_offers = StackValidationPolicy(
    name="namespace-offers-classes-and-policies",
    description="The Supervisor namespace offers every storage policy and VM class the stack creates, and every VM "
                "class and storage class its workload cluster (TanzuKubernetesCluster or Cluster) uses.",
    enforcement_level=EnforcementLevel.MANDATORY,
    validate=_check_namespace,
)

POLICIES = [namespace_offers]
