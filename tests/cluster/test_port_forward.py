"""The runner reaches a ClusterIP scheduler through its own port-forward (the Kubernetes
API's pod port-forward), from a machine that cannot reach the cluster's service network.

The program's Dask release (the dev stack with the Helm backend) is deployed on the current stacks'
1.33 cluster as tests/cluster/dask_release.py deploys it.
Then the host's routes onto the pod and service ranges are replaced by ``unreachable``
routes (nothing is sent anywhere; a direct connect fails at once), and the outputs are the
program's own: the scheduler at its in-cluster DNS name, the dashboard likewise, plus the
program's ``runnerKubeconfig``: the cluster's server and CA (inline, as a TKG kubeconfig
carries it) with the token this cluster's token controller put in the program's
ServiceAccount token Secret, whose Role is all the forward has. The session runs in
tests/cluster/forward_session.py, in a mount namespace whose resolv.conf names only
127.0.0.1, so that the in-cluster name's lookup never leaves loopback.
"""
from __future__ import annotations

import json
import queue
import socket
import subprocess
import sys
import threading
import time

import pytest
import yaml

from tests.apiserver.runner_identity import token_subject
from tests.cluster.dask_release import stack_outputs
from tests.cluster.kube import pods, wait_running
from tests.cluster.network import run
from tests.cluster.support import RELEASE_WORKERS as WORKERS
from tests.cluster.support import REPO
from tests.kube.rest import api_request

SESSION_TIMEOUT_S = 420


@pytest.fixture(scope="module")
def release_stack() -> tuple[str, dict]:
    """The default stack with the Helm backend: its scheduler a ClusterIP Service, as the
    defaults expose it (the operator backend's runner goes through the same forward)."""
    return "dev", {"daskBackend": "helm"}


@pytest.fixture(scope="module")
def service_network_cut(kube_cluster, dask_release):
    """The host's routes onto the pod and service ranges replaced by unreachable ones for
    this module; put back afterwards."""
    net = kube_cluster.net
    cidrs = (net.pod_cidr, net.service_cidr)
    for cidr in cidrs:
        run("ip", "route", "replace", "unreachable", cidr)
    try:
        yield net
    finally:
        for cidr in cidrs:
            run("ip", "route", "replace", cidr, "via", net.node_link_ip, "dev", net.veth_host)


def program_outputs(release) -> dict:
    """The stack's outputs with the program's own scheduler and dashboard addresses (the
    in-cluster names) and the runner's kubeconfig (stack_outputs)."""
    outputs = stack_outputs(release)
    program = release.program_outputs
    outputs.update({"schedulerAddress": program["schedulerAddress"], "dashboardUrl": program["dashboardUrl"]})
    return outputs


class Session:
    """tests/cluster/forward_session.py in its own mount namespace; its JSON lines read with a
    timeout (a reader thread), its log in a file."""

    def __init__(self, outputs_file, tmp_path):
        resolv = tmp_path / "resolv.conf"
        resolv.write_text("nameserver 127.0.0.1\n")
        self.log = tmp_path / "session.log"
        script = (f'set -e; mount --bind "{resolv}" /etc/resolv.conf; '
                  f'exec "{sys.executable}" -m tests.cluster.forward_session "{outputs_file}" {WORKERS}')
        with self.log.open("w") as log:
            self.proc = subprocess.Popen(["unshare", "--mount", "--propagation", "private", "--", "sh", "-c", script],
                                         cwd=REPO, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=log,
                                         text=True)
        self.lines: queue.Queue = queue.Queue()
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self) -> None:
        for line in self.proc.stdout:
            self.lines.put(line)
        self.lines.put("")

    def stderr(self) -> str:
        return self.log.read_text()

    def next_event(self, name: str, timeout: float = SESSION_TIMEOUT_S) -> dict:
        try:
            line = self.lines.get(timeout=timeout)
        except queue.Empty:
            pytest.fail(f"no {name!r} from the session within {timeout:.0f} s:\n{self.stderr()[-4000:]}")
        if not line:
            self.proc.wait(timeout=30)
            pytest.fail(f"the session ended (exit {self.proc.returncode}) before {name!r}:\n{self.stderr()[-4000:]}")
        event = json.loads(line)
        assert event["event"] == name, event
        return event

    def say(self, line: str) -> None:
        self.proc.stdin.write(line + "\n")
        self.proc.stdin.flush()

    def end(self) -> None:
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait()


