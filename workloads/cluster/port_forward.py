"""The runner's own port-forward to a ClusterIP scheduler, through the Kubernetes API.

The deployed scheduler and dashboard Services are ClusterIP by default, and the scheduler
address in the stack outputs is the in-cluster DNS name
(``tls://dask-scheduler.<ns>.svc.cluster.local:8786``), which a data scientist's machine
cannot reach. When a short probe of that address fails and the outputs carry the runner's
own ``runnerKubeconfig`` (the Dask namespace's ServiceAccount, never the cluster's admin),
:func:`open_for` finds the Service behind the address, picks a ready pod
from its Endpoints and serves each forwarded port (scheduler, dashboard) on
``127.0.0.1:<free port>``: a listener thread accepts local connections and opens one
Kubernetes port-forward stream (``kubernetes.stream.portforward``) per connection.

TLS is untouched: the client still speaks ``tls://`` with the stack's CA and client
certificate to the scheduler itself. distributed checks the certificate chain, not host
names (its TLS context sets ``check_hostname = False``: a dedicated CA), so the forwarded
address verifies exactly as the direct one would; where the address names a host, the
forward also makes one handshake with host-name checking against that name, so a
forward to the wrong pod fails before any work is sent.

A watch thread asks the API server about the forwarded pod every few seconds: a pod that
is deleted, terminating or no longer ready, or an API server that stops answering, marks
the forward as dropped (:attr:`ServiceForward.dropped` names what dropped), closes the open
streams to that pod (the client sees a closed connection, never a hang) and calls
``on_drop``. The next local connection is forwarded to the Service's new ready pod, if it
has one. Every blocking step has a timeout. The kubeconfig is never logged or printed.
"""
from __future__ import annotations

import contextlib
import ipaddress
import logging
import re
import select
import socket
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit

from workloads.core.errors import EndpointError

logger = logging.getLogger(__name__)

PROBE_TIMEOUT_S = 2.0  # a reachable scheduler accepts a TCP connection well within this
API_TIMEOUT_S = 10.0  # each request to the API server
OPEN_TIMEOUT_S = 15.0  # opening one port-forward stream (websocket-client has no connect timeout)
WATCH_INTERVAL_S = 2.0  # how often the forwarded pod is looked at
REOPEN_WAIT_S = 15.0  # how long a connection made after a drop waits for the Service's new ready pod
POLL_S = 0.5  # the longest any pump or accept loop blocks before looking at the stop flag
SEND_TIMEOUT_S = 60.0  # a peer that takes no bytes for this long ends its connection
CHUNK = 64 * 1024


# ----------------------------------------------------------------------------- addresses
@dataclass(frozen=True)
class ServiceRef:
    """The Service an address names: by name (an in-cluster DNS name) or by ClusterIP."""

    namespace: str
    name: str | None = None
    cluster_ip: str | None = None

    def describe(self) -> str:
        return f"service {self.namespace}/{self.name}" if self.name else \
            f"the service with ClusterIP {self.cluster_ip} in {self.namespace}"


def host_port(address: str, default_port: int | None = None) -> tuple[str, int]:
    """Host and port of ``tls://host:8786`` or ``http://host:8787/status``."""
    parts = urlsplit(address if "://" in address else f"tcp://{address}")
    port = parts.port or default_port
    if not parts.hostname or port is None:
        raise EndpointError(f"{address!r} names no host and port")
    return parts.hostname, port


def is_ip(host: str) -> bool:
    try:
        ipaddress.ip_address(host)
    except ValueError:
        return False
    return True


def service_for_host(host: str, default_namespace: str) -> ServiceRef | None:
    """The Service an in-cluster host names: ``svc``, ``svc.ns``, ``svc.ns.svc`` or
    ``svc.ns.svc.<cluster domain>``; an IP is taken for a ClusterIP in ``default_namespace``.
    None for any other name (a LoadBalancer's DNS name, say): not the cluster's to forward."""
    if is_ip(host):
        return ServiceRef(default_namespace, cluster_ip=host)
    labels = host.rstrip(".").split(".")
    if len(labels) == 1:
        return ServiceRef(default_namespace, name=labels[0])
    if len(labels) == 2 or labels[2] == "svc":
        return ServiceRef(labels[1], name=labels[0])
    return None


