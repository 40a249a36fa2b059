"""GPU node pools of a TanzuKubernetesCluster run a Tanzu Kubernetes release with vGPU.

vGPU in TKGS guest clusters arrived with TKR ``v1.20.8---vmware.1-tkg.2`` (Kubernetes
1.20.8); on vSphere 8 (``v1alpha3``) GPU nodes also need the Ubuntu image, asked for with
the cluster annotation ``run.tanzu.vmware.com/resolve-os-image: os-name=ubuntu``.
A pool counts as a GPU pool when its labels say role gpu or its VM class carries a vGPU.
"""
from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from pulumi_policy import (EnforcementLevel, PolicyConfigSchema, ReportViolation, ResourceValidationArgs,
                           ResourceValidationPolicy)

from .common import (POOL_ROLE_LABEL, TKC_TYPES, TKC_V1ALPHA3, as_list, as_map, dig, k8s_name, stack_vgpu_classes,
                     where)

MIN_VGPU_KUBERNETES = (1, 20, 8)
MIN_VGPU_TKR = "v1.20.8---vmware.1-tkg.2"
OS_IMAGE_ANNOTATION = "run.tanzu.vmware.com/resolve-os-image"
VGPU_CLASSES = "vgpuVmClasses"
_TKR_VERSION = re.compile(r"^v?(\d+)\.(\d+)\.(\d+)(?:$|[-+])")


def tkr_kubernetes_version(name: Any) -> tuple[int, int, int] | None:
    """(1, 20, 8) from ``v1.20.8---vmware.1-tkg.2`` or ``v1.26.5+vmware.2-fips.1-tkg.1``."""
    match = _TKR_VERSION.match(name) if isinstance(name, str) else None
    return (int(match[1]), int(match[2]), int(match[3])) if match else None


def _tkr_of(topology_part: Mapping[str, Any]) -> Any:
    return dig(topology_part, "tkr", "reference", "name")


def vgpu_classes(args: ResourceValidationArgs) -> set[str]:
    """VM classes with a vGPU: the stack's ``vmClasses`` with a vgpuProfile, plus the
    policy config ``vgpuVmClasses`` (for pre-defined or hand-made vGPU classes)."""
    configured = {str(c) for c in as_list(args.get_config().get(VGPU_CLASSES))}
    return configured | stack_vgpu_classes()


def _check_gpu_pools(args: ResourceValidationArgs, report: ReportViolation) -> None:
    if args.resource_type not in TKC_TYPES:
        return
    cluster = where("TanzuKubernetesCluster", k8s_name(args.props, args.name), args.name)
    spec = as_map(args.props.get("spec"))
    topology = as_map(spec.get("topology"))
    default_tkr = (_tkr_of(as_map(topology.get("controlPlane"))) or dig(spec, "distribution", "fullVersion")
                   or dig(spec, "distribution", "version"))
    classes = vgpu_classes(args)
    ubuntu = "os-name=ubuntu" in str(as_map(dig(args.props, "metadata", "annotations")).get(OS_IMAGE_ANNOTATION, ""))
    for i, pool in enumerate(as_list(topology.get("nodePools"))):
        pool = as_map(pool)
        vm_class = pool.get("vmClass")
        if as_map(pool.get("labels")).get(POOL_ROLE_LABEL) == "gpu":
            why = f"label {POOL_ROLE_LABEL}=gpu"
        elif vm_class in classes:
            why = f"vGPU VM class {vm_class!r}"
        else:
            continue
        at = f"{cluster}: spec.topology.nodePools[{i}] ({pool.get('name')!r}, a GPU pool by its {why})"
        tkr = _tkr_of(pool) or default_tkr
        version = tkr_kubernetes_version(tkr)
        fix = (f"Fix: set tkr.reference.name of the pool (or the control plane's) to {MIN_VGPU_TKR} or a later TKR "
               "with vGPU support (stack setting tkr).")
        if not tkr:
            report(f"{at} names no TKR, so the Supervisor's default release decides whether its vGPU works. {fix}",
                   args.urn)
        elif version is None:
            report(f"{at} uses TKR {tkr!r}, whose Kubernetes version cannot be read (expected a name like "
                   f"{MIN_VGPU_TKR}). {fix}", args.urn)
        elif version < MIN_VGPU_KUBERNETES:
            report(f"{at} uses TKR {tkr!r} (Kubernetes {'.'.join(map(str, version))}); vGPU node pools need "
                   f"Kubernetes >= 1.20.8, the first TKR with vGPU support. {fix}", args.urn)
        if args.resource_type == TKC_V1ALPHA3 and not ubuntu:
            report(f"{at} would boot the default Photon image; NVIDIA's vGPU guest driver needs Ubuntu nodes. Fix: "
                   f"annotate the cluster {OS_IMAGE_ANNOTATION}: os-name=ubuntu.", args.urn)


gpu_pools_on_vgpu_tkr = ResourceValidationPolicy(
    name="tkc-gpu-pools-vgpu-tkr",
    description="Every GPU node pool of a TanzuKubernetesCluster (role gpu, or a vGPU VM class) runs a TKR with vGPU "
                "support (Kubernetes >= 1.20.8; Ubuntu nodes on v1alpha3).",
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
