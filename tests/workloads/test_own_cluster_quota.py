"""A person's cluster against their namespace's ResourceQuota, before anything is created
(workloads/cluster/quota.py): the whole cluster counted (scheduler + workers), what the
person's other pods already use counted, the answer naming the numbers."""
from __future__ import annotations

from decimal import Decimal

import pytest

from workloads.cluster import quota


def pod(cpu: str, memory: str, gpus: int = 0, requests: bool = True) -> dict:
    amounts = {"cpu": cpu, "memory": memory, **({quota.GPU: str(gpus)} if gpus else {})}
    resources = {"limits": dict(amounts), **({"requests": dict(amounts)} if requests else {})}
    return {"containers": [{"name": "c", "resources": resources}]}


CLUSTER = {"spec": {"scheduler": {"spec": pod("1", "2Gi")},
                    "worker": {"replicas": 0, "spec": pod("4", "16Gi", gpus=1)}}}


def resource_quota(hard: dict, used: dict | None = None, name: str = "dask-quota") -> dict:
    return {"metadata": {"name": name}, "spec": {"hard": hard},
            "status": {"hard": hard, "used": used or dict.fromkeys(hard, "0")}}


def test_the_whole_cluster_is_counted_scheduler_and_every_worker():
    asked = quota.cluster_charges(CLUSTER, workers=3)
    assert asked["pods"] == 4
    assert asked["requests.cpu"] == asked["cpu"] == 13
    assert asked["requests.memory"] == 50 * 2**30
    assert asked["requests.nvidia.com/gpu"] == 3
    assert "nvidia.com/gpu" not in asked  # an extended resource is quota'd only as requests.<name>
    assert quota.gpus_per_worker(CLUSTER) == 1


def test_a_container_without_requests_is_charged_its_limits():
    cluster = {"spec": {"scheduler": {"spec": pod("1", "1Gi", requests=False)},
                        "worker": {"spec": pod("2", "1Gi", gpus=1, requests=False)}}}
    asked = quota.cluster_charges(cluster, workers=2)
    assert (asked["requests.cpu"], asked["limits.cpu"], asked["requests.nvidia.com/gpu"]) == (5, 5, 2)


def test_over_the_gpu_quota_is_refused_with_the_numbers():
    quotas = [resource_quota({"requests.nvidia.com/gpu": "2", "pods": "10"})]
    with pytest.raises(quota.QuotaError) as refused:
        quota.check(quotas, CLUSTER, workers=4, namespace="dask-alice")
    message = str(refused.value)
    assert message.startswith("quota allows 2 GPUs in dask-alice; asked 4 (4 worker(s) x 1 GPU(s) each"), message
    assert "nothing was created" in message and "pods" not in message.split(";")[0]


def test_what_is_already_used_is_counted():
    quotas = [resource_quota({"requests.nvidia.com/gpu": "2"}, {"requests.nvidia.com/gpu": "1"})]
    quota.check(quotas, CLUSTER, workers=1, namespace="dask-alice")  # 1 free, 1 asked
    with pytest.raises(quota.QuotaError, match=r"^quota allows 2 GPUs in dask-alice, 1 of them in use; asked 2 "):
        quota.check(quotas, CLUSTER, workers=2, namespace="dask-alice")


def test_cpu_memory_and_pod_caps_are_checked_too_gpus_named_first():
    quotas = [resource_quota({"requests.cpu": "8", "requests.memory": "64Gi", "pods": "3",
                              "requests.nvidia.com/gpu": "8"})]
    with pytest.raises(quota.QuotaError) as refused:
        quota.check(quotas, CLUSTER, workers=2, namespace="dask-bob")  # 9 CPUs, 34Gi, 3 pods, 2 GPUs
    assert str(refused.value).startswith("quota dask-quota allows requests.cpu 8 in dask-bob; asked 9"), refused.value
    shortfalls = quota.shortfalls(quotas, quota.cluster_charges(CLUSTER, 3))
    assert [s.key for s in shortfalls] == ["pods", "requests.cpu"]
    quota.check(quotas, CLUSTER, workers=1, namespace="dask-bob")


def test_a_cluster_that_fits_or_a_namespace_without_quota_passes():
    quota.check([resource_quota({"requests.nvidia.com/gpu": "4", "requests.memory": "80Gi"})], CLUSTER, 4, "dask-alice")
    quota.check([], CLUSTER, 8, "dask-alice")


def test_quantities_are_kubernetes_quantities():
    assert quota.parse_quantity("500m") == Decimal("0.5")
    assert quota.parse_quantity("16Gi") == 16 * 2**30
    assert quota.parse_quantity(2) == 2


SYSTEM_PRIORITY = {"metadata": {"name": "dask-system-priority"},
                   "spec": {"hard": {"pods": "0"}, "scopeSelector": {"matchExpressions": [
                       {"scopeName": "PriorityClass", "operator": "In",
                        "values": ["system-node-critical", "system-cluster-critical"]}]}},
                   "status": {"hard": {"pods": "0"}, "used": {"pods": "0"}}}


def test_a_scoped_quota_counts_only_the_pods_in_its_scope():
    """The person's namespace allows no pod of the system priority classes (components/dask/
    team/access.py): their clusters, with no priority class, are not charged to it; a cluster
    whose workers ask for one is."""
    quota.check([SYSTEM_PRIORITY, resource_quota({"pods": "3"})], CLUSTER, workers=2, namespace="dask-alice")
    greedy = {"spec": {**CLUSTER["spec"], "worker": {"spec": {**pod("4", "16Gi", gpus=1),
                                                             "priorityClassName": "system-node-critical"}}}}
    with pytest.raises(quota.QuotaError, match=r"^quota dask-system-priority allows pods 0 in dask-alice; asked 2 "):
        quota.check([SYSTEM_PRIORITY], greedy, workers=2, namespace="dask-alice")


@pytest.mark.parametrize("scope, pod_spec, counted", [
    ("Terminating", {"activeDeadlineSeconds": 60}, True), ("Terminating", {}, False),
    ("NotTerminating", {}, True), ("BestEffort", {"containers": [{"name": "c"}]}, True),
    ("BestEffort", pod("1", "1Gi"), False), ("NotBestEffort", pod("1", "1Gi"), True),
])
def test_the_scopes_of_a_quota_as_the_api_server_matches_them(scope, pod_spec, counted):
    scoped = {"metadata": {"name": "q"}, "spec": {"hard": {"pods": "0"}, "scopes": [scope]}}
    assert quota.in_scope(scoped, pod_spec) is counted
