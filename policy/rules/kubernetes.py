"""Rules on plain Kubernetes objects: the dataset claim, LoadBalancer exposure (also the
Dask chart's own Services) and pinned container images in workloads."""
from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from pulumi_policy import (
    EnforcementLevel,
    PolicyConfigSchema,
    ReportViolation,
    ResourceValidationArgs,
    ResourceValidationPolicy,
)

from .common import (
    DATA_LABEL,
    DATASET_CLAIM,
    HELM_RELEASE,
    PVC,
    SERVICE,
    as_list,
    as_map,
    dig,
    image_problem,
    k8s_name,
    open_to_everyone,
    stack_setting,
    truthy,
    where,
)
from .dask_release import dask_values

MANDATORY = EnforcementLevel.MANDATORY
OPT_IN = "allowPublicLoadBalancer"
SOURCE_RANGES_ANNOTATION = "service.beta.kubernetes.io/load-balancer-source-ranges"


# --- the dataset claim: ReadWriteMany and protected -------------------------------------
def _check_dataset_claim(args: ResourceValidationArgs, report: ReportViolation) -> None:
    if args.resource_type != PVC:
        return
    name = k8s_name(args.props, args.name)
    labels = as_map(dig(args.props, "metadata", "labels"))
    if name != DATASET_CLAIM and labels.get(DATA_LABEL) != "dataset":
        return
    claim = where("PersistentVolumeClaim", name, args.name)
    modes = list(as_list(dig(args.props, "spec", "accessModes")))
    if "ReadWriteMany" not in modes:
        report(f"{claim} is the dataset claim but its accessModes are {modes}: every worker node and Jupyter mount "
               "it at once. Fix: spec.accessModes: [ReadWriteMany] on a ReadWriteMany storage class (the NFS "
               "share's, stack setting rwxStorageClass).", args.urn)
    if not args.opts.protect:
        report(f"{claim} is the dataset claim but is not protected: `pulumi destroy` or a replacing change would "
               "delete days of downloads. Fix: create it with ResourceOptions(protect=True, retain_on_delete=True).",
               args.urn)


dataset_claim_rwx_protected = ResourceValidationPolicy(
    name="dataset-pvc-rwx-protected",
    description=f"The dataset claim ({DATASET_CLAIM}, label {DATA_LABEL}: dataset) is ReadWriteMany and protected.",
    enforcement_level=MANDATORY,
    validate=_check_dataset_claim,
)


# --- no LoadBalancer open to 0.0.0.0/0 without the opt-in --------------------------------
def public_load_balancer_allowed(args: ResourceValidationArgs) -> tuple[bool, str]:
    """Whether a public LoadBalancer is allowed, and which setting decided it.

    The policy config ``allowPublicLoadBalancer`` decides when given (an administrator's
    word either way); otherwise the stack's own ``allowPublicLoadBalancer`` setting, which
    the CLI passes to the pack with the rest of the stack config (default false).
    """
    config = args.get_config()
    if OPT_IN in config:
        return truthy(config[OPT_IN]), f"policy config {OPT_IN}"
    return truthy(stack_setting(OPT_IN)), f"stack setting {OPT_IN}"


def _public_fix(source: str) -> str:
    override = (f" (the {source}=false overrides the stack's opt-in)" if source.startswith("policy") else "")
    return ("Fix: set loadBalancerSourceRanges to the networks that need access (stack setting "
            "loadBalancerSourceRanges), or use ClusterIP and `kubectl port-forward`; to expose it to everyone on "
            f"purpose, opt in with the stack setting {OPT_IN}=true{override}.")


def _check_public_service(args: ResourceValidationArgs, report: ReportViolation) -> None:
    spec = as_map(args.props.get("spec"))
    if spec.get("type") != "LoadBalancer":
        return
    ranges = list(as_list(spec.get("loadBalancerSourceRanges")))
    if not ranges:
        annotation = as_map(dig(args.props, "metadata", "annotations")).get(SOURCE_RANGES_ANNOTATION)
        ranges = [r for r in str(annotation or "").split(",") if r.strip()]
    if not open_to_everyone(ranges):
        return
    allowed, source = public_load_balancer_allowed(args)
    if allowed:
        return
    opening = (f"loadBalancerSourceRanges {ranges} include 0.0.0.0/0 or ::/0" if ranges
               else "no loadBalancerSourceRanges")
    service = where("Service", k8s_name(args.props, args.name), args.name)
    report(f"{service} is a LoadBalancer with {opening}, so anyone who can route to it reaches what it exposes "
           f"(the Dask scheduler and Jupyter run the code they are sent). {_public_fix(source)}", args.urn)


