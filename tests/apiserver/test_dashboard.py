"""``dask-tkg dashboard`` (workloads/cluster/dashboard.py) against the real Kubernetes 1.33 API
server, as a person: a kubeconfig of their own (a token, a context naming their namespace), a
Role with what the person's Role grants for it (DaskClusters, Services, Endpoints and pods read,
port-forward), and the DaskCluster's scheduler Service, Endpoints and a ready pod written as the
operator and the kubelet would.

The stand-in has no kubelet, so the forward is tried up to the kubelet: the cluster found, its
scheduler Service's dashboard port, the local listener on 127.0.0.1 and the printed URL, and a
connection to it closed at once (the API server has no node to stream to), never left hanging;
Ctrl-C ends the command with 0 and no traceback. The whole stream, through a real kubelet, is
tests/cluster/test_port_forward.py's (the runner's same ``ServiceForward``).
"""
from __future__ import annotations

import os
import re
import secrets
import signal
import socket
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from tests.kube.rest import apply_manifest, patch_status
from workloads.cluster import dashboard

pytestmark = pytest.mark.apiserver

REPO = Path(__file__).resolve().parents[2]
DASK = "kubernetes.dask.org"
URL_LINE = re.compile(r"^Dask dashboard of (\S+)/(\S+): http://127\.0\.0\.1:(\d+)/status \(Ctrl-C to stop\)$")
PERSON_RULES = [  # what components/dask/team/person_space.py's dask-user Role grants that the command uses
    {"apiGroups": [DASK], "resources": ["daskclusters"], "verbs": ["get", "list", "watch"]},
    {"apiGroups": [""], "resources": ["services", "endpoints", "pods"], "verbs": ["get", "list", "watch"]},
    {"apiGroups": [""], "resources": ["pods/portforward"], "verbs": ["get", "create"]},
]


def write_kubeconfig(path: Path, server, contexts: dict[str, tuple[str, str | None]], current: str) -> Path:
    """A kubeconfig as ``kubectl vsphere login`` writes one: ``contexts`` maps a name to (token, namespace)."""
    path.write_text(yaml.safe_dump({
        "apiVersion": "v1", "kind": "Config", "current-context": current,
        "clusters": [{"name": "wl", "cluster": {"server": server.url, "certificate-authority": str(server.ca_file)}}],
        "users": [{"name": f"u-{name}", "user": {"token": token}} for name, (token, _) in contexts.items()],
        "contexts": [{"name": name, "context": {"cluster": "wl", "user": f"u-{name}",
                                                 **({"namespace": ns} if ns else {})}}
                     for name, (_, ns) in contexts.items()],
    }, sort_keys=False))
    path.chmod(0o600)
    return path


def person_access(api, namespace: str) -> None:
    """Alice (a static token of the stand-in) gets the person's rights the command needs in ``namespace``."""
    apply_manifest(api, {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "Role",
                         "metadata": {"name": "dask-user", "namespace": namespace}, "rules": PERSON_RULES})
    apply_manifest(api, {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "RoleBinding",
                         "metadata": {"name": "dask-user", "namespace": namespace},
                         "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": "dask-user"},
                         "subjects": [{"kind": "User", "name": "alice", "apiGroup": "rbac.authorization.k8s.io"}]})


def dask_cluster(api, namespace: str, name: str) -> None:
    """The DaskCluster, and what the operator and the kubelet make of it: a ready scheduler pod,
    the ``<name>-scheduler`` Service (comm and dashboard ports) and its Endpoints."""
    pod_spec = {"containers": [{"name": "scheduler", "image": "registry.example/dask:1"}]}
    apply_manifest(api, {"apiVersion": f"{DASK}/v1", "kind": "DaskCluster",
                         "metadata": {"name": name, "namespace": namespace},
                         "spec": {"idleTimeout": 60, "worker": {"replicas": 0, "spec": pod_spec},
                                  "scheduler": {"spec": pod_spec,
                                                "service": {"ports": [{"name": "tcp-comm", "port": 8786}]}}}})
    pod = apply_manifest(api, {"apiVersion": "v1", "kind": "Pod", "metadata": {
        "name": f"{name}-scheduler-0", "namespace": namespace,
        "labels": {"dask.org/cluster-name": name, "dask.org/component": "scheduler"}}, "spec": pod_spec})
    patch_status(api, pod, {"phase": "Running", "podIP": "10.244.0.9", "conditions": [
        {"type": "Ready", "status": "True"}]})
    ports = [{"name": "tcp-comm", "port": 8786}, {"name": "http-dashboard", "port": 8787}]
    apply_manifest(api, {"apiVersion": "v1", "kind": "Service", "metadata": {
        "name": f"{name}-scheduler", "namespace": namespace}, "spec": {
        "selector": {"dask.org/cluster-name": name, "dask.org/component": "scheduler"},
        "ports": [{**p, "targetPort": p["port"]} for p in ports]}})
    apply_manifest(api, {"apiVersion": "v1", "kind": "Endpoints", "metadata": {
        "name": f"{name}-scheduler", "namespace": namespace}, "subsets": [{
        "addresses": [{"ip": "10.244.0.9", "targetRef": {"kind": "Pod", "name": pod["metadata"]["name"],
                                                         "namespace": namespace}}],
        "ports": ports}]})


