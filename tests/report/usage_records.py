"""A team's collected run records for the usage report's tests: three people's, written with the
runner's own record writer (workloads/runs/results.py), each run's ``gpu_usage`` chosen so that
the totals are easy to compute by hand (the tests write them out), and one record from before
``gpu_usage`` was recorded.

    person  week      gpus  held s  waiting  working  idle   busy s
    alice   2026-W49  2     7200    600      4800     1800   3600
    alice   2026-W50  1     5400    300      4500     600    1800
    bob     2026-W49  4     14400   1200     10800    2400   not measured
    carol   2026-W49  1     1800    120      1500     180    1440
    carol   2026-W50  0     0       0        0        0      not measured (a local run: no GPU)

carol's second run starts on Sunday 6 December at 23:30 at UTC-1: Monday, week 50, in UTC.
"""
from __future__ import annotations

from pathlib import Path
from typing import Any

from workloads.runs.results import RESULTS_FILE, append_record, make_record

PEOPLE = ("alice", "bob", "carol")


def _pods(name: str, gpus: int, start: str, end: str) -> list[dict[str, Any]]:
    return [{"name": f"{name}-worker-{i}", "gpus": 1, "start": start, "joined": start, "end": end}
            for i in range(gpus)]


def _usage(person: str, gpus: int, seconds: tuple[int, int, int, int], busy: int | None,
           window: tuple[str, str], source: str = "pods") -> dict[str, Any]:
    held, waiting, working, idle = seconds
    return {"person": person, "namespace": f"dask-{person}" if source == "pods" else None,
            "dask_cluster": f"dask-{person}-1" if source == "pods" else None, "source": source,
            "note": ("the worker pods' own times through the Kubernetes API" if source == "pods"
                     else "a local cluster: no GPU held"),
            "gpus": gpus, "held_gpu_seconds": float(held), "waiting_gpu_seconds": float(waiting),
            "working_gpu_seconds": float(working), "idle_gpu_seconds": float(idle),
            "busy_gpu_seconds": None if busy is None else float(busy), "busy_source": None if busy is None else "nvml",
            "window": {"start": window[0], "end": window[1]},
            "pods": _pods(f"dask-{person}", gpus, *window) if source == "pods" else []}


RUNS = {  # person -> that person's runs' gpu_usage, in the order they ran
    "alice": [_usage("alice", 2, (7200, 600, 4800, 1800), 3600, ("2026-11-30T09:00:00Z", "2026-11-30T10:00:00Z")),
              _usage("alice", 1, (5400, 300, 4500, 600), 1800, ("2026-12-08T14:00:00Z", "2026-12-08T15:30:00Z"))],
    "bob": [_usage("bob", 4, (14400, 1200, 10800, 2400), None, ("2026-12-01T08:00:00Z", "2026-12-01T09:00:00Z"))],
    "carol": [_usage("carol", 1, (1800, 120, 1500, 180), 1440, ("2026-12-02T16:00:00Z", "2026-12-02T16:30:00Z")),
              _usage("carol", 0, (0, 0, 0, 0), None, ("2026-12-06T23:30:00-01:00", "2026-12-06T23:40:00-01:00"),
                     source="local")],
}


def record(usage: dict[str, Any] | None, benchmark: str = "images") -> dict[str, Any]:
    """A succeeded run's record with ``usage`` as its ``gpu_usage`` (none: a record from before it)."""
    return make_record(benchmark=benchmark, status="succeeded", config={"device": "cuda", "workers": 2},
                       phases={"infer": 60.0}, metrics={"images_per_second": 100.0}, versions={}, hardware={},
                       cluster={"kind": "remote"}, started_at=(usage or {}).get("window", {}).get("start", ""),
                       gpu_usage=usage)


def write_team(root: Path) -> dict[str, Path]:
    """``root/<person>/results.jsonl`` for each person; alice's begins with a record without ``gpu_usage``."""
    append_record(root / "alice", record(None, benchmark="taxi"))
    for person in PEOPLE:
        for usage in RUNS[person]:
            append_record(root / person, record(usage))
    return {person: root / person / RESULTS_FILE for person in PEOPLE}
