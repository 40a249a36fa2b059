"""Every stack, at its own Kubernetes version: each pod the cluster receives (the program's,
every chart's, the Dask operator's) passes the Pod Security Standards level its namespace
declares, and every object of a stack on Kubernetes 1.25 or newer is valid against that
minor's upstream OpenAPI schemas (kubernetes-validate). The 1.20 and 1.21 stacks are checked
by the real 1.20 API server instead (tests/render/test_accepted.py, tests/apiserver).
"""
from __future__ import annotations

import copy

import kubernetes_validate
import pytest

from components.kube.pod_security import PSP_CLUSTER_ROLES
from tests.render.program import VARIANTS
from tests.security import pss
from tests.security.stack_objects import stack_objects

VALIDATE_FROM = (1, 25)  # kubernetes-validate 1.37.0 ships the schemas of 1.25 to 1.37


def _validated_minor(version: tuple[int, int, int]) -> str:
    return f"{version[0]}.{version[1]}.0"


# Under PodSecurityPolicy (TKG up to 1.24) a namespace's level is the TKG policy its service
# accounts are bound to (components/kube/pod_security.py); that policy decides seccomp, and
# refuses a pod that names a profile: the restricted level's seccomp check does not apply there.
PSP_LEVELS = {role: level for level, role in PSP_CLUSTER_ROLES.items()}
PSP_DECIDES = ("seccompProfile_restricted",)


def _levels(stack) -> dict[str, str]:
    """Each namespace's declared level: its Pod Security Admission label, or under
    PodSecurityPolicy the level of the TKG policy it is bound to (unbound: none admits)."""
    if stack.kubernetes_version >= (1, 25, 0):
        return {name: pss.namespace_level(ns) for name, ns in stack.namespaces().items()}
    bound = {o["metadata"]["namespace"]: PSP_LEVELS[o["roleRef"]["name"]] for _, _, o in stack.objects
             if o.get("kind") == "RoleBinding" and o["roleRef"]["name"] in PSP_LEVELS}
    return {name: bound.get(name, "unbound") for name in stack.namespaces()}


def _violations(stack, metadata: dict, spec: dict, level: str) -> list[str]:
    if level == "unbound":
        return ["no PodSecurityPolicy binding: every pod is refused"]
    found = pss.check_pod(metadata, spec, level)
    if stack.kubernetes_version < (1, 25, 0):
        found = [v for v in found if not v.startswith(PSP_DECIDES)]
    return found


@pytest.mark.parametrize("variant", list(VARIANTS))
def test_every_pod_passes_its_namespaces_level(variant):
    stack = stack_objects(variant)
    levels = _levels(stack)
    checked, failures = 0, []
    for origin, namespace, name, metadata, spec in stack.pods():
        if namespace not in levels:
            failures.append(f"{origin}: {name} runs in {namespace!r}, a namespace the program does not declare")
            continue
        for violation in _violations(stack, metadata, spec, levels[namespace]):
            failures.append(f"{origin}: {name} in {namespace} ({levels[namespace]}): {violation}")
        checked += 1
    assert checked >= 4, f"{variant}: only {checked} pods found"
    assert not failures, "\n".join(failures)


# What each namespace of the program declares: the Dask and operator namespaces restricted, the
# NFS provisioner baseline (root and an nfs volume; under PSP that is TKG's privileged policy,
# TKG having no baseline one), the GPU operator privileged (NVIDIA require it).
DECLARED = {"rapidsai": "restricted", "dask-operator": "restricted", "nfs-provisioner": "baseline",
            "gpu-operator": "privileged", "gpu-metrics": "restricted"}
UNDER_PSP = {"restricted": "restricted", "baseline": "privileged", "privileged": "privileged"}


@pytest.mark.parametrize("variant", list(VARIANTS))
def test_the_namespaces_declare_their_levels(variant):
    stack = stack_objects(variant)
    levels = _levels(stack)
    expected = {ns: level for ns, level in DECLARED.items() if ns in levels}
    if stack.kubernetes_version < (1, 25, 0):
        expected = {ns: UNDER_PSP[level] for ns, level in expected.items()}
    assert levels == expected and {"rapidsai", "gpu-operator"} <= set(levels), levels


