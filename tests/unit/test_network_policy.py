"""The Dask namespace's NetworkPolicies, checked with the evaluator of NetworkPolicy semantics
(``network_semantics``; the test cluster's network plugin does not enforce them): who must
reach the scheduler, the workers and Jupyter does, for both backends, exposed or not; who must
not, does not; every pod resolves names and reaches its peers, only the downloading pods reach
the outside, and no pod reaches the API server. The operator's pods carry the labels
dask-kubernetes' own controller gives them (2026.3.0, imported); the chart's pods the labels of
its pod templates (dask 2024.1.1)."""
from __future__ import annotations

import pytest
from dask_kubernetes.operator.controller.controller import build_scheduler_deployment_spec, build_worker_deployment_spec

from components.dask import operator_spec
from components.kube.exposure import selector as chart_selector
from components.kube.network_policy import (
    DaskPodSelectors,
    NamespaceNetwork,
    Outside,
    dask_network_policies,
    fetch_policy,
)
from components.kube.network_semantics import admits, reaches, selector_matches

NS = "rapidsai"
NAME_LABEL = "kubernetes.io/metadata.name"
NS_LABELS = {NAME_LABEL: NS}
OPERATOR_NS = "dask-operator"
POD_CIDR = "192.168.0.0/16"
SERVICE_CIDR = "10.96.0.0/12"
NODE_CIDR = "10.20.30.0/24"
SOURCE_RANGE = "198.51.100.0/24"  # loadBalancerSourceRanges
CLIENT_IP = "198.51.100.9"  # a client in the source ranges (its address kept: externalTrafficPolicy Local)
EXTERNAL_IP = "203.0.113.7"  # an address outside the source ranges
NODE_IP = "10.20.30.12"  # a node: a NodePort client after a SNAT, a control-plane endpoint
POD_IP = "192.168.3.4"  # inside the pod network
KUBERNETES_SERVICE_IP = "10.96.0.1"  # the `kubernetes` Service: the API server's ClusterIP, port 443
API_SERVER_PORT = 6443  # its endpoints (the control-plane nodes) and the control plane's address
INTERNET_IP = "151.101.0.223"  # a package index or download host
OUTSIDE = Outside(excepted=(POD_CIDR, SERVICE_CIDR, NODE_CIDR), dns_namespace_named=True)
DNS_POD = {"namespace": "kube-system", "labels": {"k8s-app": "kube-dns", "pod-template-hash": "5d78c9869d"}}
RANDOM_PORT = 40123  # a worker's comm or nanny port
DATA_JOB = {"app.kubernetes.io/name": "dataset-prepare", "batch.kubernetes.io/job-name": "dataset-prepare",
            "job-name": "dataset-prepare", "batch.kubernetes.io/controller-uid": "0f1e", "controller-uid": "0f1e"}


