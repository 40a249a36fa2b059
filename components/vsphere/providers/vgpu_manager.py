"""The preview check of the hosts' NVIDIA vGPU Manager against the guest driver.

The hosts' vGPU Manager decides the guest driver (``support_matrix.VGPU_RELEASES``: NVIDIA's rule
for R580, the same release, never a newer branch in the guest than on the hosts), and a Manager
below its branch's security floor is itself affected (``support_matrix.DRIVER_BULLETINS``). So
``check`` reads, at every preview, the software packages installed on each of ``esxiHosts``
(``HostImageConfigManager.FetchSoftwarePackages`` through the host's
``configManager.imageConfigManager``, vSphere API 6.5+), finds NVIDIA's vGPU Manager VIB among
them and refuses, naming ``vgpuDriverVersion`` and the host:

- a host with no vGPU Manager VIB (no vGPU VM can start there);
- a Manager below its branch's security floor (the bulletin and the fixed Manager named);
- a guest driver the Manager's release does not pair with: a newer branch than the hosts', or,
  for a Manager release known here, another guest driver than that release's.

The VIB: ``NVD-<edition>_ESXi_<ESXi version>_Driver`` by vendor NVIDIA, its version the
driver's with ESXi's build suffix (``NVD-AIE_ESXi_8.0.0_Driver``, ``525.105.14-1OEM.800.1.0.20613240``
on an NVAIE 3.1 host: ``esxcli software vib list``, as frankdenneman.nl's "vSphere ML
Accelerator Spectrum Deep Dive" shows it). The resource creates nothing on vCenter.
"""
from __future__ import annotations

import logging
import re
from collections.abc import Mapping
from typing import Any

import pulumi
import pulumi.dynamic as dyn

import components.facts.addon_facts as addon_facts
import components.facts.support_matrix as support_matrix

from ..access import VCenterAccess
from .base import VCenterProvider, VCenterResource
from .session import VCenterError, changed_keys, is_unknown, vcenter

logger = logging.getLogger(__name__)
SPEC_KEYS = ("datacenter", "hosts", "guest_driver")
MANAGER_VIB = re.compile(r"^NVD-[A-Za-z0-9]+_ESXi_[\d.]+_Driver$")
KEY = "vgpuDriverVersion"


def manager_version(packages: list[Any]) -> str | None:
    """The vGPU Manager's driver version among a host's packages (``580.159.01``), or None."""
    for package in packages:
        if MANAGER_VIB.match(package.name or ""):
            match = re.match(r"(\d+\.\d+\.\d+)", package.version or "")
            if match:
                return match.group(1)
    return None


def pairing_problem(host: str, manager: str, guest: str) -> str | None:
    """Why ``guest`` may not run on a host with vGPU Manager ``manager`` (None: it may)."""
    bulletin = support_matrix.manager_bulletin(manager)
    if bulletin is not None:
        fix = (f"vGPU {bulletin.fixed_vgpu} or later (vGPU Manager {bulletin.fixed_manager}), then set"
               f" vgpuDriverVersion to its guest driver ({bulletin.fixed_guest})")
        return f"host {host!r} runs vGPU Manager {manager}, affected by {bulletin.bulletin}: move the hosts to {fix}"
    manager_branch, guest_branch = addon_facts.driver_branch(manager), addon_facts.driver_branch(guest)
    if manager_branch is not None and guest_branch is not None and guest_branch > manager_branch:
        return (f"vgpuDriverVersion {guest} (R{guest_branch}) is of a newer branch than the vGPU Manager {manager}"
                f" (R{manager_branch}) on host {host!r}: a guest driver never runs on an older branch's Manager")
    release = support_matrix.vgpu_release_of_manager(manager)
    if release is not None and guest_branch == manager_branch and guest != release.guest:
        return (f"vgpuDriverVersion {guest} does not pair with the vGPU Manager {manager} on host {host!r}: vGPU"
                f" {release.release} pairs it with guest driver {release.guest} ({release.source}; NVIDIA's rule for"
                f" R{manager_branch}: the guest driver of the Manager's release)")
    if release is None:
        logger.info("vGPU Manager %s on %s is not a release known here: its guest driver is not judged", manager, host)
    return None


