"""What of the configured platform is out of support today: said once at ``pulumi preview``,
so a team deploying the paper's stack as published knows what it is running.

Facts, each with its source:

* vSphere 7 left general support in October 2025 (Broadcom product lifecycle).
* vSphere 8 lists the TKRs of Kubernetes 1.20 as not compatible (VMware docs GUID-B3122965),
  and upstream support for Kubernetes 1.20 ended on 2022-02-28 (kubernetes.io, "Patch
  Releases", non-active branch history).
* A GPU operator release whose objects use APIs Kubernetes 1.25 removed
  (``components.facts.addon_facts``: ``removed_apis``, with its source; v1.9.1 ships a
  ``policy/v1beta1`` PodSecurityPolicy and creates ``node.k8s.io/v1beta1`` RuntimeClasses).
"""
from __future__ import annotations

import datetime
import importlib.metadata
import sys

import components.facts.addon_facts as addon_facts
import components.facts.dask_facts as dask_facts
import components.facts.support_matrix as support_matrix
import components.settings.schema as schema
from components.settings.checks import MIN_V1ALPHA3_KUBERNETES
from components.settings.model import TKC_V1ALPHA2, Settings

LAST_VSPHERE_OUT_OF_SUPPORT = 7
FIRST_KUBERNETES_STILL_RUN = MIN_V1ALPHA3_KUBERNETES[:2]  # the TKRs vSphere 8 still runs


def support_notice(s: Settings) -> str | None:
    """One sentence naming every out-of-support part of ``s``, or None."""
    parts = []
    if s.vsphere.version <= LAST_VSPHERE_OUT_OF_SUPPORT:
        parts.append(f"vSphere {s.vsphere.version} (end of general support: October 2025)")
    if s.cluster.kubernetes_version and s.cluster.kubernetes_version[:2] < FIRST_KUBERNETES_STILL_RUN:
        major, minor, _ = s.cluster.kubernetes_version
        parts.append(f"TKR {s.cluster.tkr} (Kubernetes {major}.{minor}: upstream support ended 2022-02-28,"
                     " and vSphere 8 no longer runs it)")
    operator = addon_facts.gpu_operator_facts(s.gpu_operator.version)
    if operator is not None and operator.removed_apis:
        parts.append(f"GPU operator {s.gpu_operator.version} (uses {' and '.join(operator.removed_apis)},"
                     f" gone from Kubernetes 1.{addon_facts.APIS_REMOVED_IN[1]})")
    if not parts:
        return None
    return ("out of support today: " + "; ".join(parts) + ". The stack deploys them as configured (the paper's"
            " platform as published); for the current platform see docs/deploy.md, \"The current defaults,"
            " and why\".")


def runner_versions() -> tuple[str, str]:
    """The Python (major.minor) and Dask the runner runs: the program and ``python -m
    workloads.run`` share one environment (requirements.txt), so these are the runner's."""
    return f"{sys.version_info.major}.{sys.version_info.minor}", importlib.metadata.version("distributed")


def runner_image_notice(s: Settings, runner: tuple[str, str] | None = None) -> str | None:
    """Why the runner cannot drive the image's pods, with what to set instead, or None.

    The runner's preflight refuses workers whose Dask differs from its own, and task graphs
    pickled by one Python minor version need not load in another."""
    facts = dask_facts.image_facts(s.dask.image)
    if facts is None or facts.python is None:
        return None
    python, dask = runner or runner_versions()
    theirs = facts.dask_version or s.dask.dask_version
    if (facts.python, theirs) == (python, dask):
        return None
    return (f"the runner (python -m workloads.run: Python {python}, Dask {dask}) cannot drive daskImage"
            f" {s.dask.image} (Python {facts.python}, Dask {theirs}): its preflight refuses workers of another"
            f" Dask. To run the benchmarks on this stack, set daskBackend {schema.default('daskBackend')},"
            f" workerEnvironment {schema.default('workerEnvironment')} (the pods run the locked environment"
            f" components/dask/environment/worker-cu13.lock), daskImage {schema.default('daskImage')},"
            f" daskImageDaskVersion {schema.default('daskImageDaskVersion')} and extraPipPackages"
            f" \"{schema.default('extraPipPackages')}\" (the current platform's defaults, Pulumi.yaml), or build"
            " images/dask-runtime.")


def support_warnings(s: Settings, today: datetime.date | None = None) -> list[str]:
    """What NVIDIA does not support in the GPU settings, each naming the settings involved.

    Warnings, not refusals: the hosts' vGPU manager decides the guest driver, so a site on an
    older vGPU release must be able to deploy its matching driver; it is told, at preview, that
    the pairing is out of support (``components.facts.support_matrix``, with the sources)."""
    if not s.gpu_nodes:
        return []
    day = today or datetime.date.today()
    return [w for w in (_driver_branch_warning(s, day), _driver_listed_warning(s), _vkr_range_warning(s)) if w]


def _driver_branch_warning(s: Settings, day: datetime.date) -> str | None:
    driver = s.gpu_operator.driver_version
    branch = support_matrix.vgpu_branch(driver)
    current = support_matrix.vgpu_branch(support_matrix.CURRENT_GUEST_DRIVER)
    if branch is None or current is None or branch.supported_on(day):
        return None
    return (f"vgpuDriverVersion {driver} is a vGPU {branch.vgpu} guest driver (R{branch.branch}), whose support"
            f" ended in {branch.supported_until} ({branch.source}). The hosts' vGPU manager decides the guest"
            f" driver: upgrade the hosts to a supported vGPU release, e.g. vGPU {current.vgpu} (R{current.branch},"
            f" supported to {current.supported_until}), and set vgpuDriverVersion to its guest driver"
            f" ({support_matrix.CURRENT_GUEST_DRIVER} for vGPU {current.vgpu}.0)")


def _driver_listed_warning(s: Settings) -> str | None:
    op = s.gpu_operator
    listed = support_matrix.operator_support(op.version)
    branch = addon_facts.driver_branch(op.driver_version)
    if listed is None or branch is None or branch in listed.branches:
        return None
    return (f"vgpuDriverVersion {op.driver_version} (R{branch}) is not on a driver branch gpuOperatorVersion"
            f" {op.version} lists (R{', R'.join(map(str, listed.branches))}: {', '.join(listed.drivers)};"
            f" {listed.source})")


def _vkr_range_warning(s: Settings) -> str | None:
    listed = support_matrix.operator_support(s.gpu_operator.version)
    if listed is None or s.cluster.api_version == TKC_V1ALPHA2 or not s.cluster.kubernetes_version:
        return None
    (low, high), minor = listed.vks_kubernetes, tuple(s.cluster.kubernetes_version[:2])
    if low <= minor <= high:
        return None
    return (f"tkr {s.cluster.tkr} (Kubernetes {minor[0]}.{minor[1]}) is outside the range gpuOperatorVersion"
            f" {s.gpu_operator.version} is validated on with VKS, {low[0]}.{low[1]}-{high[0]}.{high[1]}"
            f" ({listed.vks_os}; {listed.source})")
