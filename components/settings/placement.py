"""Do the pods the program pins to a pool role fit that pool's nodes, together?

Each Dask pod selects its nodes by the pool-role label, so every pod pinned to one role
shares that role's nodes: the check adds up their requests node by node (first fit,
largest first, as greedy as the Kubernetes scheduler itself) against the VM class's
capacity (vCPU, memory, one GPU per vGPU class). A rollout adds pods: a Deployment that
rolls with ``RollingUpdate`` starts ``maxSurge`` new pods before it stops an old one, so
the extra pods must fit too, or the rollout (and the Helm release waiting for it) hangs.
"""
from __future__ import annotations

import math
from dataclasses import dataclass


@dataclass(frozen=True)
class PodDemand:
    name: str
    pool_role: str
    replicas: int
    cpu_millis: int
    memory_bytes: int
    gpus: int = 0
    surge: int = 0  # extra pods during a rollout
    settings: str = ""  # the config keys that size it

    def describe(self) -> str:
        gpu = f", {self.gpus} GPU" if self.gpus else ""
        return f"{self.name} ({_cpu(self.cpu_millis)} CPU, {_mib(self.memory_bytes)}{gpu})"


@dataclass(frozen=True)
class PoolCapacity:
    name: str
    role: str
    nodes: int
    vm_class: str
    cpu_millis: int
    memory_bytes: int
    gpus: int
    key: str  # its config key, e.g. nodePools[1]

    def describe(self) -> str:
        return (f"pool {self.name!r} ({self.key}: {self.nodes} x {self.vm_class}, {_cpu(self.cpu_millis)} vCPU /"
                f" {_mib(self.memory_bytes)} / {self.gpus} GPU per node)")


def surge_pods(replicas: int, strategy: dict | None) -> int:
    """Extra pods a Deployment's rollout starts at once (Kubernetes: maxSurge, default 25 %
    rounded up; Recreate starts none)."""
    strategy = strategy or {"type": "RollingUpdate"}
    if strategy.get("type") == "Recreate":
        return 0
    surge = (strategy.get("rollingUpdate") or {}).get("maxSurge", "25%")
    if isinstance(surge, str) and surge.endswith("%"):
        return math.ceil(replicas * int(surge[:-1]) / 100)
    return int(surge)


@dataclass
class _Node:
    cpu: int
    memory: int
    gpus: int
    holds: list[str]

    def fits(self, pod: PodDemand) -> bool:
        return pod.cpu_millis <= self.cpu and pod.memory_bytes <= self.memory and pod.gpus <= self.gpus

    def take(self, pod: PodDemand, label: str) -> None:
        self.cpu -= pod.cpu_millis
        self.memory -= pod.memory_bytes
        self.gpus -= pod.gpus
        self.holds.append(label)


def shortfalls(pods: list[PodDemand], pools: list[PoolCapacity], with_surge: bool) -> list[str]:
    """One message per pool role whose pods do not all fit; [] when they do."""
    messages = []
    for role in sorted({p.pool_role for p in pods}):
        role_pools = [p for p in pools if p.role == role and p.nodes > 0]
        nodes = [_Node(p.cpu_millis, p.memory_bytes, p.gpus, []) for p in role_pools for _ in range(p.nodes)]
        instances = [(pod, f"{pod.name}#{i + 1}") for pod in pods if pod.pool_role == role
                     for i in range(pod.replicas)]
        if with_surge:
            instances += [(pod, f"{pod.name} (rollout's extra pod)") for pod in pods if pod.pool_role == role
                          for _ in range(pod.surge)]
        instances.sort(key=lambda item: (item[0].gpus, item[0].cpu_millis, item[0].memory_bytes), reverse=True)
        for pod, label in instances:
            node = next((n for n in nodes if n.fits(pod)), None)
            if node is None:
                messages.append(_unplaced(role, role_pools, nodes, pod, label))
                break
            node.take(pod, label)
    return messages


def _unplaced(role: str, pools: list[PoolCapacity], nodes: list[_Node], pod: PodDemand, label: str) -> str:
    where = ", ".join(p.describe() for p in pools) or "no pool"
    if not nodes:
        return f"{label} selects role={role} but {where} has that role"
    best = max(nodes, key=lambda n: (n.gpus, n.cpu, n.memory))
    short = [f"{_cpu(pod.cpu_millis - best.cpu)} CPU" if pod.cpu_millis > best.cpu else "",
             f"{_mib(pod.memory_bytes - best.memory)}" if pod.memory_bytes > best.memory else "",
             f"{pod.gpus - best.gpus} GPU" if pod.gpus > best.gpus else ""]
    placed = "; ".join(f"node {i + 1}: {', '.join(n.holds) or 'empty'}" for i, n in enumerate(nodes))
    return (f"{pod.describe()} as {label} does not fit on role={role}: {where}. Already placed: {placed}."
            f" The roomiest node is short by {', '.join(s for s in short if s)}"
            f" (change {pod.settings or 'its size'} or add nodes to the pool)")


def _cpu(millis: int) -> str:
    return f"{millis / 1000:g}"


def _mib(amount: int) -> str:
    return f"{amount / 2**30:g} GiB" if amount % 2**30 == 0 else f"{amount // 2**20} MiB"
