"""Queries over the resource graph that ``harness.py`` records under Pulumi's mocks."""
from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Any

HARNESS = Path(__file__).with_name("harness.py")
REPO = HARNESS.parents[2]

# Dummy secrets: the program under test must never show them outside a secret.
SECRETS = {
    "vsphere:password": "vc-Secret-Pw-1",
    "ngcApiKey": "ngc-Secret-Key-2",
    "vgpuLicenseToken": "nls-Secret-Token-3",
    "supervisorKubeconfig": "apiVersion: v1\nkind: Config\nusers: [{name: u, user: {token: sv-Secret-Token-4}}]\n",
}


def unwrap(value: Any) -> Any:
    """Drop the harness's secret markers (for checks that look at values)."""
    if isinstance(value, dict):
        if set(value) == {"__secret__"}:
            return unwrap(value["__secret__"])
        return {k: unwrap(v) for k, v in value.items()}
    if isinstance(value, list):
        return [unwrap(v) for v in value]
    return value


def _entry(key: str, read: Callable[[Any], Any] = lambda value: value) -> property:
    """A read-only attribute that is the harness's entry ``key`` for the resource, through ``read``."""
    return property(lambda resource: read(resource.raw[key]), doc=f"The resource's ``{key}``.")


@dataclass(frozen=True)
class Resource:
    """One registered resource as the harness recorded it: ``urn``, ``type``, ``name`` and
    ``parent`` (strings), ``inputs`` and ``state`` (dicts, secret markers dropped)."""

    raw: dict

    urn = _entry("urn")
    type = _entry("type")
    name = _entry("name")
    parent = _entry("parent")
    inputs = _entry("inputs", unwrap)
    state = _entry("state", unwrap)

    def manifest(self) -> dict:
        """The Kubernetes object as it would be sent (internal ``__`` keys dropped)."""
        return {k: v for k, v in self.inputs.items() if not k.startswith("__")}


class Graph:
    def __init__(self, result: dict):
        self.error = result["error"]
        self.traceback = result.get("traceback")
        self.outputs = result["outputs"]
        self.warnings = result.get("warnings", [])  # pulumi.log.warn messages, in order
        self.resources = [Resource(r) for r in result["resources"]]
        self.raw = result
        self._by_urn = {r.urn: r for r in self.resources}

    def of_type(self, suffix: str) -> list[Resource]:
        return [r for r in self.resources if r.type == suffix or r.type.endswith(suffix)]

    def named(self, name: str) -> Resource:
        found = [r for r in self.resources if r.name == name]
        assert len(found) == 1, f"{len(found)} resources named {name!r}"
        return found[0]

    def children(self, urn: str) -> list[Resource]:
        return [r for r in self.resources if r.parent == urn]

    def ancestors(self, resource: Resource) -> list[Resource]:
        chain = []
        parent = resource.parent
        while parent and parent in self._by_urn:
            chain.append(self._by_urn[parent])
            parent = self._by_urn[parent].parent
        return chain

    def _direct(self, urn: str) -> set[str]:
        raw = self._by_urn[urn].raw
        deps = set(raw["dependencies"])
        for urns in raw["property_dependencies"].values():
            deps.update(urns)
        if raw.get("provider"):
            deps.add(raw["provider"].rsplit("::", 1)[0])
        return {d for d in deps if d in self._by_urn}

    def dependencies(self, resource: Resource) -> set[str]:
        """Every URN ``resource`` waits for, transitively (explicit, input and provider
        dependencies; through its ancestors' dependencies too)."""
        seen: set[str] = set()
        todo = [resource.urn, *(a.urn for a in self.ancestors(resource))]
        while todo:
            for dep in self._direct(todo.pop()):
                if dep not in seen:
                    seen.add(dep)
                    todo.append(dep)
        return seen

    def depends_on(self, a: Resource, b: Resource) -> bool:
        deps = self.dependencies(a)
        return b.urn in deps or any(c.urn in deps for c in self.descendants(b))

    def descendants(self, resource: Resource) -> list[Resource]:
        out, todo = [], [resource.urn]
        while todo:
            for child in self.children(todo.pop()):
                out.append(child)
                todo.append(child.urn)
        return out

    def kubernetes_objects(self) -> list[Resource]:
        """Plain Kubernetes objects the program declares (not Helm releases, providers, reads)."""
        return [r for r in self.resources if r.type.startswith("kubernetes:") and "helm.sh" not in r.type
                and not r.raw.get("read")]


@cache
def _run(spec_json: str) -> str:
    done = subprocess.run([sys.executable, str(HARNESS), spec_json], check=False, capture_output=True, text=True,
                          cwd=REPO, timeout=300)
    if done.returncode != 0:
        raise RuntimeError(f"harness failed: {done.stderr[-3000:]}")
    return done.stdout


def run_program(stack: str | None = "reference", config: dict | None = None, secrets: dict | None = None,
                mock: dict | None = None) -> Graph:
    """Run ``__main__.py`` under mocks for ``Pulumi.<stack>.yaml`` plus overrides (cached)."""
    spec = {"stack": stack, "config": config or {}, "secrets": {**SECRETS, **(secrets or {})}, "mock": mock or {}}
    return Graph(json.loads(_run(json.dumps(spec, sort_keys=True))))


def walk_strings(value: Any, in_secret: bool = False) -> Iterable[tuple[str, bool]]:
    """Every string in a recorded value, with whether it sits inside a secret."""
    if isinstance(value, dict):
        if set(value) == {"__secret__"}:
            yield from walk_strings(value["__secret__"], True)
            return
        for v in value.values():
            yield from walk_strings(v, in_secret)
    elif isinstance(value, list):
        for v in value:
            yield from walk_strings(v, in_secret)
    elif isinstance(value, str):
        yield value, in_secret
