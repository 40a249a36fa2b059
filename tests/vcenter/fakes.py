"""Local FAKES of the two vCenter APIs that govmomi's simulator (vcsim) does not serve.

vcsim serves no vSphere 7 namespace API (``/api/vcenter/namespaces/instances``) and
no vSAN file service on ``/vsanHealth`` (only CNS volume calls). These fakes stand
in for exactly those endpoints, on 127.0.0.1 over TLS with vcsim's certificate, so
the providers' real HTTP and SOAP code runs unchanged against them:

- :class:`FakeNamespaceApi`: ``POST/DELETE /api/session`` and the namespace
  instances endpoints. It enforces the ``vmware-api-session-id`` header, rejects
  unknown or missing fields with HTTP 400 ``INVALID_ARGUMENT`` as vCenter does,
  and moves namespaces through ``CONFIGURING``/``REMOVING`` before they settle,
  to ``RUNNING`` or, where told, to ``ERROR`` with an ERROR message (vSphere
  Automation API 7.0 ``vcenter.namespaces.Instances.ConfigStatus``: CONFIGURING,
  REMOVING, RUNNING, ERROR; ``Instances.Info.messages``: ``Instances.Message``
  with ``severity`` and ``details``, a LocalizableMessage). A PATCH sets only the
  fields it carries and a list replaces the server's (``Instances.UpdateSpec``: "If
  unset, access controls on the namespace will not be modified"). Namespace names
  follow the API's rule (a DNS label of at most 63 characters). It also serves what the
  Supervisor's TKR library check reads: ``clusters/{cluster}`` (``Clusters.Info`` /
  ``UpdateSpec``: ``default_kubernetes_service_content_library``), the vSphere 8/9
  ``supervisors/{supervisor}/topology`` (``Topology.get``: zones and their clusters) and
  ``/api/content/library/item`` (item ids, item ``Info``).
- :class:`FakeVsanFileService`: answers the ``urn:vsan`` SOAP calls pyVmomi sends
  to ``/vsanHealth`` (``VsanCreateFileShare``, ``VsanClusterQueryFileShares``,
  ``VsanReconfigureFileShare``, ``VsanClusterRemoveShare``), parsed from the request
  XML as a real vCenter receives it, and forwards every other path (``/sdk``: login,
  inventory) to a running vcsim. Only sessions vcsim issued are accepted.

They are deliberately small: they model the fields this project sends, not the APIs.
"""

from __future__ import annotations

import base64
import copy
import http.client
import json
import re
import secrets
import ssl
import threading
import uuid
import xml.etree.ElementTree as ET
from dataclasses import dataclass, field
from http.cookies import CookieError, SimpleCookie
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import parse_qs, urlsplit
from xml.sax.saxutils import escape


class _Server:
    """A threaded HTTPS server on a free 127.0.0.1 port."""

    def __init__(self, handler: type[BaseHTTPRequestHandler], cert_file: str, key_file: str):
        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), handler)
        self.httpd.daemon_threads = True
        self.httpd.fake = self  # type: ignore[attr-defined]
        ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        ctx.load_cert_chain(cert_file, key_file)
        self.httpd.socket = ctx.wrap_socket(self.httpd.socket, server_side=True)
        self.port = self.httpd.server_address[1]
        self._thread = threading.Thread(
            target=self.httpd.serve_forever, kwargs={"poll_interval": 0.05}, name=type(self).__name__, daemon=True
        )
        self.lock = threading.Lock()

    def start(self):
        self._thread.start()
        return self

    def stop(self) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()

    def __enter__(self):
        return self.start()

    def __exit__(self, *exc) -> None:
        self.stop()


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    disable_nagle_algorithm = True

    def log_message(self, *args) -> None:  # keep pytest output clean
        pass

    @property
    def fake(self):
        return self.server.fake

    def body(self) -> bytes:
        return self.rfile.read(int(self.headers.get("Content-Length") or 0))

    def send(
        self,
        status: int,
        payload: bytes = b"",
        content_type: str = "application/json",
        headers: dict[str, str] | None = None,
    ) -> None:
        self.send_response(status)
        self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(payload)))
        for key, value in (headers or {}).items():
            self.send_header(key, value)
        self.end_headers()
        self.wfile.write(payload)


# --------------------------------------------------------------------------- namespaces

