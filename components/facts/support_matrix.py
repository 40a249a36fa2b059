"""What NVIDIA and VMware support, as data: each statement with the source it was read from.

A default is a promise that its vendors support it with the others together, so the chain
is kept here whole: the hosts' vGPU manager decides the guest driver's branch; the branch's
life cycle and the pinned GPU operator's list decide whether that driver is supported; the
driver decides which CUDA, and so which RAPIDS image, the workers can run; the Supervisor's
VKS release decides which ClusterClass and VKr a Cluster can use, and the GPU operator's
validated range decides which VKr it is supported on. ``components.settings.support`` warns
at preview from these facts and ``components.settings.checks`` refuses what cannot run;
``tests/unit/test_supported_defaults.py`` holds the stacks' defaults against them.
"""
from __future__ import annotations

import datetime
import re
from dataclasses import dataclass

import components.facts.addon_facts as addon_facts
from components.artifacts.images import ImageRef


@dataclass(frozen=True)
class VgpuBranch:
    """One NVIDIA vGPU software release family: its guest drivers are R<branch>.xx."""

    branch: int  # the driver branch, e.g. 580
    vgpu: int  # the NVIDIA vGPU software release, e.g. 19
    supported_until: str  # YYYY-MM: the last month of support
    source: str

    def supported_on(self, day: datetime.date) -> bool:
        year, month = (int(part) for part in self.supported_until.split("-"))
        return (day.year, day.month) <= (year, month)


VGPU_BRANCHES: tuple[VgpuBranch, ...] = (
    VgpuBranch(470, 13, "2024-07", "NVIDIA vGPU software lifecycle policy: a long-term support branch is supported"
               " for 3 years; vGPU 13.0 (R470, Linux guest driver 470.63.01, the paper's NVAIE 1.1) was"
               " released in July 2021"),
    VgpuBranch(535, 16, "2026-07", "NVIDIA vGPU release notes and lifecycle (docs.nvidia.com/vgpu): vGPU 16 (R535)"
               " reached end of life in July 2026; 535.154.05 is the vGPU 16.3 Linux guest driver"),
    VgpuBranch(580, 19, "2028-07", "NVIDIA vGPU release notes and lifecycle (docs.nvidia.com/vgpu): vGPU 19 (R580)"
               " is a long-term support branch, supported to July 2028"),
)

# The guest driver of the current defaults: vGPU 19.5's Linux guest driver, 580.159.03, the first
# R580 vGPU 19 guest driver without the vulnerabilities of NVIDIA's security bulletin 5821
# (``DRIVER_BULLETINS``); the hosts run vGPU Manager 580.159.01 of the same release. vGPU 19's
# release notes ("Virtual GPU Software R580 for VMware vSphere Release Notes", docs.nvidia.com/
# vgpu/19.x) pair a guest driver with the vGPU Manager of the same release (or across branches
# as they list): the hosts decide the guest driver. NVIDIA AI Enterprise Infra 7.x uses the R580
# branch (NVIDIA/cloud-native-docs at 187a4a5b, gpu-operator/install-gpu-operator-nvaie.rst).
CURRENT_GUEST_DRIVER = "580.159.03"
CURRENT_VGPU_RELEASE = "19.5"


@dataclass(frozen=True)
class DriverBulletin:
    """A security bulletin's floor for one driver branch: the guest drivers below ``fixed_guest``
    are affected."""

    branch: int
    affected: str  # the affected releases, as the bulletin says them
    fixed_guest: str  # the first Linux guest driver of the branch with the fix
    fixed_manager: str  # the vGPU Manager for vSphere of that release
    fixed_vgpu: str  # the vGPU software release that carries both
    bulletin: str
    source: str

    def affects(self, driver: str) -> bool:
        version = addon_facts.driver_version_tuple(driver)
        fixed = addon_facts.driver_version_tuple(self.fixed_guest)
        return bool(version and fixed and version[0] == self.branch and version < fixed)


