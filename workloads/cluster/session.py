"""One Dask cluster session: the local cluster the runner starts, or the remote one it
connects to; scaling, waiting for workers, the dashboard link, closing.

The runner and ``bench/`` both use it (``with ClusterSession.start_local(plan) as s:``), so a
cluster is started, connected to and waited for in one place.
"""
from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from workloads.cluster import endpoint as endpoints
from workloads.cluster import local, own_spec, preflight
from workloads.core.errors import EndpointError
from workloads.observe import environment

if TYPE_CHECKING:
    from workloads.cluster.port_forward import Forwarded, ServiceForward

logger = logging.getLogger(__name__)


class ClusterSession:
    """A client and, for a local cluster, the cluster object, for as long as a runner or a
    benchmark needs them. A context manager: leaving it closes both."""

    def __init__(self, where: endpoints.Endpoint, echo: Callable[..., None] = print,
                 dashboard_address: str = "127.0.0.1:8787"):
        self.endpoint = where
        self.echo = echo
        self.dashboard_address = dashboard_address
        self.cluster: Any = None  # distributed.LocalCluster, for a local cluster
        self.client: Any = None  # distributed.Client, once started or connected
        self.plan: local.LocalPlan | None = None
        self.detection: dict[str, float | None] | None = None  # see failure_detection()
        self.scaler = None  # workloads.cluster.scaling.ClusterScaler: the operator backend's, made on connect
        self.restriction_said = False
        self.forward: ServiceForward | None = None  # when the scheduler is reached through one
        self.forwarded: Forwarded | None = None  # the local addresses it serves
        self.on_forward_drop: Callable[[str], None] | None = None  # told when the forward drops

    @classmethod
    def start_local(cls, plan: local.LocalPlan, dashboard_address: str = ":0",
                    echo: Callable[..., None] = lambda *a, **k: None) -> ClusterSession:
        """A local cluster of ``plan``, started and with all its workers connected."""
        session = cls(endpoints.local(), echo=echo, dashboard_address=dashboard_address)
        try:
            session.use_local(plan)
            session.wait(plan.n_workers, timeout=120)
        except BaseException:
            session.close()
            raise
        return session

    def __enter__(self) -> ClusterSession:
        return self

    def __exit__(self, *exc_info) -> None:
        self.close()

    # ------------------------------------------------------------------ local
    def use_local(self, plan: local.LocalPlan) -> int:
        """(Re)start the local cluster as ``plan`` says, unless it already runs so; returns
        its worker count."""
        if self.plan == plan and self.cluster is not None:
            return plan.n_workers
        self.close()
        self.plan = plan
        self.echo(f"starting a local cluster: {plan.n_workers} worker(s) x {plan.threads_per_worker} thread(s),"
                  f" {plan.allocator}" + (f", {plan.gpus} GPU(s)" if plan.gpus else ""))
        from distributed import Client

        self.cluster = local.start(plan, dashboard_address=self.dashboard_address)
        self.client = Client(self.cluster)
        self.echo(f"dashboard: {self.dashboard()}")
        return plan.n_workers

    # ------------------------------------------------------------------ remote
    def connect(self):
        """The client of the remote scheduler (connected on first use)."""
        if self.client is None:
            address = self.scheduler_route()
            self.client = endpoints.connect(address, self.security())
            self.echo(f"dashboard: {self.dashboard()}")
            if self.endpoint.outputs is not None and self.scaler is None:
                from workloads.cluster import scaling

                self.scaler = scaling.ClusterScaler.from_outputs(self.endpoint.outputs, self.echo)
        return self.client

    def scheduler_route(self) -> str:
        """The address the client dials: the stack's scheduler address, or the local end of
        the runner's own port-forward when that address does not answer from here and the
        outputs carry a kubeconfig (a ClusterIP Service)."""
        address, outputs = self.endpoint.scheduler_address, self.endpoint.outputs
        if address is None:
            raise EndpointError(f"no scheduler address to connect to ({self.endpoint.describe()})")
        if outputs is None or self.forward is not None:
            return self.forwarded.scheduler_address if self.forwarded else address
        from workloads.cluster import port_forward

        opened = port_forward.open_for(outputs, on_drop=self._forward_dropped)
        if opened is None:
            return address
        self.forward, self.forwarded = opened
        self.echo(f"scheduler: {endpoints.redact(address)} does not answer from here; {self.forward.describe()}"
                  f" on {self.forwarded.scheduler_address}")
        return self.forwarded.scheduler_address

    def security(self):
        """The client's TLS settings: the endpoint's, which check that the scheduler's
        certificate names the host dialled; through a port-forward, the host the outputs give
        (the local end's address names nothing). None without TLS."""
        security = self.endpoint.security
        if security is None or self.forwarded is None or not hasattr(security, "for_server"):
            return security
        from workloads.cluster import port_forward

        host, _ = port_forward.host_port(self.endpoint.scheduler_address)
        return security.for_server(host)

    def _forward_dropped(self, why: str) -> None:
        if self.on_forward_drop is not None:
            self.on_forward_drop(why)

    def remote_target(self, count: int | None) -> int:
        """How many workers a run on the remote cluster uses: ``count`` when asked for; else
        what the stack deployed, else every worker connected now (at least one)."""
        if count is not None:
            return count
        if self.endpoint.expected_workers:
            return self.endpoint.expected_workers
        return max(1, len(self.workers()))

    def scale(self, want: int, timeout: float) -> bool:
        """Resize a remote cluster to ``want`` workers where it can be: the operator backend's
        DaskCluster (then wait until exactly that many are connected), or a cluster object.
        A bare scheduler address or the Helm release cannot: the runner then restricts the
        run instead. True if it scaled."""
        if self.scaler is not None:
            from workloads.cluster import scaling

            self.scaler.pin(want)
            scaling.wait_for_worker_count(self.client, want, timeout, echo=self.echo)
            return True
        cluster = None if self.endpoint.local else getattr(self.client, "cluster", None)
        if cluster is not None and hasattr(cluster, "scale"):
            cluster.scale(want)
            return True
        return False

    def adapt(self, minimum: int, maximum: int) -> None:
        """Adaptive scaling between the bounds for the next run (the operator backend only)."""
        if self.scaler is None:
            raise EndpointError("--adaptive needs the Dask operator backend (stack output daskBackend=operator):"
                                " the Helm release runs a fixed number of workers")
        self.scaler.adapt(minimum, maximum)

    def say_restricted(self, connected: int) -> None:
        """Once: the cluster cannot be resized, runs are restricted to part of it."""
        if not self.restriction_said:
            from workloads.cluster import scaling

            self.echo(scaling.helm_restriction_notice(connected))
            self.restriction_said = True

    # ------------------------------------------------------------------ both
    def workers(self) -> list[str]:
        """The addresses of the workers connected now, sorted (asked of the scheduler, not
        the client's cache, which its periodic refresh may have emptied)."""
        return sorted(self.client.sync(self.client.scheduler.identity, n_workers=-1)["workers"])

    def wait(self, want: int, timeout: float) -> list[str]:
        """Wait until ``want`` workers are connected (``Client.wait_for_workers``), saying
        have/want; returns every connected worker's address. EndpointError on timeout."""
        have = len(self.workers())
        self.echo(f"workers: have {have}, want {want}")
        if have < want:
            try:
                self.client.wait_for_workers(want, timeout=timeout)
            except TimeoutError:
                have = len(self.workers())
                address = endpoints.redact(self.client.scheduler.address)
                raise EndpointError(
                    f"only {have} of {want} workers connected to {address} after {timeout:.0f} s") from None
            self.echo(f"workers: have {len(self.workers())}, want {want}")
        return self.workers()

    def dashboard(self) -> str:
        if self.cluster is not None:
            return self.cluster.dashboard_link
        if self.forwarded is not None and self.forwarded.dashboard_url:
            return self.forwarded.dashboard_url
        return self.endpoint.dashboard_url or getattr(self.client, "dashboard_link", "") or ""

    def running(self) -> bool:
        return self.client is not None and self.client.status == "running"

    def close(self) -> None:
        if self.scaler is not None:  # the deployed autoscaler bounds back, also after a failed sweep
            with contextlib.suppress(Exception):
                self.scaler.restore()
            self.scaler = None
        for thing in (self.client, self.cluster):
            if thing is not None:
                with contextlib.suppress(Exception, asyncio.CancelledError):  # a lost scheduler cancels
                    thing.close()
        self.client = self.cluster = None
        self.detection = None
        if self.forward is not None:  # after the client, so that it closes over a live connection
            self.forward.close()
        self.forward = self.forwarded = None

    def failure_detection(self) -> dict[str, float | None]:
        """How soon this cluster notices a silent worker (the scheduler's worker-ttl, as it
        applies it: never under 10 heartbeats) and this client an unresponsive connection.
        Asked with a function pickled by value: the scheduler needs nothing of this project."""
        import dask.config
        from dask.utils import parse_timedelta

        ttl = preflight.on_scheduler(self.client, environment.scheduler_worker_ttl)
        tcp = parse_timedelta(dask.config.get("distributed.comm.timeouts.tcp"), default="seconds")
        self.detection = {"worker_ttl_s": ttl, "tcp_timeout_s": tcp}
        return self.detection

    def describe_plan(self) -> dict[str, Any] | None:
        return self.plan.describe() if self.plan is not None and self.endpoint.local else None


