"""``--own-cluster``: a person runs the benchmarks on a Dask cluster of their own, made for the
run in their namespace with their own kubeconfig, and deleted at the end.

In order: the person's namespace from the stack's ``teamUsers`` (``team.py``); their
ResourceQuota against the whole cluster, before anything is made (``quota.py``); a CA and
certificates of the cluster's own (``own_tls.py``); the DaskCluster from ``teamClusterSpec``
with their idle timeout (``own_spec.py``), created by dask-kubernetes' ``KubeCluster``
(``kube_tls.py``: upstream's class, speaking TLS), its TLS Secret owned by it; then the runs,
exactly as on the shared cluster (``session.py`` through the person's port-forward, resizing
through their Role); at the end, also after a failure or Ctrl-C, ``KubeCluster``'s own close
deletes the DaskCluster (``shutdown_on_close``) and the Secret goes with it, unless
``--keep-cluster``. Nothing here reads a stack secret.

``KubeCluster`` runs asynchronous in an event loop of its own (``loop_thread.py``), so that
the runner bounds its start.

The person's API answers in one line each way it can fail: a server this machine cannot
reach (named, with what to check: the network, the kubeconfig), an expired login (HTTP 401:
``kubectl vsphere login`` tokens last about 10 hours), a refusal (HTTP 403: the wrong
``--user``, or a person not among the stack's users). The ``kubernetes`` client's retries
of an unreachable server are not logged: the one line says it.
"""
from __future__ import annotations

import contextlib
import logging
import os
import secrets
import sys
import time
from collections.abc import Callable, Iterator
from typing import Any

from workloads.cluster import api_answers, kr8s_compat, kubeconfig, own_spec, own_tls, quota
from workloads.cluster import endpoint as endpoints
from workloads.cluster.loop_thread import DeadlineExceeded, LoopThread
from workloads.cluster.team import Person, TeamOutputs
from workloads.contract import Backend, StackOutputs
from workloads.core.errors import EndpointError

logger = logging.getLogger(__name__)

DELETE_TIMEOUT_S = 120.0  # KubeCluster's close waits until the DaskCluster is gone
FIRST_CALL_TIMEOUT_S = (10, 30)  # connect, read: a server that does not answer is named within a minute
GROUP, VERSION, PLURAL = "kubernetes.dask.org", "v1", "daskclusters"


def say(text: str, error: bool = False) -> None:
    print(text, file=sys.stderr if error else sys.stdout, flush=True)


def cluster_name(given: str | None) -> str:
    return given or f"dask-{secrets.token_hex(3)}"


