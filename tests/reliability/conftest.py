"""One real local Dask cluster for this folder (2 worker processes x 1 thread under
nannies, as the runner starts them), the fault directory its workers watch, and small
generated datasets of both benchmarks."""
from __future__ import annotations

import json
import os
import time
from pathlib import Path

import pytest

from tests.workloads.local_cluster import two_worker_processes
from workloads import run
from workloads.images import synthetic as synth_images
from workloads.runs import results
from workloads.taxi import synthetic as synth_taxi

from .faults import FAULTS_ENV

REPO = Path(__file__).resolve().parents[2]
FIGURES = "reliability-figures.json"  # measured figures, in test-artifacts/; catalogue --record quotes them


@pytest.fixture(scope="session")
def faults_dir(tmp_path_factory) -> Path:
    """Set before the cluster starts: workers (and the ones nannies restart) inherit it."""
    directory = tmp_path_factory.mktemp("faults")
    previous = os.environ.get(FAULTS_ENV)
    os.environ[FAULTS_ENV] = str(directory)
    yield directory
    if previous is None:
        os.environ.pop(FAULTS_ENV, None)
    else:
        os.environ[FAULTS_ENV] = previous


@pytest.fixture(scope="session")
def cluster(faults_dir):
    yield from two_worker_processes()


@pytest.fixture(scope="session")
def client(cluster):
    """The tests' own client: not the default, and not entered as a context (which would
    make it the *current* client in this thread, so that distributed's helpers that take
    the current client, ``wait`` and ``as_completed``, would use it, and its event loop,
    for the runner's futures)."""
    from distributed import Client

    connected = Client(cluster, set_as_default=False)
    connected.wait_for_workers(2)
    yield connected
    connected.close()


@pytest.fixture(scope="session")
def data_root(tmp_path_factory) -> Path:
    """``dogs/`` (4 breeds x 5 images and one file of every broken kind) and ``taxi/``
    (two months, one CSV and one Parquet, 15,000 rows each)."""
    root = tmp_path_factory.mktemp("data")
    synth_images.generate(root / "dogs", breeds=4, images_per_breed=5, broken=True, seed=7)
    synth_taxi.generate(root, ["2017-06.csv", "2019-02.parquet"], 15_000)
    return root


def workers_now(client) -> list[str]:
    """The scheduler's workers, asked now (``scheduler_info()`` may answer from a cache)."""
    return client.run_on_scheduler(lambda dask_scheduler: sorted(dask_scheduler.workers))


def wait_for_workers(client, count: int, timeout: float = 60) -> float:
    """Seconds until the cluster has ``count`` workers again."""
    started = time.monotonic()
    while len(workers_now(client)) < count:
        if time.monotonic() - started > timeout:
            raise TimeoutError(f"fewer than {count} workers after {timeout} s")
        time.sleep(0.05)
    return time.monotonic() - started


def recovery(client, killed: dict) -> dict[str, float]:
    """From the scheduler's own events, once the cluster is whole again: seconds from the
    kill until the scheduler removed the worker, and from then until a worker joined in
    its place."""
    wait_for_workers(client, 2)
    events = client.get_events("all")
    removed = next(t for t, m in events if m.get("action") == "remove-worker" and m.get("worker") == killed["address"])
    joined = min(t for t, m in events if m.get("action") == "add-worker" and t >= removed)
    return {"detected_after_s": round(removed - killed["time"], 3), "replaced_after_s": round(joined - removed, 3)}


def cli(cluster, data_root: Path, out: Path, *extra: str) -> tuple[int, list[dict]]:
    """The runner in this process against the cluster; returns the exit code and the
    records this call appended."""
    before = len(results.read_records(out))
    code = run.main(["--scheduler-address", cluster.scheduler_address, "--data-dir", str(data_root),
                     "--output", str(out), "--device", "cpu", *extra])
    return code, results.read_records(out)[before:]


def warm_then_calm(cluster, data_root, out, *args: str) -> dict:
    """An undisturbed run on a warm cluster: a first, discarded run imports the
    benchmark's libraries on the workers and fills their caches, so the undisturbed run
    that the disturbed one is compared with is as warm as it (comparing a cold undisturbed
    run with a warm disturbed one hid the cost of recovering)."""
    code, (warm_up,) = cli(cluster, data_root, out, *args)
    assert code == 0 and warm_up["status"] == "succeeded", warm_up.get("error")
    code, (calm,) = cli(cluster, data_root, out, *args)
    assert code == 0 and calm["status"] == "succeeded", calm.get("error")
    assert calm["cluster"]["workers_lost"] == []
    return calm


def recovery_cost(calm: dict, hit: dict, phase: str) -> float:
    """Seconds the fault added to ``phase``: the disturbed run's less the warm undisturbed one's."""
    return round(hit["phases"][phase] - calm["phases"][phase], 3)


def record_figure(artifacts: Path, name: str, value) -> None:
    """Keep a measured figure for docs/reliability.md (merged into test-artifacts/FIGURES)."""
    path = artifacts / FIGURES
    figures = json.loads(path.read_text()) if path.exists() else {}
    figures[name] = value
    path.write_text(json.dumps(figures, indent=1, sort_keys=True) + "\n")
