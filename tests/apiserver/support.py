"""What the API server tests share: the program's declared objects for a stack, and a create
that replaces what another stack's run left."""
from __future__ import annotations

from tests.kube.rest import KubeApiError, apply_manifest, delete_object
from tests.program.graph import run_program


def create_fresh(api, manifest: dict, dry_run: bool) -> dict:
    """Create ``manifest``; one left by another stack's run is deleted first (namespaces,
    which cannot finish deleting without a controller-manager, are updated instead)."""
    if manifest["kind"] == "Namespace":
        return apply_manifest(api, manifest, update_existing=True)
    try:
        return apply_manifest(api, manifest, dry_run=dry_run)
    except KubeApiError as exc:
        if exc.status != 409:
            raise
    meta = manifest["metadata"]
    delete_object(api, manifest["apiVersion"], manifest["kind"], meta["name"], meta.get("namespace"))
    return apply_manifest(api, manifest, dry_run=dry_run)


def declared(stack: str, **config):
    graph = run_program(stack, config=config)
    assert graph.error is None, graph.traceback
    return graph, list(graph.kubernetes_objects())
