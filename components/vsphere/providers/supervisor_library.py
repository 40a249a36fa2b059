"""The Supervisor's TKR content library, and the check that it holds the release.

Tanzu Kubernetes releases come from the Supervisor's
``default_kubernetes_service_content_library`` ("the Content Library which holds the VM
Images for vSphere Kubernetes Service", vSphere Automation API
``vcenter.namespace_management.Clusters.Info``), not from a namespace's VM-service
libraries: the TKr content library is not namespace-scoped. So the library is read
(and, with ``set_library``, set) over ``GET``/``PATCH
/api/vcenter/namespace-management/clusters/{cluster}``, and its items
(``/api/content/library/item``) must hold the release the cluster asks for.

``check`` runs that read at ``pulumi preview`` too (it changes nothing), so a Supervisor
whose library lacks the TKR fails the preview, naming the library and what it holds.
Where the library is created in the same run its id is not known at preview; then
the check runs at ``pulumi up``, waiting for the subscription's first sync.

vSphere 8 and 9 address a Supervisor by its id, not by its cluster (``vsphere.Namespace``
takes ``supervisor``). ``SupervisorReleaseLibrary`` finds the Supervisor's cluster through
``GET /api/vcenter/namespace-management/supervisors/{supervisor}/topology`` and then reads
the same ``clusters/{cluster}`` Info: VMware's reference says to do exactly that ("Use the
vSphere Cluster IDs obtained from Topology.get to call the APIs that requires a vSphere
Cluster ID instead of a Supervisor", vSphere Automation API 8.0 U2, Namespace Management
Supervisors Topology, developer.broadcom.com/xapis/vsphere-automation-api/v8.0u2/vcenter/
namespace_management/supervisors-topology), and terraform-provider-vsphere does the same
to disable a vSphere 8 Supervisor (vmware/terraform-provider-vsphere@b45b5b41:
vsphere/resource_vsphere_supervisor_v2.go, resourceVsphereSupervisorV2Delete). The
Supervisor-id endpoints of vSphere 8 U3 / 9.0 that read a Supervisor (``summary``:
name, stats, statuses; ``topology``) do not return the library;
``Supervisors.EnableOnComputeClusterSpec`` only takes it
(``workloads.images.kubernetes_content_library``, 8.0.0.1), and
``supervisors/{supervisor}/workloads/images/settings`` arrives with vSphere API 9.1.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Mapping, Sequence
from typing import Any

import pulumi
import pulumi.dynamic as dyn
import requests

from ..access import VCenterAccess
from .base import PollingVCenterProvider, VCenterResource, plain_list
from .session import VCenterConnection, VCenterError, changed_keys, is_unknown, rest_api

logger = logging.getLogger(__name__)

# Clusters.get / Clusters.update (vSphere API 7.0.0.0). Still in the latest (9.x) reference
# (data structure NamespaceManagement_Clusters_Info); there the Supervisors service (8.0.0.1)
# "replaces the Vcenter NamespaceManagement Clusters service" for enabling a Supervisor,
# and the 8.0 U2 Topology reference sends callers holding a Supervisor id to these cluster-id
# APIs (module docstring).
CLUSTERS = "/api/vcenter/namespace-management/clusters"
# Topology.get (vSphere API 8.0.0.1): a list of {"zone", "clusters": [ClusterComputeResource id]}.
# Source: vSphere Automation API 8.0 U2, "Namespace Management Supervisors Topology APIs";
# vmware/govmomi@fd061606:vapi/namespace/internal/internal.go (SupervisorTopologyPath).
TOPOLOGY = "/api/vcenter/namespace-management/supervisors/{supervisor}/topology"
ITEMS = "/api/content/library/item"
LIBRARY_FIELD = "default_kubernetes_service_content_library"
SPEC_KEYS = ("library_id", "tkr", "set_library")


class TkrLibraryError(VCenterError):
    """The Supervisor's TKR library is missing or does not hold the TKR."""


def _json(http: requests.Session, method: str, url: str, body: dict[str, Any] | None = None) -> Any:
    resp = http.request(method, url, json=body)
    if resp.status_code >= 400:
        raise VCenterError(f"{method} {url} -> HTTP {resp.status_code}: {resp.text[:300]}")
    return resp.json() if resp.content else None


