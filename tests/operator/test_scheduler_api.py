"""The pods' commands and environment as the operator backend builds them, run with the real
Dask (2026.7.1, the runtime image's): the scheduler serves the HTTP API the operator's
controller calls, and a worker started the way the controller starts it is retired by the
name the controller then deletes (dask-kubernetes 2026.3.0 ``retire_workers``: it reads
``retired[address]["name"]`` and deletes the Deployment of that name).

What kubelet would do is done here by hand, and only that: ``$(DASK_WORKER_NAME)`` in the
arguments is expanded from the environment (Kubernetes' dependent-variable expansion),
ports are free local ones instead of the container's, and the scratch directory is a
temporary one. A CPU worker group stands in for the GPU one (same builder, ``dask worker``).
"""
from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request

import pytest

from components.dask import operator_spec
from tests.operator.support import cluster_inputs, operator_settings

OPENER = urllib.request.build_opener(urllib.request.ProxyHandler({}))


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def command(container: dict) -> tuple[list[str], dict[str, str]]:
    """A container's args (``dask ...`` run as ``python -m dask ...``) and plain env values."""
    env = {e["name"]: e["value"] for e in container["env"] if "value" in e}
    args = container["args"]
    return [sys.executable, "-m", *args] if args[0] == "dask" else list(args), env


def replace(args: list[str], flag: str, value: str) -> list[str]:
    args = list(args)
    args[args.index(flag) + 1] = value
    return args


def http(method: str, url: str, body: dict | None = None) -> tuple[int, object]:
    data = json.dumps(body).encode() if body is not None else None
    request = urllib.request.Request(url, data=data, method=method, headers={"Content-Type": "application/json"})
    try:
        with OPENER.open(request, timeout=30) as response:
            raw = response.read()
            if "json" in response.headers.get("Content-Type", ""):
                return response.status, json.loads(raw or b"null")
            return response.status, raw.decode(errors="replace")
    except urllib.error.HTTPError as exc:
        return exc.code, None
    except (urllib.error.URLError, ConnectionError):
        return 0, None  # not listening yet


class Processes:
    def __init__(self, tmp_path):
        self.tmp_path, self.procs = tmp_path, []

    def start(self, name: str, args: list[str], env: dict[str, str]) -> subprocess.Popen:
        log = (self.tmp_path / f"{name}.log").open("wb")
        base = {k: v for k, v in os.environ.items() if "proxy" not in k.lower() and not k.startswith("DASK_")}
        proc = subprocess.Popen(args, env={**base, **env}, stdout=log, stderr=subprocess.STDOUT,
                                stdin=subprocess.DEVNULL, start_new_session=True)
        self.procs.append(proc)
        return proc

    def stop(self) -> None:
        for proc in reversed(self.procs):
            proc.terminate()
        for proc in self.procs:
            try:
                proc.wait(timeout=20)
            except subprocess.TimeoutExpired:
                proc.kill()

    def log(self, name: str) -> str:
        return (self.tmp_path / f"{name}.log").read_text(errors="replace")[-3000:]


@pytest.fixture
def processes(tmp_path):
    p = Processes(tmp_path)
    yield p
    p.stop()


def start_scheduler(processes, inputs, keep_routes: bool = True) -> tuple[str, str]:
    scheduler = operator_spec.scheduler_spec(inputs)["spec"]["containers"][0]
    args, env = command(scheduler)
    port, dashboard = free_port(), free_port()
    args = replace(replace(args, "--port", str(port)), "--dashboard-address", f"127.0.0.1:{dashboard}")
    if not keep_routes:
        env.pop("DASK_DISTRIBUTED__SCHEDULER__HTTP__ROUTES")
    processes.start("scheduler", [*args, "--host", "127.0.0.1"], env)
    url = f"http://127.0.0.1:{dashboard}"
    deadline = time.monotonic() + 60
    while http("GET", f"{url}/health")[0] != 200:
        assert time.monotonic() < deadline, processes.log("scheduler")
        time.sleep(0.2)
    return f"tcp://127.0.0.1:{port}", url


def test_scheduler_serves_the_api_and_retires_workers_by_their_deployment_names(processes, tmp_path):
    inputs = cluster_inputs(operator_settings(daskTls=False, cpuWorkers=2, cpuWorkerCpu=1,
                                              cpuWorkerMemory="1Gi"), tls=False)
    address, url = start_scheduler(processes, inputs)
    worker = operator_spec.cpu_worker_group(inputs)["spec"]["worker"]["spec"]["containers"][0]
    names = ["dask-cpu-worker-0a1b2c3d4e", "dask-cpu-worker-5f6a7b8c9d"]  # the controller's <group>-worker-<uuid>
    for name in names:
        args, env = command(worker)
        args = replace(args, "--local-directory", str(tmp_path / name))
        in_cluster = operator_spec.scheduler_address(inputs.name, inputs.namespace, tls=False)
        assert in_cluster in args  # the worker dials the scheduler Service; here the local scheduler
        args = [address if a == in_cluster else a.replace("$(DASK_WORKER_NAME)", name) for a in args]
        env.update(DASK_WORKER_NAME=name, DASK_SCHEDULER_ADDRESS=address, DASK_TEMPORARY_DIRECTORY=str(tmp_path))
        processes.start(name, args, env)
    deadline = time.monotonic() + 90
    while (http("GET", f"{url}/api/v1/get_workers")[1] or {}).get("num_workers") != 2:
        assert time.monotonic() < deadline, processes.log(names[0])
        time.sleep(0.3)

    status, target = http("GET", f"{url}/api/v1/adaptive_target")  # the autoscaler's question
    assert status == 200 and isinstance(target["workers"], int)
    status, retired = http("POST", f"{url}/api/v1/retire_workers", {"n": 1})  # the controller's scale-down
    assert status == 200
    [info] = retired.values()
    assert info["name"] in names  # the Deployment the controller deletes next
    deadline = time.monotonic() + 60
    while (http("GET", f"{url}/api/v1/get_workers")[1] or {}).get("num_workers") != 1:
        assert time.monotonic() < deadline
        time.sleep(0.3)


def test_without_the_api_route_the_controller_gets_404(processes):
    """Why the builder adds the route: distributed's default routes serve no /api/v1."""
    _, url = start_scheduler(processes, cluster_inputs(operator_settings(daskTls=False), tls=False),
                             keep_routes=False)
    assert http("GET", f"{url}/api/v1/adaptive_target")[0] == 404
    assert http("POST", f"{url}/api/v1/retire_workers", {"n": 1})[0] == 404
