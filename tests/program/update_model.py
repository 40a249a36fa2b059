"""What ``pulumi up`` does to each resource when a setting changes on a live stack: the program
runs twice under Pulumi's mocks (before, after) and each resource's registered inputs are
compared; a resource whose inputs differ is updated in place or replaced, as its provider and
its resource options decide:

- ``replaceOnChanges`` as registered: a changed input under one of its paths replaces it (the
  engine's own rule, pulumi/pulumi ``pkg/resource/deploy/step_generator.go``).
- pulumi-kubernetes (the 4.x provider the program pins): an object is replaced when its name or
  namespace changes, or one of its kind's immutable fields (``provider/pkg/provider/diff.go``,
  ``forceNew``: a Job's ``spec.template``, a Secret's ``data``/``stringData``/``type`` unless
  Secrets are made mutable, ...); a Helm release only when its name or namespace changes
  (``helm_release.go``, ``forceNewFields``): a new chart, version or values is ``helm upgrade``.
  A changed kind or apiVersion is a new resource (a new type token: create, then delete).
- The program's dynamic providers: their own ``diff``, called here with the recorded inputs.

The model does not talk to a cluster: it says what Pulumi asks for, not what the Supervisor, Helm
or the Dask operator then do with it (docs/deploy.md, "Upgrades", says that, with its sources).
"""
from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from components.cluster.providers.pool_readiness import GpuPoolsReadyProvider
from components.cluster.providers.supervisor_releases import SupervisorReleasesProvider
from components.vsphere.providers.supervisor_library import (
    SupervisorReleaseLibraryProvider,
    SupervisorTkrLibraryProvider,
)
from tests.program.graph import Graph, Resource

# pulumi-kubernetes provider/pkg/provider/diff.go: forceNew, for the kinds the program declares
# (metadata.name and metadata.namespace for every kind).
K8S_FORCE_NEW = {
    "batch/v1:Job": ("spec.completions", "spec.parallelism", "spec.selector", "spec.template"),
    "core/v1:PersistentVolumeClaim": ("spec.accessModes", "spec.selector", "spec.storageClassName", "spec.volumeName"),
    "core/v1:Secret": ("type", "stringData", "data"),  # enableSecretMutable is off by default
    "core/v1:Service": ("spec.clusterIP",),
    "storage.k8s.io/v1:StorageClass": ("parameters", "provisioner"),
    "rbac.authorization.k8s.io/v1:RoleBinding": ("roleRef",),
    "rbac.authorization.k8s.io/v1:ClusterRoleBinding": ("roleRef",),
}
METADATA_FORCE_NEW = ("metadata.name", "metadata.namespace")
HELM_FORCE_NEW = ("name", "namespace")
DYNAMIC_PROVIDERS = {
    "pulumi-python:dynamic/cluster:GpuPoolsReady": GpuPoolsReadyProvider,
    "pulumi-python:dynamic/cluster:SupervisorReleases": SupervisorReleasesProvider,
    "pulumi-python:dynamic/vsphere:SupervisorReleaseLibrary": SupervisorReleaseLibraryProvider,
    "pulumi-python:dynamic/vsphere:SupervisorTkrLibrary": SupervisorTkrLibraryProvider,
}


@dataclass(frozen=True)
class Change:
    name: str
    type: str
    action: str  # update | replace | create | delete
    paths: tuple[str, ...] = ()


def leaves(value: Any, path: str = "") -> Iterator[tuple[str, Any]]:
    if isinstance(value, dict) and value:
        for key, item in value.items():
            yield from leaves(item, f"{path}.{key}" if path else key)
    elif isinstance(value, list) and value:
        for i, item in enumerate(value):
            yield from leaves(item, f"{path}[{i}]")
    else:
        yield path, value


def changed_paths(before: dict, after: dict) -> tuple[str, ...]:
    old, new = dict(leaves(before)), dict(leaves(after))
    return tuple(sorted(p for p in set(old) | set(new) if old.get(p, ...) != new.get(p, ...)))


def _under(path: str, prefixes) -> bool:
    return any(path == p or path.startswith((p + ".", p + "[")) for p in prefixes)


def _replaces(old: Resource, new: Resource, paths: tuple[str, ...]) -> bool:
    if any(_under(p, old.raw["replace_on_changes"]) for p in paths):
        return True
    kind = new.type.removeprefix("kubernetes:")
    if kind == "helm.sh/v3:Release":
        return any(_under(p, HELM_FORCE_NEW) for p in paths)
    if new.type.startswith("kubernetes:"):
        return any(_under(p, METADATA_FORCE_NEW + K8S_FORCE_NEW.get(kind, ())) for p in paths)
    if new.type in DYNAMIC_PROVIDERS:
        return bool(DYNAMIC_PROVIDERS[new.type]().diff("id", old.inputs, new.inputs).replaces)
    raise AssertionError(f"no replace rule for {new.type} ({new.name}): add its provider's here")


def changes(before: Graph, after: Graph) -> dict[str, Change]:
    """Resource name -> what ``pulumi up`` does to it going from ``before`` to ``after``."""
    olds, news = {r.urn: r for r in before.resources}, {r.urn: r for r in after.resources}
    out = {}
    for urn in sorted(set(olds) | set(news)):
        old, new = olds.get(urn), news.get(urn)
        if old is None or new is None:
            r = old or new
            assert r is not None  # the urn is one of the two graphs'
            out[r.name] = Change(r.name, r.type, "create" if old is None else "delete")
            continue
        paths = tuple(p for p in changed_paths(old.inputs, new.inputs) if not p.startswith("__"))
        if paths and not new.raw.get("read"):
            out[new.name] = Change(new.name, new.type, "replace" if _replaces(old, new, paths) else "update", paths)
    return out
