"""The runner on a Dask cluster it did not start, whose scheduler cannot import this
project: a scheduler and workers started with ``dask scheduler`` / ``dask worker`` from an
environment that has the same Dask but not ``workloads``, as a stock image or a user's own
cluster is.

The runner's own scheduler calls are pickled by value and need nothing of the project
there; the scheduler unpickles the task graphs, whose functions are the project's, so the
preflight ships the project to a scheduler that lacks it, as to workers that lack it; a
scheduler that still cannot import what the runner sends it is one line naming the
scheduler and the missing module, never a traceback. Every process listens on loopback.
"""
from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import ExitStack
from pathlib import Path

import pytest

from workloads import run
from workloads.cluster import endpoint as endpoints
from workloads.cluster import preflight
from workloads.observe import environment
from workloads.runs import benchmarks, results, sweep

from .support import COLOUR_MODEL

REPO = Path(__file__).resolve().parents[2]
# -I: no PYTHONPATH, no user site, neither the current directory nor a script's on sys.path
FOREIGN_PYTHON = (sys.executable, "-I")
PROJECT_PACKAGES = ("workloads", "bench")


def start(where: Path, module: str, *args: str, with_project: bool = False) -> subprocess.Popen:
    """``python -m module ARGS`` in ``where``, outside the repository: isolated from the
    project, or ``with_project`` on PYTHONPATH. Its own process group, so that stopping
    it stops a nanny's worker process too."""
    command = [sys.executable, "-m", module, *args] if with_project else [*FOREIGN_PYTHON, "-m", module, *args]
    env = {**os.environ, "PYTHONPATH": str(REPO)} if with_project else None
    with open(where / "process.log", "ab") as log:
        return subprocess.Popen(command, cwd=where, env=env, stdout=log, stderr=subprocess.STDOUT,
                                start_new_session=True)


def stop(process: subprocess.Popen) -> None:
    if process.poll() is None:
        os.killpg(process.pid, signal.SIGTERM)
        try:
            process.wait(timeout=30)
        except subprocess.TimeoutExpired:
            os.killpg(process.pid, signal.SIGKILL)
            process.wait()


def read_address(scheduler_file: Path, process: subprocess.Popen, timeout: float = 60) -> str:
    deadline = time.monotonic() + timeout
    while True:
        assert process.poll() is None, (scheduler_file.parent / "process.log").read_text()
        try:
            return json.loads(scheduler_file.read_text())["address"]
        except (FileNotFoundError, json.JSONDecodeError):
            assert time.monotonic() < deadline, f"no scheduler file after {timeout} s"
            time.sleep(0.2)


@pytest.fixture(scope="module")
def foreign_folder(tmp_path_factory) -> Path:
    """A folder outside the repository from which the isolated interpreter cannot import
    this project (else a cluster started with it is not one without the project)."""
    where = tmp_path_factory.mktemp("foreign")
    for name in PROJECT_PACKAGES:
        found = subprocess.run([*FOREIGN_PYTHON, "-c", f"import {name}; print({name}.__file__)"],
                               check=False, cwd=where, capture_output=True, text=True)
        assert found.returncode != 0, f"{sys.executable} -I imports {name} from {found.stdout.strip()}"
    return where


class ForeignCluster:
    """A scheduler without the project on loopback, and the workers added to it."""

    def __init__(self, root: Path, processes: ExitStack):
        self.root, self.processes = root, processes
        scheduler = start(root, "distributed.cli.dask_scheduler", "--host", "127.0.0.1", "--port", "0",
                          "--dashboard-address", "127.0.0.1:0", "--scheduler-file", "scheduler.json")
        processes.callback(stop, scheduler)
        self.address = read_address(root / "scheduler.json", scheduler)
        self.workers = 0

    def add_workers(self, count: int, with_project: bool = False) -> None:
        """``count`` workers of 1 thread under nannies, connected when this returns."""
        from distributed import Client

        for _ in range(count):
            where = self.root / f"worker-{self.workers}"
            where.mkdir()
            worker = start(where, "distributed.cli.dask_worker", self.address, "--host", "127.0.0.1",
                           "--nthreads", "1", "--no-dashboard", "--local-directory", str(where),
                           with_project=with_project)
            self.processes.callback(stop, worker)
            self.workers += 1
        with Client(self.address, timeout=30, set_as_default=False) as client:
            client.wait_for_workers(self.workers, timeout=120)


