"""Exposure (issue 37, item 4): no exposed scheduler or Jupyter without TLS, source ranges for
a NodePort as for a LoadBalancer, the client's address kept for the NetworkPolicy, whose
ipBlocks on the exposed ports are exactly the source ranges; and the downloading pods'
policies (item 5) exist before their Jobs, which preview refuses to point inside the cluster.

Settings through ``components.settings.load`` (what preview runs); the program under Pulumi's
mocks (``tests/program/harness.py``) for the objects it declares (docs/reliability.md, N-rows
and SV50-SV59)."""
from __future__ import annotations

import pytest

from components.dask import podspec
from components.settings import DictSource, SettingsError, load
from components.settings.exposure import workers_install
from tests.program.graph import run_program
from tests.unit.support import PROVIDER, SITE

RANGES = ["172.16.105.0/24"]  # the reference stack's


def problems(**overrides) -> tuple[list[tuple[str, str]], str]:
    with pytest.raises(SettingsError) as caught:
        load(DictSource({**SITE, **overrides}, PROVIDER))
    return [(p.key, str(p)) for p in caught.value.problems], str(caught.value)


def refused(key: str, words: str, **overrides) -> str:
    found, message = problems(**overrides)
    assert any(k == key and words in text for k, text in found), found
    assert f"dask-tkg:{key}" in message
    return message


# --- preview's refusals ----------------------------------------------------------------------

@pytest.mark.parametrize("kind", ["NodePort", "LoadBalancer"])
def test_an_exposed_scheduler_without_tls_is_refused(kind):
    message = refused("schedulerServiceType", f"{kind} exposes the scheduler without TLS (daskTls=false)",
                      schedulerServiceType=kind, loadBalancerSourceRanges=RANGES, daskTls=False)
    assert "every GPU worker runs, unauthenticated" in message
    assert "Set daskTls=true, or keep schedulerServiceType=ClusterIP and reach it with kubectl port-forward" in message


@pytest.mark.parametrize("kind", ["NodePort", "LoadBalancer"])
def test_an_exposed_jupyter_without_tls_is_refused(kind):
    message = refused("jupyterServiceType", f"{kind} exposes Jupyter without TLS (daskTls=false)",
                      jupyterServiceType=kind, loadBalancerSourceRanges=RANGES, daskTls=False)
    assert "its password and every notebook would cross the network in clear" in message


def test_a_nodeport_needs_source_ranges_as_a_load_balancer_does():
    refused("schedulerServiceType", "a NodePort needs loadBalancerSourceRanges (or allowPublicLoadBalancer=true",
            schedulerServiceType="NodePort")
    refused("jupyterServiceType", "a NodePort needs loadBalancerSourceRanges", jupyterServiceType="NodePort")


def test_a_source_range_inside_the_pod_or_service_network_is_refused():
    refused("loadBalancerSourceRanges[0]", "192.168.105.0/24 overlaps podCidr 192.168.0.0/16: the NetworkPolicy"
            " would admit the pods whose addresses fall in it", loadBalancerSourceRanges=["192.168.105.0/24"],
            schedulerServiceType="LoadBalancer")
    refused("loadBalancerSourceRanges[1]", "10.96.0.0/24 overlaps serviceCidr 10.96.0.0/12",
            loadBalancerSourceRanges=[*RANGES, "10.96.0.0/24"])


def test_what_stays_accepted():
    """Not exposed without TLS (port-forward only), exposed with TLS and ranges, a disabled
    Jupyter's service type, and public exposure opted into."""
    load(DictSource({**SITE, "daskTls": False}, PROVIDER))
    for kind in ("NodePort", "LoadBalancer"):
        load(DictSource({**SITE, "schedulerServiceType": kind, "jupyterServiceType": kind,
                         "loadBalancerSourceRanges": RANGES}, PROVIDER))
    load(DictSource({**SITE, "daskTls": False, "jupyterEnabled": False, "jupyterServiceType": "LoadBalancer",
                     "loadBalancerSourceRanges": RANGES}, PROVIDER))
    load(DictSource({**SITE, "schedulerServiceType": "NodePort", "allowPublicLoadBalancer": True}, PROVIDER))


def test_a_download_on_the_api_servers_port_is_refused():
    refused("dogsImagesUrl", "https://mirror.example:6443/images.tar is on port 6443, the API server's",
            dogsImagesUrl="https://mirror.example:6443/images.tar")


