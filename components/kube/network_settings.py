"""What the settings say about the Dask namespace's network, as the policies take it
(``network_policy`` builds them; ``components/settings/exposure.py`` reads the settings and
refuses what the policies could not honour).

The cluster's own ranges, which no download rule reaches, are those the settings know
(``exposure.cluster_ranges``): a range they do not name (a vCenter given by its host name on
another network) is not excepted; docs/dask.md says what that leaves reachable, and from which
pods.
"""
from __future__ import annotations

from components.kube.network_policy import EVERYWHERE, NAME_LABEL_SINCE, NamespaceNetwork, Outside, fetch_ports
from components.settings.exposure import EXPOSED, cluster_ranges, fetch_urls
from components.settings.exposure import data_urls as _data_urls
from components.settings.model import DataSpec, Settings


def outside(s: Settings) -> Outside:
    """The cluster's ranges and whether kube-system carries its name label (1.21+)."""
    return Outside(excepted=cluster_ranges(s),
                   dns_namespace_named=s.cluster.kubernetes_version >= NAME_LABEL_SINCE)


def worker_fetch_ports(s: Settings) -> tuple[int, ...]:
    """The ports the workers download from at start: 443 (PyPI) and those of the URLs in
    ``extraPipPackages``; empty when they install nothing."""
    urls = fetch_urls(s)
    return fetch_ports(urls["extraPipPackages"]) if "extraPipPackages" in urls else ()


def source_ranges(s: Settings) -> tuple[str, ...]:
    """Who may reach an exposed port: the source ranges, else every address when
    ``allowPublicLoadBalancer`` opens it on purpose (the settings refuse neither)."""
    return s.dask.lb_source_ranges or ((EVERYWHERE,) if s.dask.allow_public_lb else ())


def namespace_network(s: Settings) -> NamespaceNetwork:
    """Everything the Dask namespace's policies take from the settings."""
    d = s.dask
    return NamespaceNetwork(
        outside=outside(s), pod_cidr=s.cluster.pod_cidr,
        scheduler_exposed=d.scheduler.service_type in EXPOSED,
        dashboard_exposed=d.scheduler.service_type in EXPOSED and not d.on_operator,
        jupyter_exposed=d.jupyter.enabled and d.jupyter.service_type in EXPOSED,
        source_ranges=source_ranges(s), worker_fetch_ports=worker_fetch_ports(s))


def data_urls(data: DataSpec) -> list[str]:
    """Every URL the data Job downloads from."""
    return list(_data_urls(data).values())
