"""The certificates the program declares, under Pulumi's mocks: each role's extended key usage
is what its side of the connection needs (a client's certificate cannot serve), only the
servers' certificates carry names (the scheduler's and Jupyter's Services, and their
LoadBalancer addresses when exposed), the exposed Services exist before the certificates
that name them and the pods after the Secret that holds them, and the URLs the stack
exports say https where the server speaks TLS.

The LoadBalancer addresses are what the mocks give the exposed Services' status (the
provider waits for ``status.loadBalancer.ingress`` before it reports a LoadBalancer Service
created: pulumi-kubernetes provider/pkg/await/service.go, ``processServiceEvent``)."""
from __future__ import annotations

import pytest

from tests.program.graph import run_program
from workloads import contract

SCHEDULER_LB = "192.168.100.70"
JUPYTER_LB = "jupyter.lb.example.org"
EXPOSED = {"outputs": {
    "dask-scheduler-external": {"status": {"loadBalancer": {"ingress": [{"ip": SCHEDULER_LB}]}}},
    "dask-jupyter-external": {"status": {"loadBalancer": {"ingress": [{"hostname": JUPYTER_LB}]}}},
}}
# The operator backend's stack (dev) exposed as the paper's reference stack is.
OPERATOR_EXPOSED = {"schedulerServiceType": "LoadBalancer", "jupyterServiceType": "LoadBalancer",
                    "loadBalancerSourceRanges": ["10.20.0.0/16"]}
NS = "rapidsai"


@pytest.fixture(scope="module", params=["helm", "operator"])
def exposed(request):
    if request.param == "helm":
        graph = run_program("reference", mock=EXPOSED)
    else:
        graph = run_program("dev", config=OPERATOR_EXPOSED, mock=EXPOSED)
    assert graph.error is None, graph.traceback
    return request.param, graph


def certificate(graph, role: str):
    return graph.named(f"dask-tls-{role}-cert"), graph.named(f"dask-tls-{role}-csr")


def test_each_role_may_do_only_what_its_side_of_the_connection_needs(exposed):
    _, graph = exposed
    uses = {role: set(certificate(graph, role)[0].inputs["allowedUses"])
            for role in ("scheduler", "worker", "client", "jupyter")}
    assert uses == {"scheduler": {"digital_signature", "server_auth", "client_auth"},
                    "worker": {"digital_signature", "server_auth", "client_auth"},
                    "client": {"digital_signature", "client_auth"},
                    "jupyter": {"digital_signature", "server_auth"}}


def names(graph, role: str) -> tuple[set[str], set[str]]:
    csr = certificate(graph, role)[1].inputs
    return set(csr.get("dnsNames") or []), set(csr.get("ipAddresses") or [])


def test_only_the_servers_certificates_carry_names_and_the_exposed_addresses(exposed):
    _backend, graph = exposed
    ns = graph.outputs[contract.NAMESPACE]
    service = [f"dask-scheduler.{ns}", f"dask-scheduler.{ns}.svc", f"dask-scheduler.{ns}.svc.cluster.local"]
    assert names(graph, "scheduler") == ({"dask-scheduler", *service}, {SCHEDULER_LB})
    jupyter = ["dask-jupyter", f"dask-jupyter.{ns}", f"dask-jupyter.{ns}.svc", f"dask-jupyter.{ns}.svc.cluster.local"]
    assert names(graph, "jupyter") == ({*jupyter, JUPYTER_LB}, set())
    assert names(graph, "worker") == names(graph, "client") == (set(), set())


def test_without_exposure_the_certificates_name_only_the_services():
    graph = run_program("reference", config={"schedulerServiceType": "ClusterIP", "jupyterServiceType": "ClusterIP"})
    assert graph.error is None, graph.traceback
    assert names(graph, "scheduler")[1] == set() and names(graph, "jupyter")[1] == set()
    assert not graph.of_type("kubernetes:core/v1:Service")


def test_the_exposed_service_comes_before_its_certificate_and_the_pods_after_the_secret(exposed):
    backend, graph = exposed
    for role, service in (("scheduler", "dask-scheduler-external"), ("jupyter", "dask-jupyter-external")):
        assert graph.depends_on(certificate(graph, role)[1], graph.named(service)), role
    secret = graph.named("dask-tls-secret")
    pods = ["dask-release"] if backend == "helm" else ["dask-cluster", "dask-jupyter-release"]
    for owner in pods:
        assert graph.depends_on(graph.named(owner), secret), owner


def test_the_secret_holds_a_key_and_certificate_per_role(exposed):
    _, graph = exposed
    keys = set(graph.named("dask-tls-secret").inputs["stringData"])
    assert keys == {"ca.crt", *(f"{role}.{ext}" for role in ("scheduler", "worker", "client", "jupyter")
                                for ext in ("crt", "key"))}


def test_the_urls_say_https_where_the_server_speaks_tls(exposed):
    backend, graph = exposed
    assert graph.outputs[contract.JUPYTER_URL] == f"https://{JUPYTER_LB}:80"
    assert graph.outputs[contract.SCHEDULER_ADDRESS] == f"tls://{SCHEDULER_LB}:8786"
    # The operator's controller calls the dashboard's HTTP API in plain HTTP (below): its
    # dashboard stays http.
    scheme = "https" if backend == "helm" else "http"
    assert graph.outputs[contract.DASHBOARD_URL] == f"{scheme}://{SCHEDULER_LB}:8787"


def test_without_tls_jupyter_and_the_dashboard_stay_http():
    graph = run_program("reference", config={"daskTls": False, "schedulerServiceType": "ClusterIP",
                                             "jupyterServiceType": "ClusterIP"})
    assert graph.error is None, graph.traceback
    assert graph.outputs[contract.JUPYTER_URL].startswith("http://")
    assert graph.outputs[contract.DASHBOARD_URL].startswith("http://")