def test_a_download_from_the_clusters_own_ranges_is_refused():
    """The Service network's ClusterIP of an in-cluster mirror, a node network address: the
    downloading pods' policy excepts both."""
    refused("dogsLabelsUrl", "https://10.96.0.20/labels.txt is an address of the cluster's own range 10.96.0.0/12",
            dogsLabelsUrl="https://10.96.0.20/labels.txt")
    refused("extraPipPackages", "http://10.20.30.5:8080/simple is an address of the cluster's own range 10.20.30.0/24",
            extraPipPackages="torch --extra-index-url http://10.20.30.5:8080/simple",
            fileShareClients=["ips=10.20.30.0/24,permissions=READ_WRITE,allowRoot=true"])


def test_the_workers_install_exactly_when_their_pods_get_extra_pip_packages():
    for overrides in ({}, {"extraPipPackages": "torch==1.10.1"}, {"extraPipPackages": "  "}):
        s = load(DictSource({**SITE, **overrides}, PROVIDER))
        gets = any(e["name"] == "EXTRA_PIP_PACKAGES" for e in podspec.worker_env(s.dask))
        assert workers_install(s) == gets, overrides


# --- what the program declares ---------------------------------------------------------------

def _exposed(graph) -> list[dict]:
    return [s.manifest() for s in graph.of_type("kubernetes:core/v1:Service")
            if s.manifest()["spec"].get("type") in ("NodePort", "LoadBalancer")]


@pytest.mark.parametrize("kind", ["LoadBalancer", "NodePort"])
def test_exposed_services_keep_the_clients_address(kind):
    graph = run_program("reference", config={"schedulerServiceType": kind, "jupyterServiceType": kind})
    assert graph.error is None, graph.traceback
    services = _exposed(graph)
    assert {s["metadata"]["name"] for s in services} == {"dask-scheduler-external", "dask-jupyter-external"}
    for service in services:
        assert service["spec"]["externalTrafficPolicy"] == "Local", service["metadata"]["name"]
        assert ("loadBalancerSourceRanges" in service["spec"]) == (kind == "LoadBalancer")


@pytest.mark.parametrize("stack, config", [("reference", {}), ("dev", {"schedulerServiceType": "NodePort",
                                                                      "jupyterServiceType": "NodePort",
                                                                      "loadBalancerSourceRanges": RANGES})])
def test_the_exposed_ports_admit_exactly_the_source_ranges(stack, config):
    """Each ipBlock on an exposed port is a source range: none admits every non-pod address."""
    graph = run_program(stack, config=config)
    assert graph.error is None, graph.traceback
    policies = {p.manifest()["metadata"]["name"]: p.manifest()
                for p in graph.of_type("networking.k8s.io/v1:NetworkPolicy")}
    exposed_ports = {"dask-scheduler-api": {8786, 8787}, "dask-jupyter": {8888}}
    for name, ports in exposed_ports.items():
        blocks = [peer["ipBlock"] for rule in policies[name]["spec"]["ingress"]
                  if {p["port"] for p in rule["ports"]} <= ports for peer in rule["from"] if "ipBlock" in peer]
        assert blocks and all(b == {"cidr": RANGES[0]} for b in blocks), (name, blocks)
        assert {p for rule in policies[name]["spec"]["ingress"] for p in (x["port"] for x in rule["ports"])} == ports


def test_the_papers_stacks_stay_deployable_with_tls():
    for stack in ("reference", "reference-dev"):
        graph = run_program(stack)
        assert graph.error is None, (stack, graph.error)


def test_each_downloading_job_waits_for_its_own_policy_and_the_dask_pods_for_theirs():
    """The Jobs' pods and the Dask pods start confined: each waits for the policies that
    select it (operator backend: the environment Job, the DaskCluster, Jupyter's release; the
    Helm backend: the data Job and the release)."""
    for stack, jobs, dask in (("dev", ["environment-job"], ["dask-cluster", "dask-jupyter-release"]),
                              ("reference", ["dataset-job"], ["dask-release"])):
        graph = run_program(stack)
        assert graph.error is None, graph.traceback
        policies = graph.of_type("networking.k8s.io/v1:NetworkPolicy")
        for job in jobs:
            egress = graph.named(job.replace("-job", "-egress"))
            assert graph.depends_on(graph.named(job), egress), job
        namespace_policies = [p for p in policies if p.name.startswith("dask-")]
        assert len(namespace_policies) >= 4
        for name in dask:
            for policy in namespace_policies:
                assert graph.depends_on(graph.named(name), policy), (name, policy.name)