def reachable(host: str, port: int, timeout: float = PROBE_TIMEOUT_S) -> bool:
    """Whether a TCP connection to ``host:port`` opens within ``timeout`` (an unresolvable
    in-cluster name fails at once, a routed but filtered ClusterIP within the timeout)."""
    try:
        with socket.create_connection((host, port), timeout=timeout):
            return True
    except OSError:  # gaierror, refused, unreachable, timeout
        return False


class StreamNotOpened(Exception):
    """The API server did not open a port-forward stream to the pod (its message says why)."""


# ----------------------------------------------------------------------------- the API
def api_client(kubeconfig: str):
    """A ``kubernetes`` ApiClient from the kubeconfig's text (the stack's runnerKubeconfig). Errors
    name the problem, never the file's contents."""
    import yaml
    from kubernetes import config

    try:
        loaded = yaml.safe_load(kubeconfig)
        if not isinstance(loaded, dict):
            raise ValueError("not a mapping")
        return config.new_client_from_config_dict(loaded, persist_config=False)
    except Exception as exc:
        raise EndpointError(f"the stack's kubeconfig cannot be used to reach the cluster ({type(exc).__name__})"
                            ) from None


def api_host(client) -> str:
    """The API server's URL without credentials, for messages."""
    parts = urlsplit(client.configuration.host)
    return f"{parts.scheme}://{parts.hostname}" + (f":{parts.port}" if parts.port else "")


def find_service(core, ref: ServiceRef):
    """The Service ``ref`` names (by name, or the one in its namespace with that ClusterIP)."""
    from kubernetes.client.exceptions import ApiException

    try:
        if ref.name:
            return core.read_namespaced_service(ref.name, ref.namespace, _request_timeout=API_TIMEOUT_S)
        for service in core.list_namespaced_service(ref.namespace, _request_timeout=API_TIMEOUT_S).items:
            if service.spec.cluster_ip == ref.cluster_ip:
                return service
    except ApiException as exc:
        raise EndpointError(f"cannot read {ref.describe()} through the Kubernetes API: HTTP {exc.status}"
                            f" {exc.reason}") from None
    except OSError as exc:  # urllib3's connection errors are OSErrors
        raise EndpointError(f"the Kubernetes API server did not answer for {ref.describe()}: {exc}") from None
    raise EndpointError(f"no {ref.describe()}")


def service_port_name(service, port: int) -> str | None:
    """The name of the Service port ``port`` (how its Endpoints name the pod's port)."""
    for entry in service.spec.ports or ():
        if entry.port == port:
            return entry.name
    raise EndpointError(f"service {service.metadata.namespace}/{service.metadata.name} has no port {port}")


@dataclass(frozen=True)
class PodTarget:
    """One ready pod behind the Service, and the pod port of each forwarded Service port."""

    namespace: str
    pod: str
    ports: dict[int, int]  # service port -> pod port


def ready_pod(core, service, service_ports: tuple[int, ...]) -> PodTarget | None:
    """A ready pod of the Service's Endpoints, with the pod port for each service port;
    None when the Service has no ready pod now."""
    meta = service.metadata
    names = {port: service_port_name(service, port) for port in service_ports}
    endpoints = core.read_namespaced_endpoints(meta.name, meta.namespace, _request_timeout=API_TIMEOUT_S)
    for subset in endpoints.subsets or ():
        pods = [a.target_ref.name for a in subset.addresses or ()
                if a.target_ref is not None and a.target_ref.kind == "Pod"]
        by_name = {p.name: p.port for p in subset.ports or ()}
        if pods and all(names[port] in by_name for port in service_ports):
            return PodTarget(meta.namespace, sorted(pods)[0], {port: by_name[names[port]] for port in service_ports})
    return None


def pod_state(core, target: PodTarget) -> str | None:
    """Why ``target`` can no longer be forwarded to (deleted, terminating, not ready), or None."""
    from kubernetes.client.exceptions import ApiException

    try:
        pod = core.read_namespaced_pod(target.pod, target.namespace, _request_timeout=API_TIMEOUT_S)
    except ApiException as exc:
        if exc.status == 404:
            return f"pod {target.namespace}/{target.pod} was deleted"
        raise
    if pod.metadata.deletion_timestamp is not None:
        return f"pod {target.namespace}/{target.pod} is terminating"
    ready = [c for c in (pod.status.conditions or ()) if c.type == "Ready"]
    if not ready or ready[0].status != "True":
        return f"pod {target.namespace}/{target.pod} is not ready"
    return None


