"""Preview's refusals for the Dask namespace's network: what may be exposed, to whom, and where
the downloading pods may go.

- An exposed scheduler (``NodePort`` or ``LoadBalancer``) without TLS is refused: whoever
  reaches its comm port submits code that every GPU worker runs, unauthenticated. An exposed
  Jupyter without TLS too: it runs code, and its password and notebooks would cross the
  network in clear (Jupyter's certificate follows ``daskTls``, components/dask/tls.py).
- Any exposed Service needs ``loadBalancerSourceRanges`` (or ``allowPublicLoadBalancer``): a
  NodePort as much as a LoadBalancer, since the Dask namespace's NetworkPolicy is what admits
  only those ranges on the exposed ports (kube-proxy never filters NodePort traffic by them).
- A download URL the pod's policy could not reach is refused: one on the API server's port
  (6443, which no rule may open) or one whose host is an address in the cluster's own ranges.
"""
from __future__ import annotations

import ipaddress
import re
from collections.abc import Iterable
from typing import Any
from urllib.parse import urlsplit

from components.settings.errors import Problem
from components.settings.model import DataSpec, Settings
from workloads.runs import datasets

EXPOSED = ("NodePort", "LoadBalancer")
API_SERVER_PORT = 6443
_URL = re.compile(r"\bhttps?://[^\s'\"]+")


# --- what the settings say: the cluster's own ranges, and who downloads from where ----------

def _networks(texts: Iterable[str]) -> list[str]:
    """The texts that are IPv4 addresses or CIDRs, as CIDRs (others: ``*``, ``a-b`` ranges,
    host names, are skipped)."""
    out = []
    for text in texts:
        try:
            network = ipaddress.ip_network(text.strip(), strict=False)
        except ValueError:
            continue
        if network.version == 4:
            out.append(str(network))
    return out


def cluster_ranges(s: Settings) -> tuple[str, ...]:
    """The cluster's own IPv4 ranges the settings know: the pod and Service networks; the node
    network as far as they say it (supervisorMode=create: the namespace network NSX carves the
    guest nodes' segments from, ``supervisorCreateSpec`` ``podCidr``, and its load balancers'
    addresses, ``ingressCidr``; the file share's clients, ``fileShareClients``); vCenter and the
    Supervisor where given as addresses."""
    create = s.supervisor.create_spec if s.supervisor.mode == "create" else {}
    spec_cidrs = [c for key in ("podCidr", "ingressCidr") for c in create.get(key, "").split(",")]
    named = [s.cluster.pod_cidr, s.cluster.service_cidr, *spec_cidrs, *(c.ips for c in s.file_share.clients),
             s.vsphere.server, s.supervisor.server]
    return tuple(dict.fromkeys(_networks(named)))


def urls_in(text: str) -> list[str]:
    """The http(s) URLs written in a command line (``extraPipPackages``' ``-f``/``--index-url``)."""
    return _URL.findall(text)


def workers_install(s: Settings) -> bool:
    """Whether the workers pip-install ``extraPipPackages`` at start: the condition on which
    ``podspec.worker_env`` gives them ``EXTRA_PIP_PACKAGES`` (a test keeps the two equal)."""
    return bool(s.dask.extra_pip_packages) and not s.dask.prepared


def data_urls(data: DataSpec) -> dict[str, str]:
    """Setting -> the URL the data Job downloads by it: the benchmarks' declared downloads
    (a month template once: its months share a host), then ``dataFiles``."""
    files = {f"dataFiles[{i}]": f.url for i, f in enumerate(data.files)}
    return {**datasets.urls(data.downloads, data.values), **files}


