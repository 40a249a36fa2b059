"""The embedded default: a local cluster sized to this machine, its workers tuned for torch
inference and XGBoost by ``workloads.tuning`` (the same environment the deployed workers get).

Each worker gets ``cores // workers`` threads. The tuning variables must be in
``distributed.nanny.pre-spawn-environ`` before the nanny spawns the worker, and a variable
already in this process's environment beats the config (the nanny also copies them into this
process): :func:`start` sets them around the cluster's creation and puts this process's
environment back afterwards.

A killed worker comes back through its nanny, and the cluster must wait for it: the cluster
object (distributed ``SpecCluster._update_worker_status``) closes a worker's nanny for good
when, ``distributed.deploy.lost-worker-timeout`` (15 s by default) after the worker left, no
worker of that name is connected. A replacement still starting then (a loaded machine, a
torch import) or lost again by then is never replaced. :func:`start` raises that timeout to
:data:`LOST_WORKER_TIMEOUT_S` for as long as the process lives, since the cluster reads it at
each loss.

Ctrl-C in a terminal sends SIGINT to the whole foreground process group, and the worker
processes are in the runner's. A worker that receives it dies with tracebacks of its own,
and the worker-loss watch may then fail the run before the runner records the interrupt.
Ctrl-C is the runner's to handle (it closes the cluster on its way out), so the workers
never receive it: the cluster's event loop runs in a thread started with SIGINT blocked,
every thread that loop starts inherits the block (the nannies' process-starting threads
among them) and so does every worker process they start, restarted ones included (a
blocked signal stays blocked across fork and exec; multiprocessing starts its resource
tracker the same way).

A SIGINT or SIGTERM to the runner while the cluster starts waits until it has started, then
closes it and goes on as the runner's handler says: distributed cannot close a cluster whose
workers are still starting (``SpecCluster._close`` asserts on them, and its exit hook prints
that). A second one while it starts goes through at once.
"""
from __future__ import annotations

import contextlib
import logging
import os
import signal
import sys
import threading
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

import dask
import distributed  # noqa: F401  (loads distributed's config defaults, nanny.pre-spawn-environ among them)

from workloads import tuning
from workloads.observe import environment

logger = logging.getLogger(__name__)

ALLOCATORS = ("auto", "tcmalloc", "glibc")
THREAD_VARIABLES = tuning.THREAD_VARIABLES
# With the default 15 s, a worker lost again within 15 s of an earlier loss, or one whose
# restart (spawn, imports, registration) is slow under load, is never replaced (module
# docstring). 10 minutes covers a restart under any load; a nanny that cannot restart its
# worker closes itself anyway (distributed nanny.py: "nanny-instantiate-failed").
LOST_WORKER_TIMEOUT_S = 600
LOST_WORKER_TIMEOUT_KEY = "distributed.deploy.lost-worker-timeout"
STOP_SIGNALS = (signal.SIGINT, signal.SIGTERM)


@dataclass(frozen=True)
class LocalPlan:
    """How a local cluster is made: sizes, the workers' environment, the cluster class."""

    n_workers: int
    threads_per_worker: int
    cores: int
    gpus: int  # > 0: a dask_cuda.LocalCUDACluster, one worker per GPU
    allocator: str  # tcmalloc | glibc
    environ: dict[str, str | None] = field(default_factory=dict)  # None: unset
    worker_ttl_s: float = tuning.WORKER_TTL_S  # a silent worker is restarted after this

    def describe(self) -> dict[str, object]:
        return {"n_workers": self.n_workers, "threads_per_worker": self.threads_per_worker,
                "cores": self.cores, "gpus": self.gpus, "allocator": self.allocator,
                "worker_ttl_s": self.worker_ttl_s,
                "cluster_class": "LocalCUDACluster" if self.gpus else "LocalCluster",
                "worker_environ": dict(self.environ)}


def gpu_count() -> int:
    """NVIDIA GPUs visible through NVML (0 without a driver)."""
    try:
        import pynvml
    except ImportError:
        return 0
    try:
        pynvml.nvmlInit()
        try:
            return pynvml.nvmlDeviceGetCount()
        finally:
            pynvml.nvmlShutdown()
    except pynvml.NVMLError:
        return 0


find_tcmalloc = tuning.find_tcmalloc