NO_CONTAINERS: dict[str, list[dict]] = {"containers": []}  # the controller adds its environment to each container


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

    def __init__(self, backend: str, exposed: bool, jupyter: bool = True, fetch_ports: tuple[int, ...] = ()):
        self.backend, self.exposed = backend, exposed
        # as network_settings.namespace_network builds it: the operator's HTTP port never from outside
        network = NamespaceNetwork(outside=OUTSIDE, pod_cidr=POD_CIDR, scheduler_exposed=exposed,
                                   dashboard_exposed=exposed and backend != "operator",
                                   jupyter_exposed=exposed, source_ranges=(SOURCE_RANGE,),
                                   worker_fetch_ports=fetch_ports)
        if backend == "helm":
            self.selectors = DaskPodSelectors.for_helm("dask")
            self.pods = {"scheduler": _chart_pod("dask", "scheduler"), "worker": _chart_pod("dask", "worker"),
                         "jupyter": _chart_pod("dask", "jupyter")}
            self.policies = dask_network_policies(NS, self.selectors, operator_namespace=None,
                                                  network=network, name_prefix="dask")
        else:
            self.selectors = DaskPodSelectors.for_operator("dask", "dask" if jupyter else None)
            self.pods = _operator_pods("dask")
            if jupyter:
                self.pods["jupyter"] = _chart_pod("dask", "jupyter")
            self.policies = dask_network_policies(NS, self.selectors, operator_namespace=OPERATOR_NS,
                                                  network=network, name_prefix="dask")

    @property
    def workers(self) -> list[dict]:
        return [labels for name, labels in self.pods.items() if "worker" in name]

    def reaches(self, source: dict | None, target: dict, port: int) -> bool:
        """Whether ``target`` admits ``source`` (ingress only)."""
        return admits(self.policies, NS_LABELS, target, source, port)

    def goes(self, source: dict, to: dict, port: int, protocol: str = "TCP") -> bool:
        """Whether the pod ``source`` (labels) may open traffic to ``to`` (egress only)."""
        return reaches(self.policies, NS_LABELS, source, to, port, protocol)


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
        "dask-default-deny", "dask-dns", "dask-scheduler-api", "dask-workers", "dask-jupyter"]
    assert {(p["apiVersion"], p["kind"], p["metadata"]["namespace"]) for p in dep.policies} == {
        ("networking.k8s.io/v1", "NetworkPolicy", NS)}


def test_without_jupyter_there_is_no_jupyter_policy_and_its_pod_reaches_no_dask_pod():
    dep = Deployment("operator", exposed=False, jupyter=False)
    assert [p["metadata"]["name"] for p in dep.policies] == [
        "dask-default-deny", "dask-dns", "dask-scheduler-api", "dask-workers"]
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
    the scheduler pod, and the dashboard's sources (the operator and Jupyter; never the outside:
    its HTTP API retires workers, without TLS or authentication)."""
    new = Deployment("operator", exposed=True).policies[2]
    assert new["metadata"]["name"] == "dask-scheduler-api"
    assert new["spec"]["podSelector"] == {"matchLabels": {"dask.org/cluster-name": "dask",
                                                          "dask.org/component": "scheduler"}}
    assert new["spec"]["ingress"][1] == {"from": [
        {"namespaceSelector": {"matchLabels": {"kubernetes.io/metadata.name": OPERATOR_NS}}},
        {"podSelector": {"matchLabels": {"app": "dask", "release": "dask", "component": "jupyter"}}}],
        "ports": [{"protocol": "TCP", "port": 8787}]}


def test_the_default_deny_selects_every_pod_and_admits_and_allows_nothing(dep):
    deny = dep.policies[0]
    assert deny["spec"] == {"podSelector": {}, "policyTypes": ["Ingress", "Egress"]}
    for labels in [*dep.pods.values(), DATA_JOB, {"anything": "else"}, {}]:
        assert selector_matches(deny["spec"]["podSelector"], labels)
        assert not admits([deny], NS_LABELS, labels, pod(dep.pods["scheduler"]), 8080)
        assert not reaches([deny], NS_LABELS, labels, ip(INTERNET_IP), 443)
        assert not reaches([deny], NS_LABELS, labels, DNS_POD, 53, "UDP")


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


def test_a_pod_without_dask_labels_is_refused_the_comm_port_and_the_dashboard(dep):
    data_job = pod(DATA_JOB)
    assert not dep.reaches(data_job, dep.pods["scheduler"], operator_spec.SCHEDULER_PORT)
    assert not dep.reaches(data_job, dep.pods["scheduler"], operator_spec.DASHBOARD_PORT)


def test_the_source_ranges_reach_the_scheduler_only_when_exposed(dep):
    """The comm port (mutual TLS) when exposed; the HTTP port only with the Helm backend, whose
    dashboard speaks TLS and serves no HTTP API: the operator's serves ``retire_workers`` to anyone."""
    assert dep.reaches(ip(CLIENT_IP), dep.pods["scheduler"], operator_spec.SCHEDULER_PORT) == dep.exposed
    dashboard = dep.reaches(ip(CLIENT_IP), dep.pods["scheduler"], operator_spec.DASHBOARD_PORT)
    assert dashboard == (dep.exposed and dep.backend == "helm")


