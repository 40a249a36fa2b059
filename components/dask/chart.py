"""The pinned ``dask`` chart (https://helm.dask.org) and the values keys it reads.

A key the chart does not read is silently ignored by Helm (the RAPIDS docs' own sample
set ``worker.dask_worker`` at the wrong level), so the values builder is checked against
this schema: every key it emits must be one the pinned chart's templates read.
"""
from __future__ import annotations

from typing import Any

REPOSITORY = "https://helm.dask.org"
CHART = "dask"
SCHEDULER_PORT = 8786
DASHBOARD_PORT = 8787  # the chart's webUI service port; the paper's users opened :8787
JUPYTER_PORT = 80

_IMAGE = {"repository": str, "tag": str, "pullPolicy": str, "pullSecrets": list}
_MOUNTS = {"volumes": list, "volumeMounts": list}
_COMMON = {"resources": dict, "tolerations": list, "affinity": dict, "nodeSelector": dict,
           "securityContext": dict, "env": list}

# The values schema of chart 2024.1.x (app 2024.1.0): key -> type, or nested schema.
SCHEMA: dict[str, Any] = {
    "scheduler": {
        "name": str, "enabled": bool, "image": _IMAGE, "replicas": int, "serviceType": str,
        "loadBalancerIP": str, "servicePort": int, "serviceAnnotations": dict, "extraArgs": list,
        "livenessProbe": dict, "readinessProbe": dict, "serviceAccountName": str, **_COMMON,
    },
    "webUI": {"name": str, "servicePort": int},
    "worker": {
        "name": str, "image": {**_IMAGE, "dask_worker": str}, "replicas": int, "extraArgs": list,
        "mounts": _MOUNTS, "annotations": dict, "port": (str, int), "portDashboard": int,
        "threads_per_worker": int, "custom_scheduler_url": str, "livenessProbe": dict,
        "readinessProbe": dict, "serviceAccountName": str, **_COMMON,
    },
    "jupyter": {
        "name": str, "enabled": bool, "rbac": bool, "image": _IMAGE, "serviceType": str,
        "servicePort": int, "password": str, "passwordHint": str, "command": list, "args": list,
        "extraConfig": str, "mounts": _MOUNTS, "serviceAccountName": str, **_COMMON,
    },
}


def unknown_keys(values: dict[str, Any], schema: dict[str, Any] = SCHEMA, prefix: str = "") -> list[str]:
    """Dotted paths of keys (or values of the wrong type) the pinned chart would not read."""
    problems = []
    for key, value in values.items():
        path = f"{prefix}{key}"
        if key not in schema:
            problems.append(f"{path}: not read by the pinned dask chart")
            continue
        expected = schema[key]
        if isinstance(expected, dict):
            if not isinstance(value, dict):
                problems.append(f"{path}: must be a mapping")
            else:
                problems.extend(unknown_keys(value, expected, f"{path}."))
        elif not isinstance(value, expected):
            problems.append(f"{path}: must be {expected}, got {type(value).__name__}")
    return problems
