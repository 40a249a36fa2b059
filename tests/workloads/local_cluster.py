"""The local Dask cluster the runner tests share: made by the runner's own local-cluster code
(``workloads/cluster/local.py``), so the tests exercise the worker processes a run starts."""
from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from workloads.cluster import local


def two_worker_processes() -> Iterator[Any]:
    """2 worker processes x 1 thread on the CPU, closed when the generator is: a session
    fixture's body (``yield from two_worker_processes()``)."""
    plan = local.plan(2, device="cpu", threads_per_worker=1)
    started = local.start(plan, dashboard_address=":0")
    try:
        yield started
    finally:
        started.close()