def test_no_address_outside_the_source_ranges_reaches_the_scheduler(dep):
    """Exposed or not: an address outside loadBalancerSourceRanges (through a NodePort, which
    kube-proxy never filters by them), a node (a client SNATed by kube-proxy), a pod."""
    for address in (EXTERNAL_IP, NODE_IP, POD_IP):
        for port in (operator_spec.SCHEDULER_PORT, operator_spec.DASHBOARD_PORT):
            assert not dep.reaches(ip(address), dep.pods["scheduler"], port), (address, port)


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

def test_jupyter_admits_only_the_source_ranges_and_only_when_exposed(dep):
    """Nothing in the cluster needs Jupyter: no pod of any namespace reaches it; the source
    ranges do when it is exposed; the runner's port-forward (its node) always does."""
    for source in (pod({"app": "x"}, "default"), pod(DATA_JOB), *(pod(labels) for labels in dep.pods.values()),
                   ip(EXTERNAL_IP), ip(NODE_IP)):
        assert not dep.reaches(source, dep.pods["jupyter"], 8888), source
    assert dep.reaches(ip(CLIENT_IP), dep.pods["jupyter"], 8888) == dep.exposed
    assert not dep.reaches(ip(CLIENT_IP), dep.pods["jupyter"], RANDOM_PORT)
    assert dep.reaches(None, dep.pods["jupyter"], 8888)


def test_nothing_reaches_the_data_jobs_pod(dep):
    sources = [*(pod(labels) for labels in dep.pods.values()), pod(DATA_JOB),
               pod({"app.kubernetes.io/name": "dask-kubernetes-operator"}, OPERATOR_NS),
               ip(EXTERNAL_IP), ip(NODE_IP)]
    for source in sources:
        for port in (operator_spec.SCHEDULER_PORT, operator_spec.DASHBOARD_PORT, 8888, 80, RANDOM_PORT):
            assert not dep.reaches(source, DATA_JOB, port)


# --- egress ----------------------------------------------------------------------------------

def test_every_dask_pod_resolves_names_over_udp_and_tcp(dep):
    for labels in dep.pods.values():
        for protocol in ("UDP", "TCP"):
            assert dep.goes(labels, DNS_POD, 53, protocol)
        assert not dep.goes(labels, DNS_POD, 8080)
        assert not dep.goes(labels, {"namespace": "default", "labels": {"k8s-app": "kube-dns"}}, 53, "UDP")


def test_the_dask_pods_reach_their_peers_on_their_ports(dep):
    scheduler, jupyter = dep.pods["scheduler"], dep.pods["jupyter"]
    for worker in dep.workers:
        assert dep.goes(worker, pod(scheduler), operator_spec.SCHEDULER_PORT)
        assert not dep.goes(worker, pod(scheduler), operator_spec.DASHBOARD_PORT)
        assert dep.goes(scheduler, pod(worker), RANDOM_PORT)
        assert dep.goes(jupyter, pod(worker), RANDOM_PORT)
        for other in dep.workers:
            assert dep.goes(worker, pod(other), RANDOM_PORT)
    for port in (operator_spec.SCHEDULER_PORT, operator_spec.DASHBOARD_PORT):
        assert dep.goes(jupyter, pod(scheduler), port)
    assert not dep.goes(scheduler, pod(jupyter), 8888) and not dep.goes(dep.pods["worker"], pod(jupyter), 8888)


