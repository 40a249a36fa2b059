"""NetworkPolicies of the Dask namespace: who may reach each pod, and where each pod may go.

Pure functions on plain dicts (no Pulumi): ``dask_network_policies`` builds the Dask pods'
manifests for either backend, ``fetch_policy`` the policy of a pod that downloads (the data
Job, the environment Job). ``network_semantics`` evaluates them (the test cluster's network
plugin does not enforce NetworkPolicy).

Ingress, who talks to whom:
- workers connect to the scheduler's comm port; the scheduler, other workers and Jupyter's
  Client connect to the workers on ports chosen at random (comm and nanny);
- Jupyter's dashboard extension and the operator's controller (another namespace) call the
  scheduler's dashboard port, which also serves the unauthenticated HTTP API that retires
  workers;
- the runner reaches the scheduler and Jupyter by a port-forward (the kubelet connects inside
  the pod, and NetworkPolicy always admits the pod's own node) or, when they are exposed
  (NodePort/LoadBalancer), from the source ranges: the exposing Services keep the client's
  address (``externalTrafficPolicy: Local``, ``exposure.py``), so the policy admits exactly
  ``loadBalancerSourceRanges``; kube-proxy applies those ranges only to traffic through the
  load balancer's address, never to a NodePort, so the policy is what holds them there;
- nothing in the cluster needs Jupyter, and nothing reaches the Jobs.

Egress, denied by default for every pod of the namespace; then DNS (the cluster's DNS pods,
53 UDP and TCP) for every pod, the Dask pods' peers on their ports, and only for the pods that
download, the outside on the ports their URLs use: ``0.0.0.0/0`` less the cluster's own ranges
(pod and Service networks, the node network and the vCenter and Supervisor addresses where
the settings say them). No Dask pod reaches the API server: its ``kubernetes`` Service is in
the Service network, its endpoints and the control plane's address listen on 6443, a port no
rule opens. The volumes (dataset, pip cache) are NFS mounts the kubelet makes on the node, not
connections from the pod, so no pod is given the NFS server.
"""
from __future__ import annotations

import ipaddress
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit

from components.facts.dask_chart import DASHBOARD_PORT, JUPYTER_CONTAINER_PORT, SCHEDULER_PORT
from components.kube.network_semantics import NAMESPACE_NAME_LABEL
from workloads.contract import CLUSTER_LABEL, COMPONENT_LABEL

API_VERSION = "networking.k8s.io/v1"
EVERYWHERE = "0.0.0.0/0"
API_SERVER_PORT = 6443  # the guest cluster's kube-apiserver (kubeadm's default, TKG's control-plane endpoint)
# The cluster's DNS: CoreDNS, deployed by kubeadm in kube-system with the label kube-dns had
# (kubernetes/kubernetes cmd/kubeadm/app/phases/addons/dns/manifests.go: ``k8s-app: kube-dns``).
DNS_NAMESPACE = "kube-system"
DNS_POD_LABELS = {"k8s-app": "kube-dns"}
DNS_PORT = 53
# The API server labels every namespace with its name from Kubernetes 1.21 (NamespaceDefaultLabelName).
NAME_LABEL_SINCE = (1, 21, 0)


@dataclass(frozen=True)
class DaskPodSelectors:
    """The matchLabels of the scheduler, worker and Jupyter pods (``jupyter`` None: no Jupyter).

    ``jupyter`` is the in-cluster client of the scheduler and workers; ``client`` names its
    policy (``<prefix>-<client>``): Jupyter's in the Dask namespace, a DaskJob's runner pod's
    in a person's namespace."""
    scheduler: dict[str, str]
    worker: dict[str, str]
    jupyter: dict[str, str] | None
    client: str = "jupyter"

    @classmethod
    def for_helm(cls, release: str) -> DaskPodSelectors:
        """The dask chart's pods (the labels of ``exposure.selector``, label style "helm")."""
        return cls(scheduler=_chart_labels(release, "scheduler"), worker=_chart_labels(release, "worker"),
                   jupyter=_chart_labels(release, "jupyter"))

    @classmethod
    def for_operator(cls, cluster_name: str, jupyter_release: str | None) -> DaskPodSelectors:
        """The operator's scheduler and workers (every worker group of the cluster) and, when
        Jupyter is on, the Jupyter pod of the dask chart's release ``jupyter_release``."""
        return cls(scheduler={CLUSTER_LABEL: cluster_name, COMPONENT_LABEL: "scheduler"},
                   worker={CLUSTER_LABEL: cluster_name, COMPONENT_LABEL: "worker"},
                   jupyter=_chart_labels(jupyter_release, "jupyter") if jupyter_release else None)

    @classmethod
    def for_any_operator_cluster(cls) -> DaskPodSelectors:
        """The pods of every DaskCluster in the namespace (a person's, components/dask/team/team.py),
        by the component label the controller gives them (dask-kubernetes 2026.3.0,
        operator/controller/controller.py: ``scheduler``, ``worker``, ``job-runner``): the
        scheduler, the workers, and as their client a DaskJob's runner pod."""
        return cls(scheduler={COMPONENT_LABEL: "scheduler"}, worker={COMPONENT_LABEL: "worker"},
                   jupyter={COMPONENT_LABEL: "job-runner"}, client="job-runner")


