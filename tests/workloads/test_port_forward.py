"""The runner's port-forward, the parts that need no cluster: which Service an address
names, the reachability probe, when a forward is wanted, the bounded stream open against
an API server that never answers, a drop closing its streams and naming the pod, and
cleanup (the scheduler's name through a forward: tests/security/test_dask_tls.py).
tests/cluster/test_port_forward.py runs the whole of it against a real API server and pod."""
from __future__ import annotations

import socket
import threading
import time

import pytest
from kubernetes import client as k8s

from tests.workloads.support import OUTPUTS
from workloads.cluster import endpoint, port_forward
from workloads.cluster.port_forward import PodTarget, ServiceForward, ServiceRef
from workloads.cluster.session import ClusterSession
from workloads.contract import parse_outputs
from workloads.core.errors import EndpointError


@pytest.mark.parametrize("host, found", [
    ("dask-scheduler.rapidsai.svc.cluster.local", ServiceRef("rapidsai", name="dask-scheduler")),
    ("dask-scheduler.rapidsai.svc.corp.example", ServiceRef("rapidsai", name="dask-scheduler")),
    ("dask-scheduler.rapidsai.svc", ServiceRef("rapidsai", name="dask-scheduler")),
    ("dask-scheduler.rapidsai", ServiceRef("rapidsai", name="dask-scheduler")),
    ("dask-scheduler", ServiceRef("default-ns", name="dask-scheduler")),
    ("10.97.0.12", ServiceRef("default-ns", cluster_ip="10.97.0.12")),
    ("dask.example.com", None),  # a LoadBalancer's name: not the cluster's to forward
])
def test_the_service_is_read_off_the_address(host, found):
    assert port_forward.service_for_host(host, "default-ns") == found


def test_host_and_port_of_scheduler_and_dashboard_addresses():
    assert port_forward.host_port("tls://dask-scheduler.ns.svc.cluster.local:8786") == (
        "dask-scheduler.ns.svc.cluster.local", 8786)
    assert port_forward.host_port("http://dask-scheduler.ns.svc.cluster.local:8787/status") == (
        "dask-scheduler.ns.svc.cluster.local", 8787)
    assert port_forward.host_port("http://h/status", default_port=80) == ("h", 80)
    with pytest.raises(EndpointError, match="names no host and port"):
        port_forward.host_port("tls://h")


@pytest.fixture
def listening():
    server = socket.create_server(("127.0.0.1", 0))
    yield server.getsockname()[1]
    server.close()


@pytest.fixture
def closed_port():
    server = socket.create_server(("127.0.0.1", 0))
    port = server.getsockname()[1]
    server.close()
    return port


def test_the_probe_tells_an_open_port_from_a_closed_one_quickly(listening, closed_port):
    assert port_forward.reachable("127.0.0.1", listening)
    started = time.monotonic()
    assert not port_forward.reachable("127.0.0.1", closed_port, timeout=2)
    assert time.monotonic() - started < 2


def test_a_forward_is_wanted_only_with_a_kubeconfig_and_an_unreachable_scheduler(listening, closed_port):
    assert port_forward.needs_forward(f"tls://127.0.0.1:{closed_port}", "apiVersion: v1")
    assert not port_forward.needs_forward(f"tls://127.0.0.1:{listening}", "apiVersion: v1")
    assert not port_forward.needs_forward(f"tls://127.0.0.1:{closed_port}", "")  # nothing to forward with
    outputs = parse_outputs({**OUTPUTS, "schedulerAddress": f"tcp://127.0.0.1:{listening}", "runnerKubeconfig": "x: 1"})
    assert port_forward.open_for(outputs) is None  # reachable: no forward, the kubeconfig is never read


def test_a_bad_kubeconfig_is_named_without_its_contents(closed_port):
    secret = "token-that-must-not-show"
    outputs = parse_outputs({**OUTPUTS, "schedulerAddress": f"tcp://127.0.0.1:{closed_port}",
                             "runnerKubeconfig": f"users: [{{name: u, user: {{token: {secret}}}}}]\n"})
    with pytest.raises(EndpointError, match="kubeconfig cannot be used") as caught:
        port_forward.open_for(outputs, probe_timeout=1)
    assert secret not in str(caught.value)


