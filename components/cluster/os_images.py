"""Which OS image each node pool asks the release for, as the cluster manifests ask.

``components.cluster.manifests`` puts ``UBUNTU_ANNOTATION`` (``run.tanzu.vmware.com/
resolve-os-image: os-name=ubuntu``) on every GPU pool's machineDeployment of a Cluster, and
on the whole TanzuKubernetesCluster for ``run.tanzu.vmware.com/v1alpha3``: NVIDIA ships no
vGPU guest driver for Photon. Every other pool takes the release's default image, so it
needs only some image of the release. Both preview checks (the Supervisor's release objects
and its content library) read the needs from here, so they cannot drift from the manifests.
"""
from __future__ import annotations

from components.cluster.manifests import UBUNTU_ANNOTATION
from components.settings.model import CLUSTER_API, ClusterSpec

# "os-name=ubuntu" -> "ubuntu": the OSImage spec.os.name the annotation selects
UBUNTU = next(iter(UBUNTU_ANNOTATION.values())).partition("=")[2]
ANY = ""  # the pool takes whatever image the release resolves by default


def pool_os_needs(spec: ClusterSpec) -> list[tuple[str, str, str]]:
    """``(setting key, pool name, OS name or ANY)`` for each node pool, in settings order."""
    whole_cluster = UBUNTU if spec.api_version.endswith("/v1alpha3") else ANY
    needs = []
    for index, pool in enumerate(spec.node_pools):
        wants = UBUNTU if spec.api_version == CLUSTER_API and pool.role == "gpu" else whole_cluster
        needs.append((f"nodePools[{index}]", pool.name, wants))
    return needs


def library_os_names(spec: ClusterSpec) -> list[str]:
    """The OS names the content library must hold an image of, for the release ``spec.tkr``."""
    return sorted({wants for _key, _name, wants in pool_os_needs(spec) if wants != ANY})
