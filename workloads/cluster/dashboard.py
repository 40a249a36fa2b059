"""``dask-tkg dashboard``: the Dask dashboard of a person's own cluster, as a local URL.

A person's scheduler Service is ClusterIP: nothing outside the workload cluster reaches it. A
run with ``--own-cluster`` forwards to it for as long as the run lasts; after ``--keep-cluster``
(or for a DaskCluster made some other way) the person opens the dashboard with this command:
their own kubeconfig (as ``kubectl vsphere login`` wrote it), their namespace, and the
DaskCluster's name (the only one there, if there is one). The scheduler Service and its
dashboard port are found as the runner finds them (``own_spec.dashboard_url``, then
``port_forward``), and the forward is the runner's own ``ServiceForward`` on 127.0.0.1: it
prints the URL and holds the forward until Ctrl-C.

An API server that refuses the token (HTTP 401: the login's token lasts about 10 hours), one
that does not answer, and a cluster that is not there each end in one line and exit 2. Nothing
here reads a stack output or a secret, and the kubeconfig's token is never printed.
"""
from __future__ import annotations

import argparse
import contextlib
import signal
import sys
import time
from typing import Any

from workloads.cluster import api_answers, kubeconfig, own_spec, port_forward
from workloads.cluster.own_cluster import GROUP, PLURAL, VERSION
from workloads.core.commands import prog
from workloads.core.errors import EndpointError

API_TIMEOUT_S = port_forward.API_TIMEOUT_S


def parse_args(argv: list[str]) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog=prog("python -m workloads.cluster.dashboard"),
                                     description="the Dask dashboard of your own cluster: a port-forward, as a"
                                                 " local URL, until Ctrl-C")
    parser.add_argument("cluster", nargs="?", metavar="NAME",
                        help="the DaskCluster (default: the only one in the namespace)")
    parser.add_argument("--kubeconfig", metavar="FILE",
                        help="your kubeconfig, as kubectl vsphere login wrote it (default: $KUBECONFIG, else"
                             " ~/.kube/config)")
    parser.add_argument("--context", metavar="NAME", help="the kubeconfig's context to use (default: its current one)")
    parser.add_argument("-n", "--namespace", metavar="NS",
                        help="your namespace, dask-<you> (default: the context's namespace)")
    return parser.parse_args(argv)


# ----------------------------------------------------------------------------- the kubeconfig
def load_kubeconfig(path: str | None, context: str | None) -> kubeconfig.Kubeconfig:
    """The kubeconfig's current context, or ``context`` when given."""
    return kubeconfig.load(path, context)


def namespace_of(given: str | None, kube: kubeconfig.Kubeconfig) -> str:
    if given or kube.namespace:
        return str(given or kube.namespace)
    raise EndpointError(f"the kubeconfig's context {kube.context} names no namespace: give --namespace dask-<you>"
                        " (the namespace the team's document lists for you)")


# ----------------------------------------------------------------------------- API errors
def api_problem(exc: Any, kube: kubeconfig.Kubeconfig, host: str, what: str) -> str:
    """One line for an API server's refusal: an expired login, a namespace not the person's, or the status."""
    if exc.status == 401:
        return api_answers.expired(host, kube.context)
    if exc.status == 403:
        return (f"the kubeconfig's user (context {kube.context}) may not {what} (HTTP 403): is that namespace yours"
                " (--namespace), and is the context the workload cluster's (kubectl config use-context CLUSTER)?")
    return f"could not {what}: HTTP {exc.status} {exc.reason} from {host}"


# ----------------------------------------------------------------------------- the cluster
def cluster_names(api, kube: kubeconfig.Kubeconfig, namespace: str) -> list[str]:
    """The DaskClusters in ``namespace``, by name."""
    from kubernetes import client

    host = port_forward.api_host(api)
    try:
        found = client.CustomObjectsApi(api).list_namespaced_custom_object(
            GROUP, VERSION, namespace, PLURAL, _request_timeout=API_TIMEOUT_S)
    except client.exceptions.ApiException as exc:
        raise EndpointError(api_problem(exc, kube, host, f"list DaskClusters in {namespace}")) from None
    except api_answers.no_answer() as exc:  # refused, timed out, TLS: no HTTP answer
        raise EndpointError(api_answers.unreachable(exc, host, kube.context, kube.path)) from None
    return sorted(item["metadata"]["name"] for item in found.get("items", ()))


def pick(names: list[str], given: str | None, namespace: str) -> str:
    """The cluster asked for, or the only one; else a line listing what there is."""
    there = ", ".join(names) or "none"
    if given:
        if given in names:
            return given
        raise EndpointError(f"no DaskCluster {given} in {namespace}; there: {there}")
    if len(names) == 1:
        return names[0]
    if not names:
        raise EndpointError(f"no DaskCluster in {namespace}: start one (dask-tkg run --own-cluster --keep-cluster ...)")
    raise EndpointError(f"{len(names)} DaskClusters in {namespace} ({there}): name one, dask-tkg dashboard NAME")


def open_forward(kube: kubeconfig.Kubeconfig, api, namespace: str, name: str) -> tuple[Any, str]:
    """The forward to the dashboard port of the cluster's scheduler Service, open, and its local URL."""
    from kubernetes import client

    url = own_spec.dashboard_url(name, namespace)
    host, _ = port_forward.host_port(url)
    ref = port_forward.service_for_host(host, namespace)
    if ref is None:
        raise EndpointError(f"{url} names no Service of the cluster")
    core = client.CoreV1Api(api)
    service = port_forward.find_service(core, ref)
    ports = port_forward.dashboard_port(url, service)
    if not ports:
        raise EndpointError(f"{ref.describe()} has no dashboard port {own_spec.DASHBOARD_PORT}")
    streams = client.CoreV1Api(kube.api_client())
    forward = port_forward.ServiceForward(core, service, ports, api=port_forward.api_host(api), streams=streams)
    try:
        forward.open()
    except BaseException:
        forward.close()
        raise
    return forward, f"http://{forward.address(ports[0])}/status"


def url_line(namespace: str, name: str, url: str) -> str:
    return f"Dask dashboard of {namespace}/{name}: {url} (Ctrl-C to stop)"


def hold(forward) -> None:
    """Until Ctrl-C: the forward serves from its own threads. Ctrl-C ends it even where the
    shell started the command with SIGINT ignored (a background job), which Python keeps."""
    signal.signal(signal.SIGINT, signal.default_int_handler)
    try:
        with contextlib.suppress(KeyboardInterrupt):
            while True:
                time.sleep(3600)
    finally:
        forward.close()


def main(argv: list[str] | None = None) -> int:
    args = parse_args(list(sys.argv[1:] if argv is None else argv))
    api_answers.quiet_retries()
    api = None
    try:
        kube = load_kubeconfig(args.kubeconfig, args.context)
        namespace = namespace_of(args.namespace, kube)
        api = kube.api_client()
        name = pick(cluster_names(api, kube, namespace), args.cluster, namespace)
        forward, url = open_forward(kube, api, namespace, name)
    except EndpointError as exc:
        print(f"error: {exc}", file=sys.stderr)
        if api is not None:
            api.close()
        return 2
    except KeyboardInterrupt:
        return 0
    print(url_line(namespace, name, url), flush=True)
    hold(forward)
    return 0


if __name__ == "__main__":
    sys.exit(main())
