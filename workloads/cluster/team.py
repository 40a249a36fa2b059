"""What a person's run reads from the stack: the team's people and the cluster spec, none of
it secret, and which of the people the caller is.

A person has no stack secrets: ``pulumi stack output --json`` without ``--show-secrets`` (or
the same JSON a platform engineer hands out) shows each secret as ``"[secret]"``, and nothing
read here is one. The person is named by ``--user`` (their vSphere SSO name, as the stack's
``users`` setting lists it) or found by the namespace of their kubeconfig's current context.
"""
from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from workloads.contract import (
    DASK_VERSION,
    DATASET_LAYOUT,
    DATASET_MOUNT,
    IMAGE,
    TEAM_CLUSTER_SPEC,
    TEAM_USERS,
    THREADS_PER_WORKER,
    ContractError,
)

# The outputs ``parse`` reads: what a person's run needs, and all the team document keeps (team_outputs.py)
READ = (TEAM_USERS, TEAM_CLUSTER_SPEC, DATASET_MOUNT, DATASET_LAYOUT, THREADS_PER_WORKER, IMAGE, DASK_VERSION)

HOW_TO_ADD = "a platform engineer adds people with the stack setting users (docs/dask.md, For a team)"


@dataclass(frozen=True)
class Person:
    """One entry of ``teamUsers``."""

    name: str  # the SSO identity, alice@vsphere.local
    namespace: str
    gpus: int
    idle_timeout: int  # seconds; 0: never


@dataclass(frozen=True)
class TeamOutputs:
    """The non-secret outputs a person's run needs."""

    people: Mapping[str, Person]
    cluster_spec: Mapping[str, Any]
    dataset_mount: str
    dataset_layout: Mapping[str, str]
    threads_per_worker: int
    image: str
    dask_version: str


def parse(raw: Mapping[str, Any], source: str) -> TeamOutputs:
    """The team outputs; ContractError naming what is missing (a stack without ``users``)."""
    if not isinstance(raw, Mapping):
        raise ContractError(f"{source}: expected a JSON object of outputs, got {type(raw).__name__}")
    users, spec = raw.get(TEAM_USERS), raw.get(TEAM_CLUSTER_SPEC)
    if not users or not isinstance(users, Mapping):
        raise ContractError(f"{source} exports no {TEAM_USERS!r}: the stack has no users, so nobody runs a"
                            f" cluster of their own there; {HOW_TO_ADD}")
    if not isinstance(spec, Mapping) or not {"scheduler", "worker"} <= set(spec):
        raise ContractError(f"{source}: output {TEAM_CLUSTER_SPEC!r} must be a DaskCluster spec (scheduler, worker)")
    people = {}
    for name, entry in users.items():
        try:
            people[name] = Person(name, str(entry["namespace"]), int(entry["gpus"]), int(entry.get("idleTimeout", 0)))
        except (KeyError, TypeError, ValueError):
            raise ContractError(f"{source}: {TEAM_USERS}[{name!r}] needs namespace, gpus and idleTimeout") from None
    mount = raw.get(DATASET_MOUNT)
    if not isinstance(mount, str) or not mount:
        raise ContractError(f"{source}: missing output {DATASET_MOUNT!r}")
    return TeamOutputs(people, spec, mount, dict(raw.get(DATASET_LAYOUT) or {}),
                       int(raw.get(THREADS_PER_WORKER) or 1), str(raw.get(IMAGE) or ""),
                       str(raw.get(DASK_VERSION) or ""))


def pick(people: Mapping[str, Person], user: str | None, context_namespace: str | None) -> Person:
    """The caller: ``--user`` if given, else whoever's namespace the kubeconfig's context names."""
    if user:
        if user in people:
            return people[user]
        raise ContractError(f"--user {user} is not among the stack's users ({', '.join(sorted(people))});"
                            f" {HOW_TO_ADD}")
    found = [p for p in people.values() if p.namespace == context_namespace]
    if len(found) == 1:
        return found[0]
    where = f"namespace {context_namespace}" if context_namespace else "no namespace"
    raise ContractError(f"--user NAME is needed: the kubeconfig's current context names {where}, none of the"
                        f" team's ({', '.join(sorted(p.namespace for p in people.values()))})")