_CREATE_FIELDS = {
    "cluster",
    "namespace",
    "description",
    "resource_spec",
    "access_list",
    "storage_specs",
    "networks",
    "vm_service_spec",
    "content_libraries",
    "creator",
}
_UPDATE_FIELDS = {
    "description",
    "resource_spec",
    "access_list",
    "storage_specs",
    "vm_service_spec",
    "content_libraries",
}
_ACCESS_FIELDS = {"subject_type", "subject", "domain", "role", "identity_provider"}
_STORAGE_FIELDS = {"policy", "limit"}
_VM_SERVICE_FIELDS = {"content_libraries", "vm_classes"}
_PATH = re.compile(r"^/api/vcenter/namespaces/instances(?:/([^/?]+))?$")
_NAMESPACE_NAME = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$")
_SUPERVISOR_PATH = re.compile(r"^/api/vcenter/namespace-management/clusters/([^/?]+)$")
# vSphere API 8.0.0.1 Supervisors Topology.get: the vSphere Zones of a Supervisor (by its id) and
# each zone's clusters, [{"zone": <Zone id>, "clusters": [<ClusterComputeResource id>]}].
_TOPOLOGY_PATH = re.compile(r"^/api/vcenter/namespace-management/supervisors/([^/?]+)/topology$")
_CLUSTER_UPDATE_FIELDS = {"default_kubernetes_service_content_library", "master_DNS", "worker_DNS",
                          "master_NTP_servers", "size_hint", "ephemeral_storage_policy", "image_storage",
                          "default_image_registry", "default_image_repository", "tls_endpoint_certificate"}
_ITEM_PATH = "/api/content/library/item"


def _error(error_type: str, message: str) -> bytes:
    return json.dumps(
        {
            "error_type": error_type,
            "messages": [{"args": [], "default_message": message, "id": f"vcenter.wcp.{error_type.lower()}"}],
        }
    ).encode()


