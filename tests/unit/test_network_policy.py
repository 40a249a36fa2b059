"""The Dask namespace's NetworkPolicies, checked with the evaluator of NetworkPolicy ingress
semantics (the test cluster's network plugin does not enforce them): who must reach the
scheduler, the workers and Jupyter does, for both backends, exposed or not; who must not,
does not. The operator's pods carry the labels dask-kubernetes' own controller gives them
(2026.3.0, imported); the chart's pods the labels of its pod templates (dask 2024.1.1)."""
from __future__ import annotations

import pytest
from dask_kubernetes.operator.controller.controller import (build_scheduler_deployment_spec,
                                                            build_worker_deployment_spec)

from components.dask import operator_spec
from components.dask.exposure import selector as chart_selector
from components.dask.network_policy import (DaskPodSelectors, admits, dask_network_policies,
                                            selector_matches)

NS = "rapidsai"
NAME_LABEL = "kubernetes.io/metadata.name"
NS_LABELS = {NAME_LABEL: NS}
OPERATOR_NS = "dask-operator"
POD_CIDR = "192.168.0.0/16"
EXTERNAL_IP = "203.0.113.7"  # a LoadBalancer client
NODE_IP = "10.0.0.12"  # a NodePort client after kube-proxy's SNAT: a node's address
POD_IP = "192.168.3.4"  # inside the pod network
RANDOM_PORT = 40123  # a worker's comm or nanny port
DATA_JOB = {"app.kubernetes.io/name": "dataset-prepare", "batch.kubernetes.io/job-name": "dataset-prepare",
            "job-name": "dataset-prepare", "batch.kubernetes.io/controller-uid": "0f1e", "controller-uid": "0f1e"}


NO_CONTAINERS = {"containers": []}  # the controller adds its environment to each container


def _template_labels(deployment: dict) -> dict:
    return dict(deployment["spec"]["template"]["metadata"]["labels"])


def _chart_pod(release: str, component: str) -> dict:
    # The chart's pod templates: app, release, component; the ReplicaSet adds its hash.
    return {"app": "dask", "release": release, "component": component, "pod-template-hash": "7d9f8c6b5"}


def _worker_labels(group: str, cluster: str, uuid: str) -> dict:
    return _template_labels(build_worker_deployment_spec(group, NS, cluster, uuid, NO_CONTAINERS, {}, {}))


def _operator_pods(cluster: str) -> dict[str, dict]:
    return {
        "scheduler": _template_labels(build_scheduler_deployment_spec(cluster, {}, {}, {})),
        "worker": _worker_labels(f"{cluster}-default", cluster, "a1b2"),
        "cpu worker": _worker_labels(f"{cluster}-cpu", cluster, "c3d4"),
    }


class Deployment:
    """One backend's policies and the labels of its pods."""

    def __init__(self, backend: str, exposed: bool, jupyter: bool = True):
        self.backend, self.exposed = backend, exposed
        cidr = POD_CIDR if exposed else None
        if backend == "helm":
            self.selectors = DaskPodSelectors.for_helm("dask")
            self.pods = {"scheduler": _chart_pod("dask", "scheduler"), "worker": _chart_pod("dask", "worker"),
                         "jupyter": _chart_pod("dask", "jupyter")}
            self.policies = dask_network_policies(NS, self.selectors, operator_namespace=None,
                                                  external_pod_cidr=cidr, name_prefix="dask")
        else:
            self.selectors = DaskPodSelectors.for_operator("dask", "dask" if jupyter else None)
            self.pods = _operator_pods("dask")
            if jupyter:
                self.pods["jupyter"] = _chart_pod("dask", "jupyter")
            self.policies = dask_network_policies(NS, self.selectors, operator_namespace=OPERATOR_NS,
                                                  external_pod_cidr=cidr, name_prefix="dask")

    @property
    def workers(self) -> list[dict]:
        return [labels for name, labels in self.pods.items() if "worker" in name]

    def reaches(self, source: dict | None, target: dict, port: int) -> bool:
        return admits(self.policies, NS_LABELS, target, source, port)


