"""vSAN storage policies (the paper's vsan-r5 and vsan-r1-sw8), driven through SPBM.

``vsphere.VmStoragePolicy`` only expresses tag rules, so each policy is the project's own
dynamic resource (``providers.spbm``), which adopts an identical existing policy.
"""
from __future__ import annotations

from dataclasses import dataclass

import pulumi

from components.settings.model import StoragePolicy
from components.vsphere.access import VCenterAccess
from components.vsphere.providers.spbm import VsanStoragePolicy


@dataclass(frozen=True)
class StoragePoliciesArgs:
    policies: tuple[StoragePolicy, ...]
    vcenter: VCenterAccess


class StoragePolicies(pulumi.ComponentResource):
    """``ids`` maps each policy name to its SPBM profile id (what namespaces reference)."""

    ids: dict[str, pulumi.Output[str]]

    def __init__(self, name: str, args: StoragePoliciesArgs, opts: pulumi.ResourceOptions | None = None):
        super().__init__("dask-tkg:vsphere:StoragePolicies", name, None, opts)
        self.resources: dict[str, VsanStoragePolicy] = {}
        for policy in args.policies:
            self.resources[policy.name] = VsanStoragePolicy(
                f"{name}-{policy.name}",
                pulumi.ResourceOptions(parent=self),
                policy_name=policy.name,
                description=policy.description or f"vSAN policy {policy.name} (managed by dask-tkg)",
                rules=dict(policy.rules),
                vcenter=args.vcenter,
            )
        self.ids = {n: r.policy_id for n, r in self.resources.items()}
        self.register_outputs({"ids": self.ids})