class _NamespaceHandler(_Handler):
    def _reply(self, status: int, body: Any = None, error: tuple[str, str] | None = None) -> None:
        if error:
            self.send(status, _error(*error))
        else:
            self.send(status, b"" if body is None else json.dumps(body).encode())

    def _route(self, method: str) -> None:
        fake: FakeNamespaceApi = self.fake
        raw = self.body()
        with fake.lock:
            fake.requests.append((method, self.path, dict(self.headers), raw))
            if self.path == "/api/session":
                return self._session(method)
            token = self.headers.get("vmware-api-session-id")
            if token is None or token not in fake.tokens:
                return self._reply(401, error=("UNAUTHENTICATED", "This method requires authentication."))
            try:
                body = json.loads(raw) if raw else None
            except ValueError:
                return self._reply(400, error=("INVALID_ARGUMENT", "Unable to parse the request body as JSON."))
            supervisor = _SUPERVISOR_PATH.match(self.path)
            if supervisor:
                return self._supervisor(method, supervisor.group(1), body)
            topology = _TOPOLOGY_PATH.match(self.path)
            if topology:
                return self._topology(method, topology.group(1))
            if self.path.startswith(_ITEM_PATH):
                return self._library_items(method)
            match = _PATH.match(self.path)
            if not match:
                return self._reply(404, error=("NOT_FOUND", f"No handler for {method} {self.path}"))
            name = match.group(1)
            if name is None:
                if method == "GET":
                    return self._reply(200, [fake.summary(n) for n in fake.namespaces])
                if method == "POST":
                    return self._create(body)
            elif method == "GET":
                return self._get(name)
            elif method == "PATCH":
                return self._patch(name, body)
            elif method == "DELETE":
                return self._delete(name)
            return self._reply(405, error=("OPERATION_NOT_FOUND", f"{method} is not supported on {self.path}"))

    do_GET = lambda self: self._route("GET")  # noqa: E731
    do_POST = lambda self: self._route("POST")  # noqa: E731
    do_PATCH = lambda self: self._route("PATCH")  # noqa: E731
    do_DELETE = lambda self: self._route("DELETE")  # noqa: E731

    def _supervisor(self, method: str, cluster: str, body: Any) -> None:
        """``GET``/``PATCH /api/vcenter/namespace-management/clusters/{cluster}`` (Clusters.Info /
        Clusters.UpdateSpec): the Supervisor's ``default_kubernetes_service_content_library``."""
        fake: FakeNamespaceApi = self.fake
        if cluster not in fake.supervisor_libraries:
            return self._reply(404, error=("NOT_FOUND", f"Cluster {cluster} does not have vSphere Namespaces enabled."))
        if method == "GET":
            return self._reply(200, {"config_status": "RUNNING", "kubernetes_status": "READY",
                                     "default_kubernetes_service_content_library": fake.supervisor_libraries[cluster]})
        if method != "PATCH":
            return self._reply(405, error=("OPERATION_NOT_FOUND", f"{method} is not supported on {self.path}"))
        if not isinstance(body, dict) or set(body) - _CLUSTER_UPDATE_FIELDS:
            unexpected = sorted(set(body or {}) - _CLUSTER_UPDATE_FIELDS)
            return self._reply(400, error=("INVALID_ARGUMENT", f"Unexpected field(s) {unexpected} in structure"
                                           " 'com.vmware.vcenter.namespace_management.clusters.update_spec'."))
        library = body.get("default_kubernetes_service_content_library")
        if library is not None:
            if library not in fake.library_items:
                return self._reply(400, error=("INVALID_ARGUMENT", f"Content library {library} does not exist."))
            fake.supervisor_libraries[cluster] = library
        return self._reply(204)

    def _topology(self, method: str, supervisor: str) -> None:
        """``GET /api/vcenter/namespace-management/supervisors/{supervisor}/topology`` (Topology.get)."""
        fake: FakeNamespaceApi = self.fake
        if method != "GET":
            return self._reply(405, error=("OPERATION_NOT_FOUND", f"{method} is not supported on {self.path}"))
        if supervisor not in fake.supervisor_topology:
            return self._reply(404, error=("NOT_FOUND", f"Supervisor {supervisor} not found."))
        return self._reply(200, fake.supervisor_topology[supervisor])

    def _library_items(self, method: str) -> None:
        """``GET /api/content/library/item?library_id=`` (item ids) and ``.../item/{id}`` (Info)."""
        fake: FakeNamespaceApi = self.fake
        url = urlsplit(self.path)
        if method != "GET":
            return self._reply(405, error=("OPERATION_NOT_FOUND", f"{method} is not supported on {self.path}"))
        if url.path == _ITEM_PATH:
            library = (parse_qs(url.query).get("library_id") or [""])[0]
            if library not in fake.library_items:
                return self._reply(404, error=("NOT_FOUND", f"Library {library} not found."))
            return self._reply(200, [f"{library}-item-{i}" for i in range(len(fake.library_items[library]))])
        item = url.path[len(_ITEM_PATH) + 1:]
        for library, names in fake.library_items.items():
            for i, name in enumerate(names):
                if item == f"{library}-item-{i}":
                    return self._reply(200, {"id": item, "library_id": library, "name": name, "type": "ovf"})
        return self._reply(404, error=("NOT_FOUND", f"Library item {item} not found."))

    def _session(self, method: str) -> None:
        fake: FakeNamespaceApi = self.fake
        if method == "DELETE":
            fake.tokens.discard(self.headers.get("vmware-api-session-id", ""))
            return self._reply(204)
        auth = self.headers.get("Authorization", "")
        user, _, password = (base64.b64decode(auth[6:]).decode() if auth.startswith("Basic ") else "").partition(":")
        if (user, password) != (fake.user, fake.password):
            return self._reply(401, error=("UNAUTHENTICATED", "Authentication required."))
        token = secrets.token_hex(16)
        fake.tokens.add(token)
        return self._reply(201, token)

    def _validate(self, body: Any, allowed: set[str], required: set[str], structure: str) -> str | None:
        if not isinstance(body, dict):
            return f"Expected a {structure} structure in the request body."
        for key in body:
            if key not in allowed:
                return f"Unexpected field '{key}' in structure '{structure}'."
        for key in sorted(required - set(body)):
            return f"Missing required field '{key}' in structure '{structure}'."
        for i, entry in enumerate(body.get("access_list") or []):
            problem = self._validate(
                entry,
                _ACCESS_FIELDS,
                _ACCESS_FIELDS - {"identity_provider"},
                "com.vmware.vcenter.namespaces.instances.access",
            )
            if problem:
                return f"access_list[{i}]: {problem}"
            if entry["role"] not in ("OWNER", "EDIT", "VIEW") or entry["subject_type"] not in ("USER", "GROUP"):
                return f"access_list[{i}]: invalid role or subject_type."
        for i, entry in enumerate(body.get("storage_specs") or []):
            problem = self._validate(
                entry, _STORAGE_FIELDS, {"policy"}, "com.vmware.vcenter.namespaces.instances.storage_spec"
            )
            if problem:
                return f"storage_specs[{i}]: {problem}"
            known = self.fake.known_policies
            if known is not None and entry["policy"] not in known:
                return f"Storage policy {entry['policy']} does not exist."
        if body.get("vm_service_spec") is not None:
            problem = self._validate(
                body["vm_service_spec"],
                _VM_SERVICE_FIELDS,
                set(),
                "com.vmware.vcenter.namespaces.instances.VM_service_spec",
            )
            if problem:
                return f"vm_service_spec: {problem}"
        return None

    def _create(self, body: Any) -> None:
        fake: FakeNamespaceApi = self.fake
        problem = self._validate(
            body, _CREATE_FIELDS, {"cluster", "namespace"}, "com.vmware.vcenter.namespaces.instances.create_spec"
        )
        if problem:
            return self._reply(400, error=("INVALID_ARGUMENT", problem))
        if body["cluster"] not in fake.clusters:
            return self._reply(
                400, error=("INVALID_ARGUMENT", f"Cluster {body['cluster']} is not enabled for Workload Management.")
            )
        if len(body["namespace"]) > 63 or not _NAMESPACE_NAME.match(body["namespace"]):
            return self._reply(400, error=("INVALID_ARGUMENT", f"Namespace name {body['namespace']} is invalid:"
                                           " it must be a DNS label (a-z, 0-9, '-') of at most 63 characters."))
        if body["namespace"] in fake.namespaces:
            return self._reply(400, error=("ALREADY_EXISTS", f"Namespace {body['namespace']} already exists."))
        fake.namespaces[body["namespace"]] = fake.make_info(body)
        return self._reply(204)

    def _get(self, name: str) -> None:
        fake: FakeNamespaceApi = self.fake
        info = fake.namespaces.get(name)
        if info is None:
            return self._reply(404, error=("NOT_FOUND", f"Namespace {name} not found."))
        fake.advance(name)
        info = fake.namespaces.get(name)
        if info is None:
            return self._reply(404, error=("NOT_FOUND", f"Namespace {name} not found."))
        return self._reply(200, info)

    def _patch(self, name: str, body: Any) -> None:
        fake: FakeNamespaceApi = self.fake
        if name not in fake.namespaces:
            return self._reply(404, error=("NOT_FOUND", f"Namespace {name} not found."))
        problem = self._validate(body, _UPDATE_FIELDS, set(), "com.vmware.vcenter.namespaces.instances.update_spec")
        if problem:
            return self._reply(400, error=("INVALID_ARGUMENT", problem))
        info = fake.namespaces[name]
        info.update(dict(body.items()))
        info["config_status"] = "CONFIGURING"
        fake.settling[name] = fake.settle_gets
        return self._reply(204)

    def _delete(self, name: str) -> None:
        fake: FakeNamespaceApi = self.fake
        if name not in fake.namespaces:
            return self._reply(404, error=("NOT_FOUND", f"Namespace {name} not found."))
        fake.namespaces[name]["config_status"] = "REMOVING"
        fake.settling[name] = fake.settle_gets
        return self._reply(204)


