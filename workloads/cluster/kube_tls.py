"""dask-kubernetes' ``KubeCluster`` for a scheduler that speaks only TLS.

``KubeCluster`` 2026.3.0 cannot dial one. It finds the scheduler at an address it builds as
``tcp://`` (operator/networking.py ``get_external_address_for_scheduler_service``: every
branch ends ``return f"tcp://{host}:{port}"``), waits for it with ``rpc(address)`` and keeps
``rpc(scheduler_address)`` (operator/kubecluster/kubecluster.py ``_create_cluster``:
``await wait_for_scheduler_comm(scheduler_address)``, ``self.scheduler_comm =
rpc(scheduler_address)``), neither with connection arguments, and distributed's ``Cluster``
takes no ``security`` (deploy/cluster.py ``Cluster.__init__``). A plain dial of a TLS
listener fails, and ``wait_for_scheduler_comm`` retries every ``OSError`` for ever
(networking.py); a ``tls://`` address without an SSL context is a ``TypeError`` in
distributed's connector (comm/tcp.py ``_expect_tls_context``).

The smallest correct way round, everything else upstream's: a comm scheme of the runner's
own, ``kubetls://``, in distributed's backend registry (comm/registry.py ``backends``, which
the ``distributed.comm.backends`` entry points fill), whose connector is distributed's
``TLSConnector`` given, for each address the runner registers, the runner's client
certificate, its CA and the scheduler's name to check (server_name.py); and
``_get_scheduler_address`` (the one method ``_create_cluster`` asks for the address)
overridden to return upstream's own address (the Service's name from inside the cluster,
else upstream's port-forward on localhost) under that scheme. Creation, the waits for the
controller, the scheduler pod and its Service, the port-forwards, and deletion on close
(``shutdown_on_close``) stay ``KubeCluster``'s.

One more hook, ``_wait_for_controller``: ``_create_cluster`` calls it right after creating
the DaskCluster, before anything waits on its pods; the runner makes the cluster's TLS
Secret there, owned by the DaskCluster now that it has a uid, so that Kubernetes' garbage
collector deletes the Secret with the cluster, whoever deletes that.
"""
from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable
from typing import Any

from dask_kubernetes.operator import KubeCluster
from distributed.comm import registry
from distributed.comm.tcp import TLSBackend, TLSConnector

logger = logging.getLogger(__name__)

SCHEME = "kubetls"
_CREDENTIALS: dict[str, Any] = {}  # "host:port" -> the Security to dial it with
LAST_ERRORS: dict[str, str] = {}  # "host:port" -> why the last dial failed (upstream retries silently)


class _Connector(TLSConnector):
    """distributed's TLS connector with the credentials registered for the address."""

    async def connect(self, address, deserialize=True, **connection_args):
        security = _CREDENTIALS.get(address)
        if security is None:
            raise ValueError(f"{SCHEME}://{address}: no TLS credentials registered for this address")
        arguments = {**security.get_connection_args("client"), **connection_args}
        try:
            return await super().connect(address, deserialize, **arguments)
        except OSError as exc:
            LAST_ERRORS[address] = f"{type(exc).__name__}: {exc}"
            raise


class _Backend(TLSBackend):
    _connector_class = _Connector


registry.backends.setdefault(SCHEME, _Backend())


def register(location: str, security: Any) -> str:
    """Dial ``location`` (host:port) with ``security``'s client credentials; its address."""
    _CREDENTIALS[location] = security
    return f"{SCHEME}://{location}"


def unregister(location: str) -> None:
    _CREDENTIALS.pop(location, None)
    LAST_ERRORS.pop(location, None)


class TlsKubeCluster(KubeCluster):
    """``KubeCluster`` whose connections to the scheduler are TLS with ``security`` (a
    ``server_name.NamedServerSecurity``), checking that the scheduler's certificate names
    ``server_name``; ``on_created`` runs (in a thread) once the DaskCluster exists."""

    def __init__(self, *, security: Any, server_name: str, on_created: Callable[[], None] | None = None,
                 **kwargs: Any):
        self._tls_security, self._tls_server_name, self._on_created = security, server_name, on_created
        self._registered: list[str] = []
        super().__init__(**kwargs)

    async def _wait_for_controller(self):
        if self._on_created is not None:
            await asyncio.to_thread(self._on_created)
        await super()._wait_for_controller()

    async def _get_scheduler_address(self):
        address = await super()._get_scheduler_address()  # tcp://<service>.<ns>:8786 or tcp://localhost:<port>
        location = address.split("://", 1)[1]
        self._registered.append(location)
        return register(location, self._tls_security.for_server(self._tls_server_name))

    def last_error(self) -> str | None:
        """Why the last dial of the scheduler failed, if one did."""
        return next((LAST_ERRORS[loc] for loc in reversed(self._registered) if loc in LAST_ERRORS), None)

    async def _close(self, timeout=3600):
        try:
            await super()._close(timeout=timeout)
        finally:
            for location in self._registered:
                unregister(location)
