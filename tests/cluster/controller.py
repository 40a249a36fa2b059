"""dask-kubernetes' kopf controller, on the host, against the real cluster's API server.

It runs in its own mount namespace whose resolv.conf names only 127.0.0.1 (its lookups of a
scheduler's name never leave loopback) and whose /etc/hosts maps each scheduler's names to its
Service's ClusterIP, as cluster DNS would for the chart's in-cluster controller: it reaches the
scheduler's HTTP API (retiring workers, the autoscaler's target) directly. One controller serves
one namespace (tests/cluster/test_default_image.py) or every person's (tests/cluster/test_team.py).
"""
from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
from pathlib import Path


class Controller:
    """The controller serving ``namespaces``, its /etc/hosts naming each scheduler (``hosts``:
    ClusterIP -> names); its output in ``workdir``/controller.log."""

    def __init__(self, kubeconfig: Path, namespaces: list[str], workdir: Path, hosts: dict[str, list[str]]):
        self.log_path = workdir / "controller.log"
        (workdir / "resolv.conf").write_text("nameserver 127.0.0.1\n")
        lines = "".join(f"{ip} {' '.join(names)}\n" for ip, names in hosts.items())
        (workdir / "hosts").write_text(Path("/etc/hosts").read_text() + "\n" + lines)
        env = {k: v for k, v in os.environ.items() if "proxy" not in k.lower()}
        env.update(KUBECONFIG=str(kubeconfig), PYTHONWARNINGS="ignore::UserWarning")
        served = " ".join(f"--namespace {ns}" for ns in namespaces)
        script = (f'set -e; mount --bind "{workdir / "resolv.conf"}" /etc/resolv.conf; '
                  f'mount --bind "{workdir / "hosts"}" /etc/hosts; '
                  f'exec "{sys.executable}" -m kopf run --standalone {served} -m dask_kubernetes.operator.controller')
        with self.log_path.open("wb") as out:
            self.proc = subprocess.Popen(["unshare", "--mount", "--propagation", "private", "--", "sh", "-c", script],
                                         stdout=out, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, env=env,
                                         start_new_session=True)

    def tail(self, lines: int = 60) -> str:
        return "\n".join(self.log_path.read_text(errors="replace").splitlines()[-lines:])

    def stop(self) -> None:
        """SIGTERM to the controller's session, SIGKILL after 15 s; nothing once it has exited."""
        if self.proc.poll() is not None:
            return
        with contextlib.suppress(ProcessLookupError):  # it exited since the poll
            os.killpg(self.proc.pid, signal.SIGTERM)
        try:
            self.proc.wait(timeout=15)
        except subprocess.TimeoutExpired:
            os.killpg(self.proc.pid, signal.SIGKILL)
            self.proc.wait()