class FakeNamespaceApi(_Server):
    """FAKE of vCenter's namespace REST API (vSphere 7's, which vSphere 8 and 9 keep; vcsim serves none).

    ``clusters``: ids of clusters with Workload Management enabled.
    ``known_policies``: when set, storage policy ids the fake accepts.
    ``settle_gets``: how many GETs a namespace stays CONFIGURING/REMOVING.
    """

    def __init__(
        self,
        cert_file: str,
        key_file: str,
        *,
        user: str,
        password: str,
        clusters: tuple[str, ...] = ("domain-c8",),
        known_policies: set[str] | None = None,
        settle_gets: int = 1,
    ):
        super().__init__(_NamespaceHandler, cert_file, key_file)
        self.user, self.password = user, password
        self.clusters = set(clusters)
        self.known_policies = known_policies
        self.settle_gets = settle_gets
        self.tokens: set[str] = set()
        self.fail_config: dict[str, str] = {}  # namespace -> message it goes to ERROR with
        # Supervisors (cluster -> its TKR library id) and content libraries (id -> item names).
        self.supervisor_libraries: dict[str, str] = {}
        # vSphere 8/9 Supervisors by id -> their topology ([{"zone", "clusters"}]).
        self.supervisor_topology: dict[str, list[dict[str, Any]]] = {}
        self.library_items: dict[str, list[str]] = {}
        self.namespaces: dict[str, dict[str, Any]] = {}
        self.settling: dict[str, int] = {}
        self.requests: list[tuple[str, str, dict, bytes]] = []

    def make_info(self, body: dict[str, Any]) -> dict[str, Any]:
        self.settling[body["namespace"]] = self.settle_gets
        return {
            "cluster": body["cluster"],
            "config_status": "CONFIGURING",
            "messages": [],
            "stats": {"cpu_used": 0, "memory_used": 0, "storage_used": 0},
            "description": body.get("description", ""),
            "access_list": body.get("access_list", []),
            "storage_specs": body.get("storage_specs", []),
            "vm_service_spec": body.get("vm_service_spec", {"content_libraries": [], "vm_classes": []}),
            "self_service_namespace": False,
        }

    def seed(self, namespace: str, cluster: str, **fields: Any) -> None:
        """Put a namespace in place as if someone created it in the vSphere Client."""
        with self.lock:
            self.namespaces[namespace] = {
                **self.make_info({"namespace": namespace, "cluster": cluster, **fields}),
                "config_status": "RUNNING",
            }
            self.settling.pop(namespace, None)

    def advance(self, name: str) -> None:
        left = self.settling.get(name)
        if left is None:
            return
        if left > 0:
            self.settling[name] = left - 1
            return
        del self.settling[name]
        info = self.namespaces[name]
        if info["config_status"] == "REMOVING":
            del self.namespaces[name]
        elif name in self.fail_config:
            info["config_status"] = "ERROR"
            info["messages"] = [{"severity": "ERROR", "details": {
                "id": "vcenter.wcp.namespace.config.error", "default_message": self.fail_config[name], "args": []}}]
        else:
            info["config_status"] = "RUNNING"
            info["messages"] = []

    def summary(self, name: str) -> dict[str, Any]:
        info = self.namespaces[name]
        return {
            "namespace": name,
            "cluster": info["cluster"],
            "config_status": info["config_status"],
            "description": info["description"],
        }


