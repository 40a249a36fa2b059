"""Connections to vCenter for the dynamic providers: SOAP (vim, SPBM, vSAN) and REST.

Providers are pickled by Pulumi, so they hold no live connection: each provider
method builds a :class:`VCenterConnection` from its plain inputs and opens what
it needs with :func:`vcenter`, :func:`pbm_service`, :func:`vsan_stub` or
:func:`rest_api`.

The password never appears in a log line, a repr or an exception message: the
dataclass hides it from ``repr`` and every error raised here passes through
:meth:`VCenterConnection.scrub`.
"""

from __future__ import annotations

import contextlib
import logging
import os
import ssl
import tempfile
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import requests

logger = logging.getLogger(__name__)

#: Provider properties that describe the connection rather than the resource.
CONNECTION_KEYS = ("server", "user", "password", "insecure", "ca_pem", "port")

#: SPBM API version used on the ``/pbm/sdk`` stub. ``version1`` (vSphere 5.5) would
#: silently drop ``CapabilityBasedProfileCreateSpec.category``; 6.5 carries it.
PBM_VERSION = "pbm.version.version11"
#: vSAN management API version on ``/vsanHealth``: vSAN 7.0, the first with the
#: file service; every field this project sends exists in it.
VSAN_VERSION = "vsan.version.version12"


class VCenterError(RuntimeError):
    """A vCenter call failed; the message names the server and never the password."""


@dataclass(frozen=True)
class VCenterConnection:
    """Where and how to reach one vCenter, from plain (picklable) inputs.

    Parameters
    ----------
    server
        Host name or IP address, without scheme or path.
    user, password
        vCenter SSO credentials.
    insecure
        Skip TLS verification (lab use only) unless ``ca_pem`` is given.
    ca_pem
        PEM text of the CA (or self-signed certificate) that signed vCenter's
        certificate (the setting ``vcenterCaPem``); verified even with ``insecure``,
        which the bridged vSphere provider may still need. The system trust store is
        used when unset.
    port
        HTTPS port.
    """

    server: str
    user: str
    password: str = field(repr=False)
    insecure: bool = False
    ca_pem: str | None = field(default=None, repr=False)
    port: int = 443

    def __post_init__(self) -> None:
        if not self.server or "/" in self.server or " " in self.server:
            raise ValueError(f"server: expected a host name or IP address, got {self.server!r}")
        if not self.user:
            raise ValueError("user: must not be empty")
        if not self.password:
            raise ValueError(f"password: must not be empty (user {self.user!r})")
        if not 0 < int(self.port) < 65536:
            raise ValueError(f"port: expected 1-65535, got {self.port!r}")

    @classmethod
    def from_props(cls, props: Mapping[str, Any]) -> VCenterConnection:
        """Build from a provider's property bag (see :data:`CONNECTION_KEYS`)."""
        from pulumi.runtime.rpc import unwrap_rpc_secret

        values = {k: unwrap_rpc_secret(props.get(k)) for k in CONNECTION_KEYS}
        missing = [k for k in ("server", "user", "password") if not values[k]]
        if missing:
            raise ValueError(f"vCenter connection: {', '.join(missing)} not set")
        return cls(
            server=values["server"],
            user=values["user"],
            password=values["password"],
            insecure=bool(values["insecure"] or False),
            ca_pem=values["ca_pem"] or None,
            port=int(values["port"] or 443),
        )

    def props(self) -> dict[str, Any]:
        """The connection as provider properties (the inverse of :meth:`from_props`)."""
        return {k: getattr(self, k) for k in CONNECTION_KEYS}

    def describe(self) -> str:
        """``user@server:port``, for messages."""
        return f"{self.user}@{self.server}:{self.port}"

    @property
    def base_url(self) -> str:
        return f"https://{self.server}:{self.port}"

    def scrub(self, text: object) -> str:
        """``str(text)`` with the password replaced by ``***``."""
        return str(text).replace(self.password, "***")

    @property
    def verifies(self) -> bool:
        """Whether vCenter's certificate is checked: always with a CA, else unless ``insecure``."""
        return bool(self.ca_pem) or not self.insecure

    def ssl_context(self) -> ssl.SSLContext:
        """A client context that verifies vCenter against ``ca_pem`` (else the system store),
        or, with ``insecure`` and no CA, checks nothing."""
        if self.ca_pem:
            return ssl.create_default_context(cadata=self.ca_pem)
        if self.insecure:
            ctx = ssl.create_default_context()
            ctx.check_hostname = False
            ctx.verify_mode = ssl.CERT_NONE
            return ctx
        return ssl.create_default_context()


