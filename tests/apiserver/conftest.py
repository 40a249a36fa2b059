"""A real Kubernetes 1.20 API server for the ``apiserver`` tests, and helpers to talk to it.

What runs: Debian's ``etcd`` 3.4 and a ``kube-apiserver`` v1.20.2 built from Debian
bookworm's ``kubernetes`` source package by ``scripts/build_kube_apiserver.sh``
(binaries cached under ``${DASK_TKG_CACHE:-~/.cache/dask-tkg}/kube/bin``). Both listen
on 127.0.0.1 only, on free ports, with their data in a pytest temporary directory.
There is no controller-manager, scheduler or kubelet: every API object, CRD schema
validation, server-side dry run, status subresources, RBAC and watches work, but
pods stay Pending, namespaces never finish terminating and no ServiceAccount
tokens are minted.

Fixtures
  ``kube_apiserver`` (session) -> :class:`KubeAPIServer`: ``url``, ``token`` (an admin
      in ``system:masters``), ``api_client`` (``kubernetes.client.ApiClient``),
      ``kubeconfig`` (path), ``ca_file``, ``users`` (extra non-admin tokens).
  ``tkc_crd`` (session) -> dict: the TanzuKubernetesCluster CRD as the server holds
      it, serving v1alpha2 (VMware's generated schema, read unchanged from
      ``../shared``) and v1alpha3 (the project's schema) from one object.
  ``capi_crds`` (session) -> dict: Cluster API v1.10.10's Cluster, ClusterClass and
      MachineDeployment CRDs (upstream files, installed unchanged), as the server holds
      them, by kind.
  ``kube_namespace`` (function) -> str: a fresh namespace for one test.

Helpers (importable: ``from tests.apiserver.conftest import apply_manifest, ...``)
  ``apply_manifest(api, manifest, *, dry_run=False, namespace=None, update_existing=False)``
  ``get_object``, ``patch_object``, ``patch_status``, ``delete_object``, ``api_request``,
  ``load_tkc_crd()``, ``load_crd(file)``; errors from the server raise :class:`KubeApiError`.

If the binaries are missing, they are built once before the first test runs (about
6-7 minutes on 2 cores, needs root and Debian's package archive); a failed build
fails every test that needs the server, with the build log's tail.
"""
from __future__ import annotations

import copy
import json
import os
import re
import secrets
import shutil
import signal
import socket
import ssl
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request
import weakref
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterator

import kubernetes.client
import pytest

from workloads.core.config import cache_dir
import yaml

from tests import artifacts

REPO = Path(__file__).resolve().parents[2]
CACHE = cache_dir()
KUBE_CACHE = CACHE / "kube"
KUBE_APISERVER_BIN = KUBE_CACHE / "bin" / "kube-apiserver"
ETCD_BIN = KUBE_CACHE / "bin" / "etcd"
BUILD_SCRIPT = REPO / "scripts" / "build_kube_apiserver.sh"
BUILD_LOG = KUBE_CACHE / "build.log"
BUILD_TIMEOUT_S = 45 * 60

TKC_CRD_V1ALPHA2 = artifacts.TKC_CRD_V1ALPHA2  # VMware's file, fetched into the cache
# Cluster API v1.10.10's generated CRDs (v1beta1 served and stored), fetched into the cache
CAPI_CRDS = (artifacts.CAPI_CLUSTER_CRD, artifacts.CAPI_CLUSTERCLASS_CRD, artifacts.CAPI_MACHINEDEPLOYMENT_CRD)
TKC_V1ALPHA3_VERSION = REPO / "components" / "cluster" / "crds" / "run.tanzu.vmware.com_tanzukubernetesclusters.v1alpha3.yaml"

SERVICE_CLUSTER_IP_RANGE = "10.96.0.0/12"
SERVICE_ACCOUNT_ISSUER = "https://kubernetes.default.svc.cluster.local"
# Default-on admission plugins of 1.20 that only work with a controller-manager:
# ServiceAccount (waits for the token controller), ResourceQuota (rejects while a
# quota's status is unset), StorageObjectInUseProtection (finalizers nobody removes).
DISABLED_ADMISSION_PLUGINS = "ServiceAccount,ResourceQuota,StorageObjectInUseProtection"
START_TIMEOUT_S = 60.0

