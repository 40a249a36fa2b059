"""Throw-away certificates and tokens for the test cluster: the real node's identities over the
certificate authority of :mod:`tests.kube.pki` (ECDSA P-256: instant to generate)."""
from __future__ import annotations

import ipaddress
import secrets
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from tests.kube.pki import KUBERNETES_DNS_NAMES, make_ca, service_account_keys, serving_extensions, sign
from tests.security.dask_pki import issue_pki


# Identities of the components: user name and groups, as the bootstrap RBAC policy of
# 1.20 knows them (plugin/pkg/auth/authorizer/rbac/bootstrappolicy: system:kube-scheduler,
# system:kube-controller-manager, system:kube-proxy -> system:node-proxier; the Node
# authorizer and NodeRestriction key on system:node:<name> in system:nodes).
def identities(node_name: str) -> dict[str, tuple[str, str]]:
    return {
        "admin": ("admin", "system:masters"),
        "controller-manager": ("system:kube-controller-manager", ""),
        "scheduler": ("system:kube-scheduler", ""),
        "kubelet": (f"system:node:{node_name}", "system:nodes"),
        "kube-proxy": ("system:kube-proxy", ""),
    }


@dataclass
class ClusterPKI:
    dir: Path
    tokens: dict[str, str]

    def path(self, name: str) -> Path:
        return self.dir / name


def make_cluster_pki(pki: Path, node_name: str, server_ips: list[str]) -> ClusterPKI:
    """CA, the API server's serving certificate (``server_ips`` + the in-cluster names), its
    kubelet client certificate, service-account keys, and one bearer token per component."""
    make_ca(pki, "dask-tkg-cluster-ca")
    sans = [f"IP:{ip}" for ip in server_ips] + [
        f"DNS:{name}" for name in (*KUBERNETES_DNS_NAMES, "kubernetes.default.svc.cluster.local")]
    sign(pki, "apiserver", "/CN=kube-apiserver", serving_extensions(sans))
    # the API server's client certificate towards the kubelet (logs, exec, port-forward)
    sign(pki, "apiserver-kubelet-client", "/O=system:masters/CN=kube-apiserver-kubelet-client",
         "basicConstraints=critical,CA:FALSE\nkeyUsage=critical,digitalSignature\nextendedKeyUsage=clientAuth\n")
    service_account_keys(pki)
    tokens = {component: secrets.token_hex(24) for component in identities(node_name)}
    lines = []
    for component, (user, groups) in identities(node_name).items():
        lines.append(f'{tokens[component]},{user},uid-{component}' + (f',"{groups}"' if groups else ""))
    (pki / "tokens.csv").write_text("\n".join(lines) + "\n")
    (pki / "tokens.csv").chmod(0o600)
    return ClusterPKI(pki, tokens)


def _san(name: str) -> str:
    """A subject alternative name: ``IP:`` for an address (what a test dials), else ``DNS:``."""
    try:
        return f"IP:{ipaddress.ip_address(name)}"
    except ValueError:
        return f"DNS:{name}"


def dask_tls_material(directory: Path, scheduler_dns_names: list[str],
                      jupyter_dns_names: Sequence[str] = ()) -> dict[str, str]:
    """Real certificates with the shape components/dask/tls.py declares (ECDSA P-256, a
    "dask-tkg CA", each role's key usages, names on the scheduler's and Jupyter's alone),
    keyed as the program's Secret is (tests/security/dask_pki.py issues them). Needed because
    under Pulumi's mocks the pulumi-tls resources return placeholder text, not certificates."""
    names = {"scheduler": [_san(n) for n in scheduler_dns_names], "jupyter": [_san(n) for n in jupyter_dns_names]}
    return issue_pki(directory, roles=("scheduler", "worker", "client", "jupyter"), names=names, days=3)