def _chart_labels(release: str, component: str) -> dict[str, str]:
    # Same labels as exposure.selector, which imports Pulumi; a test keeps the two equal.
    return {"app": "dask", "release": release, "component": component}


@dataclass(frozen=True)
class Outside:
    """What the cluster is, seen from a pod that goes out: the ranges no fetch rule reaches
    (``excepted``: IPv4 CIDRs) and whether the DNS pods' namespace carries its name label."""
    excepted: tuple[str, ...]
    dns_namespace_named: bool = True


@dataclass(frozen=True)
class NamespaceNetwork:
    """The Dask namespace's network, as the policies need it.

    ``source_ranges``: who may reach an exposed port (``loadBalancerSourceRanges``, or
    ``0.0.0.0/0`` when ``allowPublicLoadBalancer`` opens it on purpose); ``pod_cidr`` is
    excepted from them. ``worker_fetch_ports``: the ports the workers download from at start
    (``EXTRA_PIP_PACKAGES``), empty when they install nothing."""
    outside: Outside
    pod_cidr: str
    scheduler_exposed: bool = False
    # the scheduler's HTTP port reachable from the source ranges when exposed: only where it serves
    # no HTTP API (the operator backend's serves retire_workers, without TLS or authentication)
    dashboard_exposed: bool = False
    jupyter_exposed: bool = False
    source_ranges: tuple[str, ...] = ()
    worker_fetch_ports: tuple[int, ...] = ()


# --- the pieces ------------------------------------------------------------------------------

def _policy(name: str, namespace: str, pod_selector: dict[str, Any], *, ingress: list[dict[str, Any]] | None = None,
            egress: list[dict[str, Any]] | None = None,
            types: tuple[str, ...] = ("Ingress", "Egress")) -> dict[str, Any]:
    spec: dict[str, Any] = {"podSelector": pod_selector, "policyTypes": list(types)}
    if ingress:
        spec["ingress"] = ingress
    if egress:
        spec["egress"] = egress
    return {"apiVersion": API_VERSION, "kind": "NetworkPolicy",
            "metadata": {"name": name, "namespace": namespace}, "spec": spec}


def _pods(labels: Mapping[str, str]) -> dict[str, Any]:
    return {"podSelector": {"matchLabels": dict(labels)}}


def _tcp(*ports: int) -> list[dict[str, Any]]:
    return [{"protocol": "TCP", "port": port} for port in ports]


def _v4(cidr: str) -> ipaddress.IPv4Network | None:
    network = ipaddress.ip_network(cidr, strict=False)
    return network if network.version == 4 else None


def source_blocks(network: NamespaceNetwork) -> list[dict[str, Any]]:
    """One ipBlock per source range, less the pod network where a range holds it (what a
    plugin does with a pod's address in an ipBlock is its own choice)."""
    pods = ipaddress.ip_network(network.pod_cidr)
    blocks = []
    for cidr in network.source_ranges:
        block: dict[str, Any] = {"cidr": cidr}
        range_ = ipaddress.ip_network(cidr, strict=False)
        if range_ != pods and range_.version == pods.version and pods.subnet_of(range_):  # type: ignore[arg-type]
            block["except"] = [str(pods)]
        blocks.append({"ipBlock": block})
    return blocks


