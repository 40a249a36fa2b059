"""Rules on the Dask Helm release's values: one GPU per GPU worker, scheduler and CPU
Jupyter off the GPU nodes, one pinned image, no well-known Jupyter password.

The release is the ``dask`` chart (https://helm.dask.org), or the paper's ``rapidsai``
wrapper chart, whose values carry the dask chart's under ``dask:``.
"""
from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from pulumi_policy import EnforcementLevel, ReportViolation, ResourceValidationArgs, ResourceValidationPolicy

from .common import (
    GPU_RESOURCE,
    HELM_RELEASE,
    POOL_ROLE_LABEL,
    as_list,
    as_map,
    count,
    dig,
    image_problem,
    truthy,
    where,
)
from .passwords import password_problem

MANDATORY = EnforcementLevel.MANDATORY


@dataclass(frozen=True)
class DaskValues:
    values: Mapping[str, Any]
    prefix: str  # "" for the dask chart, "dask." for the rapidsai wrapper
    release: str  # how messages name the release

    def get(self, *keys: str) -> Any:
        return dig(self.values, *keys)

    def key(self, path: str) -> str:
        return f"{self.prefix}{path}"

    @property
    def jupyter_enabled(self) -> bool:
        enabled = self.get("jupyter", "enabled")
        return enabled is None or truthy(enabled)

    def worker_groups(self) -> list[tuple[str, Mapping[str, Any]]]:
        groups = [("worker", as_map(self.values.get("worker")))]
        for i, group in enumerate(as_list(self.values.get("additional_worker_groups"))):
            groups.append((f"additional_worker_groups[{i}]", as_map(group)))
        return groups


def dask_values(args: ResourceValidationArgs) -> DaskValues | None:
    """The dask chart's values if ``args`` is a Dask Helm release, else None."""
    if args.resource_type != HELM_RELEASE:
        return None
    chart = args.props.get("chart")
    chart_name = chart.rstrip("/").rsplit("/", 1)[-1] if isinstance(chart, str) else ""
    version = args.props.get("version")
    if chart_name.endswith(".tgz") and isinstance(version, str):  # a local archive, <chart>-<version>.tgz
        chart_name = chart_name.removesuffix(".tgz").removesuffix(f"-{version}")
    if chart_name not in ("dask", "rapidsai"):
        return None
    values = as_map(args.props.get("values"))
    name = args.props.get("name")
    release = where("Helm release", name if isinstance(name, str) and name else args.name, args.name)
    if chart_name == "rapidsai":
        return DaskValues(as_map(values.get("dask")), "dask.", release)
    return DaskValues(values, "", release)


def selects_gpu_nodes(component: Mapping[str, Any]) -> bool:
    """Whether the pod's nodeSelector (or required node affinity) picks the GPU pool."""
    if as_map(component.get("nodeSelector")).get(POOL_ROLE_LABEL) == "gpu":
        return True
    terms = dig(component, "affinity", "nodeAffinity", "requiredDuringSchedulingIgnoredDuringExecution",
                "nodeSelectorTerms")
    for term in as_list(terms):
        for listed in as_list(as_map(term).get("matchExpressions")):
            expression = as_map(listed)
            if (expression.get("key") == POOL_ROLE_LABEL and expression.get("operator") == "In"
                    and "gpu" in as_list(expression.get("values"))):
                return True
    return False


def gpus(component: Mapping[str, Any], kind: str = "limits") -> Any:
    return as_map(dig(component, "resources", kind)).get(GPU_RESOURCE)


def gpu_count_problem(key: str, limit: Any, request: Any, pods: str = "these pods",
                      pod: str = "worker pod") -> str | None:
    """What is wrong with a GPU worker's GPUs at ``key`` (its ``resources``), or None: one GPU,
    limit and request alike, is what a GPU node (one vGPU, not shared between pods) can give.
    ``pods`` and ``pod`` name the worker pods in the message. Both backends' rules ask this."""
    if limit is None:
        return (f"{key}.limits requests no {GPU_RESOURCE} although {pods} are GPU workers (dask-cuda-worker or the"
    " GPU pool): they would sit on a GPU node without its GPU.")
    if count(limit) != 1:
        return (f"{key}.limits asks for {limit!r} {GPU_RESOURCE} per {pod}; a GPU worker must request exactly 1 (each"
    " GPU node has one vGPU and Kubernetes does not share a GPU between pods, so the pod would stay"
    " Pending).")
    if request is not None and count(request) != 1:
        return (f"{key}.requests asks for {request!r} {GPU_RESOURCE} but the limit is 1; Kubernetes requires"
    " requests and limits of a GPU to be equal.")
    return None


ReleaseCheck = Callable[[DaskValues, ResourceValidationArgs, ReportViolation], None]


def _release_rule(name: str, check: ReleaseCheck) -> ResourceValidationPolicy:
    """A mandatory rule that ``check``s the values of each Dask Helm release (``dask_values``)
    and passes over every other resource; its description is the check's docstring."""

    def validate(args: ResourceValidationArgs, report: ReportViolation) -> None:
        dask = dask_values(args)
        if dask is not None:
            check(dask, args, report)

    description = " ".join((check.__doc__ or "").split())
    return ResourceValidationPolicy(name=name, description=description, enforcement_level=MANDATORY, validate=validate)


