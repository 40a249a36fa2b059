"""The runner's TLS to the scheduler checks the scheduler's name, on every path.

distributed checks only the chain: its TLS contexts turn host-name checking off ("We expect a
dedicated CA for the cluster and people using IP addresses rather than hostnames",
distributed 2026.7.1 ``security.py``, ``Security._get_tls_context``). With one CA for every
role, any key it certified (a worker's) would then pass for the scheduler's. The runner's
client turns the check back on for its own connections: the scheduler's certificate must
name the host the stack's outputs give (its Service name, or its LoadBalancer address,
which the program puts in that certificate).

How the name reaches the handshake (distributed 2026.7.1 ``comm/tcp.py``): a dial with no
``server_hostname`` in its connection arguments goes through tornado's ``TCPClient.connect``,
which names the host it dials (tornado 6.6 ``tcpclient.py``: ``start_tls(...,
server_hostname=host)``); ``TLSConnector._get_connect_args`` passes a ``server_hostname``
argument on, for a dial whose host is not the scheduler's own: the local end of a
port-forward.
"""
from __future__ import annotations

from typing import Any

from distributed.security import Security


class NamedServerSecurity(Security):
    """A ``Security`` whose client connections check the server's name: the host dialled,
    or ``server_hostname`` when set.

    No ``__slots__`` of its own: ``Security.__init__`` checks its keyword arguments against
    ``self.__slots__``, which must stay ``Security``'s."""

    def __init__(self, server_hostname: str | None = None, **kwargs: Any):
        super().__init__(**kwargs)
        self.server_hostname = server_hostname

    def get_connection_args(self, role: str) -> dict[str, Any]:
        args = super().get_connection_args(role)
        context = args.get("ssl_context")
        if context is not None:  # a fresh context per call (Security._get_tls_context)
            context.check_hostname = True
            if self.server_hostname:
                args["server_hostname"] = self.server_hostname
        return args

    def for_server(self, host: str) -> NamedServerSecurity:
        """The same credentials, checking for ``host`` whatever address is dialled (the local
        end of a port-forward to the scheduler the outputs name ``host``)."""
        return NamedServerSecurity(server_hostname=host, require_encryption=self.require_encryption,
                                   tls_ca_file=self.tls_ca_file, tls_client_cert=self.tls_client_cert,
                                   tls_client_key=self.tls_client_key)