def pod(labels: dict, namespace: str = NS, namespace_labels: dict | None = None) -> dict:
    return {"namespace": namespace, "namespace_labels": namespace_labels or {NAME_LABEL: namespace},
            "labels": labels}


def ip(address: str) -> dict:
    return {"ip": address}


CASES = [("helm", False), ("helm", True), ("operator", False), ("operator", True)]


@pytest.fixture(params=CASES, ids=[f"{b}-{'exposed' if e else 'internal'}" for b, e in CASES])
def dep(request) -> Deployment:
    return Deployment(*request.param)


# --- the policies ----------------------------------------------------------------------------

def test_the_policies_names_kinds_and_namespace(dep):
    assert [p["metadata"]["name"] for p in dep.policies] == [
        "dask-default-deny", "dask-scheduler-api", "dask-workers", "dask-jupyter"]
    assert {(p["apiVersion"], p["kind"], p["metadata"]["namespace"]) for p in dep.policies} == {
        ("networking.k8s.io/v1", "NetworkPolicy", NS)}


def test_without_jupyter_there_is_no_jupyter_policy_and_its_pod_reaches_no_dask_pod():
    dep = Deployment("operator", exposed=False, jupyter=False)
    assert [p["metadata"]["name"] for p in dep.policies] == ["dask-default-deny", "dask-scheduler-api", "dask-workers"]
    jupyter = pod(_chart_pod("dask", "jupyter"))
    assert not dep.reaches(jupyter, dep.pods["worker"], RANDOM_PORT)
    assert not dep.reaches(jupyter, dep.pods["scheduler"], operator_spec.SCHEDULER_PORT)


def test_the_helm_selectors_are_the_charts_service_selectors():
    s = DaskPodSelectors.for_helm("rel")
    components = ("scheduler", "worker", "jupyter")
    assert (s.scheduler, s.worker, s.jupyter) == tuple(chart_selector("rel", c) for c in components)


def test_the_operator_selectors_are_the_controllers_labels():
    s = DaskPodSelectors.for_operator("c1", "jup")
    pods = _operator_pods("c1")
    assert s.scheduler.items() <= pods["scheduler"].items()
    assert s.worker.items() <= pods["worker"].items() and s.worker.items() <= pods["cpu worker"].items()
    assert not selector_matches({"matchLabels": s.worker}, pods["scheduler"])
    assert s.jupyter == chart_selector("jup", "jupyter")
    assert DaskPodSelectors.for_operator("c1", None).jupyter is None


def test_the_operator_scheduler_policy_keeps_the_existing_name_selector_and_dashboard_rule():
    """As ``operator_spec.scheduler_network_policy`` built it: the object name callers keep,
    the scheduler pod, and the dashboard's sources (operator, namespace, outside when exposed)."""
    new = Deployment("operator", exposed=True).policies[1]
    assert new["metadata"]["name"] == "dask-scheduler-api"
    assert new["spec"]["podSelector"] == {"matchLabels": {"dask.org/cluster-name": "dask",
                                                          "dask.org/component": "scheduler"}}
    assert new["spec"]["ingress"][1] == {"from": [
        {"namespaceSelector": {"matchLabels": {"kubernetes.io/metadata.name": OPERATOR_NS}}},
        {"podSelector": {}}, {"ipBlock": {"cidr": "0.0.0.0/0", "except": [POD_CIDR]}}],
        "ports": [{"protocol": "TCP", "port": 8787}]}


def test_the_default_deny_selects_every_pod_and_admits_nothing(dep):
    deny = dep.policies[0]
    assert deny["spec"] == {"podSelector": {}, "policyTypes": ["Ingress"]}  # egress stays open
    for labels in [*dep.pods.values(), DATA_JOB, {"anything": "else"}, {}]:
        assert selector_matches(deny["spec"]["podSelector"], labels)
        assert not admits([deny], NS_LABELS, labels, pod(dep.pods["scheduler"]), 8080)


# --- the scheduler ---------------------------------------------------------------------------

