"""A browser's login to the release's JupyterLab, over TLS with the certificate the program
gives Jupyter: the browser trusts the stack's CA and checks that the certificate names the
server it means (the Service's name, while it dials the Service's address: no cluster DNS
here).

The flow is Jupyter Server 2.21.1's (jupyter_server/auth/login.py, ``LoginFormHandler``;
jupyter_server/auth/identity.py, ``PasswordIdentityProvider.process_login_form``): GET
``/login`` sets the ``_xsrf`` cookie (tornado's XSRF protection, on in Jupyter Server);
POST ``/login`` with ``_xsrf`` and ``password`` answers, for a password that matches the
configured hash, 302 to ``next`` with the login cookie ``username-<host>-<port>`` set, and
otherwise 401 with the form again, showing "Invalid credentials". The API answers 403 to
a request without the login cookie or a token.
"""
from __future__ import annotations

import http.client
import http.cookiejar
import ssl
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Callable
from dataclasses import dataclass
from functools import partial
from pathlib import Path


class _NoRedirect(urllib.request.HTTPRedirectHandler):
    def redirect_request(self, *args, **kwargs):  # the test reads the 302 itself
        return None


@dataclass
class Answer:
    status: int
    location: str | None
    body: str
    cookies: set[str]


class _NamedHTTPSConnection(http.client.HTTPSConnection):
    """HTTPS to the address dialled, checking the certificate for ``server_name``."""

    def __init__(self, *args, server_name: str | None, context: ssl.SSLContext, **kwargs):
        super().__init__(*args, context=context, **kwargs)
        self.server_name, self.tls_context = server_name, context

    def connect(self) -> None:
        http.client.HTTPConnection.connect(self)
        self.sock = self.tls_context.wrap_socket(self.sock, server_hostname=self.server_name)


class _NamedHTTPSHandler(urllib.request.HTTPSHandler):
    def __init__(self, context: ssl.SSLContext, server_name: str | None):
        super().__init__(context=context)
        self.server_name = server_name

    def https_open(self, req):
        return self.do_open(partial(_NamedHTTPSConnection, server_name=self.server_name), req, context=self._context)


class Browser:
    def __init__(self, base: str, ca_file: Path | None = None, server_name: str | None = None):
        self.base, self.jar = base.rstrip("/"), http.cookiejar.CookieJar()
        handlers: list[urllib.request.BaseHandler | Callable[[], urllib.request.BaseHandler]] = [
            urllib.request.HTTPCookieProcessor(self.jar), _NoRedirect, urllib.request.ProxyHandler({})]
        if ca_file is not None:
            handlers.append(_NamedHTTPSHandler(ssl.create_default_context(cafile=str(ca_file)), server_name))
        self.opener = urllib.request.build_opener(*handlers)

    def request(self, path: str, form: dict | None = None) -> Answer:
        data = urllib.parse.urlencode(form).encode() if form is not None else None
        try:
            response = self.opener.open(urllib.request.Request(self.base + path, data=data), timeout=30)
        except urllib.error.HTTPError as exc:
            response = exc
        with response:
            return Answer(response.status, response.headers.get("Location"), response.read().decode(errors="replace"),
                          {c.name for c in self.jar})

    def xsrf(self) -> str:
        value = next(c.value for c in self.jar if c.name == "_xsrf")
        assert value is not None, "the _xsrf cookie has no value"
        return value

    def login(self, password: str) -> Answer:
        """The login form as a browser posts it: GET /login for the XSRF cookie, then POST."""
        form = self.request("/login")
        assert form.status == 200 and "_xsrf" in form.cookies, (form.status, form.cookies)
        return self.request("/login?next=%2Flab", {"_xsrf": self.xsrf(), "password": password})


def serving(base: str, **trust) -> bool:
    """Whether Jupyter answers its login page yet (the pod is Running before it listens)."""
    try:
        return Browser(base, **trust).request("/login").status == 200
    except (OSError, http.client.HTTPException):
        return False


def logged_in(answer: Answer) -> bool:
    return any(name.startswith("username-") for name in answer.cookies)
