"""The Supervisor's TKR content library (vSphere 7), and the check that it holds the TKR.

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
"""

from __future__ import annotations

import logging
import time
from collections.abc import Mapping
from typing import Any, Optional

import pulumi
import pulumi.dynamic as dyn
import requests

from .session import (
    CONNECTION_KEYS,
    VCenterConnection,
    VCenterError,
    changed_keys,
    connection_inputs,
    is_unknown,
    rest_api,
)

logger = logging.getLogger(__name__)

CLUSTERS = "/api/vcenter/namespace-management/clusters"
ITEMS = "/api/content/library/item"
LIBRARY_FIELD = "default_kubernetes_service_content_library"
SPEC_KEYS = ("library_id", "tkr", "set_library")


class TkrLibraryError(VCenterError):
    """The Supervisor's TKR library is missing or does not hold the TKR."""


def _json(http: requests.Session, method: str, url: str, body: Optional[dict] = None) -> Any:
    resp = http.request(method, url, json=body)
    if resp.status_code >= 400:
        raise VCenterError(f"{method} {url} -> HTTP {resp.status_code}: {resp.text[:300]}")
    return resp.json() if resp.content else None


def supervisor_library(http, base: str, cluster: str) -> str:
    """The id of the Supervisor's TKR library (empty when none is set)."""
    return (_json(http, "GET", f"{base}{CLUSTERS}/{cluster}") or {}).get(LIBRARY_FIELD) or ""


def set_supervisor_library(http, base: str, cluster: str, library_id: str) -> None:
    """PATCH only the library (``Clusters.UpdateSpec``: every other field unset, so unchanged)."""
    _json(http, "PATCH", f"{base}{CLUSTERS}/{cluster}", {LIBRARY_FIELD: library_id})


def library_item_names(http, base: str, library_id: str) -> list[str]:
    """Names of the library's items (``GET .../item?library_id=``, then each item's Info)."""
    resp = http.get(f"{base}{ITEMS}", params={"library_id": library_id})
    if resp.status_code >= 400:
        raise VCenterError(f"GET {base}{ITEMS}?library_id={library_id} -> HTTP {resp.status_code}: {resp.text[:300]}")
    ids = resp.json() or []
    return [(_json(http, "GET", f"{base}{ITEMS}/{item}") or {}).get("name", "") for item in ids]


def holds_tkr(names: list[str], tkr: str) -> bool:
    """TKR items are named like ``ob-18900476-photon-3-k8s-v1.20.8---vmware.1-tkg.2``."""
    return any(name == tkr or name.endswith(f"-{tkr}") for name in names)


def tkr_problem(http, base: str, library_id: str, tkr: str, where: str) -> Optional[str]:
    """Why the library cannot serve ``tkr`` (``None`` when it can)."""
    if not library_id:
        return f"{where} is not set: the Supervisor has no TKR content library"
    names = library_item_names(http, base, library_id)
    if holds_tkr(names, tkr):
        return None
    held = sorted(n for n in names if "-k8s-v" in n or n.startswith("v"))
    return (f"{where} ({library_id}) does not hold TKR {tkr}; it holds: {', '.join(held) or 'no TKR'}"
            " (is the library subscribed to the TKR feed and synced?)")


