"""The reliability tests' helpers: the runner's CLI on the shared cluster, worker counts and the
recovery figures they record."""
from __future__ import annotations

import json
import time
from pathlib import Path

from workloads import run
from workloads.runs import results

REPO = Path(__file__).resolve().parents[2]
FIGURES = "reliability-figures.json"  # measured figures, in test-artifacts/; catalogue --record quotes them


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
