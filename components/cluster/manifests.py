"""Pure builders of the Supervisor-side manifests: the TanzuKubernetesCluster.

``run.tanzu.vmware.com/v1alpha2`` (vSphere 7U3, the paper's) reports readiness in
``status.phase``; ``v1alpha3`` (vSphere 8) dropped the phase and reports a Ready condition.
The ``pulumi.com/waitFor`` annotation makes ``pulumi up`` wait for that, up to the timeout.
"""
from __future__ import annotations

from typing import Any

from components.settings.model import ClusterSpec, NodePool

WAIT_FOR = {
    "run.tanzu.vmware.com/v1alpha2": "jsonpath={.status.phase}=running",
    "run.tanzu.vmware.com/v1alpha3": "condition=Ready",
}
# GPU nodes need the Ubuntu image (NVIDIA's guest driver does not support Photon).
UBUNTU_ANNOTATION = {"run.tanzu.vmware.com/resolve-os-image": "os-name=ubuntu"}


def kubeconfig_secret_name(cluster: str) -> str:
    """The Supervisor keeps each cluster's admin kubeconfig in this Secret (key ``value``)."""
    return f"{cluster}-kubeconfig"


def tkc_manifest(spec: ClusterSpec, namespace: str) -> dict[str, Any]:
    """The TanzuKubernetesCluster for ``spec`` in Supervisor namespace ``namespace``."""
    annotations = {
        "pulumi.com/waitFor": WAIT_FOR[spec.api_version],
        "pulumi.com/timeoutSeconds": str(spec.ready_timeout_minutes * 60),
    }
    if spec.api_version.endswith("v1alpha3"):
        annotations.update(UBUNTU_ANNOTATION)
    tkr = {"reference": {"name": spec.tkr}}
    return {
        "apiVersion": spec.api_version,
        "kind": "TanzuKubernetesCluster",
        "metadata": {
            "name": spec.name,
            "namespace": namespace,
            "annotations": annotations,
            "labels": {"app.kubernetes.io/managed-by": "dask-tkg"},
        },
        "spec": {
            "topology": {
                "controlPlane": {
                    "replicas": spec.control_plane.replicas,
                    "vmClass": spec.control_plane.vm_class,
                    "storageClass": spec.control_plane.storage_class,
                    "tkr": tkr,
                },
                "nodePools": [_pool(pool, spec, tkr) for pool in spec.node_pools],
            },
            "settings": {
                "network": {
                    "cni": {"name": spec.cni},
                    "pods": {"cidrBlocks": [spec.pod_cidr]},
                    "services": {"cidrBlocks": [spec.service_cidr]},
                },
                "storage": {
                    "classes": sorted({spec.control_plane.storage_class} | {p.storage_class for p in spec.node_pools}),
                    "defaultClass": spec.control_plane.storage_class,
                },
            },
        },
    }


def _pool(pool: NodePool, spec: ClusterSpec, tkr: dict) -> dict[str, Any]:
    return {
        "name": pool.name,
        "replicas": pool.replicas,
        "vmClass": pool.vm_class,
        "storageClass": pool.storage_class,
        "tkr": tkr,
        "labels": dict(pool.labels),
        "volumes": [
            {"name": v.name, "mountPath": v.mount_path, "capacity": {"storage": v.capacity}} for v in spec.volumes
        ],
    }
