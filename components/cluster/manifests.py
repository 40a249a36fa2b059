"""Pure builders of the Supervisor-side manifests: the workload cluster, as a
TanzuKubernetesCluster or as a Cluster API Cluster on one of VMware's ClusterClasses.

``run.tanzu.vmware.com/v1alpha2`` (vSphere 7U3, the paper's) reports readiness in
``status.phase``; ``v1alpha3`` (vSphere 8) dropped the phase and reports a Ready condition, as
``cluster.x-k8s.io/v1beta1`` (vSphere 8 U3 / VCF 9, the vSphere Kubernetes Service) does.
The ``pulumi.com/waitFor`` annotation makes ``pulumi up`` wait for that, up to the timeout.
"""
from __future__ import annotations

from typing import Any

from components.facts import cluster_classes
from components.settings import class_variables
from components.settings.model import CLUSTER_API, ClusterSpec, NodePool

WAIT_FOR = {
    "run.tanzu.vmware.com/v1alpha2": "jsonpath={.status.phase}=running",
    "run.tanzu.vmware.com/v1alpha3": "condition=Ready",
    CLUSTER_API: "condition=Ready",
}
# GPU nodes need the Ubuntu image (NVIDIA's guest driver does not support Photon).
UBUNTU_ANNOTATION = {"run.tanzu.vmware.com/resolve-os-image": "os-name=ubuntu"}
# A current Cluster's GPU pools ask for Ubuntu 22.04 by version: GPU operator v26.7.0 is validated
# on VKS with Ubuntu 22.04 only (support_matrix.GPU_OPERATORS, platform-support.rst), while
# VKS 3.4's samples resolve 1.33 to ``os-name=ubuntu,os-version=24.04`` (the key as they write
# it), so the name alone may give 24.04.
GPU_OS_VERSION = "22.04"
GPU_POOL_OS_ANNOTATION = {"run.tanzu.vmware.com/resolve-os-image": f"os-name=ubuntu,os-version={GPU_OS_VERSION}"}


def kubeconfig_secret_name(cluster: str) -> str:
    """The Supervisor keeps each cluster's admin kubeconfig in this Secret (key ``value``)."""
    return f"{cluster}-kubeconfig"


def cluster_manifest(spec: ClusterSpec, namespace: str) -> dict[str, Any]:
    """The workload cluster for ``spec`` in Supervisor namespace ``namespace``, in the API
    ``spec.api_version`` names."""
    return capi_cluster_manifest(spec, namespace) if spec.api_version == CLUSTER_API else tkc_manifest(spec, namespace)


def _wait_annotations(spec: ClusterSpec) -> dict[str, str]:
    return {
        "pulumi.com/waitFor": WAIT_FOR[spec.api_version],
        "pulumi.com/timeoutSeconds": str(spec.ready_timeout_minutes * 60),
    }


def _metadata(spec: ClusterSpec, namespace: str, annotations: dict[str, str]) -> dict[str, Any]:
    return {"name": spec.name, "namespace": namespace, "annotations": annotations,
            "labels": {"app.kubernetes.io/managed-by": "dask-tkg"}}


def tkc_manifest(spec: ClusterSpec, namespace: str) -> dict[str, Any]:
    """The TanzuKubernetesCluster for ``spec`` in Supervisor namespace ``namespace``."""
    annotations = _wait_annotations(spec)
    if spec.api_version.endswith("v1alpha3"):
        annotations.update(UBUNTU_ANNOTATION)
    tkr = {"reference": {"name": spec.tkr}}
    return {
        "apiVersion": spec.api_version,
        "kind": "TanzuKubernetesCluster",
        "metadata": _metadata(spec, namespace, annotations),
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


def _pool(pool: NodePool, spec: ClusterSpec, tkr: dict[str, Any]) -> dict[str, Any]:
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


# --- Cluster API Cluster on a VMware ClusterClass (vSphere 8 U3 / VCF 9) ------------------

NODE_POOL_CLASS = "node-pool"  # the worker class of VMware's ClusterClasses


def capi_cluster_manifest(spec: ClusterSpec, namespace: str) -> dict[str, Any]:
    """The ``cluster.x-k8s.io/v1beta1`` Cluster for ``spec``: one machineDeployment per node
    pool, the pool's VM class (the vGPU class for GPU pools), storage class, volumes and
    role label as that pool's variable overrides, Ubuntu for GPU pools (NVIDIA ships no vGPU
    guest driver for Photon), and the cluster-wide variables in the generation the class
    takes (``components.facts.cluster_classes``)."""
    structured = cluster_classes.generation(spec.cluster_class).structured
    topology: dict[str, Any] = {"class": spec.cluster_class}
    if spec.cluster_class != cluster_classes.UNVERSIONED_CLASS:
        topology["classNamespace"] = spec.class_namespace
    topology.update({
        "version": spec.tkr,
        "controlPlane": {"replicas": spec.control_plane.replicas},
        "workers": {"machineDeployments": [_machine_deployment(pool, spec, structured) for pool in spec.node_pools]},
        "variables": class_variables.cluster_variables(spec, structured),
    })
    return {
        "apiVersion": spec.api_version,
        "kind": "Cluster",
        "metadata": _metadata(spec, namespace, _wait_annotations(spec)),
        "spec": {
            "clusterNetwork": {
                "pods": {"cidrBlocks": [spec.pod_cidr]},
                "services": {"cidrBlocks": [spec.service_cidr]},
                "serviceDomain": "cluster.local",
            },
            "topology": topology,
        },
    }


def _machine_deployment(pool: NodePool, spec: ClusterSpec, structured: bool) -> dict[str, Any]:
    deployment: dict[str, Any] = {"class": NODE_POOL_CLASS, "name": pool.name, "replicas": pool.replicas}
    if pool.role == "gpu":
        deployment["metadata"] = {"annotations": dict(GPU_POOL_OS_ANNOTATION)}
    deployment["variables"] = {"overrides": class_variables.pool_overrides(pool, spec, structured)}
    return deployment