class SupervisorTkrLibraryProvider(dyn.ResourceProvider):
    """Reads (and optionally sets) one Supervisor's TKR library and checks it holds the TKR."""

    def __init__(self, timeout_s: float = 600.0, poll_s: float = 10.0):
        super().__init__()
        self.timeout_s = timeout_s
        self.poll_s = poll_s

    @staticmethod
    def _where(props: Mapping[str, Any]) -> str:
        return ("contentLibraryName's library" if props.get("set_library")
                else f"the Supervisor's {LIBRARY_FIELD} (cluster {props.get('cluster')})")

    def _problem(self, http, conn, props) -> tuple[str, Optional[str]]:
        current = supervisor_library(http, conn.base_url, props["cluster"])
        library = props.get("library_id") if props.get("set_library") else current
        return current, tkr_problem(http, conn.base_url, library or "", props["tkr"], self._where(props))

    def check(self, olds, news):
        failures = [dyn.CheckFailure(k, f"{k} is required") for k in ("cluster", "tkr") if not news.get(k)]
        if failures or any(is_unknown(v) for v in news.values()):
            return dyn.CheckResult(news, failures)  # not known yet (preview of a new library)
        conn = VCenterConnection.from_props(news)
        with rest_api(conn, f"reading the TKR library of Supervisor {news['cluster']!r}") as http:
            _, problem = self._problem(http, conn, news)
        return dyn.CheckResult(news, [dyn.CheckFailure("tkr", problem)] if problem else [])

    def _apply(self, props) -> dict[str, Any]:
        conn = VCenterConnection.from_props(props)
        cluster = props["cluster"]
        with rest_api(conn, f"setting the TKR library of Supervisor {cluster!r}") as http:
            previous = supervisor_library(http, conn.base_url, cluster)
            if props.get("set_library") and previous != props["library_id"]:
                set_supervisor_library(http, conn.base_url, cluster, props["library_id"])
                logger.info("Supervisor %s: TKR library %s -> %s", cluster, previous or "(none)", props["library_id"])
            deadline = time.monotonic() + self.timeout_s
            while True:  # a new subscription lists its items after its first sync
                current, problem = self._problem(http, conn, props)
                if problem is None:
                    break
                if time.monotonic() > deadline:
                    raise TkrLibraryError(problem)
                time.sleep(self.poll_s)
        outs = {k: props.get(k) for k in (*CONNECTION_KEYS, "cluster", *SPEC_KEYS)}
        outs.update(supervisor_library=current, previous_library=previous)
        return outs

    def create(self, props):
        outs = self._apply(props)
        return dyn.CreateResult(f"{props['cluster']}:tkr-library", outs)

    def diff(self, id_, olds, news):
        replaces = changed_keys(olds, news, ["cluster"])
        changes = changed_keys(olds, news, SPEC_KEYS, lambda _k, v: v or None)
        reconnect = changed_keys(olds, news, CONNECTION_KEYS)
        return dyn.DiffResult(changes=bool(replaces or changes or reconnect), replaces=replaces)

    def update(self, id_, olds, news):
        outs = self._apply(news)
        if olds.get("set_library") and olds.get("previous_library"):
            outs["previous_library"] = olds["previous_library"]  # what delete restores
        return dyn.UpdateResult(outs)

    def delete(self, id_, props):
        """Put back the library the Supervisor had, if the program set it and nobody changed it since."""
        previous = props.get("previous_library")
        if not props.get("set_library") or not previous or previous == props.get("library_id"):
            return
        conn = VCenterConnection.from_props(props)
        with rest_api(conn, f"restoring the TKR library of Supervisor {props['cluster']!r}") as http:
            if supervisor_library(http, conn.base_url, props["cluster"]) == props.get("library_id"):
                set_supervisor_library(http, conn.base_url, props["cluster"], previous)


class SupervisorTkrLibrary(dyn.Resource, module="vsphere", name="SupervisorTkrLibrary"):
    """The TKR library of a vSphere 7 Supervisor (``cluster``), checked to hold ``tkr``.

    With ``set_library`` the Supervisor is pointed at ``library_id``; without it the
    Supervisor's own library is only checked. Outputs ``supervisor_library``.
    """

    cluster: pulumi.Output[str]
    supervisor_library: pulumi.Output[str]

    def __init__(
        self,
        name: str,
        opts: Optional[pulumi.ResourceOptions] = None,
        *,
        cluster: pulumi.Input[str],
        tkr: pulumi.Input[str],
        library_id: pulumi.Input[str] = "",
        set_library: pulumi.Input[bool] = False,
        server: pulumi.Input[str],
        user: pulumi.Input[str],
        password: pulumi.Input[str],
        insecure: pulumi.Input[bool] = False,
        ca_pem: Optional[pulumi.Input[str]] = None,
        port: pulumi.Input[int] = 443,
    ) -> None:
        props = {
            "cluster": cluster,
            "tkr": tkr,
            "library_id": library_id,
            "set_library": set_library,
            "supervisor_library": None,
            "previous_library": None,
            **connection_inputs(server, user, password, insecure, ca_pem, port),
        }
        opts = pulumi.ResourceOptions.merge(opts, pulumi.ResourceOptions(additional_secret_outputs=["password"]))
        super().__init__(SupervisorTkrLibraryProvider(), name, props, opts)
