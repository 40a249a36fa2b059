"""VMware's pre-defined VM classes, as every vSphere with Tanzu Supervisor ships them (vSphere 7 U1
and later, "Virtual Machine Classes for Tanzu Kubernetes Clusters", VMware's documentation; the
same names and sizes in vSphere 8 and VCF 9): a class named here needs no definition in the stack,
and the capacity checks take its size from here."""
from __future__ import annotations

from collections.abc import Mapping

# name -> (vCPUs, memory MiB); best-effort classes reserve nothing, guaranteed ones all of it
PREDEFINED_VM_CLASS_SIZES: Mapping[str, tuple[int, int]] = {
    f"{kind}-{size}": dims
    for kind in ("best-effort", "guaranteed")
    for size, dims in {
        "xsmall": (2, 2048),
        "small": (2, 4096),
        "medium": (2, 8192),
        "large": (4, 16384),
        "xlarge": (4, 32768),
        "2xlarge": (8, 65536),
        "4xlarge": (16, 131072),
        "8xlarge": (32, 131072),
    }.items()
}