def dns_rule(outside: Outside) -> dict[str, Any]:
    """To the cluster's DNS pods on 53, UDP and TCP. By kube-system's name label where the API
    server sets it (1.21+); before, by the pods' label in any namespace (kube-system then
    carries no label a selector could name)."""
    namespaces = ({"matchLabels": {NAMESPACE_NAME_LABEL: DNS_NAMESPACE}} if outside.dns_namespace_named else {})
    return {"to": [{"namespaceSelector": namespaces, "podSelector": {"matchLabels": dict(DNS_POD_LABELS)}}],
            "ports": [{"protocol": "UDP", "port": DNS_PORT}, {"protocol": "TCP", "port": DNS_PORT}]}


def outside_rule(outside: Outside, ports: Iterable[int]) -> dict[str, Any]:
    """To every address but the cluster's own ranges, on ``ports`` (TCP)."""
    excepted = sorted({str(n) for n in (_v4(c) for c in outside.excepted) if n is not None},
                      key=ipaddress.ip_network)
    block: dict[str, Any] = {"cidr": EVERYWHERE}
    if excepted:
        block["except"] = excepted
    return {"to": [{"ipBlock": block}], "ports": _tcp(*sorted(set(ports)))}


# --- URLs to ports ---------------------------------------------------------------------------

def url_port(url: str) -> int:
    """The TCP port a URL connects to: its own, else its scheme's (80, 443)."""
    parts = urlsplit(url)
    if parts.scheme not in ("http", "https"):
        raise ValueError(f"not an http(s) URL: {url!r}")
    return parts.port or (443 if parts.scheme == "https" else 80)


def fetch_ports(urls: Iterable[str]) -> tuple[int, ...]:
    """The ports a downloader needs: 443 (an https redirect, pip's file host) and each URL's."""
    return tuple(sorted({443, *(url_port(u) for u in urls)}))


# --- the policies ----------------------------------------------------------------------------

def default_deny(namespace: str, name_prefix: str) -> dict[str, Any]:
    """``<prefix>-default-deny``: every pod of the namespace refuses ingress and opens no
    connection unless another policy allows it, so a pod nobody lists (anything added
    later) serves nobody and reaches nothing."""
    return _policy(f"{name_prefix}-default-deny", namespace, {})


def dns_policy(namespace: str, outside: Outside, name_prefix: str) -> dict[str, Any]:
    """``<prefix>-dns``: every pod of the namespace resolves names (the Services of its peers,
    the hosts it downloads from)."""
    return _policy(f"{name_prefix}-dns", namespace, {}, egress=[dns_rule(outside)], types=("Egress",))


def scheduler_policy(namespace: str, selectors: DaskPodSelectors, *, operator_namespace: str | None,
                     network: NamespaceNetwork, name_prefix: str) -> dict[str, Any]:
    """``<prefix>-scheduler-api`` (the operator backend's existing object name when the prefix
    is the cluster's name), on the scheduler pod.

    In: the comm port from the workers, which register and report there, and Jupyter, whose
    Client submits work there; the dashboard port (which also serves the HTTP API that retires
    workers, without authentication: distributed's ``http/scheduler/api.py``) from the
    operator's controller (its namespace, when ``operator_namespace`` is given) and Jupyter's
    dashboard extension. When the scheduler is exposed, the comm port (mutual TLS) also from the
    source ranges, and the dashboard port too where it serves no HTTP API
    (``dashboard_exposed``): the operator backend's serves ``retire_workers`` and
    ``adaptive_target`` without TLS or authentication, so its exposed Service's HTTP port
    admits nobody from outside. Out: the workers, on any port (the scheduler drives them)."""
    comm_from = [_pods(selectors.worker)]
    dashboard_from: list[dict[str, Any]] = []
    if operator_namespace:
        dashboard_from.append({"namespaceSelector": {"matchLabels": {NAMESPACE_NAME_LABEL: operator_namespace}}})
    if selectors.jupyter:
        comm_from.append(_pods(selectors.jupyter))
        dashboard_from.append(_pods(selectors.jupyter))
    if network.scheduler_exposed:
        comm_from += source_blocks(network)
    if network.dashboard_exposed:
        dashboard_from += source_blocks(network)
    ingress = [{"from": comm_from, "ports": _tcp(SCHEDULER_PORT)}]
    if dashboard_from:
        ingress.append({"from": dashboard_from, "ports": _tcp(DASHBOARD_PORT)})
    return _policy(f"{name_prefix}-scheduler-api", namespace, {"matchLabels": dict(selectors.scheduler)},
                   ingress=ingress, egress=[{"to": [_pods(selectors.worker)]}])


