"""The Supervisor namespace: storage policies (with limits), VM classes and the access
list, on every vSphere version.

vSphere 7 (the paper's) has no Pulumi resource for it, so the project's dynamic resource
drives ``POST /api/vcenter/namespaces/instances``. vSphere 8 and 9 use ``vsphere.Namespace``
(kept as it is, so an existing vSphere 8 stack keeps its namespace), which has no access list
or limits: ``providers.namespace_access.NamespaceAccessAndLimits`` sets those on it through
vCenter's REST API once it exists.

The TKR library is not put in the namespace's ``vm_service_spec.content_libraries``:
those are VM-service image libraries, and TKRs come from the Supervisor's library
(components.vsphere.supervisor)."""
from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import pulumi
import pulumi_vsphere as vsphere

from components.settings.model import NamespaceSpec
from components.settings.values import quantity_bytes
from components.vsphere.access import VCenterAccess
from components.vsphere.providers.namespace_access import NamespaceAccessAndLimits
from components.vsphere.providers.namespace_rest import SupervisorNamespace


@dataclass(frozen=True)
class NamespaceArgs:
    spec: NamespaceSpec
    vsphere_version: int
    supervisor_ref: pulumi.Input[str]
    policy_ids: Mapping[str, pulumi.Input[str]]
    vm_classes: pulumi.Input[list[str]]
    vcenter: VCenterAccess


class Namespace(pulumi.ComponentResource):
    name: pulumi.Output[str]

    def __init__(self, name: str, args: NamespaceArgs, opts: pulumi.ResourceOptions | None = None):
        super().__init__("dask-tkg:vsphere:Namespace", name, None, opts)
        child = pulumi.ResourceOptions(parent=self)
        spec = args.spec
        self.access_and_limits: NamespaceAccessAndLimits | None = None
        if args.vsphere_version >= 8:
            self.resource = vsphere.Namespace(
                f"{name}-ns",
                name=spec.name,
                supervisor=args.supervisor_ref,
                storage_policies=list(args.policy_ids.values()),
                vm_services=[vsphere.NamespaceVmServiceArgs(vm_classes=args.vm_classes)],
                opts=child,
            )
            self.name = self.resource.name
            if spec.access or spec.storage_limits:
                self.access_and_limits = NamespaceAccessAndLimits(
                    f"{name}-access-limits",
                    child,
                    namespace=self.resource.name,
                    supervisor=args.supervisor_ref,
                    access_list=_access_list(spec),
                    storage_limits=[s for s in _storage_specs(spec, args.policy_ids) if "limit" in s],
                    namespace_spec=pulumi.Output.all(storage_policies=self.resource.storage_policies,
                                                     vm_services=self.resource.vm_services),
                    vcenter=args.vcenter,
                )
        else:
            self.resource = SupervisorNamespace(
                f"{name}-ns",
                child,
                namespace=spec.name,
                cluster=args.supervisor_ref,
                description="Dask on Tanzu Kubernetes Grid (managed by dask-tkg)",
                access_list=_access_list(spec),
                storage_specs=_storage_specs(spec, args.policy_ids),
                vm_classes=args.vm_classes,
                vcenter=args.vcenter,
            )
            self.name = self.resource.namespace
        self.register_outputs({"name": self.name})


def _access_list(spec: NamespaceSpec) -> list[dict[str, str]]:
    """``namespaceAccess`` as vCenter's ``Instances.Access`` entries."""
    return [{"subject_type": a.subject_type, "subject": a.subject, "domain": a.domain, "role": a.role}
            for a in spec.access]


def _storage_specs(spec: NamespaceSpec, policy_ids: Mapping[str, pulumi.Input[str]]) -> list[dict[str, Any]]:
    """Each policy as an ``Instances.StorageSpec``, with its ``namespaceStorageLimits`` limit if any."""
    return [{"policy": policy_id, **({"limit": _mib(spec.storage_limits[policy])}
                                     if policy in spec.storage_limits else {})}
            for policy, policy_id in policy_ids.items()]


def _mib(quantity: str) -> int:
    """vCenter takes namespace storage limits in MiB."""
    return quantity_bytes(quantity) // 2**20
