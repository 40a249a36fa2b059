"""The Dask Helm release's rules, for the Dask Kubernetes operator's resources: one GPU per
GPU worker pod, the scheduler off the GPU nodes, pinned images, one image for scheduler,
every worker group and Jupyter.

The operator's custom resources (``kubernetes.dask.org/v1``, dask-kubernetes 2026.3.0 CRDs)
carry plain pod specs: a ``DaskCluster`` at ``spec.scheduler.spec`` and ``spec.worker.spec``
(its default worker group), a ``DaskWorkerGroup`` at ``spec.worker.spec``. The operator's
CRDs type resource amounts as strings (``"1"``), which ``count`` reads like numbers.
"""
from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from pulumi_policy import (
    EnforcementLevel,
    ReportViolation,
    ResourceValidationArgs,
    ResourceValidationPolicy,
    StackValidationArgs,
    StackValidationPolicy,
)

from .common import GPU_RESOURCE, POOL_ROLE_LABEL, as_list, as_map, dig, image_problem, k8s_name, where
from .dask_release import dask_values, gpu_count_problem, gpus, selects_gpu_nodes

MANDATORY = EnforcementLevel.MANDATORY
DASK_CLUSTER = "kubernetes:kubernetes.dask.org/v1:DaskCluster"
DASK_WORKER_GROUP = "kubernetes:kubernetes.dask.org/v1:DaskWorkerGroup"


def pod_specs(resource_type: str, props: Mapping[str, Any]) -> list[tuple[str, str, Mapping[str, Any]]]:
    """(role, path, pod spec) of an operator resource: role is "scheduler" or "worker"."""
    if resource_type == DASK_CLUSTER:
        return [("scheduler", "spec.scheduler.spec", as_map(dig(props, "spec", "scheduler", "spec"))),
                ("worker", "spec.worker.spec", as_map(dig(props, "spec", "worker", "spec")))]
    if resource_type == DASK_WORKER_GROUP:
        return [("worker", "spec.worker.spec", as_map(dig(props, "spec", "worker", "spec")))]
    return []


def containers(pod: Mapping[str, Any]) -> list[tuple[int, Mapping[str, Any]]]:
    return [(i, as_map(c)) for i, c in enumerate(as_list(pod.get("containers")))]


def _is_gpu_worker(pod: Mapping[str, Any], container: Mapping[str, Any]) -> bool:
    args = [a for a in as_list(container.get("args")) if isinstance(a, str)]
    limits = as_map(dig(container, "resources", "limits"))
    requests = as_map(dig(container, "resources", "requests"))
    return (selects_gpu_nodes(pod) or "dask-cuda-worker" in args[:1] or args[:2] == ["dask", "cuda"]
            or GPU_RESOURCE in limits or GPU_RESOURCE in requests)


def _name(args: ResourceValidationArgs) -> str:
    return where(args.resource_type.rsplit(":", 1)[-1], k8s_name(args.props, args.name), args.name)


# --- GPU workers request exactly one GPU -------------------------------------------------
def _check_worker_gpus(args: ResourceValidationArgs, report: ReportViolation) -> None:
    for role, path, pod in pod_specs(args.resource_type, args.props):
        if role != "worker":
            continue
        for i, container in containers(pod):
            if not _is_gpu_worker(pod, container):
                continue
            key = f"{path}.containers[{i}].resources"
            problem = gpu_count_problem(key, gpus(container), gpus(container, "requests"))
            if problem:
                report(f"{_name(args)}: {problem} Fix: set {key}.limits and requests to {{{GPU_RESOURCE}: \"1\"}}"
                       " (stack setting workerGpus=1) and add workers (autoscaleMaxWorkers), not GPUs per worker.",
                       args.urn)


operator_gpu_worker_one_gpu = ResourceValidationPolicy(
    name="dask-operator-gpu-worker-one-gpu",
    description="Each GPU worker pod of a DaskCluster or DaskWorkerGroup requests exactly one nvidia.com/gpu.",
    enforcement_level=MANDATORY,
    validate=_check_worker_gpus,
)