def fake_namespace_api(vcsim: Any, password_prefix: str, **state: Any) -> FakeNamespaceApi:
    """The namespace API's fake with vcsim's certificate, for vcsim's administrator with a fresh
    password; ``state`` sets its Supervisors and libraries (``library_items=...``, ...), copied, so
    that a test that changes them changes only its own fake."""
    fake = FakeNamespaceApi(vcsim.cert_file, vcsim.key_file, user="administrator@vsphere.local",
                            password=password_prefix + secrets.token_urlsafe(10))
    for name, value in state.items():
        if not hasattr(fake, name):
            raise AttributeError(f"FakeNamespaceApi has no {name!r}")
        setattr(fake, name, copy.deepcopy(value))
    return fake


def provider_props(api: FakeNamespaceApi, vcsim: Any, fields: dict[str, Any], overrides: dict[str, Any]) -> dict:
    """A vCenter provider's inputs: its ``fields``, the connection to the fake ``api`` (trusting
    vcsim's CA, as the program does with ``vcenterCaPem``), then the test's ``overrides``."""
    return {**fields, "server": "127.0.0.1", "port": api.port, "user": api.user, "password": api.password,
            "insecure": False, "ca_pem": vcsim.ca_pem, **overrides}


# --------------------------------------------------------------------------- vSAN file service

_SOAP = "http://schemas.xmlsoap.org/soap/envelope/"
_VSAN = "urn:vsan"
_ENVELOPE = (
    '<?xml version="1.0" encoding="UTF-8"?>\n'
    f'<soapenv:Envelope xmlns:soapenv="{_SOAP}" xmlns:xsd="http://www.w3.org/2001/XMLSchema" '
    'xmlns:xsi="http://www.w3.org/2001/XMLSchema-instance"><soapenv:Body>{body}</soapenv:Body></soapenv:Envelope>'
)


def _soap_session(cookie_header: str) -> str | None:
    """The ``vmware_soap_session`` value of a Cookie or Set-Cookie header."""
    try:
        morsel = SimpleCookie(cookie_header).get("vmware_soap_session")
    except CookieError:
        return None
    return morsel.value if morsel else None


def _text(element: ET.Element | None, path: str) -> str | None:
    found = element.find(path, {"v": _VSAN, "vim": "urn:vim25"}) if element is not None else None
    return found.text if found is not None else None


@dataclass
class FakeShare:
    uuid: str
    name: str
    cluster: str
    quota: str
    policy_id: str | None
    permissions: list[dict[str, Any]]
    domain: str = "fs.vsan.example"
    visible: bool = True  # False until the task creating it has finished
    labels: dict[str, str] = field(default_factory=dict)

    def xml(self, fqdn: str, ip: str) -> str:
        e = escape
        policy = (
            '<storagePolicy xmlns:vim25="urn:vim25" xsi:type="vim25:VirtualMachineDefinedProfileSpec">'
            f'<profileId xmlns="urn:vim25">{e(self.policy_id)}</profileId></storagePolicy>'
            if self.policy_id
            else ""
        )
        permissions = "".join(
            f"<permission><ips>{e(p['ips'])}</ips><permissions>{e(p['permissions'])}</permissions>"
            f"<allowRoot>{'true' if p['allow_root'] else 'false'}</allowRoot></permission>"
            for p in self.permissions
        )
        # FileShareRuntimeInfo: hostname is the file server's FQDN, address its IP, the
        # access points "<fqdn>:/vsanfs/<share>" per protocol (vSAN Management API 7.0).
        return (
            f"<fileShares><uuid>{e(self.uuid)}</uuid>"
            f"<config><name>{e(self.name)}</name><domainName>{e(self.domain)}</domainName>"
            f"<quota>{e(self.quota)}</quota>{policy}{permissions}</config>"
            f"<runtime><usedCapacity>0</usedCapacity><hostname>{e(fqdn)}</hostname><address>{e(ip)}</address>"
            f"<accessPoints><key>NFSv3</key><value>{e(fqdn)}:/vsanfs/{e(self.name)}</value></accessPoints>"
            f"<accessPoints><key>NFSv4.1</key><value>{e(fqdn)}:/vsanfs/{e(self.name)}</value></accessPoints>"
            f"<managedBy>user</managedBy></runtime></fileShares>"
        )


