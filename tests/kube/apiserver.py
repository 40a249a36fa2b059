"""A real Kubernetes API server of one of the builds (:mod:`tests.kube.binaries`: the current
stacks' 1.33, the paper's 1.20): etcd and kube-apiserver on 127.0.0.1 only, on free ports, with
their data under a given folder.

There is no controller-manager, scheduler or kubelet: every API object, CRD schema validation,
server-side dry run, status subresources, RBAC and watches work, but pods stay Pending,
namespaces never finish terminating and no ServiceAccount tokens are minted. Users
authenticate with static tokens: ``admin`` in ``system:masters``, ``alice`` in ``developers``
and ``bob`` in no group.
"""
from __future__ import annotations

import contextlib
import json
import secrets
import ssl
import time
from dataclasses import dataclass, field
from pathlib import Path

import kubernetes.client
import yaml

from tests.kube.binaries import KubeRelease
from tests.kube.pki import make_pki
from tests.kube.processes import Process, free_port, wait_http
from tests.kube.rest import api_client

SERVICE_CLUSTER_IP_RANGE = "10.96.0.0/12"
SERVICE_ACCOUNT_ISSUER = "https://kubernetes.default.svc.cluster.local"
# Default-on admission plugins (1.20 and 1.33) that only work with a controller-manager:
# ServiceAccount (waits for the token controller), ResourceQuota (rejects while a
# quota's status is unset), StorageObjectInUseProtection (finalizers nobody removes).
DISABLED_ADMISSION_PLUGINS = "ServiceAccount,ResourceQuota,StorageObjectInUseProtection"
START_TIMEOUT_S = 60.0


@dataclass
class KubeAPIServer:
    """A running kube-apiserver (and its etcd) on 127.0.0.1."""

    url: str
    token: str
    api_client: kubernetes.client.ApiClient
    kubeconfig: Path
    ca_file: Path
    workdir: Path
    etcd_url: str
    release: KubeRelease
    users: dict[str, str] = field(default_factory=dict)
    version: dict = field(default_factory=dict)
    _processes: list[Process] = field(default_factory=list, repr=False)

    def new_api_client(self, token: str | None = None) -> kubernetes.client.ApiClient:
        """A fresh client for this server, as the admin or with another token (see ``users``)."""
        return api_client(self.url, self.ca_file, token or self.token)

    def logs(self, lines: int = 30) -> str:
        return "\n".join(f"--- {p.name} ({p.log}) ---\n{p.tail(lines)}" for p in self._processes)

    def stop(self) -> None:
        with contextlib.suppress(Exception):  # closing the client is best effort; the processes stop below
            self.api_client.close()
        for p in reversed(self._processes):
            p.stop()
        self._processes.clear()


def _write_tokens(workdir: Path) -> tuple[str, dict[str, str]]:
    """The static token file (``token,user,uid,"group1,group2"``); returns the admin's token and the users'."""
    admin_token = secrets.token_hex(24)
    users = {"alice": secrets.token_hex(24), "bob": secrets.token_hex(24)}
    (workdir / "tokens.csv").write_text(
        f'{admin_token},admin,uid-admin,"system:masters"\n'
        f'{users["alice"]},alice,uid-alice,"developers"\n'
        f'{users["bob"]},bob,uid-bob\n')
    return admin_token, users


def klog_to_stderr(release: KubeRelease) -> list[str]:
    """``--logtostderr=true`` where the build still has it: 1.26 removed the klog flags
    (KEP-2845) and logs to stderr anyway."""
    return ["--logtostderr=true"] if release.minor < 26 else []


def _etcd_args(release: KubeRelease, workdir: Path, etcd_url: str, peer_url: str) -> list[str]:
    return [
        str(release.binary("etcd")), "--name=test", f"--data-dir={workdir / 'etcd-data'}",
        f"--listen-client-urls={etcd_url}", f"--advertise-client-urls={etcd_url}",
        f"--listen-peer-urls={peer_url}", f"--initial-advertise-peer-urls={peer_url}",
        f"--initial-cluster=test={peer_url}", "--initial-cluster-state=new",
        "--log-level=warn", "--logger=zap",
    ]


