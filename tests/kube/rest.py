"""A small REST client for the stand-ins' API servers, over ``kubernetes.client.ApiClient``
(its host, TLS and token): any kind the server serves, found by API discovery, so CRs of a
CRD created a moment ago work as built-in kinds do.

``apply_manifest(api, manifest, *, dry_run=False, namespace=None, update_existing=False)``,
``get_object``, ``patch_object``, ``patch_status``, ``delete_object``, ``assert_invalid`` and the
raw ``api_request``; the server's errors raise :class:`KubeApiError` with its own message.
"""
from __future__ import annotations

import copy
import json
import time
import weakref
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import kubernetes.client


@dataclass(eq=False)
class KubeApiError(Exception):
    """The API server answered with an error; ``message`` is the server's own text."""

    status: int
    reason: str
    message: str
    body: Any = None
    method: str = ""
    path: str = ""

    def __post_init__(self) -> None:
        super().__init__(f"{self.method} {self.path}: HTTP {self.status} {self.reason}: {self.message}")

    @property
    def causes(self) -> list[dict]:
        """``details.causes`` of a Status answer (one per invalid field), or []."""
        if isinstance(self.body, dict):
            return list((self.body.get("details") or {}).get("causes") or [])
        return []


def api_client(url: str, ca_file: Path, token: str) -> kubernetes.client.ApiClient:
    """A client for ``url`` that trusts ``ca_file`` alone and sends ``token`` as a bearer token."""
    # no_proxy: a proxy from the environment must never see loopback traffic
    cfg = kubernetes.client.Configuration(host=url, no_proxy="127.0.0.1,localhost")
    cfg.ssl_ca_cert = str(ca_file)
    cfg.verify_ssl = True
    cfg.api_key = {"authorization": token}
    cfg.api_key_prefix = {"authorization": "Bearer"}
    return kubernetes.client.ApiClient(cfg)


def api_request(api: kubernetes.client.ApiClient, method: str, path: str, *, body: Any = None,
                query: dict[str, Any] | None = None, content_type: str = "application/json",
                accept: str = "application/json", timeout: float = 30.0) -> Any:
    """One raw request through ``api`` (its host, TLS and token); returns the decoded JSON answer.

    Raises KubeApiError for any non-2xx answer, with the server's Status message.
    """
    headers = {"Accept": accept, "Content-Type": content_type}
    query_params = [(k, v) for k, v in (query or {}).items() if v is not None]
    method_, url, header_params, body_, post_params = api.param_serialize(
        method=method, resource_path=path, query_params=query_params or None,
        header_params=headers, body=body, auth_settings=["BearerToken"],
    )
    response = api.call_api(method_, url, header_params=header_params, body=body_,
                            post_params=post_params, _request_timeout=timeout)
    raw = response.read() or b""
    try:
        decoded: Any = json.loads(raw) if raw else None
    except ValueError:
        decoded = raw.decode(errors="replace")
    if not 200 <= response.status < 300:
        if isinstance(decoded, dict):
            message = decoded.get("message") or json.dumps(decoded)
            reason = decoded.get("reason") or response.reason or ""
        else:
            message = str(decoded)
            reason = response.reason or ""
        raise KubeApiError(response.status, reason, message, decoded, method.upper(), path)
    return decoded


@dataclass(frozen=True)
class ResourceInfo:
    api_version: str
    kind: str
    plural: str
    namespaced: bool

    @property
    def prefix(self) -> str:
        return f"/api/{self.api_version}" if "/" not in self.api_version else f"/apis/{self.api_version}"

    def path(self, namespace: str | None = None, name: str | None = None, subresource: str | None = None) -> str:
        if self.namespaced:
            if not namespace:
                raise ValueError(f"{self.kind} ({self.api_version}) is namespaced: a namespace is needed")
            p = f"{self.prefix}/namespaces/{namespace}/{self.plural}"
        else:
            p = f"{self.prefix}/{self.plural}"
        if name:
            p += f"/{name}"
        if subresource:
            if not name:
                raise ValueError("a subresource needs a name")
            p += f"/{subresource}"
        return p