def supervisor_library(http: requests.Session, base: str, cluster: str) -> str:
    """The id of the Supervisor's TKR library (empty when none is set)."""
    return (_json(http, "GET", f"{base}{CLUSTERS}/{cluster}") or {}).get(LIBRARY_FIELD) or ""


def supervisor_cluster(http: requests.Session, base: str, supervisor: str) -> str:
    """The cluster a vSphere 8/9 Supervisor runs on (its first zone's first cluster: every
    cluster of one Supervisor reports the same Supervisor configuration)."""
    url = base + TOPOLOGY.format(supervisor=supervisor)
    resp = http.get(url)
    if resp.status_code == 404:
        raise TkrLibraryError(
            f"supervisorId {supervisor!r} is not a Supervisor on this vCenter (GET {url} -> HTTP 404)")
    if resp.status_code >= 400:
        raise VCenterError(f"GET {url} -> HTTP {resp.status_code}: {resp.text[:300]}")
    clusters: list[str] = [c for zone in resp.json() or [] for c in zone.get("clusters") or []]
    if not clusters:
        raise TkrLibraryError(f"Supervisor {supervisor!r} reports no vSphere cluster in its topology ({url})")
    return clusters[0]


def set_supervisor_library(http: requests.Session, base: str, cluster: str, library_id: str) -> None:
    """PATCH only the library (``Clusters.UpdateSpec``: every other field unset, so unchanged)."""
    _json(http, "PATCH", f"{base}{CLUSTERS}/{cluster}", {LIBRARY_FIELD: library_id})


def library_item_names(http: requests.Session, base: str, library_id: str) -> list[str]:
    """Names of the library's items (``GET .../item?library_id=``, then each item's Info)."""
    resp = http.get(f"{base}{ITEMS}", params={"library_id": library_id})
    if resp.status_code >= 400:
        raise VCenterError(f"GET {base}{ITEMS}?library_id={library_id} -> HTTP {resp.status_code}: {resp.text[:300]}")
    ids = resp.json() or []
    return [(_json(http, "GET", f"{base}{ITEMS}/{item}") or {}).get("name", "") for item in ids]


# Every TKR and VKr release name carries VMware's build suffix after the Kubernetes version
# (v1.20.8---vmware.1-tkg.2, v1.32.3---vmware.1-fips-vkr.2), so the items named after a
# release are told apart from other images by it (the error lists what the library holds).
RELEASE_MARK = "---vmware."


def holds_tkr(names: list[str], tkr: str) -> bool:
    """TKR items are named like ``ob-18900476-photon-3-k8s-v1.20.8---vmware.1-tkg.2``."""
    return any(name == tkr or name.endswith(f"-{tkr}") for name in names)


def holds_os_image(names: list[str], tkr: str, os_name: str) -> bool:
    """Whether an item of release ``tkr`` is an ``os_name`` image: VKr items carry the OS as
    one dash-separated word of their name (``ob-22757567-ubuntu-2204-amd64-vmi-k8s-v1.32.3---
    vmware.1-fips-vkr.2``, ``...-photon-5-amd64-vmi-k8s-...``)."""
    return any(holds_tkr([name], tkr) and os_name in name.removesuffix(tkr).split("-") for name in names)


def os_image_problem(names: list[str], tkr: str, os_names: list[str], where: str) -> str | None:
    """Why the library's items of ``tkr`` lack an OS the node pools ask for (``None``: none lacking)."""
    missing = [os_name for os_name in os_names if not holds_os_image(names, tkr, os_name)]
    if not missing:
        return None
    held = sorted(n for n in names if holds_tkr([n], tkr))
    return (f"{where} holds no {' or '.join(missing)} image of TKR {tkr}, which nodePools ask for (GPU pools run"
            f" Ubuntu: NVIDIA ships no vGPU guest driver for Photon); of {tkr} it holds: {', '.join(held)}")


def tkr_problem(http: requests.Session, base: str, library_id: str, tkr: str, where: str,
                os_names: list[str] | None = None) -> str | None:
    """Why the library cannot serve ``tkr`` (``None`` when it can)."""
    if not library_id:
        return f"{where} is not set: the Supervisor has no TKR content library"
    names = library_item_names(http, base, library_id)
    if holds_tkr(names, tkr):
        return os_image_problem(names, tkr, list(os_names or []), f"{where} ({library_id})")
    held = sorted(n for n in names if "-k8s-v" in n or n.startswith("v") or RELEASE_MARK in n)
    return (f"{where} ({library_id}) does not hold TKR {tkr}; it holds: {', '.join(held) or 'no TKR'}"
            " (is the library subscribed to the TKR feed and synced?)")