@contextlib.contextmanager
def guarded(conn: VCenterConnection, action: str) -> Iterator[None]:
    """Re-raise any failure inside as :class:`VCenterError` naming ``action``, password scrubbed."""
    try:
        yield
    except VCenterError as exc:
        if conn.password in str(exc):
            exc.args = (conn.scrub(exc),)
        raise exc from None
    except Exception as exc:
        detail = getattr(exc, "msg", None) or str(exc) or type(exc).__name__
        raise VCenterError(
            f"{action} on vCenter {conn.describe()} failed: {type(exc).__name__}: {conn.scrub(detail)}"
        ) from None


def connect(conn: VCenterConnection) -> Any:
    """Log in to vCenter's vim API; returns the pyVmomi ``ServiceInstance``.

    Raises
    ------
    VCenterError
        When the server cannot be reached, its certificate is not trusted or the
        login is refused.
    """
    from pyVim.connect import SmartStubAdapter
    from pyVmomi import vim

    stub = None
    try:
        # Negotiates the newest API version both sides speak, without logging in, so that a
        # refused login can still close the stub's connection (SmartConnect cannot).
        stub = SmartStubAdapter(
            host=conn.server, port=conn.port, sslContext=conn.ssl_context(), disableSslCertValidation=not conn.verifies
        )
        si = vim.ServiceInstance("ServiceInstance", stub)
        manager = si.content.sessionManager
        if manager is None:  # an ESXi host's own endpoint, or a proxy that is not vCenter
            raise VCenterError(f"{conn.describe()} offers no session manager: not a vCenter endpoint")
        manager.Login(conn.user, conn.password, None)
        return si
    except vim.fault.InvalidLogin as exc:
        message = f"login to vCenter {conn.describe()} refused: {exc.msg}"
    except ssl.SSLCertVerificationError as exc:
        message = (
            f"vCenter {conn.server}:{conn.port} presented a certificate that is not trusted "
            f"({exc.verify_message}); give its CA as vcenterCaPem"
        )
    except Exception as exc:
        detail = getattr(exc, "msg", None) or str(exc) or type(exc).__name__
        message = f"cannot connect to vCenter {conn.describe()}: {type(exc).__name__}: {detail}"
    if stub is not None:
        stub.DropConnections()
    raise VCenterError(conn.scrub(message))


def disconnect(si: Any) -> None:
    """Log out, ignoring errors (the session expires on its own)."""
    from pyVim.connect import Disconnect

    try:
        Disconnect(si)
    except Exception:
        logger.debug("logout failed; the vCenter session will expire on its own")
    for stub in getattr(si._stub, "sibling_stubs", ()):
        stub.DropConnections()


@contextlib.contextmanager
def vcenter(conn: VCenterConnection, action: str = "vCenter call") -> Iterator[Any]:
    """``with vcenter(conn, "creating X") as si:`` - log in, guard errors, log out."""
    with guarded(conn, action):
        si = connect(conn)
        try:
            yield si
        finally:
            disconnect(si)


def session_id(cookie: str) -> str:
    """The ``vmware_soap_session`` value of the vim stub's cookie (quoted on vCenter)."""
    from http.cookies import CookieError, SimpleCookie

    try:
        morsel = SimpleCookie(cookie or "").get("vmware_soap_session")
    except CookieError:
        morsel = None
    if morsel is None or not morsel.value:
        raise VCenterError("the vim session has no vmware_soap_session cookie to hand to SPBM")
    return morsel.value


def _sibling_stub(si: Any, path: str, version: str, request_context: Mapping[str, str] | None = None) -> Any:
    """A SOAP stub for another endpoint of the same vCenter, sharing the vim session."""
    from pyVmomi import SoapStubAdapter

    stub = si._stub
    sibling = SoapStubAdapter(
        url=f"https://{stub.host}{path}",
        version=version,
        sslContext=stub.schemeArgs.get("context"),
        requestContext=dict(request_context or {}),
    )
    # /vsanHealth takes the vim session's HTTP cookie (VMware's vsanapiutils does the same).
    sibling.cookie = stub.cookie
    # Remembered on the vim stub so that disconnect() closes their connections too.
    stub.sibling_stubs = [*getattr(stub, "sibling_stubs", ()), sibling]
    return sibling


def pbm_service(si: Any) -> Any:
    """SPBM ``ServiceInstanceContent`` (``/pbm/sdk``) authenticated with ``si``'s session.

    SPBM reads the session from the ``vcSessionCookie`` SOAP header, not from the HTTP
    cookie: pyVmomi's SPBM samples put the vim session id in the stub's request
    context, and govmomi's ``pbm/client_test.go`` (TestClientCookie) shows the server
    answering NotAuthenticated when only the cookie is sent.
    """
    from pyVmomi import pbm

    stub = _sibling_stub(si, "/pbm/sdk", PBM_VERSION, {"vcSessionCookie": session_id(si._stub.cookie)})
    return pbm.ServiceInstance("ServiceInstance", stub).RetrieveContent()