@pytest.fixture
def foreign(foreign_folder, tmp_path) -> Iterator[ForeignCluster]:
    with ExitStack() as processes:
        yield ForeignCluster(tmp_path, processes)


@pytest.fixture(scope="module")
def data_root(tmp_path_factory) -> Path:
    """Both benchmarks' smoke data, written by the benchmarks' own ``generate``."""
    root = tmp_path_factory.mktemp("data")
    for name in benchmarks.BENCHMARKS:
        module = benchmarks.load(name)
        module.generate(root, sweep.benchmark_profile(module, "smoke"))
    return root


def test_both_benchmarks_succeed_on_a_cluster_without_the_project(foreign, data_root, tmp_path):
    """The command as a user runs it; the workers lack the project too, so the preflight
    ships it to them (and the scheduler)."""
    foreign.add_workers(2)
    out = tmp_path / "out"
    done = subprocess.run(
        [sys.executable, "-m", "workloads.run", "--scheduler-address", foreign.address, "--benchmark", "all",
         "--profile", "smoke", "--device", "cpu", "--data-dir", str(data_root), "--model", COLOUR_MODEL,
         "--output", str(out), "--no-report"],
        check=False, cwd=REPO, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stdout + done.stderr
    assert re.search(r"failure detection: a silent worker is restarted after \d+ s", done.stdout), done.stdout
    records = results.read_records(out)
    assert {r["benchmark"]: r["status"] for r in records} == {"images": "succeeded", "taxi": "succeeded"}
    assert all(r["cluster"]["workers"] == 2 for r in records)
    assert "Traceback" not in done.stderr


def test_a_scheduler_without_the_project_gets_it_from_the_preflight(foreign):
    """Workers that have the project ship nothing by themselves, but the scheduler must
    unpickle every task graph: it is shipped the project as a worker would be."""
    from distributed import Client

    foreign.add_workers(1, with_project=True)
    with Client(foreign.address, set_as_default=False) as client:
        workers = sorted(client.scheduler_info(n_workers=-1)["workers"])
        with pytest.raises(RuntimeError, match="Error during deserialization of the task graph"):
            client.submit(endpoints.redact, "tcp://user:secret@host:1", pure=False).result()
        checked = preflight.check(client, workers, (), "cpu")
        assert checked.shipped_project
        assert client.submit(endpoints.redact, "tcp://user:secret@host:1", pure=False).result() == "tcp://host:1"


def test_a_scheduler_call_it_cannot_load_is_one_line_naming_scheduler_and_module(foreign, tmp_path,
                                                                                  monkeypatch, capsys):
    """The runner's worker-ttl question, made project-dependent: a function of a module not
    pickled by value (any of the project's but ``workloads.observe.environment``) is pickled by
    reference, and unpickling it imports ``workloads`` on the scheduler."""
    foreign.add_workers(1)
    monkeypatch.setattr(environment, "scheduler_worker_ttl", endpoints.redact)
    code = run.main(["--scheduler-address", foreign.address, "--benchmark", "taxi", "--device", "cpu",
                     "--data-dir", str(tmp_path / "data"), "--output", str(tmp_path / "out"), "--no-report"])
    err, at = capsys.readouterr().err, foreign.address
    message = (f"preflight failed on the scheduler {at}: missing module 'workloads'"
               " (ModuleNotFoundError: No module named 'workloads')")
    assert code == run.EXIT_SETUP
    assert [line for line in err.splitlines() if line.startswith("error:")] == [f"error: {message}"], err
    assert "Traceback" not in err
    (record,) = results.read_records(tmp_path / "out")
    assert record["status"] == "failed" and record["error"] == message