class SupervisorTkrLibraryProvider(PollingVCenterProvider):
    """Reads (and optionally sets) one Supervisor's TKR library and checks it holds the TKR.

    ``address_key`` is the input that names the Supervisor: ``cluster`` on vSphere 7.
    """

    address_key = "cluster"
    spec_keys: tuple[str, ...] = SPEC_KEYS
    POLL_S = 10.0

    def _cluster(self, http: requests.Session, conn: VCenterConnection, props: Mapping[str, Any]) -> str:
        """The cluster whose ``Clusters`` Info holds the library: the input itself on vSphere 7."""
        cluster: str = props["cluster"]
        return cluster

    def _where(self, props: Mapping[str, Any]) -> str:
        return ("contentLibraryName's library" if props.get("set_library")
                else f"the Supervisor's {LIBRARY_FIELD} ({self.address_key} {props.get(self.address_key)})")

    def _problem(self, http: requests.Session, conn: VCenterConnection, props: Mapping[str, Any],
                 cluster: str) -> tuple[str, str | None]:
        current = supervisor_library(http, conn.base_url, cluster)
        library = props.get("library_id") if props.get("set_library") else current
        return current, tkr_problem(http, conn.base_url, library or "", props["tkr"], self._where(props),
                                    props.get("os_names"))

    def check(self, olds: dict[str, Any], news: dict[str, Any]) -> dyn.CheckResult:
        failures = [dyn.CheckFailure(k, f"{k} is required") for k in (self.address_key, "tkr") if not news.get(k)]
        if failures or any(is_unknown(v) for v in news.values()):
            return dyn.CheckResult(news, failures)  # not known yet (preview of a new library)
        conn = self.connection(news)
        with rest_api(conn, f"reading the TKR library of Supervisor {news[self.address_key]!r}") as http:
            try:
                cluster = self._cluster(http, conn, news)
            except TkrLibraryError as exc:  # no such Supervisor: name the input, not the release
                return dyn.CheckResult(news, [dyn.CheckFailure(self.address_key, str(exc))])
            _, problem = self._problem(http, conn, news, cluster)
        return dyn.CheckResult(news, [dyn.CheckFailure("tkr", problem)] if problem else [])

    def _apply(self, props: Mapping[str, Any]) -> dict[str, Any]:
        conn = self.connection(props)
        with rest_api(conn, f"setting the TKR library of Supervisor {props[self.address_key]!r}") as http:
            cluster = self._cluster(http, conn, props)
            previous = supervisor_library(http, conn.base_url, cluster)
            if props.get("set_library") and previous != props["library_id"]:
                set_supervisor_library(http, conn.base_url, cluster, props["library_id"])
                logger.info("Supervisor %s: TKR library %s -> %s", cluster, previous or "(none)", props["library_id"])
            deadline = time.monotonic() + self.timeout_s
            while True:  # a new subscription lists its items after its first sync
                current, problem = self._problem(http, conn, props, cluster)
                if problem is None:
                    break
                if time.monotonic() > deadline:
                    raise TkrLibraryError(problem)
                time.sleep(self.poll_s)
        outs = self.stored(props, self.address_key, *self.spec_keys)
        outs.update(cluster=cluster, supervisor_library=current, previous_library=previous)
        return outs

    def create(self, props: dict[str, Any]) -> dyn.CreateResult:
        outs = self._apply(props)
        return dyn.CreateResult(f"{props[self.address_key]}:tkr-library", outs)

    def diff(self, id_: str, olds: dict[str, Any], news: dict[str, Any]) -> dyn.DiffResult:
        replaces = changed_keys(olds, news, [self.address_key])
        changes = changed_keys(olds, news, self.spec_keys, lambda _k, v: v or None)
        return self.diff_result(olds, news, replaces, changes)

    def update(self, id_: str, olds: dict[str, Any], news: dict[str, Any]) -> dyn.UpdateResult:
        outs = self._apply(news)
        if olds.get("set_library") and olds.get("previous_library"):
            outs["previous_library"] = olds["previous_library"]  # what delete restores
        return dyn.UpdateResult(outs)

    def delete(self, id_: str, props: dict[str, Any]) -> None:
        """Put back the library the Supervisor had, if the program set it and nobody changed it since."""
        previous = props.get("previous_library")
        if not props.get("set_library") or not previous or previous == props.get("library_id"):
            return
        conn = self.connection(props)
        with rest_api(conn, f"restoring the TKR library of Supervisor {props[self.address_key]!r}") as http:
            cluster = self._cluster(http, conn, props)
            if supervisor_library(http, conn.base_url, cluster) == props.get("library_id"):
                set_supervisor_library(http, conn.base_url, cluster, previous)


