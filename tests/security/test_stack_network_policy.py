"""Every stack's NetworkPolicies against the pods that stack really runs in the Dask namespace.

The test cluster's bridge network plugin does not enforce NetworkPolicy, so the program's
policies are evaluated (``network_semantics``: the upstream ingress and egress semantics)
against the labels of the pods each stack renders: the chart's pod templates after Helm and the
post-renderer, the data Job's and the environment Job's templates, and the labels the Dask
operator's controller gives the pods it makes of the ``DaskCluster`` (dask-kubernetes 2026.3.0
``build_scheduler_deployment_spec`` and ``build_worker_deployment_spec``, imported).

Egress: every Dask pod resolves names and reaches its peers; only the pods that download reach
the outside, on the ports their URLs use; no pod reaches the API server (the ``kubernetes``
Service's ClusterIP before its rewrite, the control plane's 6443 after it).
"""
from __future__ import annotations

import ipaddress

import pytest
from dask_kubernetes.operator.controller.controller import build_scheduler_deployment_spec, build_worker_deployment_spec

from components.kube.network_semantics import admits, reaches
from components.settings.exposure import fetch_urls, workers_install
from tests.render.program import VARIANTS
from tests.render.stacks import stack_settings
from tests.security.stack_objects import stack_objects

OPERATOR_NAMESPACE_LABELS = {"kubernetes.io/metadata.name": "dask-operator"}
JOB_ROLES = {"dataset-prepare": "data-job", "dask-environment": "environment-job"}
DASK_ROLES = ("scheduler", "worker", "jupyter")
INTERNET_IP = "151.101.0.223"
API_SERVER_ADDRESS = "203.0.113.10"  # the control plane's endpoint, wherever it is: port 6443
RANDOM_PORT = 40123


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
            roles[JOB_ROLES[name]] = obj["spec"]["template"]["metadata"]["labels"]
        elif kind == "DaskCluster":
            roles["scheduler"] = _template_labels(build_scheduler_deployment_spec(name, {}, {}, {}))
            roles["worker"] = _template_labels(build_worker_deployment_spec(
                f"{name}-default", namespace, name, "0", {"containers": []}, {}, {}))
    return roles


class Stack:
    """One stack's policies, pods and settings, asked who reaches what."""

    def __init__(self, variant: str):
        stack = stack_objects(variant)
        self.settings = stack_settings(*VARIANTS[variant])
        self.objects = stack.objects
        self.namespace = next(ns for _, ns, o in stack.objects if o.get("kind") == "PersistentVolumeClaim")
        self.policies = [o for _, ns, o in stack.objects if o.get("kind") == "NetworkPolicy" and ns == self.namespace]
        self.roles = _roles(stack, self.namespace)
        self.labels = {"kubernetes.io/metadata.name": self.namespace}
        # kube-system carries its name label only from 1.21 (the API server sets it)
        named = stack.kubernetes_version >= (1, 21, 0)
        self.dns = {"namespace": "kube-system", "labels": {"k8s-app": "kube-dns"},
                    "namespace_labels": {"kubernetes.io/metadata.name": "kube-system"} if named else {}}

    def admits(self, source: str | None, target: str, port: int, source_ns: str | None = None,
               ns_labels: dict | None = None) -> bool:
        peer = None if source is None else {
            "namespace": source_ns or self.namespace, "namespace_labels": ns_labels or self.labels,
            "labels": self.roles.get(source, {"app": "elsewhere"})}
        return admits(self.policies, self.labels, self.roles[target], peer, port)

    def goes(self, role: str, to: dict, port: int, protocol: str = "TCP") -> bool:
        return reaches(self.policies, self.labels, self.roles[role], to, port, protocol)

    def pod(self, role: str) -> dict:
        return {"namespace": self.namespace, "namespace_labels": self.labels, "labels": self.roles[role]}


@pytest.fixture(scope="module", params=list(VARIANTS))
def stack(request) -> Stack:
    return Stack(request.param)


def test_the_policies_admit_what_the_dask_pods_need_and_nothing_else(stack):
    assert any(p["spec"]["podSelector"] == {} and "Egress" in p["spec"]["policyTypes"]
               and not p["spec"].get("ingress") and not p["spec"].get("egress")
               for p in stack.policies), "no default deny"
    assert {"scheduler", "worker", "jupyter", "data-job"} <= set(stack.roles), sorted(stack.roles)
    reach = stack.admits
    assert reach("worker", "scheduler", 8786) and reach("jupyter", "scheduler", 8786)
    assert reach("jupyter", "scheduler", 8787)  # the Dask JupyterLab extension's dashboard
    assert reach("scheduler", "worker", RANDOM_PORT) and reach("worker", "worker", RANDOM_PORT)
    assert reach(None, "scheduler", 8786) and reach(None, "jupyter", 8888)  # port-forwards: the pod's node
    assert not reach("data-job", "worker", RANDOM_PORT), "the data Job reaches a worker"
    assert not reach("data-job", "scheduler", 8787), "the data Job reaches the dashboard"
    assert not reach("worker", "data-job", 8080), "something reaches the data Job"
    other = {"kubernetes.io/metadata.name": "default"}
    for target, port in (("scheduler", 8787), ("worker", RANDOM_PORT), ("jupyter", 8888)):
        assert not reach("elsewhere", target, port, "default", other), target
    assert not reach("scheduler", "jupyter", 8888) and not reach("worker", "jupyter", 8888)
    if any(o.get("kind") == "DaskCluster" for _, _, o in stack.objects):
        # the operator's controller calls the scheduler's HTTP API (retire workers, adaptive target)
        assert reach("elsewhere", "scheduler", 8787, "dask-operator", OPERATOR_NAMESPACE_LABELS)