def _apiserver_args(release: KubeRelease, workdir: Path, pki: Path, etcd_url: str, api_port: int) -> list[str]:
    return [
        str(release.binary("kube-apiserver")),
        f"--etcd-servers={etcd_url}",
        "--bind-address=127.0.0.1", "--advertise-address=127.0.0.1", f"--secure-port={api_port}",
        f"--tls-cert-file={pki / 'apiserver.crt'}", f"--tls-private-key-file={pki / 'apiserver.key'}",
        f"--cert-dir={workdir / 'certs'}",
        f"--token-auth-file={workdir / 'tokens.csv'}",
        "--authorization-mode=RBAC",
        f"--service-account-key-file={pki / 'sa.pub'}",
        f"--service-account-signing-key-file={pki / 'sa.key'}",
        f"--service-account-issuer={SERVICE_ACCOUNT_ISSUER}",
        f"--api-audiences={SERVICE_ACCOUNT_ISSUER}",
        f"--service-cluster-ip-range={SERVICE_CLUSTER_IP_RANGE}",
        f"--disable-admission-plugins={DISABLED_ADMISSION_PLUGINS}",
        # the "kubernetes" Service's endpoints cannot point at 127.0.0.1 (loopback is
        # rejected): leave them alone instead of logging an error every 10 s
        "--endpoint-reconciler-type=none",
        "--allow-privileged=true",
        "--profiling=false",
        *klog_to_stderr(release), "--v=0",
    ]


def _write_kubeconfig(workdir: Path, url: str, ca_file: Path, admin_token: str, users: dict[str, str]) -> Path:
    """A kubeconfig with the admin's context current and every user's token."""
    kubeconfig = workdir / "kubeconfig.yaml"
    kubeconfig.write_text(yaml.safe_dump({
        "apiVersion": "v1", "kind": "Config",
        "clusters": [{"name": "test", "cluster": {"server": url, "certificate-authority": str(ca_file)}}],
        "users": [{"name": "admin", "user": {"token": admin_token}}]
                 + [{"name": n, "user": {"token": t}} for n, t in users.items()],
        "contexts": [{"name": "test", "context": {"cluster": "test", "user": "admin", "namespace": "default"}}],
        "current-context": "test",
    }, sort_keys=False))
    kubeconfig.chmod(0o600)
    return kubeconfig


def start_kube_apiserver(release: KubeRelease, workdir: Path) -> KubeAPIServer:
    """Start ``release``'s etcd and kube-apiserver under ``workdir``; return once /readyz answers ok."""
    workdir.mkdir(parents=True, exist_ok=True)
    pki = workdir / "pki"
    make_pki(pki)
    admin_token, users = _write_tokens(workdir)
    etcd_port, etcd_peer_port, api_port = free_port(), free_port(), free_port()
    while len({etcd_port, etcd_peer_port, api_port}) < 3:
        api_port = free_port()
    etcd_url = f"http://127.0.0.1:{etcd_port}"
    url = f"https://127.0.0.1:{api_port}"
    procs: list[Process] = []
    try:
        procs.append(Process("etcd", _etcd_args(release, workdir, etcd_url, f"http://127.0.0.1:{etcd_peer_port}"),
                             workdir / "etcd.log", workdir))
        deadline = time.monotonic() + START_TIMEOUT_S
        wait_http(f"{etcd_url}/health", lambda s, b: s == 200 and b'"true"' in b, deadline, procs, "etcd",
                  timeout_s=START_TIMEOUT_S)
        procs.append(Process("kube-apiserver", _apiserver_args(release, workdir, pki, etcd_url, api_port),
                             workdir / "kube-apiserver.log", workdir))
        ctx = ssl.create_default_context(cafile=str(pki / "ca.crt"))
        auth = {"Authorization": f"Bearer {admin_token}"}
        wait_http(f"{url}/readyz", lambda s, b: s == 200 and b.strip() == b"ok", deadline, procs,
                  "kube-apiserver /readyz", context=ctx, headers=auth, timeout_s=START_TIMEOUT_S)
        version = json.loads(wait_http(f"{url}/version", lambda s, b: s == 200, deadline, procs,
                                       "kube-apiserver /version", context=ctx, headers=auth,
                                       timeout_s=START_TIMEOUT_S))
    except BaseException:
        for p in reversed(procs):
            p.stop()
        raise
    kubeconfig = _write_kubeconfig(workdir, url, pki / "ca.crt", admin_token, users)
    return KubeAPIServer(url=url, token=admin_token, api_client=api_client(url, pki / "ca.crt", admin_token),
                         kubeconfig=kubeconfig, ca_file=pki / "ca.crt", workdir=workdir, etcd_url=etcd_url,
                         release=release, users=users, version=version, _processes=procs)
