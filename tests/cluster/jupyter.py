"""A browser's login to the release's JupyterLab, over plain HTTP as the chart serves it.

The flow is Jupyter Server 2.21.1's (jupyter_server/auth/login.py, ``LoginFormHandler``;
jupyter_server/auth/identity.py, ``PasswordIdentityProvider.process_login_form``): GET
``/login`` sets the ``_xsrf`` cookie (tornado's XSRF protection, on in Jupyter Server);
POST ``/login`` with ``_xsrf`` and ``password`` answers, for a password that matches the
configured hash, 302 to ``next`` with the login cookie ``username-<host>-<port>`` set, and
otherwise 401 with the form again, showing "Invalid credentials". The API answers 403 to
a request without the login cookie or a token.
"""
from __future__ import annotations

import http.cookiejar
import urllib.error
import urllib.parse
import urllib.request
from dataclasses import dataclass


class _NoRedirect(urllib.request.HTTPRedirectHandler):
    def redirect_request(self, *args, **kwargs):  # the test reads the 302 itself
        return None


@dataclass
class Answer:
    status: int
    location: str | None
    body: str
    cookies: set[str]


class Browser:
    def __init__(self, base: str):
        self.base, self.jar = base.rstrip("/"), http.cookiejar.CookieJar()
        self.opener = urllib.request.build_opener(urllib.request.HTTPCookieProcessor(self.jar), _NoRedirect,
                                                  urllib.request.ProxyHandler({}))

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
        return next(c.value for c in self.jar if c.name == "_xsrf")

    def login(self, password: str) -> Answer:
        """The login form as a browser posts it: GET /login for the XSRF cookie, then POST."""
        form = self.request("/login")
        assert form.status == 200 and "_xsrf" in form.cookies, (form.status, form.cookies)
        return self.request("/login?next=%2Flab", {"_xsrf": self.xsrf(), "password": password})


def serving(base: str) -> bool:
    """Whether Jupyter answers its login page yet (the pod is Running before it listens)."""
    try:
        return Browser(base).request("/login").status == 200
    except OSError:
        return False


def logged_in(answer: Answer) -> bool:
    return any(name.startswith("username-") for name in answer.cookies)
