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

A quota with scopes (``spec.scopes``, ``spec.scopeSelector``) counts only the pods in its scope
(Kubernetes ``pkg/quota/v1/evaluator/core/pods.go``, ``podMatchesScopeFunc``): the person's
namespace holds one that allows no pod of the system priority classes, which the cluster's pods
(no ``priorityClassName``) are not charged to.
"""
from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from decimal import Decimal
from typing import Any

from workloads import contract
from workloads.core.errors import WorkloadError

GPU = contract.GPU_RESOURCE
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


def cluster_charges(cluster: Mapping[str, Any], workers: int,
                    quota: Mapping[str, Any] | None = None) -> dict[str, Decimal]:
    """What a DaskCluster of ``workers`` workers counts (against ``quota``'s scope when given): its
    scheduler pod and each worker pod."""
    spec = cluster["spec"]
    total: dict[str, Decimal] = {}
    for pod, count in ((spec["scheduler"]["spec"], 1), (spec["worker"]["spec"], workers)):
        if quota is not None and not in_scope(quota, pod):
            continue
        for key, amount in pod_charges(pod).items():
            total[key] = total.get(key, Decimal(0)) + amount * count
    return total


def in_scope(quota: Mapping[str, Any], pod_spec: Mapping[str, Any]) -> bool:
    """Whether ``quota`` counts a pod of ``pod_spec``: every scope it names matches the pod."""
    spec = quota.get("spec") or {}
    expressions = [{"scopeName": scope, "operator": "Exists"} for scope in spec.get("scopes") or ()]
    expressions += (spec.get("scopeSelector") or {}).get("matchExpressions") or []
    return all(_matches(e, pod_spec) for e in expressions)


def _matches(expression: Mapping[str, Any], pod: Mapping[str, Any]) -> bool:
    name, operator, values = expression["scopeName"], expression.get("operator", "Exists"), expression.get("values")
    if name == "PriorityClass":
        cls = pod.get("priorityClassName") or ""
        return {"Exists": cls != "", "DoesNotExist": cls == "", "In": cls in (values or ()),
                "NotIn": cls not in (values or ())}.get(operator, True)
    deadline = pod.get("activeDeadlineSeconds")
    amounts = [container_amounts(c) for c in pod.get("containers") or ()]
    best_effort = not any(a["requests"].get(r) or a["limits"].get(r) for a in amounts for r in ("cpu", "memory"))
    affinity = pod.get("affinity") or {}
    cross = any(term.get("namespaces") or term.get("namespaceSelector") is not None
                for kind in ("podAffinity", "podAntiAffinity") for when in (affinity.get(kind) or {}).values()
                for term in when or () if isinstance(term, dict))
    known = {"Terminating": deadline is not None and deadline >= 0, "NotTerminating": deadline is None or deadline < 0,
             "BestEffort": best_effort, "NotBestEffort": not best_effort, "CrossNamespacePodAffinity": cross}
    return known.get(name, True)  # a scope not known here: counted, as the safer answer


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


def shortfalls(quotas: Iterable[Mapping[str, Any]],
               asked: Mapping[str, Decimal] | Callable[[Mapping[str, Any]], Mapping[str, Decimal]]) -> list[Shortfall]:
    """Every (quota, key) whose ``hard`` less ``used`` is below what is asked (the same charges for
    every quota, or what each quota's scope is charged); GPUs first."""
    found = []
    for quota in quotas:
        wanted = asked(quota) if callable(asked) else asked
        name = quota["metadata"]["name"]
        status = quota.get("status") or {}
        hard = (status.get("hard") or quota.get("spec", {}).get("hard") or {})
        used = status.get("used") or {}
        for key, limit in hard.items():
            if key not in wanted:
                continue
            have, spent = parse_quantity(limit), parse_quantity(used.get(key, 0))
            if wanted[key] > have - spent:
                found.append(Shortfall(name, key, have, spent, wanted[key]))
    return sorted(found, key=lambda s: (s.key != GPU_KEY, s.quota, s.key))


def check(quotas: Iterable[Mapping[str, Any]], cluster: Mapping[str, Any], workers: int, namespace: str) -> None:
    """QuotaError naming every shortfall when the cluster does not fit, GPUs first."""
    missing = shortfalls(quotas, lambda quota: cluster_charges(cluster, workers, quota))
    if not missing:
        return
    why = {GPU_KEY: f"{workers} worker(s) x {gpus_per_worker(cluster)} GPU(s) each"}
    parts = [f"{s.describe(namespace)} ({why.get(s.key, f'the scheduler and {workers} worker(s)')})" for s in missing]
    raise QuotaError("; ".join(parts) + ". Ask for fewer workers (--workers), or delete a cluster you kept"
                     f" (kubectl get daskclusters -n {namespace}); nothing was created")


def _number(value: Decimal) -> str:
    return str(int(value)) if value == value.to_integral_value() else str(value.normalize())
