"""A ``requests`` session for the Kubernetes API server a kubeconfig names.

The product does not depend on the ``kubernetes`` client package, so the dynamic providers
that read the Supervisor parse the kubeconfig themselves: the current context's cluster
(``server``; ``certificate-authority-data`` or ``certificate-authority``, which are verified
against; ``insecure-skip-tls-verify``) and user (``token`` or ``tokenFile``, or a client
certificate and key as ``-data`` or files). Exec and auth-provider plugins are refused by
name: the program's own kubeconfigs (``supervisor_access``) never use them.
"""
from __future__ import annotations

import base64
import contextlib
import os
import ssl
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

import requests
import requests.adapters
import yaml


class KubeconfigError(ValueError):
    """The kubeconfig cannot be used (its text is never part of the message)."""


class KubeApiError(RuntimeError):
    """The API server answered with an error, or could not be reached."""

    def __init__(self, message: str, status: int | None = None):
        super().__init__(message)
        self.status = status


@dataclass(frozen=True)
class ApiTarget:
    """Where the API server is and how to trust and authenticate to it."""

    server: str
    ca_pem: str | None = None
    insecure: bool = False
    token: str | None = field(default=None, repr=False)
    client_cert_pem: str | None = field(default=None, repr=False)
    client_key_pem: str | None = field(default=None, repr=False)


def _named(doc: dict[str, Any], section: str, name: str) -> dict[str, Any]:
    for entry in doc.get(section) or []:
        if isinstance(entry, dict) and entry.get("name") == name:
            return entry.get(section[:-1]) or {}
    raise KubeconfigError(f"the kubeconfig has no {section[:-1]} named {name!r}")


def _data_or_file(entry: dict[str, Any], key: str) -> str | None:
    """``<key>-data`` (base64) or ``<key>`` (a path), as text."""
    if entry.get(f"{key}-data"):
        return base64.b64decode(entry[f"{key}-data"]).decode()
    if entry.get(key):
        with open(os.path.expanduser(entry[key]), encoding="utf-8") as handle:
            return handle.read()
    return None


def _user(user: dict[str, Any]) -> dict[str, Any]:
    for plugin in ("exec", "auth-provider"):
        if user.get(plugin):
            raise KubeconfigError(f"the kubeconfig's user authenticates through {plugin!r}, which is not supported")
    token = user.get("token")
    if not token and user.get("tokenFile"):
        with open(os.path.expanduser(user["tokenFile"]), encoding="utf-8") as handle:
            token = handle.read().strip()
    return {"token": token or None, "client_cert_pem": _data_or_file(user, "client-certificate"),
            "client_key_pem": _data_or_file(user, "client-key")}


def kubeconfig_document(text: str, what: str = "the kubeconfig",
                        error: type[ValueError] = KubeconfigError) -> dict[str, Any]:
    """The kubeconfig's YAML as a mapping, else ``error`` naming ``what`` (never its text,
    which may hold credentials)."""
    try:
        doc = yaml.safe_load(text)
    except yaml.YAMLError:
        raise error(f"{what} is not YAML") from None
    if not isinstance(doc, dict):
        raise error(f"{what} is not a mapping")
    return doc


def parse_kubeconfig(text: str) -> ApiTarget:
    """The current context's server, trust and credentials."""
    doc = kubeconfig_document(text)
    context = _named(doc, "contexts", doc.get("current-context") or "")
    cluster = _named(doc, "clusters", context.get("cluster") or "")
    if not cluster.get("server"):
        raise KubeconfigError(f"the kubeconfig's cluster {context.get('cluster')!r} has no server")
    return ApiTarget(server=cluster["server"].rstrip("/"), ca_pem=_data_or_file(cluster, "certificate-authority"),
                     insecure=bool(cluster.get("insecure-skip-tls-verify")),
                     **_user(_named(doc, "users", context.get("user") or "")))


class ContextAdapter(requests.adapters.HTTPAdapter):
    """Verifies the server with our own ``ssl.SSLContext`` (a CA given as PEM text, which
    ``requests``' ``verify=`` cannot take: it wants a file)."""

    def __init__(self, context: ssl.SSLContext):
        self._context = context
        super().__init__()

    def init_poolmanager(self, *args: Any, **kwargs: Any) -> None:
        kwargs["ssl_context"] = self._context
        super().init_poolmanager(*args, **kwargs)


def _ssl_context(target: ApiTarget, workdir: str) -> ssl.SSLContext:
    context = ssl.create_default_context(cadata=target.ca_pem) if target.ca_pem else ssl.create_default_context()
    if target.insecure and not target.ca_pem:
        context.check_hostname = False
        context.verify_mode = ssl.CERT_NONE
    if target.client_cert_pem and target.client_key_pem:
        cert, key = os.path.join(workdir, "client.crt"), os.path.join(workdir, "client.key")
        for path, text in ((cert, target.client_cert_pem), (key, target.client_key_pem)):
            with open(os.open(path, os.O_WRONLY | os.O_CREAT, 0o600), "w", encoding="utf-8") as handle:
                handle.write(text)
        context.load_cert_chain(cert, key)  # read at once: the files go with the workdir
    return context


@contextlib.contextmanager
def api_session(target: ApiTarget) -> Iterator[requests.Session]:
    """A session that trusts the kubeconfig's CA (or, only when it says so, nothing) and
    sends its credentials."""
    with tempfile.TemporaryDirectory(prefix="dask-tkg-kube-") as workdir, requests.Session() as session:
        session.mount("https://", ContextAdapter(_ssl_context(target, workdir)))
        session.headers["Accept"] = "application/json"
        if target.token:
            session.headers["Authorization"] = f"Bearer {target.token}"
        yield session


def get_json(session: requests.Session, target: ApiTarget, path: str, params: dict[str, str] | None = None,
             timeout: float = 30.0) -> Any:
    """``GET`` ``path`` on the server; KubeApiError (with the status) for an error answer."""
    url = target.server + path
    verify = not (target.insecure and not target.ca_pem)  # per request: REQUESTS_CA_BUNDLE would override
    try:
        response = session.get(url, params=params, timeout=timeout, verify=verify)
    except requests.RequestException as exc:
        raise KubeApiError(f"GET {url}: {type(exc).__name__}: {exc}") from None
    if response.status_code >= 400:
        raise KubeApiError(f"GET {url}: HTTP {response.status_code} {response.reason}: {_message(response)}",
                           response.status_code)
    try:
        return response.json()
    except ValueError:
        raise KubeApiError(f"GET {url}: the answer is not JSON: {response.text[:200]!r}") from None


def _message(response: requests.Response) -> str:
    try:
        body = response.json()
    except ValueError:
        text: str = response.text[:300]
        return text
    return str(body.get("message") or body)[:300] if isinstance(body, dict) else str(body)[:300]