def test_workers_reach_the_scheduler_comm_port(dep):
    for worker in dep.workers:
        assert dep.reaches(pod(worker), dep.pods["scheduler"], operator_spec.SCHEDULER_PORT)


def test_jupyter_reaches_the_scheduler_comm_and_dashboard(dep):
    for port in (operator_spec.SCHEDULER_PORT, operator_spec.DASHBOARD_PORT):
        assert dep.reaches(pod(dep.pods["jupyter"]), dep.pods["scheduler"], port)


def test_the_scheduler_refuses_other_ports(dep):
    assert not dep.reaches(pod(dep.pods["jupyter"]), dep.pods["scheduler"], 8080)
    assert not dep.reaches(pod(dep.pods["worker"]), dep.pods["scheduler"], RANDOM_PORT)


def test_the_dashboard_refuses_other_namespaces_but_the_operators(dep):
    other = pod({"app": "dask", "release": "dask", "component": "jupyter"}, "default")
    assert not dep.reaches(other, dep.pods["scheduler"], operator_spec.DASHBOARD_PORT)
    controller = pod({"app.kubernetes.io/name": "dask-kubernetes-operator"}, OPERATOR_NS)
    assert dep.reaches(controller, dep.pods["scheduler"], operator_spec.DASHBOARD_PORT) == (dep.backend == "operator")
    for source in (other, controller):  # the comm port is the workers' and Jupyter's
        assert not dep.reaches(source, dep.pods["scheduler"], operator_spec.SCHEDULER_PORT)


def test_a_pod_without_dask_labels_is_refused_the_comm_port_and_keeps_the_dashboard(dep):
    data_job = pod(DATA_JOB)
    assert not dep.reaches(data_job, dep.pods["scheduler"], operator_spec.SCHEDULER_PORT)
    assert dep.reaches(data_job, dep.pods["scheduler"], operator_spec.DASHBOARD_PORT)  # the namespace's pods


def test_an_external_address_reaches_the_scheduler_only_when_exposed(dep):
    for address in (EXTERNAL_IP, NODE_IP):
        for port in (operator_spec.SCHEDULER_PORT, operator_spec.DASHBOARD_PORT):
            assert dep.reaches(ip(address), dep.pods["scheduler"], port) == dep.exposed
    assert not dep.reaches(ip(POD_IP), dep.pods["scheduler"], operator_spec.SCHEDULER_PORT)


def test_the_pods_own_node_always_reaches_the_scheduler(dep):
    """Probes and ``kubectl port-forward``: NetworkPolicy never filters them."""
    assert dep.reaches(None, dep.pods["scheduler"], operator_spec.SCHEDULER_PORT)


# --- the workers -----------------------------------------------------------------------------

def test_a_worker_reaches_another_worker_on_any_port(dep):
    for source in dep.workers:
        for target in dep.workers:
            for port in (RANDOM_PORT, 1024, 65535):
                assert dep.reaches(pod(source), target, port)


def test_the_scheduler_and_jupyter_reach_the_workers(dep):
    for target in dep.workers:
        assert dep.reaches(pod(dep.pods["scheduler"]), target, RANDOM_PORT)
        assert dep.reaches(pod(dep.pods["jupyter"]), target, RANDOM_PORT)


def test_pods_without_the_clusters_labels_cannot_reach_a_worker(dep):
    strangers = [pod(DATA_JOB), pod({}),
                 pod({"app": "dask", "release": "other", "component": "worker"}),  # another release
                 pod(_operator_pods("other")["worker"]),  # another cluster
                 pod(dep.pods["worker"], "default"),  # the same labels in another namespace
                 pod({"app.kubernetes.io/name": "dask-kubernetes-operator"}, OPERATOR_NS)]
    for source in strangers:
        assert not dep.reaches(source, dep.pods["worker"], RANDOM_PORT)


def test_an_external_address_never_reaches_a_worker(dep):
    for address in (EXTERNAL_IP, NODE_IP):
        assert not dep.reaches(ip(address), dep.pods["worker"], RANDOM_PORT)


# --- Jupyter and the data Job ----------------------------------------------------------------