FIXTURE_NAME = "kube_apiserver"


# --------------------------------------------------------------------------------------
# Building the binaries
# --------------------------------------------------------------------------------------

class KubeBuildError(RuntimeError):
    """scripts/build_kube_apiserver.sh failed or left no binaries."""


_build_error: str | None = None


def binaries_present() -> bool:
    return all(p.is_file() and os.access(p, os.X_OK) for p in (KUBE_APISERVER_BIN, ETCD_BIN))


def _log_tail(path: Path, lines: int = 40) -> str:
    try:
        return "\n".join(path.read_text(errors="replace").splitlines()[-lines:])
    except OSError:
        return "(no log)"


def ensure_binaries() -> None:
    """Run the build script when the cached binaries are missing; raise KubeBuildError on failure."""
    if binaries_present():
        return
    started = time.monotonic()
    log_path = BUILD_LOG
    try:
        KUBE_CACHE.mkdir(parents=True, exist_ok=True)
    except OSError:
        # the script reports why it cannot use the cache; keep its log elsewhere
        log_path = Path(tempfile.mkstemp(prefix="build_kube_apiserver-", suffix=".log")[1])
    rc: int | str
    try:
        with log_path.open("w") as log:
            rc = subprocess.run(
                ["bash", str(BUILD_SCRIPT)],
                stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT,
                timeout=BUILD_TIMEOUT_S, cwd=REPO,
            ).returncode
    except subprocess.TimeoutExpired:
        rc = f"timeout after {BUILD_TIMEOUT_S} s"
    except OSError as exc:
        rc = f"could not run: {exc}"
    if rc != 0 or not binaries_present():
        raise KubeBuildError(
            f"{BUILD_SCRIPT.relative_to(REPO)} failed (exit {rc}) after {time.monotonic() - started:.0f} s; "
            f"kube-apiserver and etcd are needed in {KUBE_CACHE / 'bin'}. Full log: {log_path}\n"
            f"--- last lines ---\n{_log_tail(log_path, 15)}"
        )


def _needs_server(item: pytest.Item) -> bool:
    return FIXTURE_NAME in getattr(item, "fixturenames", ()) or item.get_closest_marker("apiserver") is not None


def pytest_collection_modifyitems(config, items):
    for item in items:
        if FIXTURE_NAME in getattr(item, "fixturenames", ()) and item.get_closest_marker("apiserver") is None:
            item.add_marker(pytest.mark.apiserver)


def pytest_collection_finish(session):
    """Build the binaries before any test runs, so the build is not charged to one test's timeout."""
    global _build_error
    if session.config.option.collectonly or binaries_present():
        return
    if not any(_needs_server(item) for item in session.items):
        return
    reporter = session.config.pluginmanager.get_plugin("terminalreporter")
    say = reporter.write_line if reporter is not None else (lambda s: print(s, file=sys.stderr))
    say(f"kube-apiserver/etcd not in {KUBE_CACHE / 'bin'}: running {BUILD_SCRIPT.relative_to(REPO)} "
        f"(several minutes; log {BUILD_LOG})")
    started = time.monotonic()
    try:
        ensure_binaries()
    except KubeBuildError as exc:
        _build_error = str(exc)
        say(f"kube-apiserver build FAILED after {time.monotonic() - started:.0f} s (see {BUILD_LOG})")
    else:
        say(f"kube-apiserver built in {time.monotonic() - started:.0f} s")


# --------------------------------------------------------------------------------------
# Talking to the server
# --------------------------------------------------------------------------------------

class KubeApiError(Exception):
    """The API server answered with an error; ``message`` is the server's own text."""

    def __init__(self, status: int, reason: str, message: str, body: Any = None, method: str = "", path: str = ""):
        self.status = status
        self.reason = reason
        self.message = message
        self.body = body
        self.method = method
        self.path = path
        super().__init__(f"{method} {path}: HTTP {status} {reason}: {message}")

    @property
    def causes(self) -> list[dict]:
        """``details.causes`` of a Status answer (one per invalid field), or []."""
        if isinstance(self.body, dict):
            return list((self.body.get("details") or {}).get("causes") or [])
        return []