_OPENING = threading.Lock()


def open_stream(core, target: PodTarget, pod_port: int, timeout: float = OPEN_TIMEOUT_S):
    """One port-forward stream to ``pod_port`` of the pod (a ``kubernetes`` PortForward),
    opened in a helper thread so that an API server that never answers costs ``timeout``.
    ``kubernetes.stream.portforward`` swaps its ApiClient's ``call_api`` while it opens, so
    ``core`` is an ApiClient of its own (no other request goes through it) and opens are
    one at a time."""
    from kubernetes.stream import portforward

    done: dict[str, Any] = {}

    def opener():
        try:
            if not _OPENING.acquire(timeout=timeout):
                return
            try:
                done["stream"] = portforward(core.connect_get_namespaced_pod_portforward, target.pod,
                                             target.namespace, ports=str(pod_port))
            finally:
                _OPENING.release()
        except Exception as exc:
            done["error"] = exc

    thread = threading.Thread(target=opener, name=f"port-forward open {target.pod}:{pod_port}", daemon=True)
    thread.start()
    thread.join(timeout)
    if "stream" in done:
        return done["stream"]
    why = short_error(done["error"]) if "error" in done else f"no answer within {timeout:.0f} s"
    raise StreamNotOpened(f"a stream to its port {pod_port} was not opened ({why})")


def short_error(exc: BaseException) -> str:
    """One line for an API error: the server's Status message where it sent one."""
    text = str(getattr(exc, "reason", None) or exc)
    status = re.search(r'"message":"((?:[^"\\]|\\.)*)"', text)
    if status:
        return status.group(1).replace('\\"', '"')
    return f"{type(exc).__name__}: {text.strip().splitlines()[0] if text.strip() else ''}"


