"""The vSphere layer of the reference architecture (vSAN storage policies, VM classes, content
library, Supervisor namespace, NFS share), as one component.

Order (each step's outputs feed the next, so Pulumi knows the dependencies):
privilege check -> vGPU pre-check -> VM classes, storage policies, content library -> Supervisor
(and its TKR library) -> namespace (policies + classes) ; file share (policy). The privilege
check runs at preview and every vCenter child depends on it, so an account without the role
of docs/deploy.md ("The vCenter account") stops before anything is created.

On vSphere 8 and 9 the releases (TKRs, VKrs) come from the Supervisor's one
Kubernetes-service library, so no content library is created there: the Supervisor's
library is checked to hold ``tkr`` (with ``supervisorSetTkrLibrary``, an existing
library called contentLibraryName is looked up and set instead).
"""
from __future__ import annotations

from dataclasses import dataclass

import pulumi

from components.settings.model import (
    ContentLibrarySpec,
    FileShareSpec,
    NamespaceSpec,
    Settings,
    StoragePolicy,
    SupervisorSpec,
    VmClass,
    VSphereSite,
)
from components.vsphere import site
from components.vsphere.access import VCenterAccess
from components.vsphere.content_library import ContentLibrary, ContentLibraryArgs, existing_library_id
from components.vsphere.file_share import FileShare, FileShareArgs
from components.vsphere.namespace import Namespace, NamespaceArgs
from components.vsphere.privileges import by_entity, required
from components.vsphere.providers.privileges import VCenterPrivileges
from components.vsphere.providers.vgpu_manager import VgpuManagerCheck
from components.vsphere.storage_policies import StoragePolicies, StoragePoliciesArgs
from components.vsphere.supervisor import Supervisor, SupervisorArgs
from components.vsphere.vm_classes import VmClasses, VmClassesArgs


@dataclass(frozen=True)
class VSphereLayerArgs:
    """What the vSphere layer builds, as the specs it uses (no whole Settings)."""

    site: VSphereSite
    supervisor: SupervisorSpec
    vm_classes: tuple[VmClass, ...]
    storage_policies: tuple[StoragePolicy, ...]
    content_library: ContentLibrarySpec
    namespace: NamespaceSpec
    file_share: FileShareSpec
    tkr: str  # the release the cluster asks for: the Supervisor's TKR library must hold it
    control_plane_policy: str  # storage policy of the Supervisor's control plane (create mode)
    vcenter: VCenterAccess
    release_os: tuple[str, ...] = ()  # OS images of tkr the node pools ask for (vSphere 8/9 check)
    guest_driver: str = ""  # vgpuDriverVersion, checked against the hosts' vGPU Manager ("" = no GPU nodes)

    @classmethod
    def from_settings(cls, s: Settings, vcenter: VCenterAccess, release_os: tuple[str, ...] = ()) -> VSphereLayerArgs:
        """``release_os``: the OS images the cluster's pools ask ``tkr`` for; the cluster's layer,
        above this one, knows them (``components.cluster.os_images.library_os_names``)."""
        return cls(site=s.vsphere, supervisor=s.supervisor, vm_classes=s.vm_classes,
                   storage_policies=s.storage_policies, content_library=s.content_library,
                   namespace=s.namespace, file_share=s.file_share, tkr=s.cluster.tkr,
                   control_plane_policy=s.cluster.control_plane.storage_class, vcenter=vcenter,
                   release_os=release_os,
                   guest_driver=s.gpu_operator.driver_version if s.gpu_nodes else "")