def fetch_urls(s: Settings) -> dict[str, list[str]]:
    """Setting -> the URLs a pod of the stack downloads from by it: the data Job's (when the
    data is prepared), the environment Job's index (workerEnvironment=prepared), the URLs in
    the workers' ``EXTRA_PIP_PACKAGES`` (when they install at start)."""
    out = {key: [url] for key, url in data_urls(s.data).items()} if s.data.enabled else {}
    if s.dask.prepared:
        out["packageIndexUrl"] = [s.dask.package_index_url]
    if workers_install(s):
        out["extraPipPackages"] = urls_in(s.dask.extra_pip_packages)
    return out


# --- the refusals ----------------------------------------------------------------------------


def exposure_problems(s: Settings) -> list[Problem]:
    """Exposure without TLS, or without source ranges, each naming the Service's setting."""
    d = s.dask
    out = []
    for key, kind, what, on in (("schedulerServiceType", d.scheduler.service_type, "the scheduler", True),
                                ("jupyterServiceType", d.jupyter.service_type, "Jupyter", d.jupyter.enabled)):
        if kind not in EXPOSED:
            continue
        if on and not d.tls:
            out.append(Problem(key, _without_tls(kind, what, key)))
        if not d.lb_source_ranges and not d.allow_public_lb:
            out.append(Problem(key, f"a {kind} needs loadBalancerSourceRanges (or allowPublicLoadBalancer=true"
                                    " to open it to 0.0.0.0/0 on purpose): the Dask namespace's NetworkPolicy"
                                    " admits only those ranges on the exposed ports"))
    return out + _ranges_inside_the_cluster(s)


def _ranges_inside_the_cluster(s: Settings) -> list[Problem]:
    """A source range that overlaps the pod or Service network: the policy's ipBlock would
    admit the pods whose addresses fall in it, from any namespace, and the pods' replies to
    such clients would not leave the pod network."""
    out = []
    own = {"podCidr": s.cluster.pod_cidr, "serviceCidr": s.cluster.service_cidr}
    for i, cidr in enumerate(s.dask.lb_source_ranges):
        source = ipaddress.ip_network(cidr)
        for key, network in own.items():
            if source.overlaps(ipaddress.ip_network(network)):
                out.append(Problem(f"loadBalancerSourceRanges[{i}]",
                                   f"{cidr} overlaps {key} {network}: the NetworkPolicy would admit the pods whose"
                                   " addresses fall in it; name the clients' network, outside the cluster's"))
    return out


def _without_tls(kind: str, what: str, key: str) -> str:
    harm = ("whoever reaches its port submits code that every GPU worker runs, unauthenticated"
            if what == "the scheduler" else
            "it runs code, and its password and every notebook would cross the network in clear")
    return (f"{kind} exposes {what} without TLS (daskTls=false): {harm}. Set daskTls=true, or keep"
            f" {key}=ClusterIP and reach it with kubectl port-forward")


def download_problems(s: Settings) -> list[Problem]:
    """Each URL a pod downloads from (``network_settings.fetch_urls``) that its policy could
    not reach, naming the setting it comes from."""
    out = []
    networks = [ipaddress.ip_network(c) for c in cluster_ranges(s)]
    for key, values in fetch_urls(s).items():
        for url in values:
            parts = urlsplit(url)
            try:
                port = parts.port
            except ValueError:
                out.append(Problem(key, f"{url} has no valid port: its pod's policy opens the port it names"))
                continue
            if port == API_SERVER_PORT:
                out.append(Problem(key, f"{url} is on port {API_SERVER_PORT}, the API server's: no pod of the"
                                        " Dask namespace may reach it; serve the files on another port"))
            inside = _inside(parts.hostname or "", networks)
            if inside:
                out.append(Problem(key, f"{url} is an address of the cluster's own range {inside}, which the"
                                        " downloading pods may not reach: serve the files from outside the"
                                        " cluster's pod, Service and node networks"))
    return out


def _inside(host: str, networks: list[Any]) -> str:
    try:
        address = ipaddress.ip_address(host)
    except ValueError:
        return ""  # a host name: resolved only where the pod runs
    return next((str(n) for n in networks if n.version == address.version and address in n), "")