# --- the scheduler stays off the GPU nodes ----------------------------------------------
def _check_scheduler_placement(args: ResourceValidationArgs, report: ReportViolation) -> None:
    for role, path, pod in pod_specs(args.resource_type, args.props):
        if role == "scheduler" and selects_gpu_nodes(pod):
            report(f"{_name(args)}: {path}.nodeSelector selects the GPU nodes ({POOL_ROLE_LABEL}: gpu); the "
                   "scheduler needs no GPU and would take a GPU node's CPU and memory from a worker. Fix: select a "
                   "CPU pool (a node pool with role cpu or scheduler) or leave the GPU label out.", args.urn)


operator_scheduler_off_gpu = ResourceValidationPolicy(
    name="dask-operator-scheduler-off-gpu-nodes",
    description="The scheduler of a DaskCluster is not scheduled on GPU nodes.",
    enforcement_level=MANDATORY,
    validate=_check_scheduler_placement,
)


# --- pinned images, one image in a resource ---------------------------------------------
def resource_images(resource_type: str, props: Mapping[str, Any]) -> dict[str, Any]:
    """``path -> image`` of every container of an operator resource."""
    return {f"{path}.containers[{i}].image": c.get("image")
            for _, path, pod in pod_specs(resource_type, props) for i, c in containers(pod)}


def _check_images(args: ResourceValidationArgs, report: ReportViolation) -> None:
    images = resource_images(args.resource_type, args.props)
    for path, image in images.items():
        problem = image_problem(image)
        if problem:
            report(f"{_name(args)}: {path} {problem}; a re-pulled image can change the Dask version under a running "
                   "cluster. Fix: pin it to a version tag or digest (stack setting daskImage).", args.urn)
    if len(set(map(str, images.values()))) > 1:
        found = ", ".join(f"{path}={image}" for path, image in images.items())
        report(f"{_name(args)}: scheduler and workers run different images ({found}); mismatched Dask versions "
               "between scheduler and workers break the cluster. Fix: one image for all (stack setting daskImage).",
               args.urn)


operator_one_pinned_image = ResourceValidationPolicy(
    name="dask-operator-one-pinned-image",
    description="The scheduler and workers of a DaskCluster or DaskWorkerGroup run one image, pinned by a version "
                "tag (not latest) or a digest.",
    enforcement_level=MANDATORY,
    validate=_check_images,
)


# --- one image across the operator's resources and Jupyter ------------------------------
def _jupyter_image(resource: Any) -> str | None:
    """Jupyter's image in a dask chart release (a stack resource has the fields dask_values reads)."""
    dask = dask_values(resource)
    if dask is None or not dask.jupyter_enabled:
        return None
    image = as_map(dask.get("jupyter", "image"))
    repository, tag = image.get("repository"), image.get("tag")
    return f"{repository}:{tag}" if repository and tag else None


def _check_one_image(args: StackValidationArgs, report: ReportViolation) -> None:
    resources = list(args.resources)
    found = {f"{r.name}:{path}": str(image)
             for r in resources for path, image in resource_images(r.resource_type, r.props).items()}
    if not found:
        return  # the Helm backend: dask-one-pinned-image covers its release
    for resource in resources:
        jupyter = _jupyter_image(resource)
        if jupyter:
            found[f"{resource.name}:jupyter.image"] = jupyter
    if len(set(found.values())) > 1:
        listed = ", ".join(f"{key}={image}" for key, image in sorted(found.items()))
        report(f"the Dask operator's cluster, its worker groups and Jupyter run different images ({listed}); the "
               "client in Jupyter, the scheduler and every worker must run one Dask. Fix: one image everywhere "
               "(stack setting daskImage).", None)


operator_one_image_everywhere = StackValidationPolicy(
    name="dask-operator-one-image-everywhere",
    description="The DaskCluster, every DaskWorkerGroup and Jupyter run one image.",
    enforcement_level=MANDATORY,
    validate=_check_one_image,
)

POLICIES = [operator_gpu_worker_one_gpu, operator_scheduler_off_gpu, operator_one_pinned_image,
            operator_one_image_everywhere]