@pytest.fixture
def person(kube_apiserver, operator_crds, kube_namespace, tmp_path):
    """(namespace, kubeconfig path): alice's kubeconfig, current context in her namespace."""
    person_access(kube_apiserver.api_client, kube_namespace)
    token = kube_apiserver.users["alice"]
    return kube_namespace, write_kubeconfig(tmp_path / "config", kube_apiserver,
                                            {"workload": (token, kube_namespace)}, "workload")


def test_the_only_cluster_is_forwarded_until_ctrl_c(kube_apiserver, person):
    namespace, config = person
    dask_cluster(kube_apiserver.api_client, namespace, "alice-kept")
    command = subprocess.Popen(  # the command as a person starts it; Ctrl-C is SIGINT to it
        [sys.executable, "-m", "workloads.cli", "dashboard", "--kubeconfig", str(config)], cwd=REPO,
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env={**os.environ, "NO_PROXY": "127.0.0.1"})
    try:
        line = command.stdout.readline().strip()
        match = URL_LINE.match(line)
        assert match and match.group(1, 2) == (namespace, "alice-kept"), (line, command.stderr)
        with socket.create_connection(("127.0.0.1", int(match[3])), timeout=5) as conn:
            conn.settimeout(30)
            assert conn.recv(1) == b""  # no kubelet behind the stand-in: closed, not left hanging
        command.send_signal(signal.SIGINT)
        out, err = command.communicate(timeout=30)
    finally:
        if command.poll() is None:
            command.kill()
    assert command.returncode == 0, err
    assert "Traceback" not in err and kube_apiserver.users["alice"] not in out + err
    assert f"pod {namespace}/alice-kept-scheduler-0" in err  # the forward names the pod it could not reach


def test_several_clusters_are_listed_and_one_is_asked_for_by_name(kube_apiserver, person, capsys):
    namespace, config = person
    for name in ("alice-a", "alice-b"):
        dask_cluster(kube_apiserver.api_client, namespace, name)
    assert dashboard.main(["--kubeconfig", str(config)]) == 2
    assert capsys.readouterr().err == (f"error: 2 DaskClusters in {namespace} (alice-a, alice-b): name one,"
                                       " dask-tkg dashboard NAME\n")


def test_a_cluster_not_there_is_named_with_the_ones_there_are(kube_apiserver, person, capsys):
    namespace, config = person
    dask_cluster(kube_apiserver.api_client, namespace, "alice-a")
    assert dashboard.main(["--kubeconfig", str(config), "alice-gone"]) == 2
    assert capsys.readouterr().err == f"error: no DaskCluster alice-gone in {namespace}; there: alice-a\n"


def test_an_expired_login_says_to_log_in_again(kube_apiserver, person, tmp_path, capsys):
    """The stand-in answers a token it does not know with 401, as the Supervisor's API server
    does once a login's token has expired."""
    namespace, _ = person
    stale = f"expired-{secrets.token_hex(16)}"
    config = write_kubeconfig(tmp_path / "stale", kube_apiserver, {"workload": (stale, namespace)}, "workload")
    assert dashboard.main(["--kubeconfig", str(config)]) == 2
    err = capsys.readouterr().err
    assert err.startswith("error: your login has expired: run `kubectl vsphere login ...` again (tokens last about"
                          " 10 hours); ") and "HTTP 401" in err and err.count("\n") == 1
    assert stale not in err


def test_context_picks_the_kubeconfigs_other_context(kube_apiserver, person, tmp_path, capsys):
    """The login writes a context per cluster and one for the vSphere Namespace: ``--context`` picks one."""
    namespace, _ = person
    config = write_kubeconfig(tmp_path / "two", kube_apiserver, {
        "supervisor": (f"other-{secrets.token_hex(8)}", "ns-supervisor"),
        "workload": (kube_apiserver.users["alice"], namespace)}, "supervisor")
    assert dashboard.main(["--kubeconfig", str(config), "--context", "workload"]) == 2
    assert capsys.readouterr().err == f"error: no DaskCluster in {namespace}: start one (dask-tkg run --own-cluster" \
                                      " --keep-cluster ...)\n"
    assert dashboard.main(["--kubeconfig", str(config), "--context", "elsewhere"]) == 2
    assert capsys.readouterr().err == f"error: the kubeconfig {config} has no context elsewhere (it has:" \
                                      " supervisor, workload)\n"