# API discovery's answers per client: api version -> its resources
_discovery: weakref.WeakKeyDictionary[kubernetes.client.ApiClient, dict[str, list[dict]]] = weakref.WeakKeyDictionary()


def resource_info(api: kubernetes.client.ApiClient, api_version: str, kind: str, *,
                  wait_s: float = 5.0) -> ResourceInfo:
    """Find the REST resource serving ``kind`` in ``api_version`` by API discovery.

    Answers are cached per client; a miss re-reads discovery for up to ``wait_s``
    seconds (a CRD created a moment ago takes a little while to be served).
    """
    cache = _discovery.setdefault(api, {})
    prefix = f"/api/{api_version}" if "/" not in api_version else f"/apis/{api_version}"
    deadline = time.monotonic() + wait_s
    refreshed = False
    while True:
        resources = cache.get(api_version)
        if resources is not None:
            for r in resources:
                if r.get("kind") == kind and "/" not in r.get("name", ""):
                    return ResourceInfo(api_version, kind, r["name"], bool(r.get("namespaced")))
        if refreshed and time.monotonic() >= deadline:
            raise KubeApiError(404, "NotFound", f"the server does not serve kind {kind!r} in {api_version!r}",
                               None, "GET", prefix)
        if refreshed:
            time.sleep(0.2)
        try:
            cache[api_version] = api_request(api, "GET", prefix).get("resources", [])
        except KubeApiError as exc:
            if exc.status != 404:
                raise
            cache.pop(api_version, None)
        refreshed = True


def forget_discovery(api: kubernetes.client.ApiClient, api_version: str) -> None:
    """Drop the cached discovery answer for ``api_version`` (after its CRD is deleted)."""
    _discovery.get(api, {}).pop(api_version, None)


def _split(manifest: dict) -> tuple[str, str, dict]:
    try:
        return manifest["apiVersion"], manifest["kind"], manifest.setdefault("metadata", {})
    except (KeyError, TypeError, AttributeError):
        raise ValueError(f"not a Kubernetes object (needs apiVersion, kind): {manifest!r:.200}") from None


def apply_manifest(api: kubernetes.client.ApiClient, manifest: dict, *, dry_run: bool = False,
                   namespace: str | None = None, update_existing: bool = False,
                   field_manager: str = "dask-tkg-tests", discovery_wait_s: float = 5.0,
                   field_validation: str | None = None) -> Any:
    """Create the object ``manifest`` (any kind the server serves: core, apps, rbac, storage, CRs).

    Returns the server's answer (the object as stored, or as it would be with ``dry_run``:
    server-side dry run, ``dryRun=All``, which runs defaulting, admission and schema
    validation but stores nothing). A ``...List`` with ``items`` creates each item and
    returns a list. ``namespace`` is used for namespaced kinds whose manifest has none.
    With ``update_existing`` an object that already exists is replaced (PUT with its
    current resourceVersion) instead of failing with AlreadyExists. An unknown kind is
    looked up again for ``discovery_wait_s`` seconds (for CRDs created a moment ago).
    ``field_validation`` ("Strict", "Warn", "Ignore"; Kubernetes 1.25+): how the server treats
    unknown or duplicate fields (kubectl 1.27+ asks Strict; the API's own default is Warn).
    The manifest passed in is not modified. Raises KubeApiError with the server's message.
    """
    if manifest.get("kind", "").endswith("List") and isinstance(manifest.get("items"), list):
        return [apply_manifest(api, item, dry_run=dry_run, namespace=namespace,
                               update_existing=update_existing, field_manager=field_manager,
                               discovery_wait_s=discovery_wait_s, field_validation=field_validation)
                for item in manifest["items"]]
    obj = copy.deepcopy(manifest)
    api_version, kind, meta = _split(obj)
    info = resource_info(api, api_version, kind, wait_s=discovery_wait_s)
    ns = None
    if info.namespaced:
        ns = meta.get("namespace") or namespace
        if not ns:
            raise ValueError(f"{kind} {meta.get('name')!r} is namespaced: give metadata.namespace or namespace=")
        meta["namespace"] = ns
    query = {"dryRun": "All" if dry_run else None, "fieldManager": field_manager, "fieldValidation": field_validation}
    try:
        return api_request(api, "POST", info.path(ns), body=obj, query=query)
    except KubeApiError as exc:
        if not (update_existing and exc.status == 409 and meta.get("name")):
            raise
    current = api_request(api, "GET", info.path(ns, meta["name"]))
    meta["resourceVersion"] = current["metadata"]["resourceVersion"]
    return api_request(api, "PUT", info.path(ns, meta["name"]), body=obj, query=query)