def test_the_runner_reaches_a_clusterip_scheduler_through_its_own_port_forward(
        kube_cluster, dask_release, service_network_cut, tmp_path):
    api, ns = kube_cluster.api_client, dask_release.namespace
    with pytest.raises(OSError):  # the host cannot reach the Service directly
        socket.create_connection((dask_release.scheduler_ip, 8786), timeout=3).close()
    outputs = program_outputs(dask_release)
    assert outputs["schedulerAddress"] == f"tls://dask-scheduler.{ns}.svc.cluster.local:8786"
    # the runner's own identity, not the cluster's admin: a token of the program's ServiceAccount
    assert "kubeconfig" not in outputs
    assert token_subject(outputs["runnerKubeconfig"]) == f"system:serviceaccount:{ns}:dask-runner"
    assert yaml.safe_load(outputs["runnerKubeconfig"])["contexts"][0]["context"]["namespace"] == ns
    outputs_file = tmp_path / "outputs.json"
    outputs_file.write_text(json.dumps(outputs))
    outputs_file.chmod(0o600)
    (scheduler_pod,) = pods(api, ns, "component=scheduler")
    session = Session(outputs_file, tmp_path)
    try:
        up = session.next_event("connected")
        assert up["address"].startswith("tls://127.0.0.1:"), up
        assert up["pod"] == scheduler_pod["metadata"]["name"] and f"service {ns}/dask-scheduler" in up["forward"]
        # the scheduler's TLS
        assert up["dashboard"].startswith("https://127.0.0.1:") and up["dashboard"].endswith("/status")
        assert up["dashboard_status"] == 200 and len(up["workers"]) == WORKERS and up["total"] == 6, up

        deleted = time.monotonic()
        api_request(api, "DELETE", f"/api/v1/namespaces/{ns}/pods/{up['pod']}", body={"gracePeriodSeconds": 0})
        session.say("deleted")
        after = session.next_event("after")
        dropped = f"port-forward to pod {ns}/{up['pod']} of service {ns}/dask-scheduler dropped"
        assert after["drops"] and after["drops"][0].startswith(dropped), after
        assert after["drops"][0].endswith((f"pods \"{up['pod']}\" not found)", "was deleted", "is terminating")), after
        assert after["told"][:1] == after["drops"][:1] and after["seconds_to_drop"] <= 30, after
        # the forward is reopened to the Deployment's new pod, where a new client computes
        assert after["error"] is None and after["total"] == 15, after
        # forward.check(): the EndpointError naming a drop, until a connection reopens the forward (the
        # session's own client reconnects at once, so the reopening may come first; a stream opened to the
        # new pod before its scheduler listens is refused and drops that forward too, so the session may
        # have asked between the two drops or after the second)
        assert after["check"] in (*after["drops"], None), after
        assert after["reopened"] and after["pod"] != up["pod"], after
        assert time.monotonic() - deleted < 300

        closed = session.next_event("closed", timeout=60)
        assert closed["accepting"] == [], closed  # the session closed its listeners
        session.proc.wait(timeout=60)
        log = session.stderr()
        assert session.proc.returncode == 0, log[-4000:]
        token = yaml.safe_load(outputs["runnerKubeconfig"])["users"][0]["user"]["token"]
        assert token not in log and outputs["tlsClientKey"].splitlines()[1] not in log
        assert "does not answer from here; port-forward to pod" in log, log[-4000:]
    finally:
        session.end()
    wait_running(api, ns, "component=scheduler", 1, timeout_s=120)