class VSphereLayer(pulumi.ComponentResource):
    namespace: pulumi.Output[str]
    vm_classes: pulumi.Output[list[str]]
    content_library_id: pulumi.Output[str] | None
    nfs_server: pulumi.Output[str]
    nfs_path: pulumi.Output[str]

    def __init__(self, name: str, args: VSphereLayerArgs, opts: pulumi.ResourceOptions | None = None):
        super().__init__("dask-tkg:vsphere:Layer", name, None, opts)
        invoke = pulumi.InvokeOptions(parent=self)
        creates_library = args.site.version < 8
        library_datastore = args.content_library.datastore if creates_library else None
        ids = site.look_up(args.site.datacenter, args.site.compute_cluster, library_datastore, invoke)
        # Before anything is created: every host must offer the vGPU profiles named.
        site.check_vgpu_profiles(ids.datacenter_id, args.site.esxi_hosts,
                                 [c.vgpu_profile for c in args.vm_classes if c.vgpu_profile], invoke)

        self.privileges = VCenterPrivileges(
            f"{name}-privileges", pulumi.ResourceOptions(parent=self),
            needs=by_entity(required(
                args.site.version, args.supervisor.mode, args.supervisor.set_tkr_library,
                creates_library and not args.content_library.existing,
                any(not c.predefined for c in args.vm_classes), args.file_share.mode == "vsan")),
            datacenter=args.site.datacenter, cluster=args.site.compute_cluster, datastore=library_datastore,
            at_preview=args.site.privilege_check, vcenter=args.vcenter)
        checks: list[pulumi.Resource] = [self.privileges]
        if args.guest_driver and args.site.version >= 8 and any(c.vgpu_profile for c in args.vm_classes):
            # the hosts' vGPU Manager decides the guest driver (components/vsphere/providers/vgpu_manager.py);
            # on the current platform only: the paper's vSphere 7 stack stays as published
            checks.append(VgpuManagerCheck(
                f"{name}-vgpu-manager", pulumi.ResourceOptions(parent=self, depends_on=[self.privileges]),
                datacenter=args.site.datacenter, hosts=list(args.site.esxi_hosts), guest_driver=args.guest_driver,
                vcenter=args.vcenter))
        child = pulumi.ResourceOptions(parent=self, depends_on=checks)
        self.classes = VmClasses(f"{name}-vmclasses", VmClassesArgs(classes=args.vm_classes), child)
        self.policies = StoragePolicies(
            f"{name}-policies", StoragePoliciesArgs(policies=args.storage_policies, vcenter=args.vcenter), child)
        self.library: ContentLibrary | None = None
        if creates_library:
            self.library = ContentLibrary(f"{name}-library", ContentLibraryArgs(
                spec=args.content_library, datastore_id=ids.datastore_id, datacenter_id=ids.datacenter_id), child)
            library_id = self.library.id
        else:
            library_id = (existing_library_id(args.content_library.name, invoke) if args.supervisor.set_tkr_library
                          else pulumi.Output.from_input(""))
        self.supervisor = Supervisor(f"{name}-supervisor", SupervisorArgs(
            spec=args.supervisor,
            vsphere_version=args.site.version,
            cluster_id=ids.cluster_id,
            content_library_id=library_id,
            control_plane_policy_id=self.policies.ids[args.control_plane_policy],
            tkr=args.tkr,
            vcenter=args.vcenter,
            release_os=args.release_os,
        ), child)
        self.ns = Namespace(f"{name}-namespace", NamespaceArgs(
            spec=args.namespace,
            vsphere_version=args.site.version,
            supervisor_ref=self.supervisor.ref,
            policy_ids=self.policies.ids,
            vm_classes=self.classes.names,
            vcenter=args.vcenter,
        ), pulumi.ResourceOptions(parent=self, depends_on=[self.privileges, self.policies, self.classes,
                                                           self.supervisor]))
        fs = args.file_share
        self.file_share = FileShare(f"{name}-fileshare", FileShareArgs(
            spec=fs,
            cluster_id=ids.cluster_id,
            policy_id=self.policies.ids.get(fs.policy) if fs.mode == "vsan" else None,
            vcenter=args.vcenter,
        ), child)

        self.namespace = self.ns.name
        self.vm_classes = self.classes.names
        # vSphere 8/9: the Supervisor's library that was checked to hold the release.
        release = self.supervisor.release_library
        self.content_library_id = (self.library.id if self.library
                                   else release.supervisor_library if release else None)
        self.nfs_server = self.file_share.nfs_server
        self.nfs_path = self.file_share.nfs_path
        self.register_outputs({
            "namespace": self.namespace,
            "vm_classes": self.vm_classes,
            "content_library_id": self.content_library_id,
            "nfs_server": self.nfs_server,
            "nfs_path": self.nfs_path,
        })