def test_jupyter_admits_its_port_from_anywhere_and_no_other_port(dep):
    for source in (pod({"app": "x"}, "default"), pod(DATA_JOB), ip(EXTERNAL_IP)):
        assert dep.reaches(source, dep.pods["jupyter"], 8888)
    assert not dep.reaches(pod(dep.pods["worker"]), dep.pods["jupyter"], RANDOM_PORT)


def test_nothing_reaches_the_data_jobs_pod(dep):
    sources = [*(pod(labels) for labels in dep.pods.values()), pod(DATA_JOB),
               pod({"app.kubernetes.io/name": "dask-kubernetes-operator"}, OPERATOR_NS),
               ip(EXTERNAL_IP), ip(NODE_IP)]
    for source in sources:
        for port in (operator_spec.SCHEDULER_PORT, operator_spec.DASHBOARD_PORT, 8888, 80, RANDOM_PORT):
            assert not dep.reaches(source, DATA_JOB, port)


# --- the evaluator ---------------------------------------------------------------------------

def policy(pod_selector: dict, ingress: list | None, namespace: str = NS, types=("Ingress",)) -> dict:
    spec = {"podSelector": pod_selector, "policyTypes": list(types)}
    if ingress is not None:
        spec["ingress"] = ingress
    return {"apiVersion": "networking.k8s.io/v1", "kind": "NetworkPolicy",
            "metadata": {"name": "p", "namespace": namespace}, "spec": spec}


APP_A = {"matchLabels": {"app": "a"}}


def test_a_pod_no_policy_selects_admits_everything():
    only_b = [policy({"matchLabels": {"app": "b"}}, None)]
    assert admits(only_b, NS_LABELS, {"app": "a"}, ip(EXTERNAL_IP), 1)
    assert not admits(only_b, NS_LABELS, {"app": "b"}, ip(EXTERNAL_IP), 1)


def test_a_rule_whose_from_does_not_match_refuses():
    rule = [policy({}, [{"from": [{"podSelector": APP_A}], "ports": [{"port": 80}]}])]
    assert not admits(rule, NS_LABELS, {}, pod({"app": "b"}), 80)
    assert admits(rule, NS_LABELS, {}, pod({"app": "a"}), 80)


def test_absent_ports_admit_every_port_and_absent_from_every_source():
    any_port = [policy({}, [{"from": [{"podSelector": APP_A}]}])]
    assert admits(any_port, NS_LABELS, {}, pod({"app": "a"}), 1)
    assert admits(any_port, NS_LABELS, {}, pod({"app": "a"}), 65535)
    anyone = [policy({}, [{"ports": [{"protocol": "TCP", "port": 80}]}])]
    assert admits(anyone, NS_LABELS, {}, ip(EXTERNAL_IP), 80)
    assert not admits(anyone, NS_LABELS, {}, ip(EXTERNAL_IP), 81)


def test_port_ranges_and_protocols():
    ranged = [policy({}, [{"ports": [{"port": 8000, "endPort": 8010}, {"protocol": "UDP", "port": 53}]}])]
    assert admits(ranged, NS_LABELS, {}, ip(EXTERNAL_IP), 8010)
    assert not admits(ranged, NS_LABELS, {}, ip(EXTERNAL_IP), 8011)
    assert not admits(ranged, NS_LABELS, {}, ip(EXTERNAL_IP), 53)  # TCP traffic only


def test_named_ports_are_refused_by_the_evaluator():
    named = [policy({}, [{"ports": [{"port": "http-dashboard"}]}])]
    with pytest.raises(ValueError, match="named ports"):
        admits(named, NS_LABELS, {}, ip(EXTERNAL_IP), 8787)


def test_any_selecting_policy_may_admit():
    rules = [policy({}, [{"from": [{"podSelector": APP_A}]}]), policy({}, [{"ports": [{"port": 80}]}])]
    assert admits(rules, NS_LABELS, {}, ip(EXTERNAL_IP), 80)
    assert admits(rules, NS_LABELS, {}, pod({"app": "a"}), 81)
    assert not admits(rules, NS_LABELS, {}, ip(EXTERNAL_IP), 81)