def host_problems(si: Any, datacenter: str, hosts: list[str], guest: str) -> list[str]:
    from pyVmomi import vim

    dc = next((e for e in si.content.rootFolder.childEntity if isinstance(e, vim.Datacenter) and e.name == datacenter),
              None)
    if dc is None:
        raise VCenterError(f"no datacenter {datacenter!r} on this vCenter")
    view = si.content.viewManager.CreateContainerView(dc.hostFolder, [vim.HostSystem], True)
    try:
        by_name = {h.name: h for h in view.view}
    finally:
        view.Destroy()
    problems = []
    for name in hosts:
        host = by_name.get(name)
        if host is None:
            problems.append(f"no ESXi host {name!r} in datacenter {datacenter!r} (esxiHosts)")
            continue
        manager_ref = host.configManager.imageConfigManager
        packages = list(manager_ref.FetchSoftwarePackages() or []) if manager_ref is not None else []
        manager = manager_version(packages)
        if manager is None:
            problems.append(f"host {name!r} has no NVIDIA vGPU Manager VIB (NVD-*_ESXi_*_Driver): no vGPU VM can start"
                            " there; install the vGPU Manager of your vGPU release")
            continue
        problem = pairing_problem(name, manager, guest)
        if problem:
            problems.append(problem)
    return problems


class VgpuManagerProvider(VCenterProvider):
    """Checks the hosts' vGPU Manager; holds no vCenter object."""

    def _problems(self, props: Mapping[str, Any]) -> list[str]:
        with vcenter(self.connection(props), "reading the hosts' vGPU Manager") as si:
            return host_problems(si, props["datacenter"], list(props["hosts"]), props["guest_driver"])

    def check(self, olds: dict[str, Any], news: dict[str, Any]) -> dyn.CheckResult:
        if any(is_unknown(v) for v in news.values()):
            return dyn.CheckResult(news, [])
        try:
            problems = self._problems(news)
        except VCenterError as exc:
            return dyn.CheckResult(news, [dyn.CheckFailure(KEY, f"cannot read the hosts' vGPU Manager: {exc}")])
        return dyn.CheckResult(news, [dyn.CheckFailure(KEY, "; ".join(problems))] if problems else [])

    def _checked(self, props: Mapping[str, Any]) -> dict[str, Any]:
        problems = self._problems(props)
        if problems:
            raise VCenterError("; ".join(problems))
        return {k: props.get(k) for k in SPEC_KEYS} | self.stored(props)

    def create(self, props: dict[str, Any]) -> dyn.CreateResult:
        return dyn.CreateResult("vgpu-manager", self._checked(props))

    def diff(self, id_: str, olds: dict[str, Any], news: dict[str, Any]) -> dyn.DiffResult:
        return self.diff_result(olds, news, [], changed_keys(olds, news, SPEC_KEYS))

    def update(self, id_: str, olds: dict[str, Any], news: dict[str, Any]) -> dyn.UpdateResult:
        return dyn.UpdateResult(self._checked(news))

    def delete(self, id_: str, props: dict[str, Any]) -> None:
        logger.info("vGPU Manager check: nothing to remove on vCenter")


class VgpuManagerCheck(VCenterResource, module="vsphere", name="VgpuManagerCheck"):
    """The hosts' vGPU Manager against ``guest_driver`` (vgpuDriverVersion), at every preview."""

    def __init__(self, name: str, opts: pulumi.ResourceOptions | None = None, *, datacenter: pulumi.Input[str],
                 hosts: list[str], guest_driver: str, vcenter: VCenterAccess) -> None:
        super().__init__(VgpuManagerProvider(), name, opts,
                         {"datacenter": datacenter, "hosts": list(hosts), "guest_driver": guest_driver}, vcenter)
