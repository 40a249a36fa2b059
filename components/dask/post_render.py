"""Helm post-renderer of the ``dask`` chart releases: what the pinned chart (2024.1.1) cannot
express, applied to the objects Helm renders, before they reach the cluster.

The chart takes a pod-level ``securityContext`` and worker/Jupyter mounts as values, but has
no value for a container's ``securityContext``, for ``automountServiceAccountToken`` or for the
scheduler's volumes (``templates/dask-*-deployment.yaml``). The Pod Security Standards'
restricted level needs the first on every container; the TLS key and certificate files need
the last. The prepared environment's check (``podspec.with_environment_check``) is an init
container the chart has no value for either. So every Deployment of the chart leaves here as
``pod_hardening.hardened_pod`` makes a pod (the operator backend builds its pods with the same
function), and every container whose environment names TLS files (``podspec.tls_env``) gets
exactly its role's keys mounted from the release's TLS Secret (``podspec.tls_secret_name`` of
the chart's object prefix).

Helm runs ``components/dask/post-render`` (the release's ``postrender``), which runs this
module with the project's interpreter: rendered YAML on stdin, the changed objects on stdout
(JSON documents, which are YAML). Objects that are not the chart's Deployments pass unchanged.
"""
from __future__ import annotations

import json
import sys
from collections.abc import Iterable
from pathlib import Path
from typing import Any

import yaml

from components.dask import podspec
from components.dask.values import fullname
from components.kube.pod_hardening import hardened_pod
from workloads import contract

LAUNCHER = Path(__file__).resolve().with_name("post-render")
CHART_APP_LABEL = ("app", "dask")  # templates/_helpers.tpl "dask.name": the chart's name


def _chart_deployment(obj: dict[str, Any]) -> bool:
    labels = obj.get("metadata", {}).get("labels") or {}
    key, value = CHART_APP_LABEL
    return obj.get("kind") == "Deployment" and labels.get(key) == value


def _with_tls(spec: dict[str, Any], secret: str) -> dict[str, Any]:
    """Mount each TLS-using container's role keys (one role per pod in this chart)."""
    containers, volumes = [], [v for v in spec.get("volumes") or [] if v.get("name") != contract.TLS_VOLUME]
    roles = set()
    for rendered in spec.get("containers", []):
        container, role = rendered, podspec.tls_role(rendered.get("env") or [])
        if role:
            roles.add(role)
            mounts = [m for m in rendered.get("volumeMounts") or [] if m.get("name") != contract.TLS_VOLUME]
            container = {**rendered, "volumeMounts": [*mounts, contract.TLS_MOUNT]}
        containers.append(container)
    if len(roles) > 1:
        raise ValueError(f"one pod with the TLS files of several roles: {sorted(roles)}")
    if roles:
        volumes.append(contract.tls_volume(roles.pop(), secret))
    changed = {**spec, "containers": containers}
    if volumes:
        changed["volumes"] = volumes
    return changed


def harden(obj: dict[str, Any]) -> dict[str, Any]:
    """One rendered object, changed if it is one of the chart's Deployments."""
    if not _chart_deployment(obj):
        return obj
    release = obj["metadata"]["labels"].get("release")
    if not release:
        raise ValueError(f"Deployment {obj['metadata']['name']} has no release label")
    template = obj["spec"]["template"]
    spec = hardened_pod(podspec.with_environment_check(
        _with_tls(template["spec"], podspec.tls_secret_name(fullname(release)))))
    return {**obj, "spec": {**obj["spec"], "template": {**template, "spec": spec}}}


def post_render(documents: Iterable[dict[str, Any] | None]) -> list[dict[str, Any]]:
    return [harden(doc) for doc in documents if doc]


def main() -> int:
    try:
        objects = post_render(yaml.safe_load_all(sys.stdin))
    except (yaml.YAMLError, ValueError, KeyError) as exc:
        print(f"dask-tkg post-render: {exc}", file=sys.stderr)
        return 1
    sys.stdout.write("".join(f"---\n{json.dumps(o)}\n" for o in objects))
    return 0


if __name__ == "__main__":
    sys.exit(main())
