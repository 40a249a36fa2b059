"""Where the Dask pods go, and do they fit there: the one home of placement, which both the
settings' checks and the Dask components ask.

A Dask component runs on its own role's pool, else on a cpu pool (``placement_pool``); the
GPU workers on the gpu pools. Each Dask pod selects its nodes by the pool-role label, so every pod pinned to one role
shares that role's nodes: the check adds up their requests node by node (first fit,
largest first, as greedy as the Kubernetes scheduler itself) against the VM class's
capacity (vCPU, memory, one GPU per vGPU class). A rollout adds pods: a Deployment that
rolls with ``RollingUpdate`` starts ``maxSurge`` new pods before it stops an old one, so
the extra pods must fit too, or the rollout (and the Helm release waiting for it) hangs.
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import components.facts.dask_chart as dask_chart
import components.settings.values as values
from components.settings.errors import Problem
from components.settings.model import POOL_ROLE_LABEL, NodePool, Settings


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


def surge_pods(replicas: int, strategy: dict[str, Any] | None) -> int:
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


# --- The stack's placement ---------------------------------------------------------------


def placement_pool(s: Settings, role: str) -> NodePool | None:
    """The pool a Dask component is scheduled on: its own role's pool, else a cpu pool;
    a GPU Jupyter goes to a jupyter pool with a vGPU class, else a GPU pool."""
    if role == "jupyter" and s.dask.jupyter.gpu:
        return next(iter(s.cluster.pools("jupyter") or s.cluster.pools("gpu")), None)
    own = [p for p in s.cluster.pools(role) if p.replicas > 0]
    cpu = [p for p in s.cluster.pools("cpu") if p.replicas > 0]
    return next(iter(own or cpu), None)


def pool_selector(s: Settings, role: str) -> dict[str, str]:
    """The node selector of a Dask component's pods: its pool's role label ({} with no pool)."""
    pool = placement_pool(s, role)
    return {POOL_ROLE_LABEL: pool.role} if pool else {}


@dataclass(frozen=True)
class DaskPlacement:
    """Where the Dask pods go (node selectors by pool role) and the rollouts that cannot
    proceed there (warnings shown at preview)."""

    scheduler_selector: dict[str, str]
    jupyter_selector: dict[str, str]
    worker_selector: dict[str, str]
    warnings: tuple[str, ...] = ()

    @classmethod
    def from_settings(cls, s: Settings) -> DaskPlacement:
        return cls(scheduler_selector=pool_selector(s, "scheduler"), jupyter_selector=pool_selector(s, "jupyter"),
                   worker_selector={POOL_ROLE_LABEL: "gpu"}, warnings=tuple(placement_warnings(s)))


def placement_problems(s: Settings) -> list[Problem]:
    """The scheduler and a CPU Jupyter go on non-GPU nodes: a pool of their own role or a
    cpu pool must exist and fit them. A GPU Jupyter (topology B) must fit the vGPU node
    it takes."""
    out = []
    targets = [("scheduler", s.dask.scheduler.cpu, s.dask.scheduler.memory, "schedulerCpu", "schedulerMemory")]
    if s.dask.jupyter.enabled:
        targets.append(("jupyter", s.dask.jupyter.cpu, s.dask.jupyter.memory, "jupyterCpu", "jupyterMemory"))
    for role, cpu, memory, cpu_key, memory_key in targets:
        pool = placement_pool(s, role)
        if pool is None:
            if not (role == "jupyter" and s.dask.jupyter.gpu):  # no GPU pool at all: a capacity check says so
                out.append(Problem("nodePools", f"the {role} needs a non-GPU node: add a pool with role={role}"
                                                " or role=cpu"))
            continue
        vm = s.vm_class(pool.vm_class) if pool.vm_class in {c.name for c in s.vm_classes} else None
        if vm is None:
            continue
        if values.cpu_millis(cpu) > vm.cpus * 1000:
            out.append(Problem(cpu_key,
                               f"{cpu} CPUs exceed VM class {vm.name!r} of pool {pool.name!r} ({vm.cpus} vCPU)"))
        if values.quantity_bytes(memory) > vm.memory_mb * 2**20:
            out.append(Problem(memory_key, f"{memory} exceeds VM class {vm.name!r} of pool {pool.name!r}"
                                           f" ({vm.memory_mb} MiB)"))
    return out


def pod_demands(s: Settings) -> list[PodDemand]:
    """Every pod the program pins to a pool role, with its requests and its rollout's extra pods."""
    d = s.dask
    pods = []
    scheduler_pool = placement_pool(s, "scheduler")
    if scheduler_pool:
        pods.append(PodDemand("dask-scheduler", scheduler_pool.role, 1, values.cpu_millis(d.scheduler.cpu),
                              values.quantity_bytes(d.scheduler.memory), 0, surge_pods(1, None),
                              "schedulerCpu/schedulerMemory"))
    jupyter_pool = placement_pool(s, "jupyter") if d.jupyter.enabled else None
    if jupyter_pool:
        pods.append(PodDemand("dask-jupyter", jupyter_pool.role, 1, values.cpu_millis(d.jupyter.cpu),
                              values.quantity_bytes(d.jupyter.memory), 1 if d.jupyter.gpu else 0,
                              surge_pods(1, None),
                              f"gpuWorkers to {max(d.workers.replicas - 1, 0)} (a GPU node kept free), jupyterGpu"
                              if d.jupyter.gpu else "jupyterCpu/jupyterMemory"))
    pods.append(PodDemand("dask-worker", "gpu", d.workers.replicas, d.workers.cpu * 1000,
                          values.quantity_bytes(d.workers.memory), d.workers.gpus,
                          surge_pods(d.workers.replicas, dask_chart.WORKER_STRATEGY),
                          "gpuWorkers/workerCpu/workerMemory"))
    return pods


def pool_capacities(s: Settings) -> list[PoolCapacity]:
    known = {c.name for c in s.vm_classes}
    return [PoolCapacity(p.name, p.role, p.replicas, p.vm_class, s.vm_class(p.vm_class).cpus * 1000,
                         s.vm_class(p.vm_class).memory_mb * 2**20, 1 if s.vm_class(p.vm_class).has_gpu else 0,
                         f"nodePools[{i}]")
            for i, p in enumerate(s.cluster.node_pools) if p.vm_class in known]


def co_placement_problems(s: Settings) -> list[Problem]:
    """The pods that share a pool role must fit its nodes together."""
    return [Problem("nodePools", message) for message in shortfalls(pod_demands(s), pool_capacities(s), False)]


def placement_warnings(s: Settings) -> list[str]:
    """Rollouts that cannot proceed: the chart hard-codes RollingUpdate for the scheduler and
    Jupyter (``dask_chart.FIXED_ROLLING_UPDATE``), so a changed pod template needs room for a
    second such pod; without it the Helm release times out. Only a warning: the first
    install places every pod."""
    pods, pools = pod_demands(s), pool_capacities(s)
    if shortfalls(pods, pools, False):
        return []
    return [f"{message}. The dask chart rolls the scheduler and Jupyter with a fixed RollingUpdate:"
            " a change to either pod will hang until there is room for the extra pod"
            for message in shortfalls(pods, pools, True)]