DRIVER_BULLETINS: tuple[DriverBulletin, ...] = (
    DriverBulletin(
        580, "R580 vGPU 19 Linux guest drivers up to vGPU 19.4 (580.126.09)", "580.159.03", "580.159.01", "19.5",
        "NVIDIA security bulletin 5821 (May 2026): CVE-2026-24187, CVSS 8.8",
        "NVIDIA Support Answer 5821 (NVIDIA/product-security, published 2026-05-26 with CVE-2026-24187 and the"
        " other Linux driver CVEs of that day, whose NVD entries cite it): vGPU software R580, Linux guest driver,"
        " affected up to vGPU 19.4, updated in 19.5 (guest 580.159.03, vGPU Manager for vSphere 580.159.01)"),
)


@dataclass(frozen=True)
class VgpuRelease:
    """One vGPU software release for VMware vSphere: the hosts' vGPU Manager and its Linux guest driver."""

    release: str  # e.g. "19.5"
    manager: str  # the vGPU Manager (the hosts' VIB version, without its -1OEM... build suffix)
    guest: str  # the Linux guest driver of the same release
    source: str


# The pairing rule of vGPU 19 (R580): "Virtual GPU Software R580 for VMware vSphere Release Notes"
# (docs.nvidia.com/vgpu/19.x): a guest driver runs with the vGPU Manager of the same release, or
# across branches only as those notes list (never a guest driver of a newer branch than the
# hosts'); they give no "any release within the branch" rule. The releases known here:
VGPU_RELEASES: tuple[VgpuRelease, ...] = (
    VgpuRelease("19.0", "580.65.05", "580.65.06", "vGPU 19.0 release notes for vSphere, 1.1: Manager 580.65.05,"
                " Linux driver 580.65.06"),
    VgpuRelease("19.5", "580.159.01", "580.159.03", "NVIDIA Support Answer 5821: vGPU 19.5, vGPU Manager for"
                " vSphere 580.159.01, Linux guest driver 580.159.03"),
)


def vgpu_release_of_manager(manager: str) -> VgpuRelease | None:
    return next((r for r in VGPU_RELEASES if r.manager == manager), None)


def manager_bulletin(manager: str) -> DriverBulletin | None:
    """The bulletin whose vGPU Manager floor ``manager`` is below, if any."""
    version = addon_facts.driver_version_tuple(manager)
    for bulletin in DRIVER_BULLETINS:
        fixed = addon_facts.driver_version_tuple(bulletin.fixed_manager)
        if version and fixed and version[0] == bulletin.branch and version < fixed:
            return bulletin
    return None


def driver_bulletin(driver: str) -> DriverBulletin | None:
    """The bulletin whose floor ``driver`` is below, if any (a branch without one is not judged)."""
    return next((b for b in DRIVER_BULLETINS if b.affects(driver)), None)


@dataclass(frozen=True)
class OperatorSupport:
    """What one GPU operator release line lists and is validated on."""

    versions: str  # the release line, e.g. "v26.7."
    drivers: tuple[str, ...]  # the data-center drivers it lists (a vGPU guest driver of the same branch)
    default_driver: str
    vks_kubernetes: tuple[tuple[int, int], tuple[int, int]]  # validated on VKS, first and last minor
    vks_os: str
    source: str

    def covers(self, version: str) -> bool:
        return ("v" + version.lstrip("v")).startswith(self.versions)

    @property
    def branches(self) -> tuple[int, ...]:
        return tuple(int(driver.split(".")[0]) for driver in self.drivers)


GPU_OPERATORS: tuple[OperatorSupport, ...] = (
    OperatorSupport(
        versions="v26.7.",
        drivers=("610.57.04", "595.91.07", "580.173.02", "535.309.01"),
        default_driver="595.91.07",
        vks_kubernetes=((1, 33), (1, 36)),
        vks_os="Ubuntu 22.04",
        source=("NVIDIA/cloud-native-docs at 187a4a5b ('Release docs 26.7.0'): gpu-operator/life-cycle-policy.rst"
                " (NVIDIA GPU Driver for v26.7.0: 610.57.04, 595.91.07 (recommended, default), 580.173.02,"
                " 535.309.01; 'Driver version could be different with NVIDIA vGPU, as it depends on the driver"
                " version downloaded from the NVIDIA Licensing Portal': so a guest driver is held to the branch)"
                " and gpu-operator/platform-support.rst (VMware vSphere Kubernetes Service (VKS), Ubuntu 22.04"
                " LTS: 1.33---1.36)"),
    ),
)


