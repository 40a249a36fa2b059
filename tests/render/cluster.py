"""Rendered objects onto the Kubernetes 1.20 API server stand-in (``tests/apiserver``).

Objects that would start something (Deployments, DaemonSets, ...) go through a server-side
dry run: there is no scheduler or kubelet, but a dry run still runs defaulting, admission
and schema validation. Everything else is created for real, CRDs first (and waited for), so
a custom resource is validated against its own chart's CRD.
"""
from __future__ import annotations

from collections.abc import Iterable

from tests.kube.crds import install_crd
from tests.kube.rest import KubeApiError, api_request, apply_manifest, delete_object

DRY_RUN_KINDS = {"Deployment", "DaemonSet", "StatefulSet", "Job", "Pod", "ReplicaSet"}


def api_versions(api) -> tuple[str, ...]:
    """Every ``group/version`` and ``group/version/Kind`` the server serves, as Helm's
    ``--api-versions`` takes them (what ``helm install`` would read from discovery)."""
    found: list[str] = []
    versions = [f"{v}" for v in api_request(api, "GET", "/api")["versions"]]
    for group in api_request(api, "GET", "/apis")["groups"]:
        versions += [v["groupVersion"] for v in group["versions"]]
    for version in versions:
        prefix = f"/api/{version}" if "/" not in version else f"/apis/{version}"
        found.append(version)
        found += [f"{version}/{r['kind']}" for r in api_request(api, "GET", prefix)["resources"]
                  if "/" not in r["name"]]
    return tuple(found)


def _apply_fresh(api, manifest: dict, namespace: str) -> dict:
    """Create ``manifest``; one left by another variant's run is deleted first."""
    dry_run = manifest["kind"] in DRY_RUN_KINDS
    try:
        return apply_manifest(api, manifest, dry_run=dry_run, namespace=namespace)
    except KubeApiError as exc:
        if exc.status != 409:
            raise
    meta = manifest["metadata"]
    delete_object(api, manifest["apiVersion"], manifest["kind"], meta["name"], meta.get("namespace") or namespace)
    return apply_manifest(api, manifest, dry_run=dry_run, namespace=namespace)


def _order(obj: dict) -> int:
    return {"CustomResourceDefinition": 0, "Namespace": 1}.get(obj["kind"], 2)


def submit(api, objects: Iterable[dict], namespace: str) -> list[str]:
    """Send every object (release namespace ``namespace``); returns ``Kind/name`` of each
    accepted one. Raises KubeApiError (with the server's message) on the first refusal."""
    apply_manifest(api, {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": namespace}},
                   update_existing=True)
    accepted = []
    for obj in sorted(objects, key=_order):
        if obj["kind"] == "CustomResourceDefinition":
            install_crd(api, obj)
        else:
            answer = _apply_fresh(api, obj, namespace)
            assert answer["metadata"]["name"] == obj["metadata"]["name"]
        accepted.append(f"{obj['kind']}/{obj['metadata']['name']}")
    return accepted