# ----------------------------------------------------------------------------- the forward
class ServiceForward:
    """Local listeners on 127.0.0.1, one per forwarded Service port, each connection sent
    through its own port-forward stream to a ready pod of the Service. A context manager:
    leaving it closes listeners, streams and threads."""

    def __init__(self, core, service, service_ports: tuple[int, ...], api: str = "the Kubernetes API server",
                 on_drop: Callable[[str], None] | None = None, watch_interval: float = WATCH_INTERVAL_S,
                 streams=None):
        self.core, self.service, self.service_ports = core, service, tuple(service_ports)
        self.streams = streams  # a CoreV1Api on an ApiClient of its own, for the streams (see open_stream)
        self.api, self.on_drop, self.watch_interval = api, on_drop, watch_interval
        self.target: PodTarget | None = None
        self.dropped: str | None = None  # what dropped last, while no new pod is forwarded to
        self.drops: list[str] = []  # every drop, in order
        self.reopened: list[str] = []  # the pods forwarded to after a drop
        self.local_ports: dict[int, int] = {}  # service port -> local port
        self._listeners: list[socket.socket] = []
        self._streams: set[tuple[socket.socket, Any]] = set()
        self._threads: list[threading.Thread] = []
        self._lock = threading.Lock()
        self._stop = threading.Event()

    @property
    def service_name(self) -> str:
        return f"{self.service.metadata.namespace}/{self.service.metadata.name}"

    def open(self) -> ServiceForward:
        """Pick the pod and start listening; EndpointError when the Service has no ready pod."""
        self.target = self._pick()
        if self.target is None:
            raise EndpointError(f"service {self.service_name} has no ready pod to port-forward to")
        try:
            for port in self.service_ports:
                self._listen(port)
            self._spawn(self._watch, "port-forward watch")
        except BaseException:
            self.close()
            raise
        return self

    def __enter__(self) -> ServiceForward:
        return self.open() if not self._listeners else self

    def __exit__(self, *exc_info) -> None:
        self.close()

    def address(self, service_port: int) -> str:
        return f"127.0.0.1:{self.local_ports[service_port]}"

    def describe(self) -> str:
        pod = f"pod {self.target.namespace}/{self.target.pod}" if self.target else "no pod"
        return f"port-forward to {pod} of service {self.service_name} through {self.api}"

    def check(self) -> None:
        """EndpointError naming what dropped, when the forward has no pod now."""
        if self.dropped is not None:
            raise EndpointError(self.dropped)

    # ------------------------------------------------------------------ threads
    def _spawn(self, target: Callable[..., None], name: str, *args: Any) -> None:
        thread = threading.Thread(target=target, args=args, name=name, daemon=True)
        with self._lock:
            self._threads = [t for t in self._threads if t.is_alive()] + [thread]
        thread.start()

    def _listen(self, service_port: int) -> None:
        listener = socket.create_server(("127.0.0.1", 0))
        listener.settimeout(POLL_S)
        self._listeners.append(listener)
        self.local_ports[service_port] = listener.getsockname()[1]
        self._spawn(self._accept, f"port-forward listen :{self.local_ports[service_port]}", listener, service_port)

    def _accept(self, listener: socket.socket, service_port: int) -> None:
        while not self._stop.is_set():
            try:
                conn, _ = listener.accept()
            except TimeoutError:
                continue
            except OSError:  # the listener was closed
                return
            self._spawn(self._serve, f"port-forward :{self.local_ports[service_port]}", conn, service_port)

    def _serve(self, conn: socket.socket, service_port: int) -> None:
        """One local connection: a stream to the current pod, bytes pumped both ways."""
        target = self._current()
        stream = None
        try:
            if target is None:
                return
            pod_port = target.ports[service_port]
            stream = open_stream(self.streams, target, pod_port)
            remote = stream.socket(pod_port)
            for end in (conn, remote):
                end.settimeout(SEND_TIMEOUT_S)
            with self._lock:
                if self._stop.is_set():
                    return
                self._streams.add((conn, stream))
            self._pump(conn, remote)
            if stream.error(pod_port):  # the API server's word on why the stream ended
                self._drop(target, f"the API server said: {stream.error(pod_port).strip()}")
        except StreamNotOpened as exc:
            self._drop(target, f"{exc}")
        except OSError as exc:  # this one connection reset or closed under it: the peer sees it end
            logger.debug("port-forward connection to %s ended: %s", self.service_name, exc)
        except Exception as exc:
            logger.warning("port-forward connection to %s failed: %s", self.service_name, exc)
        finally:
            with self._lock:
                self._streams.discard((conn, stream))
            self._close_pair(conn, stream)

    def _pump(self, local: socket.socket, remote) -> None:
        """Copy bytes both ways until either side closes or the forward stops."""
        while not self._stop.is_set():
            readable, _, _ = select.select([local, remote], [], [], POLL_S)
            for source in readable:
                data = source.recv(CHUNK)
                if not data:
                    return
                (remote if source is local else local).sendall(data)

    @staticmethod
    def _close_pair(conn: socket.socket, stream) -> None:
        """Close both ends; an end the peer already closed is fine."""
        for closing in (conn.close, getattr(stream, "close", None)):
            if closing is not None:
                with contextlib.suppress(OSError):
                    closing()

    # ------------------------------------------------------------------ the pod
    def _pick(self) -> PodTarget | None:
        return ready_pod(self.core, self.service, self.service_ports)

    def _current(self) -> PodTarget | None:
        """The pod to forward to; after a drop, the Service's new ready pod (or None)."""
        with self._lock:
            if self.dropped is None:
                return self.target
        found = self._wait_for_pod(REOPEN_WAIT_S)
        if found is None:
            return None
        with self._lock:
            if self.dropped is None:  # another connection reopened it meanwhile
                return self.target
            self.target, self.dropped = found, None
            self.reopened.append(found.pod)
        logger.warning("port-forward reopened to pod %s/%s of service %s", found.namespace, found.pod,
                       self.service_name)
        return found

    def _wait_for_pod(self, timeout: float) -> PodTarget | None:
        """The Service's ready pod, asked for every second for up to ``timeout``."""
        deadline = time.monotonic() + timeout
        while not self._stop.is_set():
            try:
                found = self._pick()
            except Exception as exc:
                logger.warning("no new pod for %s: %s", self.service_name, short_error(exc))
                return None
            if found is not None or time.monotonic() >= deadline:
                return found
            self._stop.wait(1.0)
        return None

    def _watch(self) -> None:
        """Every ``watch_interval``: is the forwarded pod still there and ready, does the API answer?"""
        while not self._stop.wait(self.watch_interval):
            with self._lock:
                target = None if self.dropped else self.target
            if target is None:
                continue
            try:
                why = pod_state(self.core, target)
            except Exception as exc:
                why = f"{self.api} did not answer about pod {target.namespace}/{target.pod} ({type(exc).__name__})"
            if why is not None:
                self._drop(target, why)

    def _drop(self, target: PodTarget | None, why: str) -> None:
        """Mark the forward to ``target`` as dropped, close its open streams, tell ``on_drop``."""
        with self._lock:
            if target is None or target is not self.target or self.dropped is not None or self._stop.is_set():
                return
            self.dropped = f"port-forward to pod {target.namespace}/{target.pod} of service {self.service_name}" \
                           f" dropped: {why}"
            self.drops.append(self.dropped)
            streams, self._streams = list(self._streams), set()
        logger.warning("%s", self.dropped)
        for conn, stream in streams:
            self._close_pair(conn, stream)
        if self.on_drop is not None:
            self.on_drop(self.dropped)

    def close(self) -> None:
        """Stop accepting, close every stream and wait (bounded) for the threads."""
        self._stop.set()
        for listener in self._listeners:
            listener.close()
        with self._lock:
            streams, self._streams = list(self._streams), set()
            threads = list(self._threads)
        for conn, stream in streams:
            self._close_pair(conn, stream)
        deadline = time.monotonic() + OPEN_TIMEOUT_S
        for thread in threads:
            if thread is not threading.current_thread():
                thread.join(max(0.0, deadline - time.monotonic()))
        self._listeners = []
        for api in {id(c.api_client): c.api_client for c in (self.core, self.streams) if c is not None}.values():
            try:
                api.close()
            except Exception as exc:
                logger.debug("closing the API client: %s", exc)