def worker_policy(namespace: str, selectors: DaskPodSelectors, network: NamespaceNetwork,
                  name_prefix: str) -> dict[str, Any]:
    """``<prefix>-workers``, on the worker pods. In: every port (workers listen on random
    ports, comm and nanny) from the scheduler, the other workers, which fetch data from each
    other, and Jupyter, whose Client may gather results from them. Out: the scheduler's comm
    port, the other workers on any port and, only when they install packages at start, the
    outside on the ports of their package index."""
    peers = [_pods(selectors.scheduler), _pods(selectors.worker)]
    if selectors.jupyter:
        peers.append(_pods(selectors.jupyter))
    egress = [{"to": [_pods(selectors.scheduler)], "ports": _tcp(SCHEDULER_PORT)},
              {"to": [_pods(selectors.worker)]}]
    if network.worker_fetch_ports:
        egress.append(outside_rule(network.outside, network.worker_fetch_ports))
    return _policy(f"{name_prefix}-workers", namespace, {"matchLabels": dict(selectors.worker)},
                   ingress=[{"from": peers}], egress=egress)


def jupyter_policy(namespace: str, selectors: DaskPodSelectors, network: NamespaceNetwork,
                   name_prefix: str) -> dict[str, Any]:
    """``<prefix>-jupyter``, on the Jupyter pod (``<prefix>-<client>`` on the client
    ``selectors`` name). In: its server's port only from the source ranges, and only when
    exposed: nothing in the cluster needs Jupyter, and the runner's port-forward arrives
    through the kubelet. Out: the scheduler's comm and dashboard ports, the workers on any
    port."""
    ingress = ([{"from": source_blocks(network), "ports": _tcp(JUPYTER_CONTAINER_PORT)}]
               if network.jupyter_exposed else None)
    egress = [{"to": [_pods(selectors.scheduler)], "ports": _tcp(SCHEDULER_PORT, DASHBOARD_PORT)},
              {"to": [_pods(selectors.worker)]}]
    return _policy(f"{name_prefix}-{selectors.client}", namespace, {"matchLabels": dict(selectors.jupyter or {})},
                   ingress=ingress, egress=egress)


def dask_network_policies(namespace: str, selectors: DaskPodSelectors, *, operator_namespace: str | None,
                          network: NamespaceNetwork, name_prefix: str) -> list[dict[str, Any]]:
    """The Dask namespace's NetworkPolicies: ``<prefix>-default-deny``, ``<prefix>-dns``,
    ``<prefix>-scheduler-api``, ``<prefix>-workers`` and, with Jupyter, ``<prefix>-jupyter``.

    ``name_prefix``: the cluster's name (operator backend, so that the scheduler's policy keeps
    its object name) or the release's (Helm backend). ``operator_namespace``: the operator's
    controller's namespace (operator backend), else None."""
    policies = [
        default_deny(namespace, name_prefix),
        dns_policy(namespace, network.outside, name_prefix),
        scheduler_policy(namespace, selectors, operator_namespace=operator_namespace, network=network,
                         name_prefix=name_prefix),
        worker_policy(namespace, selectors, network, name_prefix),
    ]
    if selectors.jupyter:
        policies.append(jupyter_policy(namespace, selectors, network, name_prefix))
    return policies


def api_server_rule(ranges: Iterable[str]) -> dict[str, Any]:
    """To the API server's endpoints (the control-plane nodes, on ``API_SERVER_PORT``) in the
    node network ``ranges``: the CNIs judge a connection to the ``kubernetes`` Service after it
    is translated to an endpoint (Antrea, Calico), so the Service's ClusterIP alone opens nothing."""
    return {"to": [{"ipBlock": {"cidr": str(ipaddress.ip_network(c, strict=False))}} for c in ranges],
            "ports": _tcp(API_SERVER_PORT)}


def fetch_policy(namespace: str, name: str, pod_labels: Mapping[str, str], urls: Iterable[str],
                 outside: Outside) -> dict[str, Any]:
    """``<name>``, on a pod that downloads (the data Job, the environment Job): nothing in;
    out, DNS and the outside on the ports ``urls`` use. Complete by itself, so the Job that
    waits for it runs confined even before the Dask namespace's own policies exist."""
    return _policy(name, namespace, {"matchLabels": dict(pod_labels)},
                   egress=[dns_rule(outside), outside_rule(outside, fetch_ports(urls))])