def test_no_dask_pod_reaches_the_api_server_nor_the_outside(dep):
    """The ``kubernetes`` Service before and after its address is rewritten (the plugin
    decides which one the policy sees), the control plane's address on 6443, the nodes, and
    any host outside: none, for a cluster whose workers install nothing at start."""
    for labels in dep.pods.values():
        assert not dep.goes(labels, ip(KUBERNETES_SERVICE_IP), 443)
        for address in (NODE_IP, EXTERNAL_IP, INTERNET_IP):
            for port in (API_SERVER_PORT, 443, 80, 2049):
                assert not dep.goes(labels, ip(address), port), (labels, address, port)
        assert not dep.goes(labels, pod({"component": "apiserver"}, "kube-system"), API_SERVER_PORT)


def test_workers_that_install_at_start_reach_the_outside_on_their_index_ports_only():
    dep = Deployment("helm", exposed=False, fetch_ports=(443, 8080))
    worker = dep.pods["worker"]
    assert dep.goes(worker, ip(INTERNET_IP), 443) and dep.goes(worker, ip(INTERNET_IP), 8080)
    assert not dep.goes(worker, ip(INTERNET_IP), 80) and not dep.goes(worker, ip(INTERNET_IP), 22)
    for address in (KUBERNETES_SERVICE_IP, NODE_IP, POD_IP):  # the cluster's own ranges
        assert not dep.goes(worker, ip(address), 443)
    for other in ("scheduler", "jupyter"):  # only the workers install
        assert not dep.goes(dep.pods[other], ip(INTERNET_IP), 443)


def test_a_fetch_policy_lets_its_pod_download_and_nothing_else():
    urls = ["http://vision.stanford.edu/aditya86/ImageNetDogs/images.tar",
            "https://d37ci6vzurychx.cloudfront.net/trip-data/yellow_tripdata_{month}.parquet"]
    policies = [*Deployment("operator", exposed=True).policies,
                fetch_policy(NS, "dataset-prepare", {"app.kubernetes.io/name": "dataset-prepare"}, urls, OUTSIDE)]
    goes = lambda to, port, protocol="TCP": reaches(policies, NS_LABELS, DATA_JOB, to, port, protocol)  # noqa: E731
    assert goes(ip(INTERNET_IP), 443) and goes(ip(INTERNET_IP), 80)
    assert goes(DNS_POD, 53, "UDP") and goes(DNS_POD, 53, "TCP")
    assert not goes(ip(INTERNET_IP), 8080) and not goes(ip(INTERNET_IP), API_SERVER_PORT)
    for address in (KUBERNETES_SERVICE_IP, NODE_IP, POD_IP):
        assert not goes(ip(address), 443) and not goes(ip(address), 80)
    for peer in Deployment("operator", exposed=True).pods.values():
        assert not goes(pod(peer), operator_spec.SCHEDULER_PORT) and not goes(pod(peer), RANDOM_PORT)
    for port in (80, 8080, RANDOM_PORT):  # and nothing reaches it
        assert not admits(policies, NS_LABELS, DATA_JOB, pod(_chart_pod("dask", "worker")), port)


def test_a_fetch_policy_is_complete_by_itself():
    """The Job waits for its own policy, not the namespace's: alone, it denies ingress and
    everything but DNS and its ports."""
    only = [fetch_policy(NS, "job", {"app": "job"}, ["https://pypi.org/simple"], OUTSIDE)]
    assert only[0]["spec"]["policyTypes"] == ["Ingress", "Egress"]
    assert reaches(only, NS_LABELS, {"app": "job"}, ip(INTERNET_IP), 443)
    assert not reaches(only, NS_LABELS, {"app": "job"}, ip(INTERNET_IP), 80)
    assert not admits(only, NS_LABELS, {"app": "job"}, ip(CLIENT_IP), 443)


