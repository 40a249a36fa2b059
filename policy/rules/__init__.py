"""The rules of the dask-tkg policy pack, importable without starting the pack.

``POLICIES`` is what ``policy/__main__.py`` hands to ``PolicyPack``; each rule is a
``ResourceValidationPolicy``/``StackValidationPolicy`` whose ``validate`` tests call
directly with ``ResourceValidationArgs``/``StackValidationArgs``.
"""
from __future__ import annotations

from pulumi_policy import Policy

from . import cluster_shape, clusters, dask_operator, dask_release, file_share, kubernetes, namespace, tanzu
from .cluster_shape import workload_cluster_shape
from .dask_release import gpu_worker_one_gpu, jupyter_no_default_password, one_pinned_image, scheduler_jupyter_off_gpu
from .file_share import file_share_clients_closed
from .kubernetes import container_images_pinned, dataset_claim_rwx_protected, no_public_load_balancer
from .namespace import namespace_offers
from .tanzu import gpu_pools_on_vgpu_tkr

PACK_NAME = "dask-tkg-guardrails"
POLICIES: list[Policy] = [*dask_release.POLICIES, *dask_operator.POLICIES, *kubernetes.POLICIES, *tanzu.POLICIES,
                          *cluster_shape.POLICIES, *namespace.POLICIES, *file_share.POLICIES]

__all__ = [
    "PACK_NAME", "POLICIES", "clusters", "container_images_pinned", "dataset_claim_rwx_protected",
    "file_share_clients_closed",
    "gpu_pools_on_vgpu_tkr",
    "gpu_worker_one_gpu", "jupyter_no_default_password", "namespace_offers", "no_public_load_balancer",
    "one_pinned_image", "scheduler_jupyter_off_gpu", "workload_cluster_shape",
]
