"""How the program's own vCenter calls (dynamic providers) reach vCenter.

The bridged vSphere provider reads the same ``vsphere:*`` config (and trusts what Go's system
roots trust: ``SSL_CERT_FILE``, docs/deploy.md); the dynamic providers
(SPBM, namespace REST, the Supervisor's release library, vSAN file service) get these
values as inputs, the password as a secret Output so it stays encrypted in the state.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import pulumi


@dataclass(frozen=True)
class VCenterAccess:
    server: str
    user: str
    password: pulumi.Input[str] = field(repr=False)
    insecure: bool = False
    ca_pem: str = ""  # vcenterCaPem: verified by the dynamic providers even with ``insecure``
    port: int = 443

    def inputs(self) -> dict[str, Any]:
        """The connection properties of every dynamic resource of ``components.vsphere.providers``
        (``session.CONNECTION_KEYS``), the password a secret."""
        return {
            "server": self.server,
            "user": self.user,
            "password": pulumi.Output.secret(self.password),
            "insecure": self.insecure,
            "ca_pem": self.ca_pem or None,
            "port": self.port,
        }
