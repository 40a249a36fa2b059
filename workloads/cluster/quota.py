"""Does a person's cluster fit their namespace's ResourceQuota? Asked before anything is made.

The API server enforces a ResourceQuota pod by pod: a Deployment whose next pod would pass the
quota gets no pod and only a ``FailedCreate`` event on its ReplicaSet (Kubernetes
``plugin/pkg/admission/resourcequota``), so a cluster over quota would wait for workers that
never come. The runner adds up what the whole cluster asks (the scheduler pod and every worker
pod, from the DaskCluster it is about to create) and compares it with each quota's ``hard``
less its ``used`` (what the person's other pods already hold), so the answer comes first and
names the numbers: ``quota allows 2 GPUs in dask-alice; asked 4``.

Which keys a quota counts for pods: ``pods``, ``requests.<resource>`` and ``<resource>`` (the
same), ``limits.<resource>``; an extended resource such as ``nvidia.com/gpu`` only as
``requests.nvidia.com/gpu`` (Kubernetes docs, "Resource Quotas": "Resource quota for extended
resources"). A container without requests is charged its limits, as the API server defaults them.
"""
from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from decimal import Decimal
from typing import Any

from workloads.core.errors import WorkloadError

GPU = "nvidia.com/gpu"
GPU_KEY = f"requests.{GPU}"


class QuotaError(WorkloadError):
    """The cluster asked for does not fit the namespace's ResourceQuota."""


def parse_quantity(value: Any) -> Decimal:
    """A Kubernetes quantity (``"500m"``, ``"16Gi"``, ``2``) as a number."""
    from kubernetes.utils.quantity import parse_quantity as parse

    return Decimal(parse(value))


def container_amounts(container: Mapping[str, Any]) -> dict[str, dict[str, Decimal]]:
    """``{"requests": {...}, "limits": {...}}`` of one container; requests default to limits."""
    resources = container.get("resources") or {}
    limits = {k: parse_quantity(v) for k, v in (resources.get("limits") or {}).items()}
    requests = {k: parse_quantity(v) for k, v in (resources.get("requests") or {}).items()}
    return {"requests": {**limits, **requests}, "limits": limits}


def pod_charges(pod_spec: Mapping[str, Any]) -> dict[str, Decimal]:
    """What one pod counts against a quota, by quota key (its containers added up)."""
    charges: dict[str, Decimal] = {"pods": Decimal(1)}
    for container in pod_spec.get("containers") or ():
        amounts = container_amounts(container)
        for kind, values in amounts.items():
            for resource, amount in values.items():
                keys = [f"{kind}.{resource}"] + ([resource] if kind == "requests" and "." not in resource else [])
                for key in keys:
                    charges[key] = charges.get(key, Decimal(0)) + amount
    return charges


def cluster_charges(cluster: Mapping[str, Any], workers: int) -> dict[str, Decimal]:
    """What a DaskCluster of ``workers`` workers counts: its scheduler pod and each worker pod."""
    spec = cluster["spec"]
    total = dict(pod_charges(spec["scheduler"]["spec"]))
    for key, amount in pod_charges(spec["worker"]["spec"]).items():
        total[key] = total.get(key, Decimal(0)) + amount * workers
    return total


def gpus_per_worker(cluster: Mapping[str, Any]) -> int:
    """The GPUs each worker pod requests (0 for CPU workers)."""
    return int(pod_charges(cluster["spec"]["worker"]["spec"]).get(GPU_KEY, 0))


@dataclass(frozen=True)
class Shortfall:
    """One quota key the cluster would overrun."""

    quota: str
    key: str
    hard: Decimal
    used: Decimal
    asked: Decimal

    def describe(self, namespace: str) -> str:
        held = f", {_number(self.used)} of them in use" if self.used else ""
        if self.key == GPU_KEY:
            return f"quota allows {_number(self.hard)} GPUs in {namespace}{held}; asked {_number(self.asked)}"
        return (f"quota {self.quota} allows {self.key} {_number(self.hard)} in {namespace}{held};"
                f" asked {_number(self.asked)}")


def shortfalls(quotas: Iterable[Mapping[str, Any]], asked: Mapping[str, Decimal]) -> list[Shortfall]:
    """Every (quota, key) whose ``hard`` less ``used`` is below what is asked; GPUs first."""
    found = []
    for quota in quotas:
        name = quota["metadata"]["name"]
        status = quota.get("status") or {}
        hard = (status.get("hard") or quota.get("spec", {}).get("hard") or {})
        used = status.get("used") or {}
        for key, limit in hard.items():
            if key not in asked:
                continue
            have, spent = parse_quantity(limit), parse_quantity(used.get(key, 0))
            if asked[key] > have - spent:
                found.append(Shortfall(name, key, have, spent, asked[key]))
    return sorted(found, key=lambda s: (s.key != GPU_KEY, s.quota, s.key))


def check(quotas: Iterable[Mapping[str, Any]], cluster: Mapping[str, Any], workers: int, namespace: str) -> None:
    """QuotaError naming every shortfall when the cluster does not fit, GPUs first."""
    missing = shortfalls(quotas, cluster_charges(cluster, workers))
    if not missing:
        return
    why = {GPU_KEY: f"{workers} worker(s) x {gpus_per_worker(cluster)} GPU(s) each"}
    parts = [f"{s.describe(namespace)} ({why.get(s.key, f'the scheduler and {workers} worker(s)')})" for s in missing]
    raise QuotaError("; ".join(parts) + ". Ask for fewer workers (--workers), or delete a cluster you kept"
                     f" (kubectl get daskclusters -n {namespace}); nothing was created")


def _number(value: Decimal) -> str:
    return str(int(value)) if value == value.to_integral_value() else str(value.normalize())
