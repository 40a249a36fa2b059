"""The vSphere layer: rows 1-5 of the reference architecture, as one component.

Order (each step's outputs feed the next, so Pulumi knows the dependencies):
vGPU pre-check -> VM classes, storage policies, content library -> Supervisor ->
namespace (policies + classes + library) ; file share (policy).
"""
from __future__ import annotations

from dataclasses import dataclass

import pulumi

from components.settings.model import Settings
from components.vsphere import site
from components.vsphere.access import VCenterAccess
from components.vsphere.content_library import ContentLibrary, ContentLibraryArgs
from components.vsphere.file_share import FileShare, FileShareArgs
from components.vsphere.namespace import Namespace, NamespaceArgs
from components.vsphere.storage_policies import StoragePolicies, StoragePoliciesArgs
from components.vsphere.supervisor import Supervisor, SupervisorArgs
from components.vsphere.vm_classes import VmClasses, VmClassesArgs


@dataclass(frozen=True)
class VSphereLayerArgs:
    settings: Settings
    vcenter: VCenterAccess


class VSphereLayer(pulumi.ComponentResource):
    namespace: pulumi.Output[str]
    vm_classes: pulumi.Output[list[str]]
    content_library_id: pulumi.Output[str]
    nfs_server: pulumi.Output[str]
    nfs_path: pulumi.Output[str]

    def __init__(self, name: str, args: VSphereLayerArgs, opts: pulumi.ResourceOptions | None = None):
        super().__init__("dask-tkg:vsphere:Layer", name, None, opts)
        s = args.settings
        invoke = pulumi.InvokeOptions(parent=self)
        ids = site.look_up(s.vsphere.datacenter, s.vsphere.compute_cluster, s.content_library.datastore, invoke)
        # Before anything is created: every host must offer the vGPU profiles named.
        site.check_vgpu_profiles(ids.datacenter_id, s.vsphere.esxi_hosts,
                                 [c.vgpu_profile for c in s.vm_classes if c.vgpu_profile], invoke)

        child = pulumi.ResourceOptions(parent=self)
        self.classes = VmClasses(f"{name}-vmclasses", VmClassesArgs(classes=s.vm_classes), child)
        self.policies = StoragePolicies(
            f"{name}-policies", StoragePoliciesArgs(policies=s.storage_policies, vcenter=args.vcenter), child)
        self.library = ContentLibrary(
            f"{name}-library", ContentLibraryArgs(spec=s.content_library, datastore_id=ids.datastore_id), child)
        self.supervisor = Supervisor(f"{name}-supervisor", SupervisorArgs(
            spec=s.supervisor,
            vsphere_version=s.vsphere.version,
            cluster_id=ids.cluster_id,
            content_library_id=self.library.id,
            control_plane_policy_id=self.policies.ids[s.cluster.control_plane.storage_class],
        ), child)
        self.ns = Namespace(f"{name}-namespace", NamespaceArgs(
            spec=s.namespace,
            vsphere_version=s.vsphere.version,
            supervisor_ref=self.supervisor.ref,
            policy_ids=self.policies.ids,
            vm_classes=self.classes.names,
            content_library_id=self.library.id,
            vcenter=args.vcenter,
        ), pulumi.ResourceOptions(parent=self, depends_on=[self.policies, self.classes, self.library]))
        self.file_share = FileShare(f"{name}-fileshare", FileShareArgs(
            spec=s.file_share,
            cluster_id=ids.cluster_id,
            policy_id=self.policies.ids.get(s.file_share.policy) if s.file_share.mode == "vsan" else None,
            vcenter=args.vcenter,
        ), child)

        self.namespace = self.ns.name
        self.vm_classes = self.classes.names
        self.content_library_id = self.library.id
        self.nfs_server = self.file_share.nfs_server
        self.nfs_path = self.file_share.nfs_path
        self.register_outputs({
            "namespace": self.namespace,
            "vm_classes": self.vm_classes,
            "content_library_id": self.content_library_id,
            "nfs_server": self.nfs_server,
            "nfs_path": self.nfs_path,
        })