@pytest.fixture
def silent_api_server():
    """A TCP server that accepts and never answers: an API server lost mid-connection."""
    server = socket.create_server(("127.0.0.1", 0))
    held: list[socket.socket] = []
    stop = threading.Event()

    def accept():
        server.settimeout(0.2)
        while not stop.is_set():
            try:
                held.append(server.accept()[0])
            except (TimeoutError, OSError):
                continue

    thread = threading.Thread(target=accept, daemon=True)
    thread.start()
    yield f"https://127.0.0.1:{server.getsockname()[1]}"
    stop.set()
    thread.join(2)
    for conn in held:
        conn.close()
    server.close()


def test_opening_a_stream_through_an_api_server_that_never_answers_is_bounded(silent_api_server):
    config = k8s.Configuration(host=silent_api_server)
    config.verify_ssl = False  # never reached: the server does not answer the TLS handshake
    core = k8s.CoreV1Api(k8s.ApiClient(config))
    started = time.monotonic()
    with pytest.raises(port_forward.StreamNotOpened) as caught:
        port_forward.open_stream(core, PodTarget("ns", "dask-scheduler-0", {8786: 8786}), 8786, timeout=1)
    assert "a stream to its port 8786 was not opened (no answer within 1 s)" in str(caught.value)
    assert time.monotonic() - started < 3


def scheduler_service() -> k8s.V1Service:
    return k8s.V1Service(metadata=k8s.V1ObjectMeta(name="dask-scheduler", namespace="ns"),
                         spec=k8s.V1ServiceSpec(ports=[k8s.V1ServicePort(name="tcp-comm", port=8786),
                                                       k8s.V1ServicePort(name="http-dashboard", port=8787)]))


def test_the_dashboard_port_is_forwarded_when_the_service_has_it():
    service = scheduler_service()
    assert port_forward.dashboard_port("http://dask-scheduler.ns.svc.cluster.local:8787", service) == (8787,)
    assert port_forward.dashboard_port("http://elsewhere:9999", service) == ()
    assert port_forward.dashboard_port("", service) == ()


def idle_forward(on_drop=None) -> ServiceForward:
    """A forward listening on its ports, with no pod behind it (nothing asks the API)."""
    forward = ServiceForward(None, scheduler_service(), (8786, 8787), on_drop=on_drop)
    for port in forward.service_ports:
        forward._listen(port)
    return forward


def test_a_connection_with_no_pod_behind_is_closed_at_once_and_close_frees_the_ports():
    forward = idle_forward()
    address = forward.address(8786)
    host, port = address.split(":")
    with socket.create_connection((host, int(port)), timeout=5) as conn:
        conn.settimeout(5)
        assert conn.recv(1) == b""  # closed, not left hanging
    forward.close()
    assert not port_forward.reachable(host, int(port), timeout=1)
    assert not [t for t in forward._threads if t.is_alive()]


def test_a_drop_closes_the_open_streams_names_the_pod_and_is_raised_by_check():
    told = []
    forward = idle_forward(on_drop=told.append)
    forward.target = PodTarget("ns", "dask-scheduler-abc", {8786: 8786, 8787: 8787})
    local, peer = socket.socketpair()
    forward._streams.add((local, None))
    forward._drop(forward.target, "pod ns/dask-scheduler-abc was deleted")
    expected = ("port-forward to pod ns/dask-scheduler-abc of service ns/dask-scheduler dropped:"
                " pod ns/dask-scheduler-abc was deleted")
    assert told == [expected] and forward.drops == [expected]
    peer.settimeout(5)
    assert peer.recv(1) == b""  # the stream's local end was closed
    with pytest.raises(EndpointError, match="dask-scheduler-abc was deleted"):
        forward.check()
    forward._drop(forward.target, "again")  # one drop per pod
    assert told == [expected]
    forward.close()
    peer.close()


def test_closing_the_session_closes_its_forward():
    session = ClusterSession(endpoint.local())
    session.forward = forward = idle_forward()
    host, port = forward.address(8786).split(":")
    session.close()
    assert session.forward is None and not port_forward.reachable(host, int(port), timeout=1)

