"""What a person's Kubernetes API answered, in one line: the messages every command that reads
it with the person's kubeconfig gives (``run --own-cluster``, ``dashboard``).

Two failures are the person's to fix, not a wrong setting: a server this machine cannot reach
(named, with what to check: the network, the kubeconfig) and an expired login (HTTP 401: the
token ``kubectl vsphere login`` writes lasts about 10 hours). The ``kubernetes`` client raises
``urllib3``'s errors when no HTTP answer came, and retries an unreachable server with a warning
per try: ``quiet_retries`` leaves the one line to say it.
"""
from __future__ import annotations

import logging

EXPIRED = "your login has expired: run `kubectl vsphere login ...` again (tokens last about 10 hours)"


def root_cause(exc: BaseException) -> str:
    """The innermost reason under a ``urllib3`` failure, in its own words (``Connection refused``)."""
    for _ in range(10):  # a chain is a few links long; never follow a cycle
        reason = getattr(exc, "reason", None)
        inner = reason if isinstance(reason, BaseException) else exc.__cause__ or exc.__context__
        if inner is None:
            break
        exc = inner
    words = getattr(exc, "strerror", None) or str(exc) or type(exc).__name__
    return words.splitlines()[0][:200]


def no_answer() -> type[Exception]:
    """What the ``kubernetes`` client raises when no HTTP answer came (refused, timed out, TLS)."""
    from urllib3.exceptions import HTTPError

    return HTTPError


def quiet_retries() -> None:
    """The client's retry warnings off, unless debugging: one line says the server is away."""
    if not logging.getLogger().isEnabledFor(logging.DEBUG):
        logging.getLogger("urllib3.connectionpool").setLevel(logging.ERROR)


def expired(server: str, context: str) -> str:
    return f"{EXPIRED}; the Kubernetes API at {server} answered HTTP 401 to context {context}"


def unreachable(exc: BaseException, server: str, context: str, kubeconfig: object) -> str:
    return (f"cannot reach the Kubernetes API at {server} ({root_cause(exc)}), the server of context {context} in"
            f" {kubeconfig}: check that this machine reaches it (network, VPN, proxy) and that the kubeconfig is"
            " the one `kubectl vsphere login` wrote")
