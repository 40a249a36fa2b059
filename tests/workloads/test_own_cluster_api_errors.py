"""``--own-cluster`` when the person's Kubernetes API cannot be used: the real runner in a
process of its own, its kubeconfig pointing at a closed port on loopback (nothing answers), at
a real HTTP server on loopback that answers 401 (an expired ``kubectl vsphere login`` token)
or 403 (a person the namespace does not let in). Each time the whole console output is one
line that names what is wrong and what to do, exit 2, nothing made."""
from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest
import yaml

REPO = Path(__file__).resolve().parents[2]
OUTPUTS = {  # the team document a person runs with
    "teamUsers": {"alice@vsphere.local": {"namespace": "dask-alice", "gpus": 2, "idleTimeout": 3600}},
    "teamClusterSpec": {"scheduler": {"spec": {"containers": [{"args": ["dask", "scheduler"]}]}},
                        "worker": {"spec": {"containers": [{"resources": {"requests": {"nvidia.com/gpu": "1"}}}]}}},
    "datasetMountPath": "/ml-share", "datasetLayout": {"taxi": "taxi"}, "threadsPerWorker": 6,
    "daskImage": "python:3.11", "daskVersion": "2026.7.1",
}
TOKEN = "expired-t0ken"  # what the kubeconfig holds: never on the console


class Answers(BaseHTTPRequestHandler):
    """Answers every request with ``status`` and a Kubernetes ``Status`` body, as an API server does."""

    status = 401
    seen: list[str]

    def do_GET(self) -> None:  # http.server's name
        self.seen.append(f"{self.command} {self.path}")
        body = json.dumps({"kind": "Status", "apiVersion": "v1", "status": "Failure", "code": self.status,
                           "reason": "Unauthorized" if self.status == 401 else "Forbidden",
                           "message": "Unauthorized" if self.status == 401 else "forbidden"}).encode()
        self.send_response(self.status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args) -> None:
        """Quiet: the test reads the runner's console, not the server's log."""


@pytest.fixture
def answering(request):
    """A loopback API server answering every request with the status the test names."""
    handler = type("Answering", (Answers,), {"status": request.param, "seen": []})
    server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_address[1]}", handler.seen
    server.shutdown()
    server.server_close()


def closed_port() -> int:
    """A loopback port nothing listens on (bound, then closed: the kernel refuses connections)."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def kubeconfig(tmp_path: Path, server: str) -> Path:
    config = {"apiVersion": "v1", "kind": "Config", "current-context": "wcp",
              "contexts": [{"name": "wcp", "context": {"cluster": "c", "user": "alice", "namespace": "dask-alice"}}],
              "clusters": [{"name": "c", "cluster": {"server": server, "insecure-skip-tls-verify": True}}],
              "users": [{"name": "alice", "user": {"token": TOKEN}}]}
    path = tmp_path / "kubeconfig"
    path.write_text(yaml.safe_dump(config))
    return path


def own_cluster_run(tmp_path: Path, server: str) -> tuple[int, list[str], Path]:
    """The runner with ``--own-cluster`` against ``server``: exit code, console lines, kubeconfig."""
    outputs, config = tmp_path / "team-outputs.json", kubeconfig(tmp_path, server)
    outputs.write_text(json.dumps(OUTPUTS))
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [str(REPO), os.environ.get("PYTHONPATH")]))}
    env.pop("KUBECONFIG", None)
    done = subprocess.run(
        [sys.executable, "-m", "workloads.run", "--own-cluster", "--outputs", str(outputs), "--kubeconfig",
         str(config), "--user", "alice@vsphere.local", "--no-report", "--output", str(tmp_path / "out")],
        cwd=REPO, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, timeout=300, check=False)
    return done.returncode, done.stdout.splitlines(), config


def test_an_unreachable_api_server_is_one_line_naming_it_and_what_to_check(tmp_path):
    server = f"https://127.0.0.1:{closed_port()}"
    code, lines, config = own_cluster_run(tmp_path, server)
    assert lines == [f"error: cannot reach the Kubernetes API at {server} (Connection refused), the server of"
                     f" context wcp in {config}: check that this machine reaches it (network, VPN, proxy) and that"
                     " the kubeconfig is the one `kubectl vsphere login` wrote"], "\n".join(lines)
    assert code == 2


@pytest.mark.parametrize("answering", [401], indirect=True)
def test_an_expired_login_says_log_in_again(tmp_path, answering):
    server, seen = answering
    code, lines, _ = own_cluster_run(tmp_path, server)
    assert lines == ["error: your login has expired: run `kubectl vsphere login ...` again (tokens last about 10"
                     f" hours); the Kubernetes API at {server} answered HTTP 401 to context wcp"], "\n".join(lines)
    assert code == 2
    assert seen == ["GET /api/v1/namespaces/dask-alice/resourcequotas"]  # nothing made: the first call ends it


@pytest.mark.parametrize("answering", [403], indirect=True)
def test_a_refusal_asks_whether_the_user_is_right(tmp_path, answering):
    server, seen = answering
    code, lines, _ = own_cluster_run(tmp_path, server)
    assert lines == ["error: the kubeconfig's user (context wcp) may not read the ResourceQuotas in dask-alice"
                     " (HTTP 403): is --user right, and is alice@vsphere.local among the stack's users?"], \
        "\n".join(lines)
    assert code == 2 and TOKEN not in "\n".join(lines)
    assert seen == ["GET /api/v1/namespaces/dask-alice/resourcequotas"]


def test_a_person_without_the_pulumi_cli_is_pointed_to_the_teams_document_not_the_stacks_secrets(tmp_path):
    """``--own-cluster --stack NAME`` on a machine without pulumi: a person of a team has no stack
    secrets and is never told to read them; the platform engineer's ``--stack`` may be."""
    env = {"PATH": str(tmp_path), "PYTHONPATH": str(REPO), "HOME": str(tmp_path)}  # no pulumi on it
    done = subprocess.run(
        [sys.executable, "-m", "workloads.run", "--own-cluster", "--stack", "dev", "--kubeconfig",
         str(kubeconfig(tmp_path, f"https://127.0.0.1:{closed_port()}")), "--user", "alice@vsphere.local",
         "--no-report", "--output", str(tmp_path / "out")],
        cwd=REPO, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, timeout=300, check=False)
    assert done.stdout.splitlines() == ["error: --stack needs the pulumi CLI, which is not on PATH: pass --outputs FILE"
                                        " instead, the team's document your platform team gives you (dask-tkg"
                                        " team-outputs writes it)"], done.stdout
    assert done.returncode == 2
