"""What ``pulumi destroy`` decides, from the resources' options as the program registers them.

The mocks cannot run the engine's destroy (no engine, no state), and no Pulumi CLI is installed
here, so this is a local model of the engine's decision, written from pulumi/pulumi v3.260's
source, and applied to the registrations ``harness.py`` records:

- Each resource in the state is deleted after everything that depends on it
  (``pkg/resource/deploy/step_generator.go`` ``ScheduleDeletes``). Its dependencies are its
  provider, its parent, its ``dependencies``, its property dependencies and ``deletedWith``
  (``pkg/resource/graph/dependency_graph.go`` ``DependenciesOf``/``TransitiveDependenciesOf``).
- The delete of a protected resource fails (``pkg/resource/deploy/step.go``,
  ``DeleteStep.Apply``: ``deleteProtectedError``, "cannot be deleted because it is protected");
  the engine continues past that error and skips the deletes of everything the failed resource
  depends on, transitively (``deployment_executor.go``: ``erroredDeps`` from
  ``TransitiveDependenciesOf``). ``pulumi destroy --exclude-protected`` excludes the same set up
  front (``pkg/cmd/pulumi/operations/destroy.go`` ``getProtectedExcludes``).
- Deleting a resource with ``retainOnDelete`` only removes it from the state: the provider's
  Delete is not called (``DeleteStep.Apply``, ``s.old.RetainOnDelete``), so the thing stays.
- ``pulumi state unprotect <urn>`` clears the resource's ``protect`` in the state.

A resource registered without a provider gets the engine's default provider of its package,
one node per package here (``default:<package>``).
"""
from __future__ import annotations

from dataclasses import dataclass, field, replace

from tests.program.graph import Graph


@dataclass(frozen=True)
class State:
    urn: str
    type: str
    custom: bool
    protect: bool
    retain_on_delete: bool
    depends_on: frozenset[str] = field(default_factory=frozenset)


@dataclass(frozen=True)
class Outcome:
    refused: frozenset[str]  # deletes that fail: the protected resources
    left: tuple[State, ...]  # what stays in the state (refused and everything they depend on)
    removed: frozenset[str]  # taken out of the state
    retained: frozenset[str]  # taken out of the state, but the thing itself stays (retainOnDelete)


def default_provider(type_: str) -> str:
    return f"default:{type_.split(':', 1)[0]}"


def states(graph: Graph) -> tuple[State, ...]:
    """The state ``pulumi up`` leaves for this program: one entry per registered resource (reads
    included), and the default providers the engine adds."""
    out, defaults = [], set()
    for r in graph.resources:
        raw = r.raw
        deps = set(raw["dependencies"]) | {u for urns in raw["property_dependencies"].values() for u in urns}
        if raw.get("parent"):
            deps.add(raw["parent"])  # the stack itself is no entry here: nothing deletes it
        provider = raw.get("provider") or ""
        if provider:
            deps.add(provider.rsplit("::", 1)[0])
        elif raw["custom"] and not r.type.startswith("pulumi:providers:"):
            deps.add(default_provider(r.type))
            defaults.add(default_provider(r.type))
        out.append(State(r.urn, r.type, raw["custom"], raw["protect"], raw["retain_on_delete"], frozenset(deps)))
    out += [State(d, "pulumi:providers:" + d.split(":", 1)[1], True, False, False) for d in sorted(defaults)]
    return tuple(out)


def _closure(by_urn: dict[str, State], roots: set[str]) -> set[str]:
    seen, todo = set(roots), list(roots)
    while todo:
        for dep in by_urn[todo.pop()].depends_on:
            if dep in by_urn and dep not in seen:
                seen.add(dep)
                todo.append(dep)
    return seen


def destroy(state: tuple[State, ...]) -> Outcome:
    """``pulumi destroy`` of ``state``: every delete it schedules, the protected ones failing."""
    by_urn = {s.urn: s for s in state}
    refused = {s.urn for s in state if s.protect}
    left = _closure(by_urn, refused)
    removed = set(by_urn) - left
    return Outcome(frozenset(refused), tuple(s for s in state if s.urn in left), frozenset(removed),
                   frozenset(u for u in removed if by_urn[u].retain_on_delete))


def unprotect(state: tuple[State, ...], urn: str) -> tuple[State, ...]:
    """``pulumi state unprotect <urn>``; an URN the state does not hold is an error, as there."""
    if urn not in {s.urn for s in state}:
        raise KeyError(f"no resource {urn} in the state")
    return tuple(replace(s, protect=False) if s.urn == urn else s for s in state)