def plan(n_workers: int | None, device: str = "cpu", allocator: str = "auto", cap: bool = False,
         threads_per_worker: int | None = None, cores: int | None = None, gpus: int | None = None) -> LocalPlan:
    """Size a local cluster. ``n_workers=None`` means one per core (one per GPU with CUDA);
    with ``cap`` a larger count is cut to that (a profile's size on a small machine), else
    it is honoured even when it oversubscribes (a warning says so)."""
    if allocator not in ALLOCATORS:
        raise ValueError(f"allocator must be one of {ALLOCATORS}, got {allocator!r}")
    cores = cores or environment.usable_cores()
    gpus = (gpus if gpus is not None else gpu_count()) if device in ("cuda", "auto") else 0
    if gpus and not _dask_cuda_available():
        logger.warning("%d GPU(s) but dask_cuda does not import: starting a plain LocalCluster", gpus)
        gpus = 0
    limit = gpus or cores
    count = n_workers or limit
    if cap and count > limit:
        logger.info("%d workers wanted; this machine has %d %s: starting %d", count, limit,
                    "GPUs" if gpus else "cores", limit)
        count = limit
    if count > limit:
        logger.warning("%d workers on %d %s: they will share them", count, limit, "GPUs" if gpus else "cores")
    threads = threads_per_worker or max(1, cores // count)
    tcmalloc = find_tcmalloc() if allocator in ("auto", "tcmalloc") else None
    if allocator == "tcmalloc" and tcmalloc is None:
        raise ValueError("allocator tcmalloc: libtcmalloc_minimal.so.4 not found"
                         " (Debian: apt-get install libtcmalloc-minimal4)")
    environ = tuning.worker_environ(threads, tcmalloc, os.environ.get("LD_PRELOAD", ""))
    return LocalPlan(count, threads, cores, gpus, "tcmalloc" if tcmalloc else "glibc", environ)


def start(spec: LocalPlan, dashboard_address: str = ":8787", processes: bool = True,
          local_directory: str | None = None):
    """Start the cluster ``spec`` describes; returns the (Local|LocalCUDA)Cluster."""
    keep_lost_workers_nannies()
    kwargs: dict[str, Any] = {"n_workers": spec.n_workers, "threads_per_worker": spec.threads_per_worker,
                              "dashboard_address": dashboard_address, "local_directory": local_directory}
    cluster = None
    try:
        with stops_held():
            cluster = _start(spec, processes, kwargs)
    except BaseException:  # a stop held during the start: the cluster is up, and closed now
        if cluster is not None:
            cluster.close()
        raise
    return cluster


def _start(spec: LocalPlan, processes: bool, kwargs: dict[str, Any]):
    loop = sigint_free_loop()
    try:
        with worker_environ(spec.environ), dask.config.set(tuning.failure_detection_config(spec.worker_ttl_s)):
            if spec.gpus:
                from dask_cuda import LocalCUDACluster

                return LocalCUDACluster(loop=loop.loop, **kwargs)
            from distributed import LocalCluster

            return LocalCluster(processes=processes, loop=loop.loop, **kwargs)
    finally:
        loop.stop()  # the cluster holds the loop from here on and stops it when it closes


def sigint_free_loop():
    """A started distributed ``LoopRunner`` whose thread, and what it starts, never receives
    SIGINT (module docstring)."""
    from multiprocessing import resource_tracker

    from distributed.utils import LoopRunner

    # started here, not by the first worker's spawn: it unblocks SIGINT in the thread that starts it
    resource_tracker.ensure_running()
    runner = LoopRunner()
    with sigint_blocked():
        runner.start()
    return runner


@contextlib.contextmanager
def stops_held() -> Iterator[None]:
    """SIGINT and SIGTERM meanwhile held, then handled as before once the block ends (a second
    one goes through at once); main thread only, elsewhere Python cannot install handlers."""
    previous = {number: signal.getsignal(number) for number in STOP_SIGNALS}
    if threading.current_thread() is not threading.main_thread() or None in previous.values():
        yield  # None: a handler Python did not install, and cannot put back
        return
    held: list[int] = []

    def hold(signum: int, frame: Any) -> None:
        if held:  # the second: at once
            held.clear()
            _restore(previous)
            signal.raise_signal(signum)
            return
        held.append(signum)
        print(f"{signal.Signals(signum).name}: the run stops once the local cluster has started", file=sys.stderr,
              flush=True)

    for number in STOP_SIGNALS:
        signal.signal(number, hold)
    try:
        yield
    finally:
        _restore(previous)
        if held:
            signal.raise_signal(held[0])


def _restore(handlers: dict[signal.Signals, Any]) -> None:
    for number, handler in handlers.items():
        signal.signal(number, handler)


@contextlib.contextmanager
def sigint_blocked() -> Iterator[None]:
    """SIGINT blocked in this thread meanwhile: a thread started meanwhile keeps it blocked."""
    previous = signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGINT})
    try:
        yield
    finally:
        signal.pthread_sigmask(signal.SIG_SETMASK, previous)


def keep_lost_workers_nannies() -> None:
    """Let a nanny bring its worker back however long the restart takes (module docstring).
    Set for the process, not around the start: the cluster reads it on every worker loss."""
    if dask.config.get(LOST_WORKER_TIMEOUT_KEY) != LOST_WORKER_TIMEOUT_S:
        dask.config.set({LOST_WORKER_TIMEOUT_KEY: LOST_WORKER_TIMEOUT_S})


@contextlib.contextmanager
def worker_environ(environ: dict[str, str | None]) -> Iterator[None]:
    """Make ``environ`` what the nanny gives its workers, then restore this process."""
    config = dict(dask.config.get("distributed.nanny.pre-spawn-environ"))
    config.update(environ)
    with environment.patched_environ(environ), \
            dask.config.set({"distributed.nanny.pre-spawn-environ": config}):
        yield


def _dask_cuda_available() -> bool:
    try:
        import dask_cuda  # noqa: F401
    except Exception:  # ImportError, or CUDA libraries that fail to load
        return False
    return True