# ----------------------------------------------------------------------------- the runner's use
@dataclass(frozen=True)
class Forwarded:
    """What the client uses once the forward is open."""

    scheduler_address: str  # tls://127.0.0.1:<port>
    dashboard_url: str  # http(s)://127.0.0.1:<port>/status, "" without a dashboard port


def needs_forward(scheduler_address: str, kubeconfig: str, probe_timeout: float = PROBE_TIMEOUT_S) -> bool:
    """A port-forward is wanted when the outputs carry a kubeconfig and the scheduler
    address does not accept a connection from this machine."""
    if not kubeconfig:
        return False
    return not reachable(*host_port(scheduler_address), timeout=probe_timeout)


def open_for(outputs, on_drop: Callable[[str], None] | None = None,
             probe_timeout: float = PROBE_TIMEOUT_S) -> tuple[ServiceForward, Forwarded] | None:
    """The forward to the stack's scheduler (and dashboard), opened, when the scheduler
    address is unreachable from here; None when it is reachable or no kubeconfig is given."""
    address = outputs.scheduler_address
    if not needs_forward(address, outputs.kubeconfig, probe_timeout):
        return None
    host, port = host_port(address)
    ref = service_for_host(host, outputs.namespace)
    if ref is None:
        raise EndpointError(f"the scheduler at {host}:{port} does not answer from this machine and {host} is not"
                            " an in-cluster service name to port-forward to")
    from kubernetes import client as k8s

    api = api_client(outputs.kubeconfig)
    core = k8s.CoreV1Api(api)
    try:
        service = find_service(core, ref)
    except BaseException:
        api.close()
        raise
    ports = (port, *dashboard_port(outputs.dashboard_url, service))
    streams = k8s.CoreV1Api(api_client(outputs.kubeconfig))
    forward = ServiceForward(core, service, ports, api=api_host(api), on_drop=on_drop, streams=streams).open()
    scheme = address.split("://", 1)[0]
    web = "https" if outputs.dashboard_url.startswith("https://") else "http"  # the scheduler's own certificate
    dashboard = f"{web}://{forward.address(ports[1])}/status" if len(ports) > 1 else ""
    return forward, Forwarded(f"{scheme}://{forward.address(port)}", dashboard)


def dashboard_port(dashboard_url: str, service) -> tuple[int, ...]:
    """The dashboard's Service port, when the dashboard URL names the same Service."""
    if not dashboard_url:
        return ()
    try:
        _, port = host_port(dashboard_url, default_port=80)
    except EndpointError:
        return ()
    return (port,) if any(p.port == port for p in service.spec.ports or ()) else ()

