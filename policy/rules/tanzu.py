"""GPU node pools of the workload cluster run a release with vGPU, on Ubuntu where the API
lets the cluster choose; for a TanzuKubernetesCluster and a Cluster API ``Cluster`` alike
(``clusters.read``).

vGPU in TKGS guest clusters arrived with TKR ``v1.20.8---vmware.1-tkg.2`` (Kubernetes
1.20.8); on vSphere 8 (``v1alpha3``, and the ``Cluster``'s VKrs) GPU nodes also need the
Ubuntu image, asked for with ``run.tanzu.vmware.com/resolve-os-image: os-name=ubuntu`` (on the
TanzuKubernetesCluster, or on the Cluster's GPU machineDeployment). A pool counts as a GPU pool
when its labels say role gpu or its VM class carries a vGPU.
"""
from __future__ import annotations

import re
from typing import Any

from pulumi_policy import (
    EnforcementLevel,
    PolicyConfigSchema,
    ReportViolation,
    ResourceValidationArgs,
    ResourceValidationPolicy,
)

from .clusters import read as read_cluster
from .common import POOL_ROLE_LABEL, as_list, stack_vgpu_classes

MIN_VGPU_KUBERNETES = (1, 20, 8)
MIN_VGPU_TKR = "v1.20.8---vmware.1-tkg.2"
VGPU_CLASSES = "vgpuVmClasses"
_TKR_VERSION = re.compile(r"^v?(\d+)\.(\d+)\.(\d+)(?:$|[-+])")
_SHORT_VERSION = re.compile(r"^v?(\d+)\.(\d+)$")


def tkr_kubernetes_version(name: Any) -> tuple[int, int, int] | None:
    """(1, 20, 8) from ``v1.20.8---vmware.1-tkg.2`` or ``v1.26.5+vmware.2-fips.1-tkg.1``."""
    match = _TKR_VERSION.match(name) if isinstance(name, str) else None
    return (int(match[1]), int(match[2]), int(match[3])) if match else None


def vkr_kubernetes_version(name: Any) -> tuple[int, int, int] | None:
    """A Cluster's ``topology.version``: a full VKr name, or ``v1.33``, which VKS resolves to
    the newest VKr of that minor (read as 1.33.0)."""
    match = _SHORT_VERSION.match(name) if isinstance(name, str) else None
    return (int(match[1]), int(match[2]), 0) if match else tkr_kubernetes_version(name)


def vgpu_classes(args: ResourceValidationArgs) -> set[str]:
    """VM classes with a vGPU: the stack's ``vmClasses`` with a vgpuProfile, plus the
    policy config ``vgpuVmClasses`` (for pre-defined or hand-made vGPU classes)."""
    configured = {str(c) for c in as_list(args.get_config().get(VGPU_CLASSES))}
    return configured | stack_vgpu_classes()


def _check_gpu_pools(args: ResourceValidationArgs, report: ReportViolation) -> None:
    cluster = read_cluster(args.resource_type, args.props, args.name)
    if cluster is None:
        return
    classes = vgpu_classes(args)
    read_version = vkr_kubernetes_version if cluster.kind == "Cluster" else tkr_kubernetes_version
    for pool in cluster.pools:
        if pool.labels.get(POOL_ROLE_LABEL) == "gpu":
            why = f"label {POOL_ROLE_LABEL}=gpu"
        elif pool.vm_class in classes:
            why = f"vGPU VM class {pool.vm_class!r}"
        else:
            continue
        at = f"{cluster.label}: {pool.where[:-1]}, a GPU pool by its {why})"
        fix = "Fix: " + cluster.release_fix.format(minimum=MIN_VGPU_TKR)
        version = read_version(pool.release)
        if not pool.release:
            report(f"{at} names no {cluster.release_kind}, so the Supervisor's default release decides whether its "
                   f"vGPU works. {fix}", args.urn)
        elif version is None:
            report(f"{at} uses {cluster.release_kind} {pool.release!r}, whose Kubernetes version cannot be read "
                   f"(expected a name like {MIN_VGPU_TKR}). {fix}", args.urn)
        elif version < MIN_VGPU_KUBERNETES:
            report(f"{at} uses {cluster.release_kind} {pool.release!r} (Kubernetes {'.'.join(map(str, version))}); "
                   f"vGPU node pools need Kubernetes >= 1.20.8, the first release with vGPU support. {fix}", args.urn)
        if pool.ubuntu is False:
            report(f"{at} would boot the default Photon image; NVIDIA's vGPU guest driver needs Ubuntu nodes. Fix: "
                   f"{pool.ubuntu_fix}", args.urn)


gpu_pools_on_vgpu_tkr = ResourceValidationPolicy(
    name="tkc-gpu-pools-vgpu-tkr",
    description="Every GPU node pool of the workload cluster, a TanzuKubernetesCluster or a Cluster API Cluster (role "
                "gpu, or a vGPU VM class), runs a release with vGPU support (Kubernetes >= 1.20.8; Ubuntu nodes on "
                "v1alpha3 and on a Cluster).",
    enforcement_level=EnforcementLevel.MANDATORY,
    config_schema=PolicyConfigSchema(properties={
        VGPU_CLASSES: {
            "type": "array",
            "items": {"type": "string"},
            "description": "VM classes with a vGPU besides the stack's vmClasses that have a vgpuProfile.",
        },
    }),
    validate=_check_gpu_pools,
)

POLICIES = [gpu_pools_on_vgpu_tkr]
