"""Look-ups of what already exists on the site, and the vGPU pre-check.

These are invokes: they run at ``pulumi preview`` too, so a missing datacenter, cluster
or vGPU profile stops the preview with the name of what is missing instead of failing
partway through a cluster build.
"""
from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

import pulumi
import pulumi_vsphere as vsphere


class VgpuProfileMissing(RuntimeError):
    """An ESXi host does not offer a vGPU profile that a VM class needs."""


@dataclass(frozen=True)
class SiteIds:
    datacenter_id: str
    cluster_id: str  # managed-object id, e.g. domain-c8 (the vSphere 7 namespace API's "cluster")
    datastore_id: str = ""  # empty where no content library is created (vSphere 8 and 9)


def look_up(datacenter: str, cluster: str, datastore: str | None, opts: pulumi.InvokeOptions) -> SiteIds:
    """Ids of the datacenter, the Supervisor cluster and the content-library datastore
    (``datastore`` None: no library is created, so a missing datastore stops nothing)."""
    dc = vsphere.get_datacenter(name=datacenter, opts=opts)
    cc = vsphere.get_compute_cluster(name=cluster, datacenter_id=dc.id, opts=opts)
    if datastore is None:
        return SiteIds(datacenter_id=dc.id, cluster_id=cc.id)
    ds = vsphere.get_datastore(name=datastore, datacenter_id=dc.id, opts=opts)
    return SiteIds(datacenter_id=dc.id, cluster_id=cc.id, datastore_id=ds.id)


def check_vgpu_profiles(datacenter_id: str, hosts: Iterable[str], profiles: Iterable[str],
                        opts: pulumi.InvokeOptions) -> None:
    """Fail unless every host offers every vGPU profile (NVIDIA's vGPU manager installed).

    Raises VgpuProfileMissing naming each host and the profiles it lacks, and what it offers.
    """
    wanted = sorted(set(profiles))
    if not wanted:
        return
    missing = []
    for host in hosts:
        host_id = vsphere.get_host(name=host, datacenter_id=datacenter_id, opts=opts).id
        offered = {p.vgpu for p in (vsphere.get_host_vgpu_profile(host_id=host_id, opts=opts).vgpu_profiles or [])}
        lacking = [p for p in wanted if p not in offered]
        if lacking:
            have = ", ".join(sorted(offered)) or "none (is NVIDIA's vGPU manager installed?)"
            missing.append(f"host {host!r} lacks vGPU profile(s) {', '.join(lacking)}; it offers: {have}")
    if missing:
        raise VgpuProfileMissing("vGPU pre-check failed:\n  " + "\n  ".join(missing))