# the dask chart's labels (components/kube/exposure.py ``selector``) and the operator's (own_spec.py)
HELM_PODS = "app=dask,release={release},component in (scheduler,worker)"
OPERATOR_PODS = f"{own_spec.CLUSTER_LABEL}={{cluster}}"


@dataclass(frozen=True)
class DaskPods:
    """Where the pods of a remote cluster are, and the kubeconfig that reads them: the stack's
    runner identity, or a person's own (``--own-cluster``). Never printed (``repr`` leaves the
    kubeconfig out)."""

    namespace: str
    selector: str
    cluster: str  # the DaskCluster, or the dask chart's release
    operator: bool
    kubeconfig: str = field(default="", repr=False)

    def describe(self) -> str:
        return (f"DaskCluster {self.namespace}/{self.cluster}" if self.operator
                else f"the dask release {self.namespace}/{self.cluster}")

    def core_api(self) -> Any:
        """A ``CoreV1Api`` on the kubeconfig (EndpointError when it cannot be used)."""
        from kubernetes import client as k8s

        from workloads.cluster import port_forward

        return k8s.CoreV1Api(port_forward.api_client(self.kubeconfig))


def dask_pods(where: endpoints.Endpoint) -> DaskPods | str:
    """The pods of the endpoint's Dask cluster, or why they cannot be read (a string)."""
    outputs = where.outputs
    if outputs is None:
        return (f"the cluster was reached at its scheduler's address alone ({where.source}): no kubeconfig to read"
                " its pods with (--stack, --outputs or --own-cluster give one)")
    if not outputs.kubeconfig or outputs.kubeconfig == "[secret]":
        return (f"{where.source} carries no kubeconfig to read the pods with: read the stack's outputs with"
                " --show-secrets (its runnerKubeconfig)")
    operator = outputs.on_operator and bool(outputs.dask_cluster)
    cluster = outputs.dask_cluster if operator else outputs.release
    selector = OPERATOR_PODS.format(cluster=cluster) if operator else HELM_PODS.format(release=cluster)
    return DaskPods(outputs.namespace, selector, cluster, operator, outputs.kubeconfig)