class OwnCluster:
    """One person's cluster for one run: ``start`` makes it and returns the runner's endpoint,
    ``close`` deletes it (unless kept)."""

    def __init__(self, team: TeamOutputs, person: Person, kube: kubeconfig.Kubeconfig, name: str, workers: int,
                 keep: bool = False, echo: Callable[..., None] | None = None):
        self.team, self.person, self.kube, self.name, self.workers = team, person, kube, name, workers
        self.keep, self.echo = keep, echo or say
        self.namespace = person.namespace
        self.api: Any = None  # kubernetes ApiClient on the person's kubeconfig
        self.loop: LoopThread | None = None
        self.kube_cluster: Any = None
        # no DaskCluster of this name was there before this run: one there now is this run's to delete
        # (also when Ctrl-C comes between its creation and anything that would say so)
        self.claimed = False
        self.pems: dict[str, str] = {}

    # ------------------------------------------------------------------ start
    def start(self, timeout: float) -> endpoints.Endpoint:
        api_answers.quiet_retries()
        self.api = self.kube.api_client()
        cluster = own_spec.build(self.team.cluster_spec, name=self.name, namespace=self.namespace,
                                 workers=self.workers, idle_timeout=self.person.idle_timeout,
                                 secret=own_tls.secret_name(self.name))
        quota.check(self.quotas(), cluster, self.workers, self.namespace)
        self.refuse_existing()
        self.claimed = True
        self.pems = own_tls.issue(own_spec.scheduler_names(self.name, self.namespace))
        security = endpoints.security_from_pems(self.pems["ca.crt"], self.pems["client.crt"], self.pems["client.key"])
        self.say_plan(cluster)
        if not logger.isEnabledFor(logging.DEBUG):
            logging.getLogger("httpx").setLevel(logging.WARNING)  # kr8s's client logs every request at INFO
        started = time.monotonic()
        os.environ["KUBECONFIG"] = str(self.kube.path)  # kr8s, under KubeCluster, reads it
        kr8s_compat.apply_for(self.api)  # only a server before Kubernetes 1.27 needs it
        self.loop = LoopThread()
        try:
            self.loop.run(lambda: self.create(cluster, security, timeout), timeout)
        except DeadlineExceeded:
            raise EndpointError(self.not_started(f"not ready within {timeout:.0f} s")) from None
        except Exception as exc:
            raise EndpointError(self.not_started(f"{type(exc).__name__}: {exc}")) from None
        self.wait_admitted(started + timeout)
        self.echo(f"own cluster: {self.namespace}/{self.name} ready in {time.monotonic() - started:.0f} s")
        return self.endpoint(cluster, security)

    async def create(self, cluster: dict[str, Any], security: Any, timeout: float) -> None:
        from dask_kubernetes.operator.kubecluster.kubecluster import CreateMode
        from tornado.ioloop import IOLoop

        from workloads.cluster.kube_tls import TlsKubeCluster

        self.kube_cluster = TlsKubeCluster(
            custom_cluster_spec=cluster, namespace=self.namespace, shutdown_on_close=not self.keep,
            create_mode=CreateMode.CREATE_ONLY, quiet=True, asynchronous=True, loop=IOLoop.current(),
            # how long the controller may take to set the cluster Running (upstream's default 60 s)
            resource_timeout=int(timeout),
            # outside a pod the Service's name never resolves: skip upstream's 10 s of lookups
            port_forward_cluster_ip="KUBERNETES_SERVICE_HOST" not in os.environ,
            security=security, server_name=own_spec.scheduler_host(self.name, self.namespace),
            on_created=self.make_secret)
        await self.kube_cluster

    def make_secret(self) -> None:
        """The TLS Secret, owned by the DaskCluster that now exists (KubeCluster's hook)."""
        from kubernetes import client

        try:
            made = client.CustomObjectsApi(self.api).get_namespaced_custom_object(
                GROUP, VERSION, self.namespace, PLURAL, self.name, _request_timeout=30)
            owner = {"apiVersion": f"{GROUP}/{VERSION}", "kind": "DaskCluster", "name": self.name,
                     "uid": made["metadata"]["uid"]}
            body = own_tls.secret(own_tls.secret_name(self.name), self.namespace, self.pems, owner)
            client.CoreV1Api(self.api).create_namespaced_secret(self.namespace, body, _request_timeout=30)
        except client.exceptions.ApiException as exc:
            raise EndpointError(self.refused(exc, f"create the Secret {own_tls.secret_name(self.name)}")) from None
        except api_answers.no_answer() as exc:
            raise EndpointError(self.unreachable(exc)) from None

    def endpoint(self, cluster: dict[str, Any], security: Any) -> endpoints.Endpoint:
        """The runner's endpoint: the scheduler by its Service name (reached through the
        person's port-forward from outside), resized through the person's Role."""
        address = own_spec.scheduler_address(self.name, self.namespace)
        outputs = StackOutputs(
            scheduler_address=address, dashboard_url=own_spec.dashboard_url(self.name, self.namespace),
            jupyter_url="", namespace=self.namespace, release=self.name, dataset_mount=self.team.dataset_mount,
            dataset_layout=self.team.dataset_layout, workers=self.workers,
            gpus_per_worker=quota.gpus_per_worker(cluster),
            threads_per_worker=self.team.threads_per_worker, image=own_spec.worker_image(cluster) or self.team.image,
            dask_version=self.team.dask_version, tls_ca=self.pems["ca.crt"], tls_client_cert=self.pems["client.crt"],
            tls_client_key=self.pems["client.key"], kubeconfig=self.kube.text, backend=Backend.OPERATOR,
            dask_cluster=self.name)
        return endpoints.Endpoint(kind="own-cluster", source=f"DaskCluster {self.namespace}/{self.name}",
                                  scheduler_address=address, dashboard_url=outputs.dashboard_url, security=security,
                                  data_dir=self.team.dataset_mount, expected_workers=self.workers, outputs=outputs)

    def wait_admitted(self, deadline: float) -> None:
        """Until every worker pod of the cluster exists, or the namespace's quota refuses one.

        The quota check before the start (``quota.check``) sees what runs now; two clusters of
        one person started at once both pass it, and the server's quota admission then refuses
        the pods beyond it (it never admits more). The controller's Deployments keep retrying
        them, so such a cluster would wait for workers that never come: the refusal, recorded
        as the ReplicaSet's ``FailedCreate`` event, ends the start with the quota's own words."""
        while True:
            refusals = self.quota_refusals()
            if refusals:
                raise EndpointError(
                    f"the DaskCluster {self.namespace}/{self.name} cannot get its {self.workers} worker(s): the"
                    f" namespace's quota refused {len(refusals)} pod(s) (another cluster of {self.person.name}'s"
                    f" holds the rest?): {refusals[-1]}; it is deleted now. kubectl get daskclusters -n"
                    f" {self.namespace} lists the others")
            if self.worker_pods() >= self.workers or time.monotonic() >= deadline:
                return
            time.sleep(1.0)

    def worker_pods(self) -> int:
        from kubernetes import client

        workers = f"{own_spec.CLUSTER_LABEL}={self.name},{own_spec.COMPONENT_LABEL}=worker"
        with self.answering("list pods"):
            found = client.CoreV1Api(self.api).list_namespaced_pod(self.namespace, label_selector=workers,
                                                                   _request_timeout=30).items
        return len(found)

    def quota_refusals(self) -> list[str]:
        """The quota admission's refusals of this cluster's pods (its ReplicaSets' FailedCreate
        events, whose message is the server's ``exceeded quota: ...``), oldest first."""
        from kubernetes import client

        try:
            events = client.CoreV1Api(self.api).list_namespaced_event(
                self.namespace, field_selector="reason=FailedCreate", _request_timeout=30).items
        except (client.exceptions.ApiException, api_answers.no_answer()):
            return []
        mine = [e for e in events if (e.involved_object.name or "").startswith(f"{self.name}-")
                and "exceeded quota" in (e.message or "")]
        return [e.message.split("forbidden: ", 1)[-1] for e in mine]

    def not_started(self, why: str) -> str:
        refusals = self.quota_refusals() if self.api is not None else []
        if refusals:
            why = f"{why}; the namespace's quota refused its pods: {refusals[-1]}"
        last = self.kube_cluster.last_error() if self.kube_cluster is not None else None
        return (f"the DaskCluster {self.namespace}/{self.name} did not start: {why}"
                + (f" (last answer from the scheduler: {last})" if last else "") + f"; pods: {self.pod_states()};"
                + f" kubectl get pods,events -n {self.namespace} says more")

    def pod_states(self) -> str:
        """Each of the cluster's pods: phase, readiness, and why a container waits or ended."""
        from kubernetes import client

        try:
            found = client.CoreV1Api(self.api).list_namespaced_pod(
                self.namespace, label_selector=f"{own_spec.CLUSTER_LABEL}={self.name}", _request_timeout=30).items
        except Exception as exc:
            return f"not read ({type(exc).__name__})"
        states = []
        for pod in found:
            why = [f"{c.name} {s.reason}" for c in pod.status.container_statuses or ()
                   for s in (c.state.waiting, c.state.terminated) if s is not None and s.reason]
            ready = [c.ready for c in pod.status.container_statuses or ()]
            states.append(f"{pod.metadata.name} {pod.status.phase}{'' if ready and all(ready) else ' not ready'}"
                          + (f" ({', '.join(why)})" if why else ""))
        return "; ".join(states) or "none"

    # ------------------------------------------------------------------ the person's API
    def quotas(self) -> list[dict[str, Any]]:
        """The ResourceQuotas of the person's namespace, as plain objects (the first call to
        the person's API: the one that finds it unreachable or the login expired)."""
        from kubernetes import client

        with self.answering("read the ResourceQuotas"):
            found = client.CoreV1Api(self.api).list_namespaced_resource_quota(
                self.namespace, _request_timeout=FIRST_CALL_TIMEOUT_S)
        return [self.api.sanitize_for_serialization(q) for q in found.items]

    def refuse_existing(self) -> None:
        """A DaskCluster of this name already there is not this run's to use or delete."""
        if self.exists():
            raise EndpointError(f"a DaskCluster {self.name} already exists in {self.namespace}: choose another"
                                " --cluster-name (or leave it out)")

    def exists(self) -> bool:
        from kubernetes import client

        with self.answering("read DaskClusters"):
            try:
                client.CustomObjectsApi(self.api).get_namespaced_custom_object(
                    GROUP, VERSION, self.namespace, PLURAL, self.name, _request_timeout=30)
            except client.exceptions.ApiException as exc:
                if exc.status == 404:
                    return False
                raise
        return True

    @contextlib.contextmanager
    def answering(self, what: str) -> Iterator[None]:
        """Calls to the person's API meanwhile: a refusal or an unreachable server is one line."""
        from kubernetes import client

        try:
            yield
        except client.exceptions.ApiException as exc:
            raise EndpointError(self.refused(exc, what)) from None
        except api_answers.no_answer() as exc:
            raise EndpointError(self.unreachable(exc)) from None

    @property
    def server(self) -> str:
        return str(self.api.configuration.host)

    def refused(self, exc: Any, what: str) -> str:
        who = f"the kubeconfig's user (context {self.kube.context})"
        if exc.status == 401:
            return api_answers.expired(self.server, self.kube.context)
        if exc.status == 403:
            return (f"{who} may not {what} in {self.namespace} (HTTP {exc.status}): is --user right, and is"
                    f" {self.person.name} among the stack's users?")
        return f"{who} could not {what} in {self.namespace}: HTTP {exc.status} {exc.reason}"

    def unreachable(self, exc: BaseException) -> str:
        return api_answers.unreachable(exc, self.server, self.kube.context, self.kube.path)

    def say_plan(self, cluster: dict[str, Any]) -> None:
        gpus = quota.gpus_per_worker(cluster)
        idle = f"{self.person.idle_timeout} s" if self.person.idle_timeout else "never"
        self.echo(f"own cluster: DaskCluster {self.namespace}/{self.name} for {self.person.name}: {self.workers}"
                  f" worker(s) x {gpus} GPU(s) (quota {self.person.gpus}), TLS of its own, deleted when idle for"
                  f" {idle}" + (", kept after the run" if self.keep else ", deleted after the run"))

    # ------------------------------------------------------------------ the end
    def close(self) -> None:
        """Delete the cluster (KubeCluster's close) and its Secret unless kept; a cluster this
        run did not make is never touched."""
        started = time.monotonic()
        try:
            if self.kube_cluster is not None and self.loop is not None:
                if not self.claimed:
                    self.kube_cluster.shutdown_on_close = False
                try:
                    self.loop.run(lambda: self.kube_cluster.close(timeout=DELETE_TIMEOUT_S), DELETE_TIMEOUT_S + 15)
                except Exception as exc:
                    logger.warning("closing the KubeCluster: %s", exc)
            gone = self.delete_by_name() if self.claimed and not self.keep else None
        finally:
            if self.loop is not None:
                self.loop.stop()
            if self.api is not None:
                self.api.close()
        self.say_end(time.monotonic() - started, gone)

    def delete_by_name(self) -> bool:
        """The DaskCluster and its Secret, deleted if still there, and waited for (bounded):
        whether the DaskCluster is gone."""
        from kubernetes import client

        custom, core = client.CustomObjectsApi(self.api), client.CoreV1Api(self.api)
        deletions = ((custom.delete_namespaced_custom_object, (GROUP, VERSION, self.namespace, PLURAL, self.name)),
                     (core.delete_namespaced_secret, (own_tls.secret_name(self.name), self.namespace)))
        for delete, arguments in deletions:
            try:
                delete(*arguments, _request_timeout=30)
            except client.exceptions.ApiException as exc:
                if exc.status != 404:
                    logger.warning("deleting %s: HTTP %s %s", arguments[-1], exc.status, exc.reason)
            except api_answers.no_answer() as exc:  # say_end names what is left and how to delete it
                logger.warning("deleting %s: %s", arguments[-1], self.unreachable(exc))
                return False
        deadline = time.monotonic() + DELETE_TIMEOUT_S
        while time.monotonic() < deadline:
            try:
                custom.get_namespaced_custom_object(GROUP, VERSION, self.namespace, PLURAL, self.name,
                                                    _request_timeout=30)
            except client.exceptions.ApiException as exc:
                if exc.status == 404:
                    return True
            except api_answers.no_answer():
                pass  # the server away for a moment: asked again until the deadline
            time.sleep(1)
        return False

    def say_end(self, seconds: float, gone: bool | None) -> None:
        if not self.claimed:
            return
        where = f"DaskCluster {self.namespace}/{self.name}"
        if gone is False:
            self.echo(f"own cluster: {where} is not gone after {seconds:.0f} s: kubectl delete daskcluster"
                      f" {self.name} -n {self.namespace}", error=True)
        elif self.keep:
            idle = (f"; deleted once idle for {self.person.idle_timeout} s" if self.person.idle_timeout else "")
            self.echo(f"own cluster: kept {where}{idle}; delete it with kubectl delete daskcluster {self.name}"
                      f" -n {self.namespace} (its Secret {own_tls.secret_name(self.name)} goes with it)")
        else:
            self.echo(f"own cluster: deleted {where} and its Secret {own_tls.secret_name(self.name)}"
                      f" in {seconds:.0f} s")