def vsan_stub(si: Any) -> Any:
    """SOAP stub for vCenter's vSAN management endpoint (``/vsanHealth``)."""
    return _sibling_stub(si, "/vsanHealth", VSAN_VERSION)


class _VCenterHTTP(requests.Session):
    """A session whose ``verify`` wins over ``REQUESTS_CA_BUNDLE``.

    requests lets the environment's CA bundle override ``Session.verify`` unless
    ``verify`` is passed per request, so every request passes it.
    """

    def __init__(self, verify: bool | str, cleanup: Sequence[str] = ()):
        super().__init__()
        self.verify = verify
        self._cleanup = list(cleanup)

    def request(self, method: str, url: str, *args: Any, **kwargs: Any) -> requests.Response:
        kwargs.setdefault("verify", self.verify)
        kwargs.setdefault("timeout", 60)
        return super().request(method, url, *args, **kwargs)

    def close(self) -> None:
        super().close()
        for path in self._cleanup:
            with contextlib.suppress(OSError):
                os.unlink(path)
        self._cleanup.clear()


#: The REST API the providers call (``/api/...``) arrived with vCenter 7.0 U2; an older
#: vCenter serves only ``/rest/...``, whose session would not open these paths anyway.
MIN_REST_VERSION = "vCenter 7.0 U2"


def _verify(conn: VCenterConnection) -> tuple[bool | str, list[str]]:
    """``requests``' ``verify`` for ``conn`` (a temporary CA file when one is given)."""
    if not conn.verifies:
        return False, []
    if conn.ca_pem:
        fd, path = tempfile.mkstemp(prefix="vcenter-ca-", suffix=".pem")
        with os.fdopen(fd, "w") as fh:
            fh.write(conn.ca_pem)
        return path, [path]
    return True, []


def rest_session(conn: VCenterConnection) -> requests.Session:
    """A ``requests.Session`` carrying a ``vmware-api-session-id`` header.

    Logs in with ``POST /api/session``. Every REST call of the providers is under
    ``/api`` (7.0 U2+), so there is no ``/rest`` fallback: an older vCenter gets an
    error saying so. Close the session when done (:func:`rest_api` does).
    """
    verify, cleanup = _verify(conn)
    http = _VCenterHTTP(verify, cleanup)
    url = conn.base_url + "/api/session"
    try:
        resp = http.post(url, auth=(conn.user, conn.password))
        if resp.status_code in (404, 405):
            raise VCenterError(
                f"vCenter {conn.server}:{conn.port} does not serve POST /api/session (HTTP {resp.status_code}):"
                f" the program needs {MIN_REST_VERSION} or later"
            )
        if resp.status_code in (401, 403):
            raise VCenterError(f"login to vCenter {conn.describe()} refused: POST {url} -> HTTP {resp.status_code}")
        if not resp.ok:
            raise VCenterError(f"POST {url} failed: HTTP {resp.status_code}: {conn.scrub(resp.text[:500])}")
        token = resp.json()
        if not isinstance(token, str) or not token:
            raise VCenterError(f"POST {url} returned no session id")
    except VCenterError as exc:
        http.close()
        raise VCenterError(conn.scrub(exc)) from None
    except requests.RequestException as exc:
        http.close()
        raise VCenterError(f"cannot reach vCenter {conn.describe()}: {type(exc).__name__}: {conn.scrub(exc)}") from None
    http.headers["vmware-api-session-id"] = token
    return http


@contextlib.contextmanager
def rest_api(conn: VCenterConnection, action: str = "vCenter REST call") -> Iterator[requests.Session]:
    """``with rest_api(conn, "creating X") as http:`` - log in, guard errors, log out."""
    with guarded(conn, action):
        http = rest_session(conn)
        try:
            yield http
        finally:
            with contextlib.suppress(requests.RequestException):
                http.delete(conn.base_url + "/api/session")
            http.close()


def is_unknown(value: Any) -> bool:
    """True when ``value``, or anything inside it, is not known yet (during a preview)."""
    from pulumi.runtime import rpc

    return rpc.contains_unknowns(value) or (isinstance(value, str) and value == rpc.UNKNOWN)


def changed_keys(olds: Mapping[str, Any], news: Mapping[str, Any], keys: Sequence[str],
                 normalize: Callable[[str, Any], Any] | None = None) -> list[str]:
    """The ``keys`` whose (normalized) values differ between ``olds`` and ``news``.

    A value that is still unknown (during preview) counts as changed.
    """
    norm = normalize or (lambda _key, value: value)
    changed = []
    for key in keys:
        new = news.get(key)
        if is_unknown(new) or norm(key, olds.get(key)) != norm(key, new):
            changed.append(key)
    return changed
