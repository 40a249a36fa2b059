"""The real command in its own process, stopped mid-run: SIGINT (Ctrl-C) and SIGTERM are
handled the same way, and a scheduler killed under it fails the run; each time the last
line of results.jsonl says how the run ended, why, and every phase measured so far,
earlier lines are untouched, and the exit code is non-zero."""
from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from workloads.runs import results

from .support import REPO, record_figure

SLOW_IMAGES = ["--benchmark", "images", "--model", "tests.reliability.faults:slow_colour_classifier",
               "--image-batch", "3", "--forward-batch", "3", "--device", "cpu"]
EARLIER = {"benchmark": "images", "status": "succeeded", "config": {}, "phases": {"list": 0.1}, "metrics": {},
           "versions": {}, "hardware": {}, "cluster": {}, "started_at": "2026-01-01T00:00:00Z"}


def environ() -> dict[str, str]:
    return {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [str(REPO), os.environ.get("PYTHONPATH")]))}


def start_runner(address: str, data_root: Path, out: Path, log: Path, *extra: str) -> subprocess.Popen:
    out.mkdir(parents=True, exist_ok=True)
    (out / results.RESULTS_FILE).write_text(json.dumps(EARLIER) + "\n")
    with open(log, "w") as fh:
        return subprocess.Popen(
            [sys.executable, "-m", "workloads.run", "--scheduler-address", address, "--data-dir", str(data_root),
             "--output", str(out), "--no-report", "--no-performance-report", *SLOW_IMAGES, *extra],
            cwd=REPO, stdout=fh, stderr=subprocess.STDOUT, env=environ())


def wait_for(path: Path, process: subprocess.Popen, log: Path, timeout: float = 180) -> None:
    """Until ``path`` exists: the slow model has begun a forward pass of ``infer``."""
    deadline = time.monotonic() + timeout
    while not path.exists():
        if process.poll() is not None or time.monotonic() > deadline:
            process.kill()
            pytest.fail(f"the run never reached infer (exit {process.poll()}):\n{log.read_text()}")
        time.sleep(0.05)


def last_record(out: Path) -> dict:
    lines = (out / results.RESULTS_FILE).read_text().splitlines()
    assert json.loads(lines[0]) == EARLIER, "an earlier record was changed"
    assert len(lines) == 2, lines
    return json.loads(lines[-1])


@pytest.mark.parametrize("signum, code", [(signal.SIGINT, 130), (signal.SIGTERM, 143)], ids=["SIGINT", "SIGTERM"])
def test_a_signal_mid_run_ends_it_with_an_interrupted_record(cluster, client, faults_dir, data_root, tmp_path,
                                                             signum, code, artifacts_dir):
    marker = faults_dir / "forward-slow"
    marker.unlink(missing_ok=True)
    out, log = tmp_path / "out", tmp_path / "log"
    process = start_runner(cluster.scheduler_address, data_root, out, log, "--workers", "2")
    wait_for(marker, process, log)
    sent = time.monotonic()
    process.send_signal(signum)
    assert process.wait(timeout=60) == code, log.read_text()
    stopped_after = time.monotonic() - sent

    record = last_record(out)
    name = signal.Signals(signum).name
    assert record["status"] == "interrupted" and record["error"] == f"interrupted ({name})"
    assert list(record["phases"]) == ["list", "load_model"] and list(record["unfinished_phases"]) == ["infer"]
    assert record["cluster"]["workers_lost"] == []
    text = log.read_text()
    assert "images: interrupted in" in text and f"interrupted ({name})" in text
    assert "1 record(s) appended" in text
    # the benchmark's own cleanup ran: no model left on the workers
    assert not any(client.run(lambda dask_worker: "workloads-images-model" in dask_worker.plugins).values())
    assert stopped_after < 30
    record_figure(artifacts_dir, f"{name}_process_ended_after_s", round(stopped_after, 3))


@pytest.fixture
def own_cluster(tmp_path, faults_dir):
    """A scheduler and a worker in processes of their own, so the scheduler can be killed."""
    scheduler_file = tmp_path / "scheduler.json"
    env = {**environ(), "DASK_TKG_FAULTS": str(faults_dir)}
    processes = [subprocess.Popen(
        [sys.executable, "-m", "distributed.cli.dask_scheduler", "--scheduler-file", str(scheduler_file),
         "--host", "127.0.0.1", "--port", "0", "--dashboard-address", ":0"],
        env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)]
    deadline = time.monotonic() + 60
    while not scheduler_file.exists() or not scheduler_file.stat().st_size:
        assert time.monotonic() < deadline, "the scheduler did not start"
        time.sleep(0.1)
    processes.append(subprocess.Popen(
        [sys.executable, "-m", "distributed.cli.dask_worker", "--scheduler-file", str(scheduler_file),
         "--nthreads", "1", "--no-dashboard"], env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL))
    yield processes[0], json.loads(scheduler_file.read_text())["address"]
    for process in reversed(processes):
        process.kill()
        process.wait(timeout=30)


def test_a_lost_scheduler_fails_the_run_naming_it(own_cluster, faults_dir, data_root, tmp_path, artifacts_dir):
    scheduler, address = own_cluster
    marker = faults_dir / "forward-slow"
    marker.unlink(missing_ok=True)
    out, log = tmp_path / "out", tmp_path / "log"
    process = start_runner(address, data_root, out, log, "--workers", "1", "--wait-timeout", "120")
    wait_for(marker, process, log)
    killed = time.monotonic()
    scheduler.kill()
    assert process.wait(timeout=120) == 1, log.read_text()
    ended_after = time.monotonic() - killed

    record = last_record(out)
    assert record["status"] == "failed"
    assert record["error"].startswith(f"lost the scheduler at {address} (")
    assert list(record["phases"]) == ["list", "load_model"] and list(record["unfinished_phases"]) == ["infer"]
    assert f"error: lost the scheduler at {address}: the sweep stops here" in log.read_text()
    assert ended_after < 30  # not the client's 60 s of reconnecting
    record_figure(artifacts_dir, "scheduler_kill_process_ended_after_s", round(ended_after, 3))