def test_before_kubernetes_1_21_dns_is_found_by_its_pods_label_in_any_namespace():
    """kube-system carries no name label before 1.21: a namespace selector by name would
    select nothing and break every lookup."""
    unnamed = Outside(excepted=OUTSIDE.excepted, dns_namespace_named=False)
    network = NamespaceNetwork(outside=unnamed, pod_cidr=POD_CIDR)
    policies = dask_network_policies(NS, DaskPodSelectors.for_helm("dask"), operator_namespace=None,
                                     network=network, name_prefix="dask")
    kube_system_1_20 = {**DNS_POD, "namespace_labels": {}}
    assert reaches(policies, NS_LABELS, _chart_pod("dask", "worker"), kube_system_1_20, 53, "UDP")
    named = dask_network_policies(NS, DaskPodSelectors.for_helm("dask"), operator_namespace=None,
                                  network=NamespaceNetwork(outside=OUTSIDE, pod_cidr=POD_CIDR), name_prefix="dask")
    assert not reaches(named, NS_LABELS, _chart_pod("dask", "worker"), kube_system_1_20, 53, "UDP")


def test_public_exposure_admits_every_address_but_the_pod_network():
    network = NamespaceNetwork(outside=OUTSIDE, pod_cidr=POD_CIDR, scheduler_exposed=True, jupyter_exposed=True,
                               source_ranges=("0.0.0.0/0",))
    policies = dask_network_policies(NS, DaskPodSelectors.for_helm("dask"), operator_namespace=None,
                                     network=network, name_prefix="dask")
    for target, port in ((_chart_pod("dask", "scheduler"), 8786), (_chart_pod("dask", "jupyter"), 8888)):
        assert admits(policies, NS_LABELS, target, ip(EXTERNAL_IP), port)
        assert not admits(policies, NS_LABELS, target, ip(POD_IP), port)


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
    with pytest.raises(ValueError, match=r"kubernetes\.io/metadata\.name"):
        admits([], {"team": "x"}, {}, ip(EXTERNAL_IP), 80)


def test_egress_rules_match_to_and_ports_and_the_node_is_no_exception():
    rule = [policy({}, None, types=("Egress",))]
    rule[0]["spec"]["egress"] = [{"to": [{"ipBlock": {"cidr": "10.0.0.0/8", "except": ["10.1.0.0/16"]}}],
                                  "ports": [{"port": 443}, {"protocol": "UDP", "port": 53}]}]
    assert reaches(rule, NS_LABELS, {}, ip("10.2.0.1"), 443)
    assert reaches(rule, NS_LABELS, {}, ip("10.2.0.1"), 53, "UDP")
    assert not reaches(rule, NS_LABELS, {}, ip("10.2.0.1"), 53)  # TCP 53 not listed
    assert not reaches(rule, NS_LABELS, {}, ip("10.1.0.1"), 443)
    assert not reaches(rule, NS_LABELS, {}, pod({}), 443)  # a pod is no address


def test_egress_is_open_until_a_policy_with_egress_selects_the_pod():
    ingress_only = [policy({}, None)]
    assert reaches(ingress_only, NS_LABELS, {}, ip(EXTERNAL_IP), 443)
    implied = [{**policy({}, None), "spec": {"podSelector": {}, "egress": [{"ports": [{"port": 443}]}]}}]
    assert reaches(implied, NS_LABELS, {}, ip(EXTERNAL_IP), 443)  # policyTypes implied from egress
    assert not reaches(implied, NS_LABELS, {}, ip(EXTERNAL_IP), 80)
    elsewhere = [policy({}, None, namespace="default", types=("Egress",))]
    assert reaches(elsewhere, NS_LABELS, {}, ip(EXTERNAL_IP), 443)


def test_a_namespace_without_the_name_label_is_not_selected_by_it():
    rule = [policy({}, [{"from": [{"namespaceSelector": {"matchLabels": {NAME_LABEL: "ops"}}}]}])]
    assert not admits(rule, NS_LABELS, {}, {"namespace": "ops", "namespace_labels": {}, "labels": {}}, 80)