class SupervisorReleaseLibraryProvider(SupervisorTkrLibraryProvider):
    """The same check (and optional set) for a vSphere 8/9 Supervisor named by its id."""

    address_key = "supervisor"
    # the OS names the release's items must include (components.cluster.os_images): GPU pools' Ubuntu
    spec_keys = (*SPEC_KEYS, "os_names")

    def _cluster(self, http: requests.Session, conn: VCenterConnection, props: Mapping[str, Any]) -> str:
        return supervisor_cluster(http, conn.base_url, props["supervisor"])


class _SupervisorLibrary(VCenterResource):
    """What both library resources take besides the Supervisor's address, and the outputs
    the provider fills in (declared as None)."""

    def __init__(self, provider: SupervisorTkrLibraryProvider, name: str, opts: pulumi.ResourceOptions | None,
                 address: dict[str, Any], spec: dict[str, Any], vcenter: VCenterAccess) -> None:
        props = {**address, **spec, "supervisor_library": None, "previous_library": None}
        super().__init__(provider, name, opts, props, vcenter)


class SupervisorTkrLibrary(_SupervisorLibrary, module="vsphere", name="SupervisorTkrLibrary"):
    """The TKR library of a vSphere 7 Supervisor (``cluster``), checked to hold ``tkr``.

    With ``set_library`` the Supervisor is pointed at ``library_id``; without it the
    Supervisor's own library is only checked. Outputs ``supervisor_library``.
    """

    cluster: pulumi.Output[str]
    supervisor_library: pulumi.Output[str]

    def __init__(self, name: str, opts: pulumi.ResourceOptions | None = None, *, cluster: pulumi.Input[str],
                 tkr: pulumi.Input[str], library_id: pulumi.Input[str] = "", set_library: pulumi.Input[bool] = False,
                 vcenter: VCenterAccess) -> None:
        spec = {"tkr": tkr, "library_id": library_id, "set_library": set_library}
        super().__init__(SupervisorTkrLibraryProvider(), name, opts, {"cluster": cluster}, spec, vcenter)


class SupervisorReleaseLibrary(_SupervisorLibrary, module="vsphere", name="SupervisorReleaseLibrary"):
    """The Kubernetes-service library of a vSphere 8/9 Supervisor (``supervisor``: its id),
    checked to hold the release ``tkr`` (a TKR or VKr) at preview and at ``pulumi up``, with an
    image of each OS in ``os_names`` (the node pools' asks: Ubuntu for GPU pools).

    The program creates no library here: the Supervisor already has one. With
    ``set_library`` the Supervisor is pointed at ``library_id`` (an existing library).
    Outputs ``supervisor``, ``cluster`` (the Supervisor's cluster) and ``supervisor_library``.
    """

    supervisor: pulumi.Output[str]
    cluster: pulumi.Output[str]
    supervisor_library: pulumi.Output[str]

    def __init__(self, name: str, opts: pulumi.ResourceOptions | None = None, *, supervisor: pulumi.Input[str],
                 tkr: pulumi.Input[str], library_id: pulumi.Input[str] = "", set_library: pulumi.Input[bool] = False,
                 os_names: pulumi.Input[Sequence[str]] = (), vcenter: VCenterAccess) -> None:
        spec = {"tkr": tkr, "library_id": library_id, "set_library": set_library, "os_names": plain_list(os_names)}
        super().__init__(SupervisorReleaseLibraryProvider(), name, opts, {"supervisor": supervisor, "cluster": None},
                         spec, vcenter)
