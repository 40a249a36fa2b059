"""The whole program under Pulumi's mocks with ``daskBackend=operator``: the reference stack
declares the pinned operator release in its own namespace, a DaskCluster whose GPU workers
autoscale up to 8 on the GPU pool, Jupyter, and the Helm backend's outputs plus the
cluster's name. The Helm backend's graph is unchanged by the option."""
from __future__ import annotations

from pathlib import Path

import pytest

from components.settings.model import POOL_ROLE_LABEL
from tests.operator.support import OPERATOR
from tests.program.graph import run_program, walk_strings
from workloads import contract

DASK_API = "kubernetes:kubernetes.dask.org/v1"


@pytest.fixture(scope="module")
def graph():
    g = run_program("reference", config=OPERATOR)
    assert g.error is None, g.traceback
    return g


@pytest.fixture(scope="module")
def helm_graph():
    """The Helm backend with the same image: what the operator backend is compared with."""
    g = run_program("reference", config={k: v for k, v in OPERATOR.items() if k != "daskBackend"})
    assert g.error is None, g.traceback
    return g


def test_operator_release_is_the_pinned_chart_in_its_own_namespace(graph):
    release = graph.named("dask-operator")
    inputs = release.inputs
    assert (Path(inputs["chart"]).name, inputs["version"], inputs["namespace"]) == (
        "dask-kubernetes-operator-2026.3.0.tgz", "2026.3.0", "dask-operator")
    assert "repositoryOpts" not in inputs  # the pinned archive of https://helm.dask.org's index, verified
    assert not inputs.get("skipCrds")  # the CRDs come from the chart
    assert inputs["values"]["image"]["tag"] == "2026.3.0"
    assert inputs["values"]["nodeSelector"][POOL_ROLE_LABEL] != "gpu"
    namespace = graph.named("dask-operator-ns-ns").manifest()
    assert namespace["metadata"]["labels"]["kubernetes.io/metadata.name"] == "dask-operator"
    assert graph.named("dask-operator-ns-psp")  # TKR 1.20 enforces PodSecurityPolicy


def test_dask_cluster_autoscales_gpu_workers_up_to_8(graph):
    [cluster] = graph.of_type("DaskCluster")
    m = cluster.manifest()
    assert (m["apiVersion"], m["metadata"]["name"], m["metadata"]["namespace"]) == (
        "kubernetes.dask.org/v1", "dask", "rapidsai")
    worker = m["spec"]["worker"]
    [c] = worker["spec"]["containers"]
    assert worker["spec"]["nodeSelector"] == {POOL_ROLE_LABEL: "gpu"}
    assert c["resources"]["limits"]["nvidia.com/gpu"] == "1"
    assert c["image"] == OPERATOR["daskImage"]
    [scaler] = graph.of_type("DaskAutoscaler")
    assert scaler.manifest()["spec"] == {"cluster": "dask", "minimum": 1, "maximum": 8}
    assert graph.depends_on(cluster, graph.named("dask-operator"))  # the CRDs exist first
    assert graph.depends_on(scaler, cluster)
    assert graph.depends_on(cluster, graph.named("gpu-operator-release"))
    assert graph.depends_on(cluster, graph.named("storage-dataset"))


def test_jupyter_runs_as_with_helm_without_a_second_scheduler(graph, helm_graph):
    release = graph.named("dask-jupyter-release")
    assert "__secret__" in release.raw["inputs"]["values"]  # it holds the password hash
    ours, helm = release.inputs["values"], helm_graph.named("dask-release").inputs["values"]
    assert ours["scheduler"]["enabled"] is False and ours["worker"]["replicas"] == 0
    assert {k: v for k, v in ours["jupyter"].items() if k not in ("password", "extraConfig")} == {
        k: v for k, v in helm["jupyter"].items() if k not in ("password", "extraConfig")}
    # The operator's scheduler serves its dashboard in plain HTTP (its controller speaks HTTP
    # to it), the chart's over TLS: the extension's default URL differs in its scheme alone.
    assert ours["jupyter"]["extraConfig"] == helm["jupyter"]["extraConfig"].replace("https://", "http://")
    assert [r for r in graph.of_type("Release") if r.name == "dask-release"] == []


def test_same_outputs_plus_the_cluster_name(graph, helm_graph):
    ours, helm = graph.outputs, helm_graph.outputs
    assert set(helm) <= set(ours)
    for key in (contract.SCHEDULER_ADDRESS, contract.JUPYTER_URL, contract.NAMESPACE):
        assert ours[key] == helm[key], key
    assert ours[contract.DASHBOARD_URL] == helm[contract.DASHBOARD_URL].replace("https://", "http://")  # as above
    assert ours[contract.DASK_CLUSTER_NAME] == "dask" and ours[contract.BACKEND] == "operator"
    assert (ours[contract.AUTOSCALE_MIN], ours[contract.AUTOSCALE_MAX], ours[contract.WORKERS]) == (1, 8, 8)
    assert (helm[contract.BACKEND], helm[contract.DASK_CLUSTER_NAME]) == ("helm", "")
    for key in contract.SECRET_OUTPUTS:
        assert "__secret__" in ours[key], key
    parsed = contract.parse_outputs({k: (v["__secret__"] if isinstance(v, dict) and "__secret__" in v else v)
                                     for k, v in ours.items()})
    assert (parsed.backend, parsed.dask_cluster, parsed.tls) == ("operator", "dask", True)


def test_scheduler_load_balancer_selects_the_operators_scheduler_pods(graph):
    svc = graph.named("dask-scheduler-external").manifest()
    assert svc["spec"]["selector"] == {"dask.org/cluster-name": "dask", "dask.org/component": "scheduler"}
    assert svc["spec"]["loadBalancerSourceRanges"] == ["172.16.105.0/24"]
    assert svc["spec"]["externalTrafficPolicy"] == "Local"  # the client's address reaches the policy
    policy = graph.named("dask-scheduler-api").manifest()
    comm, http = policy["spec"]["ingress"]
    # the comm port (mutual TLS) admits the source ranges, not every address outside the pod network
    assert {"ipBlock": {"cidr": "172.16.105.0/24"}} in comm["from"]
    assert not any(peer.get("ipBlock", {}).get("cidr") == "0.0.0.0/0" for peer in comm["from"])
    # the HTTP port (the dashboard and distributed's HTTP API, no TLS, no authentication) admits no address
    # outside: the LoadBalancer lists it, and the scheduler's own policy drops what comes through it
    assert not any("ipBlock" in peer for peer in http["from"]), http


def test_no_secret_in_plain_text(graph):
    secrets = {"mock-generated-password-0123456789", "mock-dask-tls-client-key"}
    for resource in graph.resources:
        for text, in_secret in walk_strings(resource.raw.get("inputs")):
            if any(s in text for s in secrets):
                assert in_secret, f"{resource.name} holds a secret in plain text"


def test_helm_backend_declares_no_operator_objects(helm_graph):
    assert not [r for r in helm_graph.resources if r.type.startswith(DASK_API)]
    assert not [r for r in helm_graph.resources if r.name == "dask-operator"]