# --- GPU workers request exactly one GPU -------------------------------------------------
def _check_worker_gpus(dask: DaskValues, args: ResourceValidationArgs, report: ReportViolation) -> None:
    """Each Dask GPU worker pod requests exactly one nvidia.com/gpu (Kubernetes does not share a
    GPU between pods)."""
    for path, worker in dask.worker_groups():
        limit, request = gpus(worker), gpus(worker, "requests")
        is_gpu_worker = (selects_gpu_nodes(worker) or dig(worker, "image", "dask_worker") == "dask-cuda-worker"
                         or limit is not None or request is not None)
        if not is_gpu_worker:
            continue
        key = dask.key(f"{path}.resources")
        problem = gpu_count_problem(key, limit, request, pods=f"the {path} pods", pod=f"{path} pod")
        if problem:
            report(f"{dask.release}: {problem} Fix: set {key}.limits (and requests, if given) to {{{GPU_RESOURCE}: 1}}"
                   " (stack setting workerGpus=1) and add workers, not GPUs per worker, to use more GPUs.", args.urn)


gpu_worker_one_gpu = _release_rule("dask-gpu-worker-one-gpu", _check_worker_gpus)


# --- scheduler and a CPU Jupyter stay off the GPU nodes ---------------------------------
def _check_placement(dask: DaskValues, args: ResourceValidationArgs, report: ReportViolation) -> None:
    """The Dask scheduler, and Jupyter unless it has a GPU (topology B), are not scheduled on GPU
    nodes."""
    scheduler = as_map(dask.values.get("scheduler"))
    if selects_gpu_nodes(scheduler):
        report(f"{dask.release}: {dask.key('scheduler.nodeSelector')} selects the GPU nodes "
               f"({POOL_ROLE_LABEL}: gpu); the scheduler needs no GPU and would take a GPU node's CPU and memory "
               "from a worker. Fix: select a CPU pool (a node pool with role cpu or scheduler) or leave the "
               "GPU label out.", args.urn)
    jupyter = as_map(dask.values.get("jupyter"))
    if dask.jupyter_enabled and selects_gpu_nodes(jupyter) and not (count(gpus(jupyter)) or 0) >= 1:
        report(f"{dask.release}: {dask.key('jupyter.nodeSelector')} selects the GPU nodes ({POOL_ROLE_LABEL}: gpu) "
               "but Jupyter requests no GPU, so it takes a GPU node a worker needs. Fix: select a CPU pool "
               f"(role cpu or jupyter), or give Jupyter a GPU ({dask.key('jupyter.resources.limits')} "
               f"{GPU_RESOURCE}: 1, stack setting jupyterGpu=true, topology B).", args.urn)


scheduler_jupyter_off_gpu = _release_rule("dask-scheduler-jupyter-off-gpu-nodes", _check_placement)


# --- one pinned image for scheduler, workers and Jupyter --------------------------------
def _image_of(component: Mapping[str, Any]) -> str | None:
    image = as_map(component.get("image"))
    repository, tag = image.get("repository"), image.get("tag")
    if not repository:
        return None
    return f"{repository}:{tag}" if tag not in (None, "") else str(repository)


def _check_images(dask: DaskValues, args: ResourceValidationArgs, report: ReportViolation) -> None:
    """The Dask scheduler, workers and Jupyter run one image, pinned by a version tag (not latest)
    or a digest."""
    components: list[tuple[str, Mapping[str, Any]]] = [("scheduler", as_map(dask.values.get("scheduler")))]
    components += dask.worker_groups()
    if dask.jupyter_enabled:
        components.append(("jupyter", as_map(dask.values.get("jupyter"))))
    fix = "Fix: give scheduler, worker and jupyter the same image.repository and image.tag (stack setting daskImage)."
    images: dict[str, str] = {}
    for path, component in components:
        image = _image_of(component)
        if image is None:
            if path.startswith("additional_worker_groups"):
                continue  # the group runs the worker's image
            report(f"{dask.release}: {dask.key(path + '.image.repository')} is not set, so the chart's default "
                   "image runs (Jupyter's default differs from the scheduler's and workers'). " + fix, args.urn)
            continue
        images[path] = image
        problem = image_problem(image)
        if problem:
            report(f"{dask.release}: the {path} image {problem}; a re-pulled image can change the Dask version "
                   f"under a running cluster. Fix: pin {dask.key(path + '.image.tag')} to a version tag or digest "
                   "(stack setting daskImage).", args.urn)
    if len(set(images.values())) > 1:
        found = ", ".join(f"{path}={image}" for path, image in images.items())
        report(f"{dask.release}: scheduler, workers and Jupyter run different images ({found}); mismatched Dask "
               "versions between client, scheduler and workers break the cluster. " + fix, args.urn)


one_pinned_image = _release_rule("dask-one-pinned-image", _check_images)


# --- no default or well-known Jupyter password ------------------------------------------
def _check_password(dask: DaskValues, args: ResourceValidationArgs, report: ReportViolation) -> None:
    """Jupyter in the Dask release has its own password hash: not the chart's default, not a hash
    of a well-known password (dask, rapidsai, empty), not plain text."""
    if not dask.jupyter_enabled:
        return
    problem = password_problem(dask.get("jupyter", "password"))
    if problem:
        report(f"{dask.release}: {dask.key('jupyter.password')} {problem}; anyone who reaches Jupyter can run code "
               "in the cluster with the dataset mounted. Fix: set it to the argon2 hash of a generated password "
               "(the program's JupyterPassword does this; read it with `pulumi stack output jupyterPassword "
               "--show-secrets`).", args.urn)


jupyter_no_default_password = _release_rule("jupyter-no-default-password", _check_password)

POLICIES = [gpu_worker_one_gpu, scheduler_jupyter_off_gpu, one_pinned_image, jupyter_no_default_password]