@dataclass
class FakeTask:
    """A vim Task the file service returned: ``running`` for ``ticks`` requests, then
    ``success`` (its effect applied) or ``error`` (nothing changed), as vSAN runs
    ``VsanCreateFileShare``/``VsanReconfigureFileShare``/``VsanClusterRemoveShare``."""

    key: str
    method: str
    ticks: int
    effect: Any  # callable run on success
    error: str | None = None  # the fault message when the task fails
    rollback: Any = None  # callable run on failure
    state: str = "running"

    def advance(self) -> None:
        if self.state != "running":
            return
        if self.ticks > 0:
            self.ticks -= 1
            return
        if self.error is None:
            self.effect()
            self.state = "success"
        else:
            self.rollback()
            self.state = "error"

    def info_xml(self) -> str:
        error = ""
        if self.state == "error":
            # LocalizedMethodFault as vCenter reports a failed task (TaskInfo.error).
            error = (f'<error><fault xsi:type="SystemError"><reason>{escape(self.error or "")}</reason></fault>'
                     f"<localizedMessage>{escape(self.error or '')}</localizedMessage></error>")
        return (
            f'<returnval xsi:type="TaskInfo"><key>{self.key}</key><task type="Task">{self.key}</task>'
            f"<name>{self.method}</name><descriptionId>vsan.fileservice.{self.method}</descriptionId>"
            f"<state>{self.state}</state><cancelled>false</cancelled><cancelable>false</cancelable>{error}"
            f"<queueTime>2026-01-01T00:00:00Z</queueTime><eventChainId>1</eventChainId></returnval>"
        )


# vSAN Management API 7.0, vim.vsan.FileShareConfig.name: at most 80 characters, letters,
# digits and '-', each '-' preceded and followed by a letter or digit.
_SHARE_NAME = re.compile(r"^[A-Za-z0-9]+(-[A-Za-z0-9]+)*$")