def test_a_pod_selector_peer_matches_only_the_policys_namespace():
    rule = [policy({}, [{"from": [{"podSelector": {}}]}])]
    assert admits(rule, NS_LABELS, {}, pod({}), 80)
    assert not admits(rule, NS_LABELS, {}, pod({}, "default"), 80)


def test_namespace_and_pod_selectors_in_one_peer_must_both_match():
    rule = [policy({}, [{"from": [{"namespaceSelector": {"matchLabels": {"team": "x"}}, "podSelector": APP_A}]}])]
    assert admits(rule, NS_LABELS, {}, pod({"app": "a"}, "other", {"team": "x"}), 80)
    assert not admits(rule, NS_LABELS, {}, pod({"app": "b"}, "other", {"team": "x"}), 80)
    assert not admits(rule, NS_LABELS, {}, pod({"app": "a"}, "other", {"team": "y"}), 80)


def test_a_namespace_selector_matches_the_implied_name_label():
    rule = [policy({}, [{"from": [{"namespaceSelector": {"matchLabels": {NAME_LABEL: "ops"}}}]}])]
    assert admits(rule, NS_LABELS, {}, {"namespace": "ops", "labels": {}}, 80)
    assert not admits(rule, NS_LABELS, {}, {"namespace": "dev", "labels": {}}, 80)


def test_ip_blocks_and_their_exceptions():
    rule = [policy({}, [{"from": [{"ipBlock": {"cidr": "10.0.0.0/8", "except": ["10.1.0.0/16"]}}]}])]
    assert admits(rule, NS_LABELS, {}, ip("10.2.0.1"), 80)
    assert not admits(rule, NS_LABELS, {}, ip("10.1.0.1"), 80)
    assert not admits(rule, NS_LABELS, {}, ip("11.0.0.1"), 80)
    assert not admits(rule, NS_LABELS, {}, pod({}), 80)  # a pod source is no address


def test_policies_of_other_namespaces_and_egress_only_policies_do_not_apply():
    elsewhere = [policy({}, None, namespace="default")]
    assert admits(elsewhere, NS_LABELS, {}, ip(EXTERNAL_IP), 80)
    assert not admits(elsewhere, {NAME_LABEL: "default"}, {}, ip(EXTERNAL_IP), 80)
    egress_only = [policy({}, None, types=("Egress",))]
    assert admits(egress_only, NS_LABELS, {}, ip(EXTERNAL_IP), 80)
    unset_types = [{**policy({}, None), "spec": {"podSelector": {}}}]  # Ingress implied
    assert not admits(unset_types, NS_LABELS, {}, ip(EXTERNAL_IP), 80)


@pytest.mark.parametrize("expression, labels, expected", [
    ({"key": "tier", "operator": "In", "values": ["a", "b"]}, {"tier": "b"}, True),
    ({"key": "tier", "operator": "In", "values": ["a", "b"]}, {"tier": "c"}, False),
    ({"key": "tier", "operator": "In", "values": ["a"]}, {}, False),
    ({"key": "tier", "operator": "NotIn", "values": ["a"]}, {"tier": "c"}, True),
    ({"key": "tier", "operator": "NotIn", "values": ["a"]}, {"tier": "a"}, False),
    ({"key": "tier", "operator": "NotIn", "values": ["a"]}, {}, True),
    ({"key": "tier", "operator": "Exists"}, {"tier": ""}, True),
    ({"key": "tier", "operator": "Exists"}, {}, False),
    ({"key": "tier", "operator": "DoesNotExist"}, {}, True),
    ({"key": "tier", "operator": "DoesNotExist"}, {"tier": "a"}, False),
])
def test_match_expressions(expression, labels, expected):
    rule = [policy({}, [{"from": [{"podSelector": {"matchExpressions": [expression]}}]}])]
    assert admits(rule, NS_LABELS, {}, pod(labels), 80) == expected


def test_the_target_namespace_must_be_named():
    with pytest.raises(ValueError, match="kubernetes.io/metadata.name"):
        admits([], {"team": "x"}, {}, ip(EXTERNAL_IP), 80)
