"""Dask on an AI-ready enterprise platform on vSphere with Tanzu Kubernetes Grid.

settings -> vSphere layer -> cluster -> add-ons -> Dask -> exports; nothing else.
"""
import pulumi
import pulumi_vsphere as vsphere

from components.settings import load_settings
from components.vsphere.access import VCenterAccess
from components.vsphere.layer import VSphereLayer, VSphereLayerArgs

settings = load_settings()

# --- vSphere: VM classes, storage policies, content library, Supervisor namespace, NFS share
vcenter = VCenterAccess(
    server=settings.vsphere.server,
    user=settings.vsphere.user,
    password=settings.vsphere.password,
    insecure=settings.vsphere.insecure,
)
vcenter_provider = vsphere.Provider(
    "vcenter",
    vsphere_server=vcenter.server,
    user=vcenter.user,
    password=vcenter.password,
    allow_unverified_ssl=vcenter.insecure,
)
platform = VSphereLayer(
    "vsphere",
    VSphereLayerArgs(settings=settings, vcenter=vcenter),
    pulumi.ResourceOptions(providers=[vcenter_provider]),
)

pulumi.export("supervisorNamespace", platform.namespace)
pulumi.export("vmClasses", platform.vm_classes)
pulumi.export("nfsServer", platform.nfs_server)
pulumi.export("nfsPath", platform.nfs_path)