def _check_public_chart_services(args: ResourceValidationArgs, report: ReportViolation) -> None:
    dask = dask_values(args)
    if dask is None:
        return
    exposed = [c for c in ("scheduler", "jupyter") if dig(dask.values, c, "serviceType") == "LoadBalancer"
               and (c != "jupyter" or dask.jupyter_enabled)]
    if not exposed:
        return
    allowed, source = public_load_balancer_allowed(args)
    if allowed:
        return
    keys = " and ".join(dask.key(f"{c}.serviceType") for c in exposed)
    report(f"{dask.release}: {keys} = LoadBalancer; the dask chart's Services cannot carry "
           "loadBalancerSourceRanges, so they are open to 0.0.0.0/0. Keep the chart's Services ClusterIP and expose "
           "through a separate Service with source ranges (the program does this for schedulerServiceType/"
           f"jupyterServiceType=LoadBalancer). {_public_fix(source)}", args.urn)


def _check_public_load_balancers(args: ResourceValidationArgs, report: ReportViolation) -> None:
    if args.resource_type == SERVICE:
        _check_public_service(args, report)
    elif args.resource_type == HELM_RELEASE:
        _check_public_chart_services(args, report)


no_public_load_balancer = ResourceValidationPolicy(
    name="no-public-load-balancer",
    description="No LoadBalancer Service is open to 0.0.0.0/0 (no loadBalancerSourceRanges, or 0.0.0.0/0 or ::/0 "
                "among them) unless allowPublicLoadBalancer opts in.",
    enforcement_level=MANDATORY,
    config_schema=PolicyConfigSchema(properties={
        OPT_IN: {
            "type": "boolean",
            "description": "Allow LoadBalancers open to 0.0.0.0/0. Unset (the default): the stack's own "
                           "allowPublicLoadBalancer setting decides, which defaults to false.",
        },
    }),
    validate=_check_public_load_balancers,
)


# --- pinned images in plain Kubernetes workloads -----------------------------------------
# Where each workload kind keeps its pod spec (``*Patch`` kinds keep it in the same place).
POD_SPEC_PATHS: dict[str, tuple[str, ...]] = {
    "Pod": ("spec",),
    "PodTemplate": ("template", "spec"),
    "Job": ("spec", "template", "spec"),
    "CronJob": ("spec", "jobTemplate", "spec", "template", "spec"),
    "Deployment": ("spec", "template", "spec"),
    "StatefulSet": ("spec", "template", "spec"),
    "DaemonSet": ("spec", "template", "spec"),
    "ReplicaSet": ("spec", "template", "spec"),
    "ReplicationController": ("spec", "template", "spec"),
}
CONTAINER_LISTS = ("initContainers", "containers", "ephemeralContainers")


def pod_spec(resource_type: str, props: Mapping[str, Any]) -> tuple[str, Mapping[str, Any]] | None:
    """(kind, pod spec) of a plain Kubernetes workload, or None for anything else."""
    if not resource_type.startswith("kubernetes:") or "helm.sh" in resource_type:
        return None
    kind = resource_type.rsplit(":", 1)[-1].removesuffix("Patch")
    path = POD_SPEC_PATHS.get(kind)
    if path is None:
        return None
    return kind, as_map(dig(props, *path))


def _check_container_images(args: ResourceValidationArgs, report: ReportViolation) -> None:
    found = pod_spec(args.resource_type, args.props)
    if found is None:
        return
    kind, spec = found
    workload = where(kind, k8s_name(args.props, args.name), args.name)
    for field in CONTAINER_LISTS:
        for container in map(as_map, as_list(spec.get(field))):
            image = container.get("image")
            if image is None and args.resource_type.endswith("Patch"):
                continue  # a patch that leaves the image alone
            problem = image_problem(image)
            if problem:
                report(f"{workload}: container {container.get('name')!r} ({field}) {problem}. Fix: pin the image "
                       "to a version tag that is not 'latest' (e.g. python:3.12-slim) or to a digest "
                       "(name@sha256:...).", args.urn)


container_images_pinned = ResourceValidationPolicy(
    name="container-images-pinned",
    description="Every container image in plain Kubernetes workloads (Jobs, Pods, Deployments, ...) is pinned by a "
                "version tag (not latest) or a digest.",
    enforcement_level=MANDATORY,
    validate=_check_container_images,
)

POLICIES = [dataset_claim_rwx_protected, no_public_load_balancer, container_images_pinned]