def api_request(api: kubernetes.client.ApiClient, method: str, path: str, *, body: Any = None,
                query: dict[str, Any] | None = None, content_type: str = "application/json",
                timeout: float = 30.0) -> Any:
    """One raw request through ``api`` (its host, TLS and token); returns the decoded JSON answer.

    Raises KubeApiError for any non-2xx answer, with the server's Status message.
    """
    headers = {"Accept": "application/json", "Content-Type": content_type}
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


_discovery: "weakref.WeakKeyDictionary[kubernetes.client.ApiClient, dict[str, list[dict]]]" = weakref.WeakKeyDictionary()


def resource_info(api: kubernetes.client.ApiClient, api_version: str, kind: str, *, wait_s: float = 5.0) -> ResourceInfo:
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


def _split(manifest: dict) -> tuple[str, str, dict]:
    try:
        return manifest["apiVersion"], manifest["kind"], manifest.setdefault("metadata", {})
    except (KeyError, TypeError, AttributeError):
        raise ValueError(f"not a Kubernetes object (needs apiVersion, kind): {manifest!r:.200}") from None


def apply_manifest(api: kubernetes.client.ApiClient, manifest: dict, *, dry_run: bool = False,
                   namespace: str | None = None, update_existing: bool = False,
                   field_manager: str = "dask-tkg-tests", discovery_wait_s: float = 5.0) -> Any:
    """Create the object ``manifest`` (any kind the server serves: core, apps, rbac, storage, CRs).

    Returns the server's answer (the object as stored, or as it would be with ``dry_run``:
    server-side dry run, ``dryRun=All``, which runs defaulting, admission and schema
    validation but stores nothing). A ``...List`` with ``items`` creates each item and
    returns a list. ``namespace`` is used for namespaced kinds whose manifest has none.
    With ``update_existing`` an object that already exists is replaced (PUT with its
    current resourceVersion) instead of failing with AlreadyExists. An unknown kind is
    looked up again for ``discovery_wait_s`` seconds (for CRDs created a moment ago).
    The manifest passed in is not modified. Raises KubeApiError with the server's message.
    """
    if manifest.get("kind", "").endswith("List") and isinstance(manifest.get("items"), list):
        return [apply_manifest(api, item, dry_run=dry_run, namespace=namespace,
                               update_existing=update_existing, field_manager=field_manager,
                               discovery_wait_s=discovery_wait_s)
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
    query = {"dryRun": "All" if dry_run else None, "fieldManager": field_manager}
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


# --------------------------------------------------------------------------------------
# The TanzuKubernetesCluster CRD
# --------------------------------------------------------------------------------------

def load_tkc_crd() -> dict:
    """VMware's v1alpha2 TKC CRD, read unchanged, plus the project's v1alpha3 version entry.

    One CRD object serves both versions (v1alpha2 stays the storage version), as on
    a vSphere 8 Supervisor. The cached file is only read, never written.
    """
    v2_file = artifacts.artifact_path(TKC_CRD_V1ALPHA2)
    docs = [d for d in yaml.safe_load_all(v2_file.read_text()) if d]
    if len(docs) != 1 or docs[0].get("kind") != "CustomResourceDefinition":
        raise ValueError(f"{v2_file}: expected one CustomResourceDefinition")
    crd = docs[0]
    v3 = yaml.safe_load(TKC_V1ALPHA3_VERSION.read_text())
    if not isinstance(v3, dict) or v3.get("name") != "v1alpha3" or "schema" not in v3:
        raise ValueError(f"{TKC_V1ALPHA3_VERSION}: expected one spec.versions entry named v1alpha3")
    if v3.get("storage"):
        raise ValueError(f"{TKC_V1ALPHA3_VERSION}: v1alpha2 is the storage version; v1alpha3 must say storage: false")
    versions = [v for v in crd["spec"]["versions"] if v.get("name") != "v1alpha3"]
    crd["spec"]["versions"] = versions + [v3]
    crd["metadata"].pop("creationTimestamp", None)  # controller-gen writes null
    crd.pop("status", None)
    return crd


def load_crd(file: str) -> dict:
    """The one CustomResourceDefinition in the pinned artifact ``file``, as upstream wrote it.

    The cached file is only read; the CRD is installed as it is, so that a test sees the
    upstream schema and not a copy of it.
    """
    path = artifacts.artifact_path(file)
    docs = [d for d in yaml.safe_load_all(path.read_text()) if d]
    if len(docs) != 1 or docs[0].get("kind") != "CustomResourceDefinition":
        raise ValueError(f"{path}: expected one CustomResourceDefinition")
    return docs[0]


def install_crd(api: kubernetes.client.ApiClient, crd: dict, timeout_s: float = 30.0) -> dict:
    """Create (or replace) a CRD and wait until it is Established and every served version is discoverable."""
    apply_manifest(api, crd, update_existing=True)
    name = crd["metadata"]["name"]
    group = crd["spec"]["group"]
    kind = crd["spec"]["names"]["kind"]
    deadline = time.monotonic() + timeout_s
    while True:
        current = get_object(api, "apiextensions.k8s.io/v1", "CustomResourceDefinition", name)
        conditions = {c["type"]: c for c in (current.get("status") or {}).get("conditions") or []}
        if conditions.get("Established", {}).get("status") == "True":
            break
        if time.monotonic() > deadline:
            raise TimeoutError(f"CRD {name} not Established after {timeout_s} s: {conditions}")
        time.sleep(0.1)
    for version in crd["spec"]["versions"]:
        if version.get("served", True):
            resource_info(api, f"{group}/{version['name']}", kind, wait_s=max(deadline - time.monotonic(), 1.0))
    return current


# --------------------------------------------------------------------------------------
# Running etcd + kube-apiserver
# --------------------------------------------------------------------------------------

def _free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _openssl(*args: str, cwd: Path) -> None:
    subprocess.run(["openssl", *args], cwd=cwd, check=True, stdin=subprocess.DEVNULL,
                   stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, timeout=60)


def make_pki(pki: Path) -> None:
    """A throw-away CA, a serving certificate for 127.0.0.1/localhost, and service-account keys.

    ECDSA P-256 throughout (the API server takes ECDSA serving certificates and
    signs service-account tokens with ES256): key generation is instant, where
    three RSA-2048 keys take about 2 s on these machines.
    """
    pki.mkdir(parents=True, exist_ok=True)
    ec = ("-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes")
    _openssl("req", "-x509", *ec, "-keyout", "ca.key", "-out", "ca.crt",
             "-days", "3", "-subj", "/CN=dask-tkg-test-ca",
             "-addext", "basicConstraints=critical,CA:TRUE",
             "-addext", "keyUsage=critical,keyCertSign,cRLSign", cwd=pki)
    (pki / "serving.ext").write_text(
        "subjectAltName=IP:127.0.0.1,DNS:localhost,DNS:kubernetes,DNS:kubernetes.default,"
        "DNS:kubernetes.default.svc\n"
        "basicConstraints=critical,CA:FALSE\n"
        "keyUsage=critical,digitalSignature\n"
        "extendedKeyUsage=serverAuth\n"
        "subjectKeyIdentifier=hash\n"
        "authorityKeyIdentifier=keyid,issuer\n")
    _openssl("req", *ec, "-keyout", "apiserver.key", "-out", "apiserver.csr",
             "-subj", "/CN=kube-apiserver", cwd=pki)
    _openssl("x509", "-req", "-in", "apiserver.csr", "-CA", "ca.crt", "-CAkey", "ca.key", "-CAcreateserial",
             "-out", "apiserver.crt", "-days", "3", "-extfile", "serving.ext", cwd=pki)
    _openssl("ecparam", "-name", "prime256v1", "-genkey", "-noout", "-out", "sa.key", cwd=pki)
    _openssl("ec", "-in", "sa.key", "-pubout", "-out", "sa.pub", cwd=pki)


def _die_with_parent() -> list[str]:
    """The command prefix that gives the child SIGTERM when pytest dies (PR_SET_PDEATHSIG,
    kept across exec), through util-linux's ``setpriv`` (Essential in Debian).

    Not a ``preexec_fn``: with one, Python forks instead of vforking and, in the child before
    exec, runs Python code and the at-fork handlers of every library this process has loaded
    (BLAS and torch thread pools, the in-process Dask clusters of earlier tests), which the
    ``subprocess`` documentation warns can deadlock in a process with threads; a render test
    once waited 900 s in this fixture's setup after the Dask tests had run."""
    setpriv = shutil.which("setpriv") if sys.platform == "linux" else None
    return [setpriv, "--pdeathsig", "TERM", "--"] if setpriv else []


class _Process:
    """A child started in its own process group, so stopping it also stops its children.

    It also gets SIGTERM if the pytest process dies without tearing down (Linux).
    """

    def __init__(self, name: str, args: list[str], log: Path, cwd: Path):
        self.name = name
        self.log = log
        self._log_file = log.open("wb")
        self.proc = subprocess.Popen([*_die_with_parent(), *args], cwd=cwd, stdin=subprocess.DEVNULL,
                                     stdout=self._log_file, stderr=subprocess.STDOUT, start_new_session=True)

    def alive(self) -> bool:
        return self.proc.poll() is None

    def stop(self, grace_s: float = 10.0) -> None:
        pgid = self.proc.pid  # start_new_session: the child leads its own group
        for sig, wait_s in ((signal.SIGTERM, grace_s), (signal.SIGKILL, 5.0)):
            try:
                os.killpg(pgid, sig)
            except ProcessLookupError:
                break
            try:
                self.proc.wait(timeout=wait_s)
                # the leader is gone; make sure nothing else of its group lingers
                try:
                    os.killpg(pgid, signal.SIGKILL)
                except ProcessLookupError:
                    pass
                break
            except subprocess.TimeoutExpired:
                continue
        self._log_file.close()

    def tail(self, lines: int = 30) -> str:
        self._log_file.flush()
        return _log_tail(self.log, lines)


@dataclass
class KubeAPIServer:
    """A running kube-apiserver (and its etcd) on 127.0.0.1."""

    url: str
    token: str
    api_client: kubernetes.client.ApiClient
    kubeconfig: Path
    ca_file: Path
    workdir: Path
    etcd_url: str
    users: dict[str, str] = field(default_factory=dict)
    version: dict = field(default_factory=dict)
    _processes: list[_Process] = field(default_factory=list, repr=False)

    def new_api_client(self, token: str | None = None) -> kubernetes.client.ApiClient:
        """A fresh client for this server, as the admin or with another token (see ``users``)."""
        return _api_client(self.url, self.ca_file, token or self.token)

    def logs(self, lines: int = 30) -> str:
        return "\n".join(f"--- {p.name} ({p.log}) ---\n{p.tail(lines)}" for p in self._processes)

    def stop(self) -> None:
        try:
            self.api_client.close()
        except Exception:  # noqa: BLE001 - closing is best effort
            pass
        for p in reversed(self._processes):
            p.stop()
        self._processes.clear()


def _api_client(url: str, ca_file: Path, token: str) -> kubernetes.client.ApiClient:
    # no_proxy: a proxy from the environment must never see loopback traffic
    cfg = kubernetes.client.Configuration(host=url, no_proxy="127.0.0.1,localhost")
    cfg.ssl_ca_cert = str(ca_file)
    cfg.verify_ssl = True
    cfg.api_key = {"authorization": token}
    cfg.api_key_prefix = {"authorization": "Bearer"}
    return kubernetes.client.ApiClient(cfg)


def _wait_http(url: str, ok, deadline: float, procs: list[_Process], what: str,
               context: ssl.SSLContext | None = None, headers: dict | None = None) -> bytes:
    last = ""
    opener = urllib.request.build_opener(urllib.request.ProxyHandler({}),  # never via a proxy
                                         urllib.request.HTTPSHandler(context=context))
    while True:
        for p in procs:
            if not p.alive():
                raise RuntimeError(f"{p.name} exited with {p.proc.returncode} while waiting for {what}:\n{p.tail()}")
        try:
            req = urllib.request.Request(url, headers=headers or {})
            with opener.open(req, timeout=2) as resp:
                body = resp.read()
                if ok(resp.status, body):
                    return body
                last = f"HTTP {resp.status}: {body[:300]!r}"
        except urllib.error.HTTPError as exc:
            last = f"HTTP {exc.code}: {exc.read()[:500]!r}"
        except (OSError, ValueError) as exc:
            last = repr(exc)
        if time.monotonic() > deadline:
            raise TimeoutError(f"{what} not ready after {START_TIMEOUT_S:.0f} s (last: {last})\n"
                               + "\n".join(f"--- {p.name} ---\n{p.tail()}" for p in procs))
        time.sleep(0.1)


def start_kube_apiserver(workdir: Path) -> KubeAPIServer:
    """Start etcd and kube-apiserver under ``workdir``; return once /readyz answers ok."""
    workdir.mkdir(parents=True, exist_ok=True)
    pki = workdir / "pki"
    make_pki(pki)
    admin_token = secrets.token_hex(24)
    users = {"alice": secrets.token_hex(24), "bob": secrets.token_hex(24)}
    # token,user,uid,"group1,group2"
    (workdir / "tokens.csv").write_text(
        f'{admin_token},admin,uid-admin,"system:masters"\n'
        f'{users["alice"]},alice,uid-alice,"developers"\n'
        f'{users["bob"]},bob,uid-bob\n')
    etcd_port, etcd_peer_port, api_port = _free_port(), _free_port(), _free_port()
    while len({etcd_port, etcd_peer_port, api_port}) < 3:
        api_port = _free_port()
    etcd_url = f"http://127.0.0.1:{etcd_port}"
    peer_url = f"http://127.0.0.1:{etcd_peer_port}"
    procs: list[_Process] = []
    try:
        procs.append(_Process("etcd", [
            str(ETCD_BIN), "--name=test", f"--data-dir={workdir / 'etcd-data'}",
            f"--listen-client-urls={etcd_url}", f"--advertise-client-urls={etcd_url}",
            f"--listen-peer-urls={peer_url}", f"--initial-advertise-peer-urls={peer_url}",
            f"--initial-cluster=test={peer_url}", "--initial-cluster-state=new",
            "--log-level=warn", "--logger=zap",
        ], workdir / "etcd.log", workdir))
        deadline = time.monotonic() + START_TIMEOUT_S
        _wait_http(f"{etcd_url}/health", lambda s, b: s == 200 and b'"true"' in b, deadline, procs, "etcd")

        url = f"https://127.0.0.1:{api_port}"
        procs.append(_Process("kube-apiserver", [
            str(KUBE_APISERVER_BIN),
            f"--etcd-servers={etcd_url}",
            "--bind-address=127.0.0.1", "--advertise-address=127.0.0.1", f"--secure-port={api_port}",
            f"--tls-cert-file={pki / 'apiserver.crt'}", f"--tls-private-key-file={pki / 'apiserver.key'}",
            f"--cert-dir={workdir / 'certs'}",
            f"--token-auth-file={workdir / 'tokens.csv'}",
            "--authorization-mode=RBAC",
            f"--service-account-key-file={pki / 'sa.pub'}",
            f"--service-account-signing-key-file={pki / 'sa.key'}",
            f"--service-account-issuer={SERVICE_ACCOUNT_ISSUER}",
            f"--api-audiences={SERVICE_ACCOUNT_ISSUER}",
            f"--service-cluster-ip-range={SERVICE_CLUSTER_IP_RANGE}",
            f"--disable-admission-plugins={DISABLED_ADMISSION_PLUGINS}",
            # the "kubernetes" Service's endpoints cannot point at 127.0.0.1 (loopback is
            # rejected): leave them alone instead of logging an error every 10 s
            "--endpoint-reconciler-type=none",
            "--allow-privileged=true",
            "--profiling=false",
            "--logtostderr=true", "--v=0",
        ], workdir / "kube-apiserver.log", workdir))
        ctx = ssl.create_default_context(cafile=str(pki / "ca.crt"))
        auth = {"Authorization": f"Bearer {admin_token}"}
        _wait_http(f"{url}/readyz", lambda s, b: s == 200 and b.strip() == b"ok", deadline, procs,
                   "kube-apiserver /readyz", context=ctx, headers=auth)
        version = json.loads(_wait_http(f"{url}/version", lambda s, b: s == 200, deadline, procs,
                                         "kube-apiserver /version", context=ctx, headers=auth))
    except BaseException:
        for p in reversed(procs):
            p.stop()
        raise

    kubeconfig = workdir / "kubeconfig.yaml"
    kubeconfig.write_text(yaml.safe_dump({
        "apiVersion": "v1", "kind": "Config",
        "clusters": [{"name": "test", "cluster": {"server": url, "certificate-authority": str(pki / "ca.crt")}}],
        "users": [{"name": "admin", "user": {"token": admin_token}}]
                 + [{"name": n, "user": {"token": t}} for n, t in users.items()],
        "contexts": [{"name": "test", "context": {"cluster": "test", "user": "admin", "namespace": "default"}}],
        "current-context": "test",
    }, sort_keys=False))
    kubeconfig.chmod(0o600)
    return KubeAPIServer(url=url, token=admin_token, api_client=_api_client(url, pki / "ca.crt", admin_token),
                         kubeconfig=kubeconfig, ca_file=pki / "ca.crt", workdir=workdir, etcd_url=etcd_url,
                         users=users, version=version, _processes=procs)


# --------------------------------------------------------------------------------------
# Fixtures
# --------------------------------------------------------------------------------------

@pytest.fixture(scope="session")
def kube_apiserver(tmp_path_factory) -> Iterator[KubeAPIServer]:
    """A real kube-apiserver v1.20.2 + etcd on 127.0.0.1 for the whole session (admin token auth, RBAC)."""
    if _build_error is not None:
        pytest.fail(_build_error, pytrace=False)
    try:
        ensure_binaries()
    except KubeBuildError as exc:
        pytest.fail(str(exc), pytrace=False)
    server = None
    errors = []
    for _attempt in range(2):  # a free port may be taken between probing and binding
        workdir = tmp_path_factory.mktemp("kube-apiserver")
        try:
            server = start_kube_apiserver(workdir)
            break
        except (RuntimeError, TimeoutError, subprocess.CalledProcessError) as exc:
            detail = exc.stderr.decode(errors="replace") if isinstance(exc, subprocess.CalledProcessError) else ""
            errors.append(f"{exc}\n{detail}".strip())
    if server is None:
        pytest.fail("could not start etcd + kube-apiserver:\n" + "\n\n".join(errors), pytrace=False)
    try:
        yield server
    finally:
        server.stop()


@pytest.fixture(scope="session")
def tkc_crd(kube_apiserver: KubeAPIServer) -> dict:
    """The TanzuKubernetesCluster CRD (v1alpha2 storage + v1alpha3), installed and served."""
    return install_crd(kube_apiserver.api_client, load_tkc_crd())


@pytest.fixture(scope="session")
def capi_crds(kube_apiserver: KubeAPIServer) -> dict[str, dict]:
    """Cluster API's Cluster, ClusterClass and MachineDeployment CRDs, installed and served, by kind.

    The 1.20 server takes all three unchanged: none uses a schema feature newer than 1.20
    (``x-kubernetes-validations`` appears in ClusterClass only as the name of a property of
    its variable schemas, not as a rule). Only v1beta1 is served; the old versions are
    listed with ``served: false``, so no conversion webhook is needed.
    """
    held = [install_crd(kube_apiserver.api_client, load_crd(file)) for file in CAPI_CRDS]
    return {crd["spec"]["names"]["kind"]: crd for crd in held}


@pytest.fixture(scope="session")
def operator_crds(kube_apiserver: KubeAPIServer) -> dict[str, dict]:
    """kind -> the Dask operator's CRD as the server holds it (DaskCluster, DaskWorkerGroup, ...),
    from the pinned dask-kubernetes-operator chart's ``crds/``."""
    from tests.operator.support import chart_crds

    return {crd["spec"]["names"]["kind"]: install_crd(kube_apiserver.api_client, crd) for crd in chart_crds()}


_NS_UNSAFE = re.compile(r"[^a-z0-9-]+")


@pytest.fixture
def kube_namespace(kube_apiserver: KubeAPIServer, request) -> str:
    """A fresh namespace named after the test. It is left behind: without a
    controller-manager a deleted namespace never finishes terminating."""
    base = _NS_UNSAFE.sub("-", request.node.name.lower()).strip("-")[:48].strip("-") or "t"
    name = f"{base}-{secrets.token_hex(3)}"
    apply_manifest(kube_apiserver.api_client,
                   {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name}})
    return name
