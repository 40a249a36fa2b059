"""Feed the program's recorded graph to the policies the way the engine does.

The harness records each resource's inputs (what the engine's ``Analyze`` gets) and its
mock state (what ``AnalyzeStack`` gets: stack rules see outputs), with secrets as
``{"__secret__": v}``. Here they go back into the engine's wire form and through the
SDK's own ``deserialize_properties`` + ``unknown_checking_proxy``, so a rule sees exactly
the ``Mapping``/``Sequence`` proxies it gets under ``pulumi preview``.
"""
from __future__ import annotations

import copy
import re
from collections.abc import Iterable, Mapping
from typing import Any

from pulumi_policy import (
    Policy,
    PolicyCustomTimeouts,
    PolicyResource,
    PolicyResourceOptions,
    ResourceValidationArgs,
    ResourceValidationPolicy,
    StackValidationArgs,
    StackValidationPolicy,
)
from pulumi_policy.deserialize import deserialize_properties
from pulumi_policy.proxy import unknown_checking_proxy

from policy.rules import POLICIES
from tests.program.graph import Graph, Resource

SIG_KEY = "4dabf18193072939515e22adb298388d"
SECRET_SIG = "1b47061264138c4ac30d75fd1eb44270"
UNKNOWN = "04da6b54-80e4-46f7-96ec-b56ff0331ba9"  # the engine's unknown string during preview


def wire(value: Any) -> Any:
    """The harness's ``{"__secret__": v}`` back to the engine's secret wrapper."""
    if isinstance(value, dict):
        if set(value) == {"__secret__"}:
            return {SIG_KEY: SECRET_SIG, "value": wire(value["__secret__"])}
        return {k: wire(v) for k, v in value.items()}
    if isinstance(value, list):
        return [wire(v) for v in value]
    return value


def engine_props(raw: Mapping[str, Any]) -> Mapping[str, Any]:
    """Properties as a policy receives them from the engine."""
    return unknown_checking_proxy(deserialize_properties(wire(copy.deepcopy(dict(raw)))))


def _seconds(duration: Any) -> float:
    """Go-style durations ("30m", "1h30m", "90s") as recorded by the harness."""
    units = {"h": 3600, "m": 60, "s": 1}
    return float(sum(int(n) * units[u] for n, u in re.findall(r"(\d+)([hms])", str(duration or ""))))


def options(raw: Mapping[str, Any]) -> PolicyResourceOptions:
    timeouts = raw.get("custom_timeouts") or {}
    return PolicyResourceOptions(
        protect=bool(raw.get("protect")),
        ignore_changes=list(raw.get("ignore_changes") or []),
        delete_before_replace=raw.get("delete_before_replace"),
        aliases=[],
        custom_timeouts=PolicyCustomTimeouts(_seconds(timeouts.get("create")), _seconds(timeouts.get("update")),
                                             _seconds(timeouts.get("delete"))),
        additional_secret_outputs=list(raw.get("additional_secret_outputs") or []),
        parent=raw.get("parent") or None,
    )


def resource_args(resource: Resource | Mapping[str, Any], config: Mapping[str, Any] | None = None,
                  **changes: Any) -> ResourceValidationArgs:
    """``ResourceValidationArgs`` of a recorded resource (or a raw record); ``changes``
    override record fields (``inputs=...``, ``protect=...``)."""
    raw = dict(resource.raw if isinstance(resource, Resource) else resource)
    raw.update(changes)
    return ResourceValidationArgs(raw["type"], engine_props(raw["inputs"]), raw["urn"], raw["name"], options(raw),
                                  None, dict(config) if config else None)


def hand_made(resource_type: str, props: Mapping[str, Any], name: str = "hand-made", protect: bool = False,
              config: Mapping[str, Any] | None = None) -> ResourceValidationArgs:
    urn = f"urn:pulumi:test::dask-tkg::{resource_type}::{name}"
    return resource_args({"type": resource_type, "inputs": props, "urn": urn, "name": name, "protect": protect},
                         config)


def inputs(resource: Resource) -> dict[str, Any]:
    """A deep copy of a recorded resource's raw inputs, to make a bad case from a real one."""
    return copy.deepcopy(resource.raw["inputs"])


def stack_args(graph: Graph, config: Mapping[str, Any] | None = None,
               state: Mapping[str, Mapping[str, Any]] | None = None) -> StackValidationArgs:
    """``StackValidationArgs`` of a recorded graph; ``state`` replaces named resources' outputs."""
    state = state or {}
    resources: dict[str, PolicyResource] = {}
    for r in graph.resources:
        props = engine_props(state.get(r.name, r.raw["state"]))
        resources[r.urn] = PolicyResource(r.type, props, r.urn, r.name, options(r.raw), None, None, [], {})
    for r in graph.resources:
        resource = resources[r.urn]
        resource.parent = resources.get(r.parent)
        resource.dependencies = [resources[d] for d in r.raw["dependencies"] if d in resources]
        resource.property_dependencies = {k: [resources[d] for d in v if d in resources]
                                          for k, v in r.raw["property_dependencies"].items()}
    return StackValidationArgs(list(resources.values()), dict(config) if config else None)


def violations(policy: Policy, args: ResourceValidationArgs | StackValidationArgs) -> list[str]:
    """The messages ``policy`` reports for ``args``."""
    found: list[str] = []

    def report(message: str, urn: str | None = None) -> None:
        assert isinstance(message, str) and message
        found.append(message)

    if isinstance(policy, ResourceValidationPolicy):
        assert isinstance(args, ResourceValidationArgs), f"{policy.name} validates resources"
        result = policy.validate(args, report)
    else:
        assert isinstance(policy, StackValidationPolicy), policy
        assert isinstance(args, StackValidationArgs), f"{policy.name} validates the stack"
        result = policy.validate(args, report)
    assert result is None, "the rules are synchronous"
    return found


def graph_violations(graph: Graph, config: Mapping[str, Mapping[str, Any]] | None = None,
                     policies: Iterable[Policy] = POLICIES) -> dict[str, list[str]]:
    """Every policy over a whole graph, as ``pulumi preview --policy-pack`` runs them:
    resource rules on every registered resource, stack rules once. Only policies with
    violations appear."""
    config = config or {}
    out: dict[str, list[str]] = {}
    for policy in policies:
        found: list[str] = []
        if isinstance(policy, ResourceValidationPolicy):
            for resource in graph.resources:
                if not resource.raw.get("read"):  # reads are not analyzed
                    found += violations(policy, resource_args(resource, config.get(policy.name)))
        elif isinstance(policy, StackValidationPolicy):
            found += violations(policy, stack_args(graph, config.get(policy.name)))
        if found:
            out[policy.name] = found
    return out