def operator_support(version: str) -> OperatorSupport | None:
    return next((facts for facts in GPU_OPERATORS if facts.covers(version)), None)


# The oldest driver each RAPIDS release runs on, per CUDA major: stricter than CUDA's own
# minor-version floor (components.facts.addon_facts.MIN_DRIVER_FOR_CUDA), which RAPIDS' kernels
# need beyond. Sources: RAPIDS platform-support page for 26.10 ("CUDA 12 with driver 535 or
# newer, CUDA 13 with driver 580 or newer"); RAPIDS 21.10 installation guide ("CUDA 11.0+ with
# driver 450.80.02+").
RAPIDS_DRIVER_FLOOR: dict[tuple[str, int], tuple[int, ...]] = {
    ("26.10", 12): (535, 0, 0),
    ("26.10", 13): (580, 0, 0),
    ("21.10", 11): (450, 80, 2),
}


def rapids_driver_floor(rapids: str | None, cuda: int | None) -> tuple[int, ...] | None:
    return RAPIDS_DRIVER_FLOOR.get((rapids, cuda)) if rapids and cuda else None


@dataclass(frozen=True)
class VkrRelease:
    """A vSphere Kubernetes release and the first VKS release that ships it."""

    name: str
    vks: tuple[int, int]  # VKS major.minor
    source: str

    @property
    def kubernetes(self) -> tuple[int, int]:
        match = re.match(r"v(\d+)\.(\d+)\.", self.name)
        if match is None:
            raise ValueError(f"VKr name {self.name!r} does not start with v<major>.<minor>.")
        return int(match.group(1)), int(match.group(2))


_VKR_SOURCE = ("Portworx Enterprise support matrix, 'Supported Kubernetes Versions' (docs.portworx.com,"
               " portworx-enterprise/support-matrix/supported-kubernetes-versions): VKS rows")
VKRS: tuple[VkrRelease, ...] = (
    VkrRelease("v1.32.10---vmware.1-fips-vkr.2", (3, 3), _VKR_SOURCE),
    VkrRelease("v1.33.6---vmware.1-fips-vkr.2", (3, 4), _VKR_SOURCE + "; VMware's 24-month support of VKr 1.33"
               " (announced June 2025, with VKS 3.5's announcement of the same for every VKr from 1.34)"),
    VkrRelease("v1.34.2---vmware.2-vkr.2", (3, 5), _VKR_SOURCE),
    VkrRelease("v1.35.2---vmware.1-vkr.3", (3, 6), _VKR_SOURCE),
    VkrRelease("v1.36.1---vmware.4-vkr.5", (3, 7), _VKR_SOURCE),
)


def vkr(name: str) -> VkrRelease | None:
    return next((release for release in VKRS if release.name == name), None)


# A builtin-generic-v3.N.0 ClusterClass is published by VKS 3.N and later (current-platform
# facts: "builtin-generic-v3.4.0 needs VKS 3.4+"; VMware publishes the classes in
# vmware-system-vks-public).
_BUILTIN_CLASS = re.compile(r"^builtin-generic-v(\d+)\.(\d+)\.\d+$")


def class_needs_vks(cluster_class: str) -> tuple[int, int] | None:
    match = _BUILTIN_CLASS.match(cluster_class)
    return (int(match.group(1)), int(match.group(2))) if match else None


def vgpu_branch(driver: str) -> VgpuBranch | None:
    """The vGPU release family of a guest driver version, where one is recorded."""
    branch = addon_facts.driver_branch(driver)
    return next((b for b in VGPU_BRANCHES if b.branch == branch), None)


_RAPIDS_TAG = re.compile(r"^(\d{2}\.\d{2})-")


def image_rapids_release(image: str) -> str | None:
    """The RAPIDS release of a RAPIDS image, from its tag as RAPIDS and NGC name them
    (``rapidsai/notebooks:26.10-cuda12-py3.11``, ``nvcr.io/nvidia/rapidsai/rapidsai:21.10-...``)."""
    ref = ImageRef.parse(image)
    match = _RAPIDS_TAG.match(ref.tag or "")
    return match.group(1) if match and "rapidsai" in ref.repository else None
