"""Which OS image each node pool asks the release for, read from the cluster manifest itself.

``components.cluster.manifests`` asks for an OS with VKS's annotation
``run.tanzu.vmware.com/resolve-os-image: os-name=<os>``: on every GPU pool's machineDeployment
of a Cluster, and on the whole TanzuKubernetesCluster for ``run.tanzu.vmware.com/v1alpha3``
(NVIDIA ships no vGPU guest driver for Photon). A pool without it takes the release's default
image, so it needs only some image of the release. Both preview checks (the Supervisor's
release objects and its content library) read the asks from the manifest the program
declares, so they cannot drift from it.
"""
from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from components.cluster.manifests import UBUNTU_ANNOTATION, cluster_manifest
from components.settings.model import ClusterSpec

OS_ANNOTATION = next(iter(UBUNTU_ANNOTATION))  # run.tanzu.vmware.com/resolve-os-image
ANY = ""  # the pool takes whatever image the release resolves by default


def _asked(annotations: Mapping[str, str] | None, wanted: str) -> str:
    for part in (annotations or {}).get(OS_ANNOTATION, "").split(","):
        key, _, value = part.strip().partition("=")
        if key == wanted:
            return value
    return ANY


def asked_os(annotations: Mapping[str, str] | None) -> str:
    """The ``os-name`` an object's annotations ask for (``os-name=ubuntu[,os-version=...]``), or ANY."""
    return _asked(annotations, "os-name")


def asked_os_version(annotations: Mapping[str, str] | None) -> str:
    """The ``os-version`` an object's annotations ask for (``os-name=ubuntu,os-version=22.04``), or ANY."""
    return _asked(annotations, "os-version")


UBUNTU = asked_os(UBUNTU_ANNOTATION)


def _deployment_asks(manifest: Mapping[str, Any],
                     ask: Callable[[Mapping[str, str] | None], str] = asked_os) -> dict[str, str]:
    """A Cluster's machineDeployments by name, with the OS (or, with ``asked_os_version``, the
    OS version) each asks for."""
    if manifest["kind"] != "Cluster":
        return {}
    deployments = manifest["spec"]["topology"]["workers"]["machineDeployments"]
    return {d["name"]: ask((d.get("metadata") or {}).get("annotations")) for d in deployments}


def pool_os_versions(spec: ClusterSpec) -> list[str]:
    """The OS version each node pool asks for (ANY: whichever the release resolves), in settings order."""
    manifest = cluster_manifest(spec, namespace="")
    whole_cluster = asked_os_version(manifest["metadata"].get("annotations"))
    per_pool = _deployment_asks(manifest, asked_os_version)
    return [per_pool.get(pool.name) or whole_cluster for pool in spec.node_pools]


def pool_os_needs(spec: ClusterSpec) -> list[tuple[str, str, str]]:
    """``(setting key, pool name, OS name or ANY)`` for each node pool, in settings order."""
    manifest = cluster_manifest(spec, namespace="")
    whole_cluster = asked_os(manifest["metadata"].get("annotations"))
    per_pool = _deployment_asks(manifest)
    return [(f"nodePools[{index}]", pool.name, per_pool.get(pool.name) or whole_cluster)
            for index, pool in enumerate(spec.node_pools)]


def library_os_names(spec: ClusterSpec) -> list[str]:
    """The OS names the content library must hold an image of, for the release ``spec.tkr``."""
    return sorted({wants for _key, _name, wants in pool_os_needs(spec) if wants != ANY})
