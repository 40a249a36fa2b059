"""What ``vsphere:allowUnverifiedSsl`` leaves unchecked, said at ``pulumi preview``.

The setting is the bridged vSphere provider's ``allow_unverified_ssl``; the program reuses it
for its own connections. Each certificate that then goes unverified, and what crosses to it:

* vCenter's, for the vSphere provider (govmomi's ``soap.NewClient(u, insecure)`` sets
  ``InsecureSkipVerify``, terraform-provider-vsphere v2.16.1 ``vsphere/config.go``), which
  logs in with the vCenter password. ``vcenterCaPem`` does not reach it: the provider has
  no CA argument (docs/deploy.md, "The vCenter account": ``SSL_CERT_FILE``).
* vCenter's, for the program's own sessions (SPBM, namespace REST, the Supervisor's library,
  the vSAN file share, the privilege check), unless ``vcenterCaPem`` is given
  (``VCenterConnection.verifies``).
* the Supervisor's, unless ``supervisorCaPem`` is given or ``supervisorKubeconfig`` replaces
  the login: the vCenter password goes to ``/wcp/login`` by Basic auth, and the kubeconfig the
  program writes carries ``insecure-skip-tls-verify`` (``components/cluster/supervisor_access.py``).
"""
from __future__ import annotations

from components.settings.model import Settings


def unverified_tls_warning(s: Settings) -> str | None:
    """One sentence naming every certificate left unchecked, and how to check it; None when none is."""
    if not s.vsphere.insecure:
        return None
    parts = ["vCenter's certificate goes unchecked for the vSphere provider, which logs in with the vCenter"
             " password (give it the CA through SSL_CERT_FILE, docs/deploy.md)"]
    if not s.vsphere.ca_pem:
        parts.append("and for the program's own vCenter sessions (set vcenterCaPem)")
    if s.supervisor.kubeconfig is None and not s.supervisor.ca_pem:
        parts.append("; the Supervisor's certificate goes unchecked: the vCenter password goes to it by Basic auth"
                     " (/wcp/login) and its kubeconfig gets insecure-skip-tls-verify (set supervisorCaPem)")
    return ("vsphere:allowUnverifiedSsl is true: " + " ".join(parts).replace(" ;", ";")
            + ". Set vcenterCaPem and supervisorCaPem, trust vCenter's CA through SSL_CERT_FILE and set"
              " vsphere:allowUnverifiedSsl false.")