def test_only_the_source_ranges_reach_the_exposed_ports(stack):
    ranges = stack.settings.dask.lb_source_ranges
    services = {o["metadata"]["name"]: o for _, _, o in stack.objects
                if o.get("kind") == "Service" and o["spec"].get("type") in ("LoadBalancer", "NodePort")}
    inside = [str(next(ipaddress.ip_network(r).hosts())) for r in ranges]
    for target, port, service in (("scheduler", 8786, "dask-scheduler-external"),
                                  ("jupyter", 8888, "dask-jupyter-external")):
        for address in inside:
            assert admits(stack.policies, stack.labels, stack.roles[target], {"ip": address}, port) == (
                service in services), (target, address)
        for address in ("203.0.113.7", "10.0.0.12"):  # outside the ranges; a node after a SNAT
            assert not admits(stack.policies, stack.labels, stack.roles[target], {"ip": address}, port)
    for service in services.values():
        assert service["spec"]["externalTrafficPolicy"] == "Local"


def test_every_pod_resolves_names_and_reaches_its_peers(stack):
    for role in stack.roles:
        for protocol in ("UDP", "TCP"):
            assert stack.goes(role, stack.dns, 53, protocol), (role, protocol)
    assert stack.goes("worker", stack.pod("scheduler"), 8786)
    assert stack.goes("scheduler", stack.pod("worker"), RANDOM_PORT)
    assert stack.goes("worker", stack.pod("worker"), RANDOM_PORT)
    for port in (8786, 8787):
        assert stack.goes("jupyter", stack.pod("scheduler"), port)
    assert stack.goes("jupyter", stack.pod("worker"), RANDOM_PORT)
    for job in ("data-job", "environment-job"):
        if job in stack.roles:
            for role in DASK_ROLES:
                assert not stack.goes(job, stack.pod(role), 8786) and not stack.goes(job, stack.pod(role), RANDOM_PORT)


def test_no_pod_reaches_the_api_server(stack):
    kubernetes_service = str(next(ipaddress.ip_network(stack.settings.cluster.service_cidr).hosts()))
    apiserver_pod = {"namespace": "kube-system", "namespace_labels": {}, "labels": {"component": "kube-apiserver"}}
    for role in stack.roles:
        assert not stack.goes(role, {"ip": kubernetes_service}, 443), role
        assert not stack.goes(role, {"ip": API_SERVER_ADDRESS}, 6443), role
        assert not stack.goes(role, apiserver_pod, 6443), role


def test_only_the_pods_that_download_reach_the_outside_on_their_urls_ports(stack):
    urls = fetch_urls(stack.settings)
    data_http = any(u.startswith("http://") for k in ("dogsImagesUrl", "dogsLabelsUrl", "modelWeightsUrl",
                                                      "taxiUrlTemplate") for u in urls.get(k, []))
    expected = {"scheduler": set(), "jupyter": set(),
                "worker": {443} if workers_install(stack.settings) else set(),
                "data-job": {443, *([80] if data_http else [])},
                "environment-job": {443} if "packageIndexUrl" in urls else set()}
    for role in stack.roles:
        open_ports = {p for p in (80, 443, 22, 2049, 8080) if stack.goes(role, {"ip": INTERNET_IP}, p)}
        assert open_ports == expected[role], (role, open_ports)
    assert stack.settings.data.enabled == ("data-job" in stack.roles)


def test_the_fetch_rules_select_only_the_pods_that_download(stack):
    downloaders = {"data-job", "environment-job", *(["worker"] if workers_install(stack.settings) else [])}
    from components.kube.network_semantics import selector_matches

    for policy in stack.policies:
        if not any("ipBlock" in peer for rule in policy["spec"].get("egress") or [] for peer in rule.get("to", [])):
            continue
        selected = {role for role, labels in stack.roles.items()
                    if selector_matches(policy["spec"]["podSelector"], labels)}
        assert selected and selected <= downloaders, (policy["metadata"]["name"], selected)
