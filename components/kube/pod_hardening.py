"""The hardening of the pods this program builds itself: the Pod Security Standards'
restricted level, as plain PodSpec fragments.

Pure functions without Pulumi: the Helm post-renderer (components/dask/post_render.py),
which Helm starts once per render, imports them too.
"""
from __future__ import annotations

from typing import Any

# The Pod Security Standards' restricted level (k8s.io/pod-security-admission ``policy/``):
# no privilege escalation and no capabilities for every container, and the runtime's default
# seccomp profile for the pod. No pod of this program outside the GPU operator's and the NFS
# provisioner's namespaces needs a capability: the Dask ports are above 1024, pip installs into
# the image's own environment, the data Job only downloads.
CONTAINER_SECURITY_CONTEXT = {"allowPrivilegeEscalation": False, "capabilities": {"drop": ["ALL"]}}
RUNTIME_DEFAULT_SECCOMP = {"seccompProfile": {"type": "RuntimeDefault"}}


def pod_security_context(enforces_psp: bool) -> dict[str, Any]:
    """The pod-level security context for the cluster's admission. Under PodSecurityPolicy
    (up to 1.24) a pod may name a seccomp profile only if its policy's
    ``seccomp.security.alpha.kubernetes.io/allowedProfileNames`` annotation allows it
    (Kubernetes 1.20 ``pkg/security/podsecuritypolicy/seccomp``), and TKG's two policies carry
    none: the pod names none there (refused otherwise: "seccomp may not be set", seen on the
    1.20 test cluster). Under Pod Security Admission the restricted level requires one."""
    return {} if enforces_psp else dict(RUNTIME_DEFAULT_SECCOMP)


def hardened_pod(spec: dict[str, Any], pod_context: dict[str, Any] | None = None) -> dict[str, Any]:
    """``spec`` (a PodSpec) with ``pod_context`` (``pod_security_context``) and every container's
    restricted security context merged in, and no service-account token: no Dask pod and not
    the data Job calls the Kubernetes API (the operator's controller, which does, runs in its
    own namespace from its own chart). Fields ``spec`` sets keep their value."""
    context = {**(pod_context or {}), **(spec.get("securityContext") or {})}
    spec = {**spec, "automountServiceAccountToken": False}
    if context:
        spec["securityContext"] = context
    for kind in ("initContainers", "containers"):
        if kind in spec:
            spec[kind] = [{**c, "securityContext": {**CONTAINER_SECURITY_CONTEXT, **(c.get("securityContext") or {})}}
                          for c in spec[kind]]
    return spec


def run_as(uid: int, gid: int) -> dict[str, Any]:
    """A pod-level context running every container as ``uid``:``gid``, not root, with ``gid``
    owning the pod's volumes (so files mounted 0440, the TLS keys, are readable)."""
    return {"runAsNonRoot": True, "runAsUser": uid, "runAsGroup": gid, "fsGroup": gid}
