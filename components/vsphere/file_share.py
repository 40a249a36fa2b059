"""The NFS data lake: a vSAN file-service share, or an existing NFS export.

The share holds days of downloads, so it is protected: ``pulumi destroy`` and any change
that would replace it stop with an error instead of deleting data.
"""
from __future__ import annotations

from dataclasses import dataclass

import pulumi

from components.settings.model import FileShareSpec
from components.vsphere.access import VCenterAccess
from components.vsphere.providers.file_share import VsanFileShare


@dataclass(frozen=True)
class FileShareArgs:
    spec: FileShareSpec
    cluster_id: pulumi.Input[str]
    policy_id: pulumi.Input[str] | None
    vcenter: VCenterAccess


class FileShare(pulumi.ComponentResource):
    nfs_server: pulumi.Output[str]
    nfs_path: pulumi.Output[str]

    def __init__(self, name: str, args: FileShareArgs, opts: pulumi.ResourceOptions | None = None):
        super().__init__("dask-tkg:vsphere:FileShare", name, None, opts)
        spec = args.spec
        self.share: VsanFileShare | None = None
        if spec.mode == "vsan":
            self.share = VsanFileShare(
                f"{name}-share",
                pulumi.ResourceOptions(parent=self, protect=True, retain_on_delete=True),
                share_name=spec.name,
                cluster=args.cluster_id,
                quota_gib=spec.size_gib,
                policy_id=args.policy_id,
                domain_name=spec.domain or None,
                nfs_address=spec.nfs_address,
                net_permissions=[
                    {"ips": c.ips, "permissions": c.permissions, "allow_root": c.allow_root} for c in spec.clients
                ],
                vcenter=args.vcenter,
            )
            self.nfs_server = self.share.nfs_server
            self.nfs_path = self.share.nfs_path
        else:
            self.nfs_server = pulumi.Output.from_input(spec.nfs_server)
            self.nfs_path = pulumi.Output.from_input(spec.nfs_path)
        self.register_outputs({"nfs_server": self.nfs_server, "nfs_path": self.nfs_path})
