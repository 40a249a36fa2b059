"""The project's Pod Security checker (tests/security/pss.py, pod-security-admission v0.36.2 at
"latest") against the real admission of the current stacks' server (1.33: the PodSecurity plugin,
on by default, reading the namespace's ``pod-security.kubernetes.io/enforce`` label), on the same
pods: every pod of the current stacks in a namespace labelled as the program labels its own, and
a pod with one attack each, sent as a server-side dry run (admission runs, nothing is stored).

They agree pod for pod, reason for reason, with one kind of difference, named in
:data:`NEWER_THAN_THE_SERVER`: the checks upstream added after 1.33, which the checker (v0.36.2)
has and the 1.33 server does not. A pod the real admission refuses is refused with the server's
own message, for example ``pods "p" is forbidden: violates PodSecurity "restricted:latest":
privileged (container "worker" must not set securityContext.privileged=true)``.
"""
from __future__ import annotations

import copy
import re
import secrets

import pytest

from tests.kube.binaries import CURRENT
from tests.kube.rest import KubeApiError, apply_manifest
from tests.security import pss
from tests.security.stack_objects import stack_objects

pytestmark = pytest.mark.apiserver

# Each check's ForbiddenReason, the phrase the server's message gives it, from
# k8s.io/pod-security-admission v0.33.13 policy/check_*.go (the server's own version).
REASONS = {
    "allowPrivilegeEscalation": "allowPrivilegeEscalation != false",
    "appArmorProfile": "forbidden AppArmor profile",
    "capabilities_baseline": "non-default capabilities",
    "capabilities_restricted": "unrestricted capabilities",
    "hostNamespaces": "host namespaces",
    "hostPathVolumes": "hostPath volumes",
    "hostPorts": "hostPort",
    "privileged": "privileged",
    "procMount": "procMount",
    "restrictedVolumes": "restricted volume types",
    "runAsNonRoot": "runAsNonRoot != true",
    "runAsUser": "runAsUser=0",
    "seLinuxOptions": "seLinuxOptions",
    "seccompProfile_baseline": "seccompProfile",
    "seccompProfile_restricted": "seccompProfile",
    "sysctls": "forbidden sysctls",
    "windowsHostProcess": "hostProcess",
}
# Checks of the checker's v0.36.2 that v0.33.13 (the server) does not register: its policy/ has
# neither check_hostProbesAndHostLifecycle.go nor a procMount_restricted check.
NEWER_THAN_THE_SERVER = {"hostProbesAndHostLifecycle", "procMount_restricted"}
CURRENT_VARIANTS = ("dev", "full")


def checker_ids(metadata: dict, spec: dict, level: str) -> set[str]:
    return {message.split(":", 1)[0] for message in pss.check_pod(metadata, spec, level)}


def server_reasons(message: str) -> set[str]:
    """The reasons a PodSecurity refusal lists: ``violates PodSecurity "<level>:latest": r1 (..), r2 (..)``."""
    listed = message.split('":', 1)[1] if "violates PodSecurity" in message else ""
    # each reason is followed by its detail in parentheses (nested ones included)
    found, depth, current = [], 0, ""
    for char in listed:
        if char == "(":
            if depth == 0:
                found.append(current.strip(" ,"))
                current = ""
            depth += 1
        elif char == ")":
            depth -= 1
        elif depth == 0:
            current += char
    return {reason for reason in found if reason}


def expected_reasons(ids: set[str]) -> set[str]:
    return {REASONS[i] for i in ids - NEWER_THAN_THE_SERVER}


def labelled_namespace(api, level: str, base: str) -> str:
    name = f"{base[:40]}-{secrets.token_hex(3)}"
    labels = {f"pod-security.kubernetes.io/{mode}": level for mode in ("enforce", "audit", "warn")}
    apply_manifest(api, {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name, "labels": labels}})
    return name


def admit(api, namespace: str, metadata: dict, spec: dict) -> str | None:
    """None when the real admission admits the pod (dry run), else the server's message."""
    pod = {"apiVersion": "v1", "kind": "Pod", "spec": copy.deepcopy(spec),
           "metadata": {"name": "p", "namespace": namespace, **{k: v for k, v in metadata.items()
                                                                 if k in ("labels", "annotations")}}}
    try:
        apply_manifest(api, pod, dry_run=True)
    except KubeApiError as exc:
        assert exc.status == 403 and "violates PodSecurity" in exc.message, exc.message
        return exc.message
    return None


