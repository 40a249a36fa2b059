"""Ctrl-C as a terminal sends it: SIGINT to the runner's whole process group, the local
cluster's worker processes included. The real runner with its local cluster, in a session of
its own (the terminal's process group), stopped mid-run and while its cluster starts: each time
the run is recorded as interrupted (exit 130), never as failed, no worker is listed as lost, and
no traceback reaches the console."""
from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from workloads.runs import results

from .faults import FAULTS_ENV
from .slow_worker_start import STARTING
from .support import REPO

SLOW_IMAGES = ["--benchmark", "images", "--model", "tests.reliability.faults:slow_colour_classifier",
               "--image-batch", "3", "--forward-batch", "3", "--device", "cpu"]


def start_in_own_group(data_root: Path, out: Path, faults: Path, log: Path, **environ: str) -> subprocess.Popen:
    """The runner on a local cluster of 2 workers, leading a process group of its own as a
    shell's foreground job does."""
    env = {**os.environ, FAULTS_ENV: str(faults), **environ,
           "PYTHONPATH": os.pathsep.join(filter(None, [str(REPO), os.environ.get("PYTHONPATH")]))}
    with open(log, "w") as fh:
        return subprocess.Popen(
            [sys.executable, "-m", "workloads.run", "--local", "--workers", "2", "--dashboard-address", ":0",
             "--data-dir", str(data_root), "--output", str(out), "--no-report", "--no-performance-report",
             *SLOW_IMAGES], cwd=REPO, stdout=fh, stderr=subprocess.STDOUT, env=env, start_new_session=True)


def wait_for(marker: Path, process: subprocess.Popen, log: Path, timeout: float = 180) -> None:
    deadline = time.monotonic() + timeout
    while not marker.exists():
        if process.poll() is not None or time.monotonic() > deadline:
            os.killpg(process.pid, signal.SIGKILL)
            pytest.fail(f"{marker.name} never appeared (exit {process.poll()}):\n{log.read_text()}")
        time.sleep(0.05)


def ctrl_c(process: subprocess.Popen) -> int:
    """SIGINT to the whole group, as the terminal sends it; the runner's exit code."""
    os.killpg(process.pid, signal.SIGINT)
    try:
        return process.wait(timeout=120)
    finally:
        with contextlib.suppress(ProcessLookupError):  # a worker left behind would disturb the next test
            os.killpg(process.pid, signal.SIGKILL)


def only_record(out: Path) -> dict:
    lines = (out / results.RESULTS_FILE).read_text().splitlines()
    assert len(lines) == 1, lines
    return json.loads(lines[0])


@pytest.fixture
def run_dirs(tmp_path) -> tuple[Path, Path, Path]:
    faults, out = tmp_path / "faults", tmp_path / "out"
    faults.mkdir()
    return faults, out, tmp_path / "log"


def test_ctrl_c_mid_run_is_an_interrupt_with_no_worker_lost(data_root, run_dirs):
    faults, out, log = run_dirs
    process = start_in_own_group(data_root, out, faults, log)
    wait_for(faults / "forward-slow", process, log)
    code = ctrl_c(process)

    text = log.read_text()
    assert code == 130, text
    record = only_record(out)
    assert (record["status"], record["error"]) == ("interrupted", "interrupted (SIGINT)")
    assert record["cluster"]["workers_lost"] == []
    assert "images: interrupted in" in text and "lost" not in text
    assert "Traceback" not in text and "KeyboardInterrupt" not in text, text


def test_ctrl_c_while_the_local_cluster_starts_stops_once_it_has_started(data_root, run_dirs):
    faults, out, log = run_dirs
    process = start_in_own_group(data_root, out, faults, log,
                                 DASK_DISTRIBUTED__WORKER__PRELOAD='["tests.reliability.slow_worker_start"]')
    wait_for(faults / STARTING, process, log)
    code = ctrl_c(process)

    text = log.read_text()
    assert code == 130, text
    assert "SIGINT: the run stops once the local cluster has started" in text
    assert (only_record(out)["status"], only_record(out)["error"]) == ("interrupted", "interrupted (SIGINT)")
    assert "Traceback" not in text and "Exception ignored" not in text, text


SLOW_IMPORT = '''"""Test-only: the runner's import of its local cluster module takes seconds, and says when it
starts, so a Ctrl-C lands while the runner's modules import."""
import pathlib
import sys
import time


class SlowLocal:
    def find_spec(self, name, path=None, target=None):
        if name == "workloads.cluster.local":
            pathlib.Path({marker!r}).touch()
            time.sleep(30)
        return None


sys.meta_path.insert(0, SlowLocal())
'''


def test_ctrl_c_while_the_runner_imports_is_one_line_and_exit_130(tmp_path):
    """The first half second: the runner's own modules still importing, before any handler of
    the run's. A ``sitecustomize`` on the path slows one import down and marks its start."""
    marker, hooks, log = tmp_path / "importing", tmp_path / "hooks", tmp_path / "run.log"
    hooks.mkdir()
    (hooks / "sitecustomize.py").write_text(SLOW_IMPORT.format(marker=str(marker)), encoding="utf-8")
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [str(hooks), str(REPO),
                                                                     os.environ.get("PYTHONPATH")]))}
    with open(log, "w") as fh:
        process = subprocess.Popen([sys.executable, "-m", "workloads.run", "--local", "--output",
                                    str(tmp_path / "out")],
                                   cwd=REPO, stdout=fh, stderr=subprocess.STDOUT, env=env, start_new_session=True)
    wait_for(marker, process, log, timeout=60)
    assert ctrl_c(process) == 130, log.read_text()
    text = log.read_text()
    assert text.strip() == "interrupted (SIGINT) while starting: nothing ran, nothing was recorded", text
    assert not (tmp_path / "out").exists()