def assert_invalid(api: kubernetes.client.ApiClient, manifest: dict, expected: tuple[str, ...]) -> KubeApiError:
    """A server-side dry run of ``manifest`` is refused as Invalid (422), the message holding
    every text of ``expected`` (the fields the schema names)."""
    try:
        apply_manifest(api, manifest, dry_run=True)
    except KubeApiError as exc:
        assert exc.status == 422 and exc.reason == "Invalid", exc
        for text in expected:
            assert text in exc.message, exc.message
        return exc
    raise AssertionError(f"{manifest['kind']} {manifest['metadata']['name']} was accepted")


def get_object(api: kubernetes.client.ApiClient, api_version: str, kind: str, name: str,
               namespace: str | None = None) -> dict:
    """GET one object; raises KubeApiError (status 404 when it does not exist)."""
    info = resource_info(api, api_version, kind)
    return api_request(api, "GET", info.path(namespace if info.namespaced else None, name))


def patch_object(api: kubernetes.client.ApiClient, api_version: str, kind: str, name: str, patch: Any, *,
                 namespace: str | None = None, subresource: str | None = None,
                 patch_type: str = "merge", dry_run: bool = False) -> dict:
    """PATCH an object (or its ``subresource``, e.g. "status").

    ``patch_type``: "merge" (RFC 7386, works for CRs), "strategic" (built-in kinds only)
    or "json" (RFC 6902, ``patch`` is a list of operations).
    """
    content_types = {"merge": "application/merge-patch+json",
                     "strategic": "application/strategic-merge-patch+json",
                     "json": "application/json-patch+json"}
    info = resource_info(api, api_version, kind)
    return api_request(api, "PATCH", info.path(namespace if info.namespaced else None, name, subresource),
                       body=patch, content_type=content_types[patch_type],
                       query={"dryRun": "All" if dry_run else None})


def patch_status(api: kubernetes.client.ApiClient, obj: dict, status: dict) -> dict:
    """Merge ``status`` into the status subresource of ``obj`` (a manifest or a server answer)."""
    api_version, kind, meta = _split(copy.deepcopy(obj))
    return patch_object(api, api_version, kind, meta["name"], {"status": status},
                        namespace=meta.get("namespace"), subresource="status")


def delete_object(api: kubernetes.client.ApiClient, api_version: str, kind: str, name: str,
                  namespace: str | None = None, *, missing_ok: bool = True) -> Any:
    info = resource_info(api, api_version, kind)
    try:
        return api_request(api, "DELETE", info.path(namespace if info.namespaced else None, name))
    except KubeApiError as exc:
        if missing_ok and exc.status == 404:
            return None
        raise




def access_review(api: kubernetes.client.ApiClient, verb: str, group: str, resource: str, subresource: str = "",
                  name: str = "", namespace: str | None = None) -> dict:
    """The server's answer (``status``: ``allowed``, ``reason``, ...) to a SelfSubjectAccessReview
    made with ``api``'s credentials: may they ``verb`` the resource? RBAC answers, nothing is done."""
    attributes = {"verb": verb, "group": group, "resource": resource, "subresource": subresource, "name": name}
    if namespace is not None:
        attributes["namespace"] = namespace
    review = api_request(api, "POST", "/apis/authorization.k8s.io/v1/selfsubjectaccessreviews",
                         body={"apiVersion": "authorization.k8s.io/v1", "kind": "SelfSubjectAccessReview",
                               "spec": {"resourceAttributes": attributes}})
    return review["status"]