class _VsanHandler(_Handler):
    def do_GET(self) -> None:
        self._proxy("GET")

    def do_POST(self) -> None:
        if self.path.split("?")[0] == "/vsanHealth":
            self._vsan()
        else:
            self._proxy("POST")

    def _task_fetch(self, body: bytes) -> bool:
        """Answer ``Fetch`` of a task's ``info`` (pyVmomi's property read) for the fake's own
        tasks; every other /sdk call goes to vcsim."""
        fake: FakeVsanFileService = self.fake
        if b"<Fetch" not in body:
            return False
        request = ET.fromstring(body).findall(f"{{{_SOAP}}}Body")[0][0]
        this = request.find("{urn:vim25}_this")
        if this is None:
            return False
        with fake.lock:
            task = fake.tasks.get(this.text or "")
            if task is None or this.get("type") != "Task":
                return False
            if _soap_session(self.headers.get("Cookie") or "") not in fake.sessions:
                self._fault("NotAuthenticated", "The session is not authenticated.")
                return True
            fake.tick()
            answer = f'<FetchResponse xmlns="urn:vim25">{task.info_xml()}</FetchResponse>'
        self.send(200, _ENVELOPE.format(body=answer).encode(), "text/xml; charset=utf-8")
        return True

    def _proxy(self, method: str) -> None:
        """Forward to vcsim, remembering the session cookies it hands out."""
        fake: FakeVsanFileService = self.fake
        body = self.body()
        if method == "POST" and self._task_fetch(body):
            return
        conn = http.client.HTTPSConnection("127.0.0.1", fake.vcsim_port, context=fake.client_context, timeout=30)
        try:
            headers = {k: v for k, v in self.headers.items() if k.lower() in ("cookie", "soapaction", "content-type")}
            conn.request(method, self.path, body=body or None, headers=headers)
            resp = conn.getresponse()
            payload = resp.read()
            extra = {}
            cookie = resp.getheader("Set-Cookie")
            if cookie:
                extra["Set-Cookie"] = cookie
                session = _soap_session(cookie)
                if session:
                    with fake.lock:
                        fake.sessions.add(session)
            self.send(resp.status, payload, resp.getheader("Content-Type", "text/xml"), extra)
        finally:
            conn.close()

    def _fault(self, fault_type: str, message: str, status: int = 500, detail: str = "") -> None:
        body = (
            f"<soapenv:Fault><faultcode>ServerFaultCode</faultcode><faultstring>{escape(message)}</faultstring>"
            f'<detail><{fault_type}Fault xmlns="urn:vim25" xsi:type="{fault_type}">{detail}'
            f"</{fault_type}Fault></detail></soapenv:Fault>"
        )
        self.send(status, _ENVELOPE.format(body=body).encode(), "text/xml; charset=utf-8")

    def _invalid(self, prop: str, message: str) -> None:
        """vmodl.fault.InvalidArgument naming the property, as the file service methods declare."""
        self._fault("InvalidArgument", message, detail=f"<invalidProperty>{escape(prop)}</invalidProperty>")

    def _ok(self, method: str, returnval: str = "") -> None:
        body = f'<{method}Response xmlns="{_VSAN}">{returnval}</{method}Response>'
        self.send(200, _ENVELOPE.format(body=body).encode(), "text/xml; charset=utf-8")

    def _vsan(self) -> None:
        fake: FakeVsanFileService = self.fake
        raw = self.body()
        action = self.headers.get("SOAPAction", "").strip('"')
        session = _soap_session(self.headers.get("Cookie") or "")
        with fake.lock:
            if not action.startswith("urn:vsan/"):
                return self._fault("InvalidRequest", f"SOAPAction {action!r} is not a vSAN API version")
            if session is None or session not in fake.sessions:
                return self._fault("NotAuthenticated", "The session is not authenticated.")
            request = ET.fromstring(raw).findall(f"{{{_SOAP}}}Body")[0][0]
            method = request.tag.split("}", 1)[1]
            this = request.find(f"{{{_VSAN}}}_this")
            fake.calls.append((method, action, raw.decode()))
            fake.tick()
            if this is None or this.text != "vsan-cluster-file-service-system":
                return self._fault(
                    "ManagedObjectNotFound",
                    f"The object {this.text if this is not None else ''} has "
                    "already been deleted or has not been completely created",
                )
            handler = getattr(self, f"_{method}", None)
            if handler is None:
                return self._fault("MethodNotFound", f"VsanFileServiceSystem does not implement {method}")
            return handler(method, request)

    def _config(self, element: ET.Element) -> dict[str, Any]:
        config = element.find(f"{{{_VSAN}}}config")
        return {
            "name": _text(config, "v:name"),
            "quota": _text(config, "v:quota"),
            # vim types inside a vSAN call keep their own namespace: xsi:type="vim25:VirtualMachine
            # DefinedProfileSpec" with <profileId xmlns="urn:vim25">.
            "policy_id": _text(config, "v:storagePolicy/vim:profileId") or _text(config, "v:storagePolicy/v:profileId"),
            "domain": _text(config, "v:domainName"),
            "permissions": [
                {
                    "ips": _text(p, "v:ips"),
                    "permissions": _text(p, "v:permissions") or "READ_WRITE",
                    "allow_root": _text(p, "v:allowRoot") == "true",
                }
                for p in (config.findall(f"{{{_VSAN}}}permission") if config is not None else [])
            ],
        }

    def _task(self, method: str, effect, rollback=None) -> None:
        fake: FakeVsanFileService = self.fake
        fake.task_counter += 1
        key = f"task-{900 + fake.task_counter}"
        fake.tasks[key] = FakeTask(key, method, fake.task_ticks, effect, fake.fail_tasks.get(method),
                                   rollback or (lambda: None))
        self._ok(method, f'<returnval type="Task">{key}</returnval>')

    def _cluster(self, request: ET.Element) -> str | None:
        cluster = request.find(f"{{{_VSAN}}}cluster")
        if cluster is None or cluster.get("type") != "ClusterComputeResource":
            self._fault("InvalidArgument", "A vSAN cluster is required.")
            return None
        return cluster.text

    def _VsanClusterQueryFsDomains(self, method: str, request: ET.Element) -> None:
        fake: FakeVsanFileService = self.fake
        if self._cluster(request) is None:
            return None
        domains = "".join(
            f"<returnval><uuid>{escape(uuid_)}</uuid><config><name>{escape(name)}</name></config></returnval>"
            for uuid_, name in fake.domains.items()
        )
        return self._ok(method, domains)

    def _VsanCreateFileShare(self, method: str, request: ET.Element) -> None:
        fake: FakeVsanFileService = self.fake
        cluster = self._cluster(request)
        if cluster is None:
            return None
        config = self._config(request)
        # vSAN Management API 7.0 FileShareConfig: domainName "is required for file share
        # creation"; name: the share-name rule, unique within the domain.
        if not config["domain"]:
            return self._invalid("config.domainName", "The file service domain name is required to create a share.")
        if config["domain"] not in fake.domains.values():
            return self._invalid("config.domainName", f"File service domain {config['domain']} does not exist.")
        name = config["name"] or ""
        if len(name) > 80 or not _SHARE_NAME.match(name):
            return self._invalid("config.name", f"Invalid file share name {name}.")
        if any(s.name == name and s.domain == config["domain"] for s in fake.shares.values()):
            return self._invalid("config.name", f"File share {name} already exists.")
        share = FakeShare(
            uuid=str(uuid.uuid4()),
            name=name,
            cluster=cluster,
            quota=config["quota"],
            policy_id=config["policy_id"],
            permissions=config["permissions"],
            domain=config["domain"],
            visible=False,
        )
        fake.shares[share.uuid] = share

        def done():
            share.visible = True

        # A failed create leaves no share behind.
        return self._task(method, done, rollback=lambda: fake.shares.pop(share.uuid, None))

    def _VsanReconfigureFileShare(self, method: str, request: ET.Element) -> None:
        fake: FakeVsanFileService = self.fake
        share = fake.shares.get(_text(request, "v:shareUuid") or "")
        if share is None or not share.visible:
            return self._fault("NotFound", "The file share does not exist.")
        config = self._config(request)

        def done():
            share.quota, share.policy_id = config["quota"], config["policy_id"]
            share.permissions = config["permissions"]

        return self._task(method, done)

    def _VsanClusterRemoveShare(self, method: str, request: ET.Element) -> None:
        fake: FakeVsanFileService = self.fake
        share = fake.shares.get(_text(request, "v:shareUuid") or "")
        if share is None or not share.visible:
            return self._fault("NotFound", "The file share does not exist.")
        return self._task(method, lambda: fake.shares.pop(share.uuid, None))

    def _VsanClusterQueryFileShares(self, method: str, request: ET.Element) -> None:
        fake: FakeVsanFileService = self.fake
        cluster = self._cluster(request)
        if cluster is None:
            return None
        spec = request.find(f"{{{_VSAN}}}querySpec")
        names = {n.text for n in spec.findall(f"{{{_VSAN}}}names")} if spec is not None else set()
        uuids = {n.text for n in spec.findall(f"{{{_VSAN}}}uuids")} if spec is not None else set()
        visible = [
            share for share in fake.shares.values()
            if share.visible and share.cluster == cluster
            and (not names or share.name in names) and (not uuids or share.uuid in uuids)
        ]
        shares = "".join(s.xml(fake.nfs_fqdn, fake.nfs_ip) for s in visible)
        return self._ok(method, f"<returnval>{shares}<totalShareCount>{len(visible)}</totalShareCount></returnval>")


