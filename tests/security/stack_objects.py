"""Every Kubernetes object a stack puts on its workload cluster, as the cluster receives it.

- the program's own objects, from the program run under Pulumi's mocks (tests/program);
- every Helm release rendered by the real Helm engine from its pinned chart, with the values
  the program builds and through the release's own post-renderer (tests/render);
- the pods the Dask operator's controller makes of a ``DaskCluster`` / ``DaskWorkerGroup``:
  it copies ``spec.scheduler.spec`` and ``spec.worker.spec`` into Deployments unchanged
  (dask-kubernetes 2026.3.0 ``operator/controller/controller.py``, ``build_scheduler_deployment_spec``
  and ``build_worker_deployment_spec``), so those specs are the pods.
"""
from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from functools import cache

from tests.program.graph import run_program
from tests.render.program import VARIANTS, program_releases
from tests.render.stacks import stack_settings


@dataclass(frozen=True)
class StackObjects:
    variant: str
    kubernetes_version: tuple[int, int, int]
    objects: tuple[tuple[str, str, dict], ...]  # (origin, namespace, object)

    def pods(self) -> Iterator[tuple[str, str, str, dict, dict]]:
        """(origin, namespace, name, pod metadata, pod spec) of every pod template."""
        from tests.security.pss import pod_template

        for origin, namespace, obj in self.objects:
            if obj.get("apiVersion", "").startswith("kubernetes.dask.org/"):
                yield from _dask_pods(origin, namespace, obj)
                continue
            template = pod_template(obj)
            if template:
                yield origin, namespace, f"{obj['kind']}/{obj['metadata']['name']}", template[0], template[1]

    def namespaces(self) -> dict[str, dict]:
        return {o["metadata"]["name"]: o for _, _, o in self.objects if o.get("kind") == "Namespace"}


def _dask_pods(origin: str, namespace: str, obj: dict) -> Iterator[tuple[str, str, str, dict, dict]]:
    name, spec = obj["metadata"]["name"], obj["spec"]
    if obj["kind"] == "DaskCluster":
        yield origin, namespace, f"DaskCluster/{name} scheduler", {}, spec["scheduler"]["spec"]
        yield origin, namespace, f"DaskCluster/{name} worker", {}, spec["worker"]["spec"]
    elif obj["kind"] == "DaskWorkerGroup":
        yield origin, namespace, f"DaskWorkerGroup/{name}", {}, spec["worker"]["spec"]


@cache
def stack_objects(variant: str) -> StackObjects:
    stack, config = VARIANTS[variant]
    graph = run_program(stack, config=config)
    assert graph.error is None, graph.traceback
    objects = []
    for resource in graph.kubernetes_objects():
        manifest = resource.manifest()
        if "kind" not in manifest:
            continue
        namespace = (manifest.get("metadata") or {}).get("namespace", "")
        objects.append((f"program {resource.name}", namespace, manifest))
    for chart, release in program_releases(variant).items():
        for obj in release.render().objects:
            namespace = obj.get("metadata", {}).get("namespace") or release.namespace
            objects.append((f"{chart} {release.version}", namespace, obj))
    version = stack_settings(stack, config).cluster.kubernetes_version
    return StackObjects(variant, version, tuple(objects))
