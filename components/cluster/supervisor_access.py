"""Credentials for the Supervisor's Kubernetes API.

Either an admin kubeconfig given as a secret setting, or a token obtained the way
``kubectl vsphere login`` does: ``POST https://<supervisor>/wcp/login`` with the vCenter
credentials (basic auth) returns ``{"session_id": <token>}``, valid about 10 hours.
"""
from __future__ import annotations

import base64
import ssl
from typing import TYPE_CHECKING, Any

import requests
import yaml

from components.cluster.providers.kube_api import ContextAdapter

if TYPE_CHECKING:
    import pulumi

    from components.settings.model import Settings


class SupervisorLoginError(RuntimeError):
    """The Supervisor refused the login or could not be reached (no credentials in it)."""


def _session(ca_pem: str | None, insecure: bool) -> requests.Session:
    session = requests.Session()
    if ca_pem:
        session.mount("https://", ContextAdapter(ssl.create_default_context(cadata=ca_pem)))
    elif insecure:
        session.verify = False
    return session


def login(server: str, user: str, password: str, *, insecure: bool = False, ca_pem: str | None = None,
          timeout: float = 30.0) -> str:
    """Return a Supervisor session token for ``user``."""
    url = f"https://{server}/wcp/login"
    with _session(ca_pem, insecure) as session:
        try:
            # verify= per request: REQUESTS_CA_BUNDLE in the environment would override the session's
            response = session.post(url, json={}, auth=(user, password), timeout=timeout,
                                    verify=not (insecure and not ca_pem))
        except requests.RequestException as exc:
            raise SupervisorLoginError(f"cannot reach the Supervisor at {url}: {_reason(exc)}") from None
    if response.status_code >= 400:
        raise SupervisorLoginError(f"login at {url} as {user} failed: HTTP {response.status_code} {response.reason}")
    try:
        body = response.json() if response.content else {}
    except ValueError:
        raise SupervisorLoginError(f"login at {url} answered something that is not JSON") from None
    token = body.get("session_id") if isinstance(body, dict) else None
    if not token:
        raise SupervisorLoginError(f"login at {url} as {user} returned no session_id")
    session_id: str = token
    return session_id


def _reason(exc: requests.RequestException) -> str:
    """The innermost cause (e.g. the certificate error), without the URL repeated."""
    inner = exc
    while inner.__cause__ is not None or inner.__context__ is not None:
        inner = inner.__cause__ or inner.__context__
    return f"{type(inner).__name__}: {inner}" if inner is not exc else str(exc)


def kubeconfig(server: str, token: str, namespace: str, *, insecure: bool = False,
               ca_pem: str | None = None) -> str:
    """A kubeconfig for the Supervisor API at ``server`` with a bearer ``token``."""
    cluster: dict[str, Any] = {"server": f"https://{server}:6443"}
    if ca_pem:
        cluster["certificate-authority-data"] = base64.b64encode(ca_pem.encode()).decode()
    elif insecure:
        cluster["insecure-skip-tls-verify"] = True
    doc = {
        "apiVersion": "v1",
        "kind": "Config",
        "clusters": [{"name": "supervisor", "cluster": cluster}],
        "users": [{"name": "supervisor-user", "user": {"token": token}}],
        "contexts": [{"name": "supervisor", "context": {
            "cluster": "supervisor", "user": "supervisor-user", "namespace": namespace}}],
        "current-context": "supervisor",
    }
    text: str = yaml.safe_dump(doc, sort_keys=False)
    return text


def supervisor_kubeconfig(settings: Settings) -> pulumi.Output[str]:
    """The Supervisor kubeconfig as a secret Output: the configured one, else a login."""
    import pulumi

    if settings.supervisor.kubeconfig is not None:
        return pulumi.Output.secret(settings.supervisor.kubeconfig)
    server, user, insecure = settings.supervisor.server, settings.vsphere.user, settings.vsphere.insecure
    namespace, ca_pem = settings.namespace.name, settings.supervisor.ca_pem or None
    return pulumi.Output.secret(pulumi.Output.from_input(settings.vsphere.password).apply(
        lambda password: login_kubeconfig(server, user, password, namespace, insecure=insecure, ca_pem=ca_pem)))


def login_kubeconfig(server: str, user: str, password: str, namespace: str, *, insecure: bool = False,
                     ca_pem: str | None = None) -> str:
    """Log in and return the token's kubeconfig. With ``ca_pem`` (supervisorCaPem) the
    Supervisor's certificate is verified against it, for the login and in the kubeconfig,
    whatever ``insecure`` says. The token lasts about 10 hours (see supervisorKubeconfig)."""
    verify_off = insecure and not ca_pem
    token = login(server, user, password, insecure=verify_off, ca_pem=ca_pem)
    return kubeconfig(server, token, namespace, insecure=verify_off, ca_pem=ca_pem)