@pytest.mark.parametrize("variant", list(VARIANTS))
def test_the_dask_pods_run_without_token_escalation_or_capabilities(variant):
    """What the issue asks of every pod of the Dask namespace, whatever its declared level."""
    stack = stack_objects(variant)
    dask_namespace = next(ns for _, ns, o in stack.objects if o.get("kind") == "PersistentVolumeClaim")
    dask_pods = [(n, s) for _, ns, n, _, s in stack.pods() if ns == dask_namespace]
    assert len(dask_pods) >= 3, dask_pods
    for name, spec in dask_pods:
        if name == "Job/dask-environment":  # its one call: the record, as an account that may patch one ConfigMap
            assert spec["automountServiceAccountToken"] is True and spec["serviceAccountName"] == "dask-environment"
        else:
            assert spec.get("automountServiceAccountToken") is False, name
        if stack.kubernetes_version >= (1, 25, 0):  # under PodSecurityPolicy the policy decides seccomp
            assert spec["securityContext"]["seccompProfile"] == {"type": "RuntimeDefault"}, name
        else:
            assert "seccompProfile" not in spec.get("securityContext", {}), name
        for container in spec["containers"]:
            context = container.get("securityContext") or {}
            assert context.get("allowPrivilegeEscalation") is False, (name, container["name"])
            assert context.get("capabilities", {}).get("drop") == ["ALL"], (name, container["name"])
            assert not any("valueFrom" in e and "secretKeyRef" in e["valueFrom"]
                           and e["valueFrom"]["secretKeyRef"]["key"].endswith(".key")
                           for e in container.get("env") or []), (name, container["name"])


def _restricted_dask_pod(stack) -> tuple[str, dict]:
    """The stack's scheduler pod as the program makes it (the controls' starting point)."""
    name, spec = next((n, s) for _, _, n, _, s in stack.pods() if "scheduler" in n)
    spec = copy.deepcopy(spec)
    assert pss.check_pod({}, spec, "restricted") == [], "the control's starting pod must pass"
    return name, spec


def test_controls_a_privileged_pod_and_a_root_pod_are_refused_at_restricted():
    _, spec = _restricted_dask_pod(stack_objects("dev"))
    privileged = copy.deepcopy(spec)
    privileged["containers"][0]["securityContext"]["privileged"] = True
    assert any(v.startswith("privileged") for v in pss.check_pod({}, privileged, "restricted"))
    root = copy.deepcopy(spec)
    root["securityContext"].update(runAsNonRoot=False, runAsUser=0)
    found = pss.check_pod({}, root, "restricted")
    assert any(v.startswith("runAsNonRoot") for v in found) and any(v.startswith("runAsUser") for v in found)


def _core_objects(stack) -> list[tuple[str, dict]]:
    """Objects of the Kubernetes API groups (custom resources are checked against their CRDs)."""
    out = []
    for origin, _, obj in stack.objects:
        group = obj.get("apiVersion", "").rpartition("/")[0]
        if group == "" or group.endswith(".k8s.io") or "." not in group:
            out.append((origin, obj))
    return out


@pytest.mark.parametrize("variant", [v for v in VARIANTS if stack_objects(v).kubernetes_version >= (*VALIDATE_FROM, 0)])
def test_every_object_is_valid_for_the_stacks_kubernetes_minor(variant):
    stack = stack_objects(variant)
    minor = _validated_minor(stack.kubernetes_version)
    objects = _core_objects(stack)
    assert len(objects) >= 20
    failures = []
    for origin, obj in objects:
        try:
            kubernetes_validate.validate(obj, minor, strict=True)
        except (kubernetes_validate.ValidationError, kubernetes_validate.SchemaNotFoundError,
                kubernetes_validate.InvalidSchemaError) as exc:
            failures.append(f"{origin}: {obj['kind']}/{obj['metadata'].get('name')}: {str(exc)[:300]}")
    assert not failures, f"Kubernetes {minor}:\n" + "\n".join(failures)


def test_control_an_api_the_minor_no_longer_serves_fails():
    """GPU operator v1.9.1 (the paper's) renders a policy/v1beta1 PodSecurityPolicy: gone in 1.25."""
    stack = stack_objects("reference")
    psps = [obj for _, obj in _core_objects(stack) if obj["kind"] == "PodSecurityPolicy"]
    assert psps, "the reference stack's GPU operator renders a PodSecurityPolicy"
    with pytest.raises(kubernetes_validate.SchemaNotFoundError):
        kubernetes_validate.validate(psps[0], "1.32.0", strict=True)
    kubernetes_validate.validate(_restricted_dask_pod_object(), "1.32.0", strict=True)  # the same check passes a Pod


def _restricted_dask_pod_object() -> dict:
    _, spec = _restricted_dask_pod(stack_objects("dev"))
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "control"}, "spec": spec}
