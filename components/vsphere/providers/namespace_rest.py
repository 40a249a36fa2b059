"""The vSphere 7 Supervisor namespace through the vCenter REST API.

``POST /api/vcenter/namespaces/instances`` with ``cluster``, ``namespace``,
``description``, ``access_list``, ``storage_specs`` and ``vm_service_spec``;
``GET``/``PATCH``/``DELETE .../instances/{namespace}``. pulumi-vsphere's
``Namespace`` speaks the vSphere 8 ``instances/v2`` API only, hence this resource.

An existing namespace of the same name on the same cluster is adopted (and left
in place on delete); one on another cluster is an error.

The PATCH (``Instances.UpdateSpec``) sends only what the program owns: in the
UpdateSpec an unset field is "not modified" and a list replaces the server's
("If unset, access controls on the namespace will not be modified", vSphere
Automation API ``vcenter.namespaces.Instances.UpdateSpec``). So the lists sent are
the server's entries, minus those the program owned before and no longer wants,
plus the program's: an adopted namespace keeps its owner, policies and classes.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any

import pulumi
import pulumi.dynamic as dyn
import requests

from ..access import VCenterAccess
from .base import PollingVCenterProvider, VCenterResource, plain_list
from .namespace_entries import (
    ACCESS_FIELDS,
    access_key,
    canonical,
    is_namespace_name,
    merge_entries,
    sorted_access,
    storage_entry,
    storage_key,
)
from .session import VCenterError, changed_keys, is_unknown, rest_api

logger = logging.getLogger(__name__)

INSTANCES = "/api/vcenter/namespaces/instances"
SPEC_KEYS = ("description", "access_list", "storage_specs", "vm_classes", "content_libraries")


class NamespaceApiError(VCenterError):
    """vCenter answered a namespace call with an error; carries the HTTP status."""

    def __init__(self, message: str, status: int, error_type: str = ""):
        super().__init__(message)
        self.status = status
        self.error_type = error_type


class NamespaceConflict(VCenterError):
    """The namespace name is taken on another cluster."""


@dataclass(frozen=True)
class NamespaceSpec:
    """The desired namespace, validated; lists are kept in a canonical order."""

    namespace: str
    cluster: str
    description: str = ""
    access_list: tuple[Mapping[str, str], ...] = ()
    storage_specs: tuple[Mapping[str, Any], ...] = ()
    vm_classes: tuple[str, ...] = ()
    content_libraries: tuple[str, ...] = ()

    def _common(self) -> dict[str, Any]:
        body: dict[str, Any] = {
            "description": self.description,
            "access_list": [dict(a) for a in self.access_list],
            "storage_specs": [dict(s) for s in self.storage_specs],
        }
        if self.vm_classes or self.content_libraries:
            body["vm_service_spec"] = {
                "vm_classes": list(self.vm_classes),
                "content_libraries": list(self.content_libraries),
            }
        return body

    def create_body(self) -> dict[str, Any]:
        """``Instances.CreateSpec``."""
        return {"cluster": self.cluster, "namespace": self.namespace, **self._common()}

    def update_body(self, info: Mapping[str, Any], previous: NamespaceSpec | None = None) -> dict[str, Any]:
        """``Instances.UpdateSpec`` merging the program's entries into the server's ``info``.

        ``previous`` is what the program owned before (its last applied spec): entries it
        owned and dropped are removed; every other server entry is kept. A list is only
        sent when it changes what the server has.
        """
        body: dict[str, Any] = {"description": self.description}
        vm_service = info.get("vm_service_spec") or {}
        merges = (
            ("access_list", info.get("access_list") or [], self.access_list, access_key),
            ("storage_specs", info.get("storage_specs") or [], self.storage_specs, storage_key),
            ("vm_classes", vm_service.get("vm_classes") or [], self.vm_classes, None),
            ("content_libraries", vm_service.get("content_libraries") or [], self.content_libraries, None),
        )
        merged = {}
        for field_name, server, ours, key in merges:
            owned_before = getattr(previous, field_name, ()) if previous else ()
            merged[field_name] = (server, merge_entries(server, ours, owned_before, key))
        for field_name in ("access_list", "storage_specs"):
            server, wanted = merged[field_name]
            if canonical(wanted) != canonical(server):
                body[field_name] = wanted
        classes, libraries = merged["vm_classes"], merged["content_libraries"]
        if sorted(classes[1]) != sorted(classes[0]) or sorted(libraries[1]) != sorted(libraries[0]):
            body["vm_service_spec"] = {"vm_classes": classes[1], "content_libraries": libraries[1]}
        return body

    def values(self) -> dict[str, Any]:
        """The spec as provider properties (plain lists and dicts)."""
        return {
            "namespace": self.namespace,
            "cluster": self.cluster,
            "description": self.description,
            "access_list": [dict(a) for a in self.access_list],
            "storage_specs": [dict(s) for s in self.storage_specs],
            "vm_classes": list(self.vm_classes),
            "content_libraries": list(self.content_libraries),
        }


def build_spec(props: Mapping[str, Any]) -> NamespaceSpec:
    """Validate provider properties into a :class:`NamespaceSpec`.

    Raises
    ------
    ValueError
        Naming the offending property.
    """
    name = props.get("namespace") or ""
    if not is_namespace_name(name):
        raise ValueError(
            f"namespace: {name!r} must be an RFC 1123 label (lower-case letters, digits and '-', at most 63 characters)"
        )
    if not props.get("cluster"):
        raise ValueError(f"namespace {name!r}: cluster (the Supervisor cluster's id, e.g. domain-c8) is required")
    access = sorted_access(props.get("access_list") or [])
    storage = sorted(
        (storage_entry(s, i) for i, s in enumerate(props.get("storage_specs") or [])), key=lambda s: s["policy"]
    )
    return NamespaceSpec(
        namespace=name,
        cluster=str(props["cluster"]),
        description=props.get("description") or "",
        access_list=tuple(access),
        storage_specs=tuple(storage),
        vm_classes=tuple(sorted(set(props.get("vm_classes") or []))),
        content_libraries=tuple(sorted(set(props.get("content_libraries") or []))),
    )


def spec_from_info(namespace: str, info: Mapping[str, Any]) -> NamespaceSpec:
    """The spec as vCenter reports it in ``Instances.Info``."""
    vm_service = info.get("vm_service_spec") or {}
    return build_spec(
        {
            "namespace": namespace,
            "cluster": info.get("cluster"),
            "description": info.get("description"),
            "access_list": [{k: a.get(k) for k in ACCESS_FIELDS} for a in info.get("access_list") or []],
            "storage_specs": info.get("storage_specs") or [],
            "vm_classes": vm_service.get("vm_classes") or [],
            "content_libraries": vm_service.get("content_libraries") or [],
        }
    )


def owned_part(server: NamespaceSpec, props: Mapping[str, Any]) -> NamespaceSpec:
    """The server's spec cut down to the entries the program owns (those in ``props``), so
    a refresh never makes another owner's entries look like the program's."""
    try:
        ours = build_spec(props)
    except (ValueError, TypeError):
        return server
    access = {access_key(a) for a in ours.access_list}
    policies = {storage_key(p) for p in ours.storage_specs}
    return replace(
        server,
        access_list=tuple(a for a in server.access_list if access_key(a) in access),
        storage_specs=tuple(p for p in server.storage_specs if storage_key(p) in policies),
        vm_classes=tuple(c for c in server.vm_classes if c in ours.vm_classes),
        content_libraries=tuple(c for c in server.content_libraries if c in ours.content_libraries),
    )


def _server_message(resp: requests.Response) -> tuple[str, str]:
    """``(error_type, messages)`` from a vAPI error body (``/api`` or ``/rest`` style)."""
    try:
        body = resp.json()
    except ValueError:
        return "", resp.text[:300]
    if not isinstance(body, dict):
        return "", str(body)[:300]
    inner = body.get("value")
    value = inner if isinstance(inner, dict) else body
    error_type = body.get("error_type") or str(body.get("type", "")).rsplit(".", 1)[-1].upper()
    messages = [m.get("default_message", "") for m in value.get("messages", []) if isinstance(m, dict)]
    return error_type, "; ".join(m for m in messages if m) or str(body)[:300]


class NamespaceClient:
    """Thin client for ``/api/vcenter/namespaces/instances`` on a logged-in REST session."""

    def __init__(self, http: requests.Session, base_url: str):
        self.http = http
        self.base_url = base_url.rstrip("/")

    def _call(self, method: str, path: str, body: dict[str, Any] | None = None) -> requests.Response:
        url = self.base_url + path
        resp = self.http.request(method, url, json=body)
        if resp.status_code >= 400:
            error_type, message = _server_message(resp)
            raise NamespaceApiError(
                f"{method} {url} -> HTTP {resp.status_code} {error_type}: {message}".replace(" : ", ": "),
                resp.status_code,
                error_type,
            )
        return resp

    def get(self, namespace: str) -> dict[str, Any] | None:
        """``Instances.Info``, or ``None`` when the namespace does not exist."""
        try:
            info: dict[str, Any] = self._call("GET", f"{INSTANCES}/{namespace}").json()
            return info
        except NamespaceApiError as exc:
            if exc.status == 404:
                return None
            raise

    def create(self, spec: NamespaceSpec) -> None:
        self._call("POST", INSTANCES, spec.create_body())

    def update(self, spec: NamespaceSpec, info: Mapping[str, Any], previous: NamespaceSpec | None = None) -> None:
        """PATCH the namespace (whose current ``Info`` is ``info``) to hold ``spec``."""
        self.patch(spec.namespace, spec.update_body(info, previous))

    def patch(self, namespace: str, body: Mapping[str, Any]) -> None:
        """``PATCH .../instances/{namespace}`` with an ``Instances.UpdateSpec`` (unset fields unchanged)."""
        self._call("PATCH", f"{INSTANCES}/{namespace}", dict(body))

    def delete(self, namespace: str) -> bool:
        """Start deleting; ``False`` when the namespace was already gone."""
        try:
            self._call("DELETE", f"{INSTANCES}/{namespace}")
        except NamespaceApiError as exc:
            if exc.status == 404:
                return False
            raise
        return True

    def wait_running(self, namespace: str, timeout_s: float, poll_s: float) -> dict[str, Any]:
        """Poll until ``config_status`` is ``RUNNING``; raise on ``ERROR`` or timeout."""
        deadline = time.monotonic() + timeout_s
        while True:
            info = self.get(namespace)
            status = (info or {}).get("config_status")
            if info is not None and status == "RUNNING":
                return info
            if info is None or status == "ERROR" or time.monotonic() > deadline:
                details = "; ".join(
                    (m.get("details") or {}).get("default_message", "") for m in (info or {}).get("messages", [])
                )
                state = "disappeared" if info is None else f"is {status}"
                raise VCenterError(f"namespace {namespace!r} {state}" + (f": {details}" if details else ""))
            time.sleep(poll_s)

    def wait_gone(self, namespace: str, timeout_s: float, poll_s: float) -> None:
        deadline = time.monotonic() + timeout_s
        while self.get(namespace) is not None:
            if time.monotonic() > deadline:
                raise VCenterError(f"namespace {namespace!r} still exists {timeout_s:.0f} s after DELETE")
            time.sleep(poll_s)


class SupervisorNamespaceProvider(PollingVCenterProvider):
    """Creates (or adopts), patches and deletes one vSphere 7 Supervisor namespace."""

    def _outs(self, props: Mapping[str, Any], spec: NamespaceSpec, info: Mapping[str, Any],
              adopted: bool) -> dict[str, Any]:
        outs = self.stored(props)
        outs.update(spec.values(), config_status=info.get("config_status", ""), adopted=adopted)
        return outs

    def check(self, olds: dict[str, Any], news: dict[str, Any]) -> dyn.CheckResult:
        return self.validated(news, "namespace", build_spec)

    def create(self, props: dict[str, Any]) -> dyn.CreateResult:
        conn = self.connection(props)
        spec = build_spec(props)
        with rest_api(conn, f"creating namespace {spec.namespace!r}") as http:
            client = NamespaceClient(http, conn.base_url)
            existing = client.get(spec.namespace)
            adopted = existing is not None
            if existing is not None:
                if existing.get("cluster") != spec.cluster:
                    raise NamespaceConflict(
                        f"namespace {spec.namespace!r} already exists on cluster {existing.get('cluster')!r}, "
                        f"not on {spec.cluster!r}: namespace names are unique per vCenter; pick another name"
                    )
                logger.info(
                    "namespace %r exists on %s: adopting it, adding the program's entries to its own",
                    spec.namespace,
                    spec.cluster,
                )
                client.update(spec, existing)
            else:
                client.create(spec)
                logger.info("created namespace %r on %s", spec.namespace, spec.cluster)
            info = client.wait_running(spec.namespace, self.timeout_s, self.poll_s)
        return dyn.CreateResult(spec.namespace, self._outs(props, spec, info, adopted))

    def read(self, id_: str, props: dict[str, Any]) -> dyn.ReadResult:
        conn = self.connection(props)
        with rest_api(conn, f"reading namespace {id_!r}") as http:
            info = NamespaceClient(http, conn.base_url).get(id_)
        if info is None:
            return dyn.ReadResult("", {})
        return dyn.ReadResult(id_, self._outs(props, owned_part(spec_from_info(id_, info), props), info,
                                              bool(props.get("adopted"))))

    def diff(self, id_: str, olds: dict[str, Any], news: dict[str, Any]) -> dyn.DiffResult:
        def canonical(props: Mapping[str, Any]) -> dict[str, Any]:
            try:
                return build_spec(props).values()
            except (ValueError, TypeError):
                return dict(props)

        old_values, new_values = canonical(olds), canonical(news)
        unknown = {k: news[k] for k in news if is_unknown(news[k])}
        replaces = changed_keys(old_values, {**new_values, **unknown}, ["namespace", "cluster"])
        changes = changed_keys(old_values, {**new_values, **unknown}, SPEC_KEYS)
        return self.diff_result(olds, news, replaces, changes, delete_before_replace=True)

    def update(self, id_: str, olds: dict[str, Any], news: dict[str, Any]) -> dyn.UpdateResult:
        conn = self.connection(news)
        spec = build_spec(news)
        if spec == build_spec(olds):
            logger.info("namespace %r: only the connection changed; nothing to do on vCenter", spec.namespace)
            return dyn.UpdateResult({**olds, **self.stored(news)})
        with rest_api(conn, f"updating namespace {spec.namespace!r}") as http:
            client = NamespaceClient(http, conn.base_url)
            info = client.get(spec.namespace)
            if info is None:
                raise VCenterError(f"namespace {spec.namespace!r} no longer exists on vCenter; run `pulumi refresh`")
            client.update(spec, info, build_spec(olds))
            info = client.wait_running(spec.namespace, self.timeout_s, self.poll_s)
        return dyn.UpdateResult(self._outs(news, spec, info, bool(olds.get("adopted"))))

    def delete(self, id_: str, props: dict[str, Any]) -> None:
        if self.leaves_adopted(props, f"namespace {id_!r}"):
            return
        conn = self.connection(props)
        with rest_api(conn, f"deleting namespace {id_!r}") as http:
            client = NamespaceClient(http, conn.base_url)
            if client.delete(id_):
                client.wait_gone(id_, self.timeout_s, self.poll_s)
                logger.info("deleted namespace %r", id_)
            else:
                logger.info("namespace %r is already gone", id_)


class SupervisorNamespace(VCenterResource, module="vsphere", name="SupervisorNamespace"):
    """A vSphere 7 Supervisor namespace with storage policies, VM classes, libraries and access.

    ``storage_specs`` is ``[{"policy": <SPBM profile id>, "limit": <MiB, optional>}]``;
    ``access_list`` is ``[{"subject_type": USER|GROUP, "subject", "domain", "role": OWNER|EDIT|VIEW}]``.
    Outputs ``namespace``, ``cluster``, ``config_status`` and ``adopted``.
    """

    namespace: pulumi.Output[str]
    cluster: pulumi.Output[str]
    config_status: pulumi.Output[str]
    adopted: pulumi.Output[bool]

    def __init__(self, name: str, opts: pulumi.ResourceOptions | None = None, *, namespace: pulumi.Input[str],
                 cluster: pulumi.Input[str], description: pulumi.Input[str] = "",
                 access_list: pulumi.Input[Sequence[Mapping[str, str]]] = (),
                 storage_specs: pulumi.Input[Sequence[Mapping[str, Any]]] = (),
                 vm_classes: pulumi.Input[Sequence[str]] = (), content_libraries: pulumi.Input[Sequence[str]] = (),
                 vcenter: VCenterAccess) -> None:
        if isinstance(namespace, str) and not is_namespace_name(namespace):
            raise ValueError(f"namespace: {namespace!r} must be an RFC 1123 label of at most 63 characters")
        props = {
            "namespace": namespace,
            "cluster": cluster,
            "description": description,
            "access_list": plain_list(access_list),
            "storage_specs": plain_list(storage_specs),
            "vm_classes": plain_list(vm_classes),
            "content_libraries": plain_list(content_libraries),
            "config_status": None,
            "adopted": None,
        }
        super().__init__(SupervisorNamespaceProvider(), name, opts, props, vcenter)
