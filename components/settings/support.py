"""What of the configured platform is out of support today: said once at ``pulumi preview``,
so a team deploying the paper's stack as published knows what it is running.

Facts, each with its source (``../shared/reference/current-platform.md`` collects them):

* vSphere 7 left general support in October 2025 (Broadcom product lifecycle).
* vSphere 8 lists the TKRs of Kubernetes 1.20 as not compatible (VMware docs GUID-B3122965),
  and upstream support for Kubernetes 1.20 ended on 2022-02-28 (kubernetes.io, "Patch
  Releases", non-active branch history).
* A GPU operator release whose objects use APIs Kubernetes 1.25 removed
  (``components.addons.facts``: ``removed_apis``, with its source; v1.9.1 ships a
  ``policy/v1beta1`` PodSecurityPolicy and creates ``node.k8s.io/v1beta1`` RuntimeClasses).
"""
from __future__ import annotations

from components.addons import facts as addon_facts
from components.settings.checks import MIN_V1ALPHA3_KUBERNETES
from components.settings.model import Settings

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
                     " gone from Kubernetes 1.25)")
    if not parts:
        return None
    return ("out of support today: " + "; ".join(parts) + ". The stack deploys them as configured (the paper's"
            " platform as published); for the current platform see README, \"On vSphere 8 U3 / VMware Cloud"
            " Foundation 9\".")
