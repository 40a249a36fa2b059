"""The team's reclaimer (components/dask/team/reclaimer.py), declared: a CronJob in the Dask operator's
namespace that deletes each person's DaskClusters older than their ``maxLifetime``, every five
minutes, whatever their scheduler answers. Pure builders of plain manifests (components/dask/
team.py declares them; tests/apiserver runs the script against a real server with its rights).

What it may do: list and delete DaskClusters in the people's namespaces, nothing else, nowhere
else (a Role in each, bound to its ServiceAccount). What a person may not do to escape it: change
its parameters (a ConfigMap in the operator's namespace, where they hold nothing), or keep a
deleted cluster alive with a finalizer of their own (the team's admission refuses any finalizer
on a Dask resource but the operator's own kopf ones: components/dask/team/admission.py).
"""
from __future__ import annotations

import importlib.resources
import json
from collections.abc import Sequence
from typing import Any

from components.dask.team.access import LABELS
from components.facts.dask_facts import RUN_AS
from components.kube.pod_hardening import hardened_pod, pod_security_context, run_as
from components.settings.model import TeamMember

NAME = "dask-reclaimer"
SCHEDULE = "*/5 * * * *"
CODE_MOUNT = "/opt/dask-tkg"
LIMITS_FILE = "limits.json"
RULES = [{"apiGroups": ["kubernetes.dask.org"], "resources": ["daskclusters"], "verbs": ["list", "delete"]}]
RESOURCES = {"requests": {"cpu": "50m", "memory": "64Mi"}, "limits": {"cpu": "200m", "memory": "128Mi"}}


def _meta(namespace: str, name: str = NAME) -> dict[str, Any]:
    return {"name": name, "namespace": namespace, "labels": dict(LABELS)}


def limits(team: Sequence[TeamMember]) -> dict[str, int]:
    """Each person's namespace and maximum lifetime in seconds (0: none)."""
    return {m.namespace: m.max_lifetime for m in team}


def code(team: Sequence[TeamMember]) -> dict[str, Any]:
    """The ConfigMap with the script and the limits it reads."""
    source = importlib.resources.files("components.dask.team").joinpath("reclaimer.py").read_text(encoding="utf-8")
    return {"reclaimer.py": source, LIMITS_FILE: json.dumps(limits(team), indent=2, sort_keys=True) + "\n"}


def config_map(namespace: str, team: Sequence[TeamMember]) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "ConfigMap", "metadata": _meta(namespace), "data": code(team)}


def service_account(namespace: str) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "ServiceAccount", "metadata": _meta(namespace)}


def role(person_namespace: str) -> dict[str, Any]:
    return {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "Role", "metadata": _meta(person_namespace),
            "rules": RULES}


def role_binding(person_namespace: str, namespace: str) -> dict[str, Any]:
    return {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "RoleBinding", "metadata": _meta(person_namespace),
            "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": NAME},
            "subjects": [{"kind": "ServiceAccount", "name": NAME, "namespace": namespace}]}


def cron_job(namespace: str, image: str, enforces_psp: bool) -> dict[str, Any]:
    """Every five minutes, one run at a time, hardened as the Dask pods; its token mounted, as its
    one job is calling the API (with the rights of ``role`` alone)."""
    container = {"name": "reclaimer", "image": image, "resources": RESOURCES,
                 "command": ["python", f"{CODE_MOUNT}/reclaimer.py", f"{CODE_MOUNT}/{LIMITS_FILE}"],
                 "volumeMounts": [{"name": "code", "mountPath": CODE_MOUNT, "readOnly": True}]}
    pod = hardened_pod({"restartPolicy": "Never", "containers": [container],
                        "volumes": [{"name": "code", "configMap": {"name": NAME}}]},
                       {**run_as(*RUN_AS), **pod_security_context(enforces_psp)})
    pod = {**pod, "serviceAccountName": NAME, "automountServiceAccountToken": True}
    return {"apiVersion": "batch/v1", "kind": "CronJob", "metadata": _meta(namespace),
            "spec": {"schedule": SCHEDULE, "concurrencyPolicy": "Forbid", "successfulJobsHistoryLimit": 1,
                     "failedJobsHistoryLimit": 3, "jobTemplate": {"spec": {
                         "backoffLimit": 1, "activeDeadlineSeconds": 240,
                         "template": {"metadata": {"labels": {"app.kubernetes.io/name": NAME}}, "spec": pod}}}}}