class FakeVsanFileService(_Server):
    """FAKE of vCenter's vSAN file service on ``/vsanHealth`` (vcsim serves none).

    Every other path is forwarded to the vcsim listening on ``vcsim_port``, so login
    and inventory are real; only ``Fetch`` of the fake's own tasks is answered here.
    Create, reconfigure and remove return a Task that runs for ``task_ticks`` requests
    (any call to the fake is a tick) and then succeeds, or fails with the message in
    ``fail_tasks[method]`` leaving the share as it was. ``domains``: the cluster's file
    service domains (uuid -> name).
    """

    def __init__(
        self,
        cert_file: str,
        key_file: str,
        *,
        vcsim_port: int,
        nfs_fqdn: str = "fs1.vsan.example",
        nfs_ip: str = "192.168.100.20",
        task_ticks: int = 1,
        domains: dict[str, str] | None = None,
    ):
        super().__init__(_VsanHandler, cert_file, key_file)
        self.vcsim_port = vcsim_port
        self.client_context = ssl.create_default_context(cafile=cert_file)
        self.nfs_fqdn, self.nfs_ip = nfs_fqdn, nfs_ip
        self.task_ticks = task_ticks
        self.domains = dict(domains if domains is not None else {"52 1a-domain": "fs.vsan.example"})
        self.fail_tasks: dict[str, str] = {}
        self.sessions: set[str] = set()
        self.shares: dict[str, FakeShare] = {}
        self.tasks: dict[str, FakeTask] = {}
        self.calls: list[tuple[str, str, str]] = []
        self.task_counter = 0

    def tick(self) -> None:
        """One request's worth of server time: running tasks move on."""
        for task in list(self.tasks.values()):
            task.advance()

    def seed(self, name: str, cluster: str, quota: str = "2048G", policy_id: str | None = None) -> FakeShare:
        """Put a share in place as if someone created it in the vSphere Client."""
        with self.lock:
            share = FakeShare(
                uuid=str(uuid.uuid4()),
                name=name,
                cluster=cluster,
                quota=quota,
                policy_id=policy_id,
                permissions=[{"ips": "*", "permissions": "READ_WRITE", "allow_root": True}],
            )
            self.shares[share.uuid] = share
            return share
