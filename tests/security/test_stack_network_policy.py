"""Every stack's NetworkPolicies against the pods that stack really runs in the Dask namespace.

The test cluster's bridge network plugin does not enforce NetworkPolicy, so the program's
policies are evaluated (``network_policy.admits``, upstream ingress semantics) against the
labels of the pods each stack renders: the chart's pod templates after Helm and the
post-renderer, the data Job's template, and the labels the Dask operator's controller gives the
pods it makes of the ``DaskCluster`` (dask-kubernetes 2026.3.0 ``build_scheduler_deployment_spec``
and ``build_worker_deployment_spec``, imported).
"""
from __future__ import annotations

import pytest
from dask_kubernetes.operator.controller.controller import (build_scheduler_deployment_spec,
                                                            build_worker_deployment_spec)

from components.dask.network_policy import admits
from tests.render.program import VARIANTS
from tests.security.stack_objects import stack_objects

OPERATOR_NAMESPACE_LABELS = {"kubernetes.io/metadata.name": "dask-operator"}


def _template_labels(deployment: dict) -> dict:
    return deployment["spec"]["template"]["metadata"]["labels"]


def _roles(stack, namespace: str) -> dict[str, dict]:
    """role -> the pod labels of that role in the Dask namespace."""
    roles: dict[str, dict] = {}
    for _, ns, obj in stack.objects:
        if ns != namespace:
            continue
        kind, name = obj.get("kind"), obj.get("metadata", {}).get("name", "")
        if kind == "Deployment" and obj["spec"].get("replicas", 1) != 0:
            roles[name.rsplit("-", 1)[-1]] = _template_labels(obj)
        elif kind == "Job":
            roles["data-job"] = obj["spec"]["template"]["metadata"]["labels"]
        elif kind == "DaskCluster":
            roles["scheduler"] = _template_labels(build_scheduler_deployment_spec(name, {}, {}, {}))
            roles["worker"] = _template_labels(build_worker_deployment_spec(
                f"{name}-default", namespace, name, "0", {"containers": []}, {}, {}))
    return roles


@pytest.mark.parametrize("variant", list(VARIANTS))
def test_the_policies_admit_what_the_dask_pods_need_and_nothing_else(variant):
    stack = stack_objects(variant)
    namespace = next(ns for _, ns, o in stack.objects if o.get("kind") == "PersistentVolumeClaim")
    policies = [o for _, ns, o in stack.objects if o.get("kind") == "NetworkPolicy" and ns == namespace]
    assert any(p["spec"]["podSelector"] == {} for p in policies), "no default deny"
    roles = _roles(stack, namespace)
    assert {"scheduler", "worker", "jupyter", "data-job"} <= set(roles), sorted(roles)
    labels = {"kubernetes.io/metadata.name": namespace}

    def reach(source: str | None, target: str, port: int, source_ns: str = namespace, ns_labels=None) -> bool:
        peer = None if source is None else {"namespace": source_ns, "namespace_labels": ns_labels or labels,
                                            "labels": roles.get(source, {"app": "elsewhere"})}
        return admits(policies, labels, roles[target], peer, port)

    assert reach("worker", "scheduler", 8786) and reach("jupyter", "scheduler", 8786)
    assert reach("jupyter", "scheduler", 8787)  # the Dask JupyterLab extension's dashboard
    assert reach("scheduler", "worker", 40123) and reach("worker", "worker", 40123)
    assert reach("jupyter", "jupyter", 8888) and reach("elsewhere", "jupyter", 8888, "default", {})
    assert reach(None, "scheduler", 8786)  # the runner's port-forward: from the pod's own node
    assert not reach("data-job", "worker", 40123), "the data Job reaches a worker"
    assert not reach("worker", "data-job", 8080), "something reaches the data Job"
    assert not reach("elsewhere", "scheduler", 8787, "default", {"kubernetes.io/metadata.name": "default"})
    assert not reach("elsewhere", "worker", 40123, "default", {"kubernetes.io/metadata.name": "default"})
    if any(o.get("kind") == "DaskCluster" for _, _, o in stack.objects):
        # the operator's controller calls the scheduler's HTTP API (retire workers, adaptive target)
        assert reach("elsewhere", "scheduler", 8787, "dask-operator", OPERATOR_NAMESPACE_LABELS)
    exposed = any(o.get("kind") == "Service" and o["spec"].get("type") in ("LoadBalancer", "NodePort")
                  for _, _, o in stack.objects)
    outside = admits(policies, labels, roles["scheduler"], {"ip": "203.0.113.7"}, 8786)
    assert outside == exposed, f"the scheduler from outside the pod network: {outside}, exposed: {exposed}"