@pytest.mark.parametrize("variant", CURRENT_VARIANTS)
def test_the_real_admission_and_the_checker_agree_on_every_pod_of_the_stack(kube_apiserver, variant):
    assert kube_apiserver.version["gitVersion"] == CURRENT.version
    api = kube_apiserver.api_client
    stack = stack_objects(variant)
    assert stack.kubernetes_version >= (1, 25, 0), f"{variant} is not a Pod Security Admission stack"
    namespaces = {name: labelled_namespace(api, pss.namespace_level(obj), name)
                  for name, obj in stack.namespaces().items()}
    judged, disagreements = 0, []
    for origin, namespace, name, metadata, spec in stack.pods():
        level = pss.namespace_level(stack.namespaces()[namespace])
        refused = admit(api, namespaces[namespace], metadata, spec)
        ours = expected_reasons(checker_ids(metadata, spec, level))
        theirs = server_reasons(refused) if refused else set()
        if ours != theirs:
            disagreements.append(f"{origin} {name} in {namespace} ({level}): checker {sorted(ours)}, "
                                 f"server {refused or 'admitted'}")
        judged += 1
    assert judged >= 5, f"{variant}: only {judged} pods"
    assert not disagreements, "\n".join(disagreements)


def restricted_pod() -> tuple[dict, dict]:
    container = {"name": "worker", "image": "registry.example/dask:1", "securityContext": {
        "allowPrivilegeEscalation": False, "capabilities": {"drop": ["ALL"]}}}
    spec = {"securityContext": {"runAsNonRoot": True, "runAsUser": 1000, "seccompProfile": {"type": "RuntimeDefault"}},
            "containers": [container], "volumes": [{"name": "tmp", "emptyDir": {}}]}
    return {"labels": {"app": "attack"}}, spec


def _worker(spec: dict) -> dict:
    return spec["containers"][0]


# What a tenant could write into a pod template (a DaskCluster's, say), one attack each.
ATTACKS = {
    # (privileged implies escalation: the API refuses privileged=true with allowPrivilegeEscalation=false)
    "privileged": lambda s: _worker(s)["securityContext"].update(privileged=True, allowPrivilegeEscalation=True),
    "host network": lambda s: s.update(hostNetwork=True),
    "host path": lambda s: s["volumes"].append({"name": "root", "hostPath": {"path": "/"}}),
    "root user": lambda s: s["securityContext"].update(runAsNonRoot=False, runAsUser=0),
    "sys admin": lambda s: _worker(s)["securityContext"]["capabilities"].update(add=["SYS_ADMIN"]),
    "escalation": lambda s: _worker(s)["securityContext"].update(allowPrivilegeEscalation=True),
    "unconfined seccomp": lambda s: s["securityContext"].update(seccompProfile={"type": "Unconfined"}),
    "host port": lambda s: _worker(s).update(ports=[{"containerPort": 22, "hostPort": 22}]),
    "unsafe sysctl": lambda s: s["securityContext"].update(sysctls=[{"name": "kernel.msgmax", "value": "1"}]),
    "probe of a host": lambda s: _worker(s).update(
        livenessProbe={"tcpSocket": {"port": 22, "host": "169.254.169.254"}}),
}


@pytest.mark.parametrize("attack", list(ATTACKS))
@pytest.mark.parametrize("level", ["restricted", "baseline"])
def test_each_attack_is_judged_alike_by_the_real_admission_and_the_checker(kube_apiserver, attack, level):
    api = kube_apiserver.api_client
    metadata, spec = restricted_pod()
    ATTACKS[attack](spec)
    ours = checker_ids(metadata, spec, level)
    refused = admit(api, labelled_namespace(api, level, f"attack-{level}"), metadata, spec)
    theirs = server_reasons(refused) if refused else set()
    assert theirs == expected_reasons(ours), f"checker {sorted(ours)}; server: {refused or 'admitted'}"
    if ours - NEWER_THAN_THE_SERVER:
        assert refused is not None and re.search(rf'violates PodSecurity "{level}:latest"', refused), refused


def test_a_privileged_pod_in_a_restricted_namespace_is_refused_by_the_server_itself(kube_apiserver):
    """Only the real admission stands between this pod and the node: nothing else in the request
    is wrong (the same pod is admitted in a privileged namespace)."""
    api = kube_apiserver.api_client
    metadata, spec = restricted_pod()
    ATTACKS["privileged"](spec)
    refused = admit(api, labelled_namespace(api, "restricted", "restricted"), metadata, spec)
    assert refused is not None
    assert 'violates PodSecurity "restricted:latest": privileged (container "worker" must not set ' \
           'securityContext.privileged=true)' in refused, refused
    assert admit(api, labelled_namespace(api, "privileged", "privileged"), metadata, spec) is None
