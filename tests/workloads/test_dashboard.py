"""``dask-tkg dashboard`` (workloads/cluster/dashboard.py) where no API server answers or none
is needed: an unreachable server, a context without a namespace, no kubeconfig. Each is one
line and exit 2, naming the kubeconfig but never its token. The cases that need the server
(the lookup, an expired login, the forward): tests/apiserver/test_dashboard.py."""
from __future__ import annotations

import socket
from pathlib import Path

import pytest
import yaml

from workloads.cluster import dashboard

TOKEN = "token-that-must-not-show"


def kubeconfig(path: Path, server: str, namespace: str | None = "dask-alice") -> Path:
    context = {"cluster": "wl", "user": "alice", **({"namespace": namespace} if namespace else {})}
    path.write_text(yaml.safe_dump({
        "apiVersion": "v1", "kind": "Config", "current-context": "vks-dask-dev",
        "clusters": [{"name": "wl", "cluster": {"server": server, "insecure-skip-tls-verify": True}}],
        "users": [{"name": "alice", "user": {"token": TOKEN}}],
        "contexts": [{"name": "vks-dask-dev", "context": context}]}))
    return path


@pytest.fixture
def closed_port() -> int:
    server = socket.create_server(("127.0.0.1", 0))
    port = server.getsockname()[1]
    server.close()
    return port


def test_an_unreachable_api_server_is_one_line_naming_it(tmp_path, closed_port, capsys):
    config = kubeconfig(tmp_path / "config", f"https://127.0.0.1:{closed_port}")
    assert dashboard.main(["--kubeconfig", str(config)]) == 2
    err = capsys.readouterr().err
    assert err.startswith(f"error: cannot reach the Kubernetes API at https://127.0.0.1:{closed_port} (")
    assert f"the server of context vks-dask-dev in {config}" in err and err.count("\n") == 1
    assert TOKEN not in err


def test_a_context_without_a_namespace_asks_for_one(tmp_path, closed_port, capsys):
    config = kubeconfig(tmp_path / "config", f"https://127.0.0.1:{closed_port}", namespace=None)
    assert dashboard.main(["--kubeconfig", str(config)]) == 2
    assert capsys.readouterr().err == ("error: the kubeconfig's context vks-dask-dev names no namespace: give"
                                       " --namespace dask-<you> (the namespace the team's document lists for you)\n")


def test_no_kubeconfig_says_to_log_in(tmp_path, capsys):
    assert dashboard.main(["--kubeconfig", str(tmp_path / "absent"), "--context", "vks-dask-dev"]) == 2
    assert capsys.readouterr().err == (f"error: no kubeconfig at {tmp_path / 'absent'}: log in first (kubectl"
                                       " vsphere login ...) or pass --kubeconfig FILE\n")
