"""Per-worker CPU, memory and GPU use during a run, from what Dask already measures.

Every worker runs a ``distributed.system_monitor.SystemMonitor`` that samples its own
process twice a second (CPU %, resident memory and, where NVML works, the GPU's
utilization and memory in use) and sends the latest sample to the scheduler with each
heartbeat. :class:`UtilizationSampler` asks the scheduler for those samples about once a
second while a run goes on and writes them to a JSON Lines sidecar file, one sample per
line::

    {"t": 12.004, "worker": "dask-worker-0", "address": "tcp://10.0.0.5:40123",
     "nthreads": 6, "cpu": 581.2, "memory": 2147483648,
     "gpu_utilization": 83.0, "gpu_memory": 16106127360, "gpu_memory_total": 21474836480}

``t`` is seconds since the sampler started (this process's clock, so workers on hosts
with skewed clocks still line up); ``worker`` is the worker's name (its address when it
has none); ``cpu`` is the worker process's CPU in percent of one core (a worker busy on
six cores reads about 600); ``memory`` its resident memory in bytes; ``gpu_utilization``
(%) and ``gpu_memory`` / ``gpu_memory_total`` (bytes) are null where the worker has no
GPU. The GPU numbers are NVML's for the worker's device (the first it sees), so workers
that share one GPU read the same values. A worker's sample is written only when it is
new (the worker's monitor time moved on), so a slow heartbeat gives fewer lines, never
repeated ones.

Why poll the scheduler rather than pull each worker's monitor history at the end with
``client.run``: the history lives in the workers, so a worker that leaves during the run,
or a scheduler that goes away before the end, would take every measurement with it; the
history is also capped (an hour at the default settings) and the pull costs a round trip
to every worker at the moment the run ends. Polling writes each sample as it arrives, so
what was measured survives any later failure, workers that join are picked up at the
next poll, and the cost is one small scheduler call a second. The price is resolution:
about one of the monitor's two samples a second is seen, which is plenty for a run that
lasts minutes.

The sampler must never break or stall the run it measures: each call to the scheduler
has a timeout, every error is logged (once) and polling carries on, and leaving the
block waits a bounded time for the polling thread, which is a daemon thread that stops
writing once the block is left.
"""
from __future__ import annotations

import json
import logging
import math
import os
import threading
import time
from collections.abc import Iterable
from pathlib import Path
from typing import Any, TextIO

logger = logging.getLogger(__name__)

#: A sample counts as busy when its worker process uses at least this much CPU (% of one core)
BUSY_CPU = 25.0
#: or, for the GPU basis, at least this much GPU utilization (%).
BUSY_GPU = 10.0

FIELDS = ("t", "worker", "address", "nthreads", "cpu", "memory", "gpu_utilization", "gpu_memory",
          "gpu_memory_total")


class UtilizationSampler:
    """Record per-worker utilization while the ``with`` block runs.

    Parameters
    ----------
    client : distributed.Client
        A synchronous client of the cluster to watch.
    path : str or os.PathLike
        The JSON Lines file to write (its folder is created; an existing file is replaced).
    interval : float
        Seconds between polls of the scheduler (default 1).
    call_timeout : float, optional
        Seconds one poll may take before it counts as failed (default ``max(5, 3 * interval)``).

    Attributes
    ----------
    samples : list of dict
        Every sample written, in order.
    errors : list of str
        Why polls failed (each distinct message once), for the record.

    Examples
    --------
    >>> with UtilizationSampler(client, "results/utilization/run.jsonl") as sampler:  # doctest: +SKIP
    ...     run_the_benchmark()
    >>> summarize(sampler.samples)  # doctest: +SKIP
    """

    def __init__(self, client: Any, path: str | os.PathLike, interval: float = 1.0,
                 call_timeout: float | None = None):
        if interval <= 0:
            raise ValueError(f"interval must be positive, got {interval}")
        self.client = client
        self.path = Path(path)
        self.interval = float(interval)
        self.call_timeout = float(call_timeout if call_timeout is not None else max(5.0, 3 * interval))
        self.samples: list[dict[str, Any]] = []
        self.errors: list[str] = []
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._file: TextIO | None = None
        self._start = 0.0
        self._last_seen: dict[str, float] = {}

    # ------------------------------------------------------------------ the block
    def __enter__(self) -> UtilizationSampler:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self._file = open(self.path, "w", encoding="utf-8")
        self._start = time.monotonic()
        self._thread = threading.Thread(target=self._loop, name="utilization-sampler", daemon=True)
        self._thread.start()
        return self

    def __exit__(self, *exc_info: Any) -> None:
        self.stop()

    def stop(self) -> None:
        """Stop polling and close the file; waits at most one poll's timeout."""
        self._stop.set()
        thread = self._thread
        if thread is not None and thread is not threading.current_thread():
            thread.join(self.call_timeout + self.interval + 1.0)
            if thread.is_alive():
                self._note("the polling thread did not stop in time; left behind (it writes no more)")
        with self._lock:
            if self._file is not None:
                self._file.close()
                self._file = None

    # ------------------------------------------------------------------ polling
    def _loop(self) -> None:
        next_poll = time.monotonic()
        while not self._stop.is_set():
            self.poll()
            next_poll += self.interval
            self._stop.wait(max(0.0, next_poll - time.monotonic()))
            if time.monotonic() - next_poll > self.interval:  # fell behind: don't burst to catch up
                next_poll = time.monotonic()

    def poll(self) -> int:
        """Ask the scheduler once and write the new samples; returns how many."""
        try:
            workers = self._fetch()
        except Exception as exc:  # the scheduler went away, the client closed, a timeout...
            self._note(f"polling the scheduler failed: {type(exc).__name__}: {exc}")
            return 0
        t = round(time.monotonic() - self._start, 3)
        fresh = []
        for address, info in workers.items():
            try:
                sample = to_sample(t, address, info)
            except Exception as exc:  # an unexpected shape: skip that worker this time
                self._note(f"unreadable metrics from {address}: {type(exc).__name__}: {exc}")
                continue
            stamp = (info.get("metrics") or {}).get("time")
            if stamp is not None and self._last_seen.get(address) == stamp:
                continue  # no heartbeat since the last poll
            if stamp is not None:
                self._last_seen[address] = stamp
            fresh.append(sample)
        with self._lock:
            if self._file is None:  # the block was left while this poll was under way
                return 0
            for sample in fresh:
                self._file.write(json.dumps(sample) + "\n")
            self._file.flush()
            self.samples.extend(fresh)
        return len(fresh)

    def _fetch(self) -> dict[str, dict[str, Any]]:
        client = self.client
        if getattr(client, "status", "running") in ("closing", "closed"):
            raise RuntimeError(f"the client is {client.status}")
        identity = client.sync(client.scheduler.identity, n_workers=-1,
                               callback_timeout=self.call_timeout)
        return dict(identity.get("workers") or {})

    def _note(self, message: str) -> None:
        if message not in self.errors:
            logger.warning("utilization: %s", message)
            self.errors.append(message)
        else:
            logger.debug("utilization: %s", message)


def to_sample(t: float, address: str, info: dict[str, Any]) -> dict[str, Any]:
    """One sidecar line from a worker's entry in the scheduler's identity."""
    metrics = info.get("metrics") or {}
    name = info.get("name")
    gpu_total = metrics.get("gpu-memory-total")
    return {
        "t": t,
        "worker": str(name) if name not in (None, "") else address,
        "address": address,
        "nthreads": info.get("nthreads"),
        "cpu": _number(metrics.get("cpu")),
        "memory": _number(metrics.get("memory")),
        "gpu_utilization": _number(metrics.get("gpu_utilization")),
        "gpu_memory": _number(metrics.get("gpu_memory_used")),
        "gpu_memory_total": _number(gpu_total) if gpu_total not in (None, -1) else None,
    }


def read_samples(path: str | os.PathLike) -> list[dict[str, Any]]:
    """The samples in a sidecar file; lines that are not JSON objects (a torn last line)
    are skipped."""
    samples = []
    with open(path, encoding="utf-8") as fh:
        for line in fh:
            try:
                sample = json.loads(line)
            except json.JSONDecodeError:
                continue
            if isinstance(sample, dict) and "worker" in sample and "t" in sample:
                samples.append(sample)
    return samples


# ---------------------------------------------------------------------- summary
def summarize(samples: Iterable[dict[str, Any]], busy_cpu: float = BUSY_CPU,
              busy_gpu: float = BUSY_GPU) -> dict[str, Any]:
    """Per-worker means and peaks, and how evenly the work was spread.

    Returns
    -------
    dict
        ``samples``, ``duration_s``; ``workers``: per worker name, ``samples``,
        ``first_t``/``last_t`` (when it was seen), ``nthreads``, ``cpu_mean``/``cpu_peak``
        (%), ``memory_mean``/``memory_peak`` (bytes), ``gpu_utilization_mean``/``_peak``
        (%), ``gpu_memory_mean``/``_peak`` (bytes) (null without a GPU) and ``busy_mean``
        (the basis resource's mean over the busy period); ``basis`` (``"gpu"`` or
        ``"cpu"``), ``busy_period`` (``[start, end]`` in ``t`` seconds, or null), and
        ``balance``.

    Notes
    -----
    ``balance`` is how evenly the work spread across the workers: the lowest per-worker
    mean of the basis resource divided by the highest, both over the busy period. 1.0
    means every worker was as busy as the busiest; 0.5 means the least busy worker did
    half as much as the busiest. The basis is GPU utilization when any worker's GPU
    reached ``busy_gpu`` % (the GPU then did the work), else process CPU %. The busy
    period runs from the first to the last sample in which any worker was busy on that
    basis (>= ``busy_gpu`` % GPU, or >= ``busy_cpu`` % CPU, a quarter of a core), so idle
    time before and after the work does not pull the number towards 1. It is null with
    fewer than two workers (nothing to compare) or when no worker was ever busy. It
    compares raw percentages, so it assumes workers of the same size.
    """
    samples = [s for s in samples if isinstance(s, dict) and "worker" in s]
    by_worker: dict[str, list[dict[str, Any]]] = {}
    for sample in sorted(samples, key=lambda s: s.get("t") or 0.0):
        by_worker.setdefault(str(sample["worker"]), []).append(sample)

    gpu_busy = any((s.get("gpu_utilization") or 0.0) >= busy_gpu for s in samples)
    basis, field, threshold = ("gpu", "gpu_utilization", busy_gpu) if gpu_busy else ("cpu", "cpu", busy_cpu)
    busy_times = [s["t"] for s in samples if (s.get(field) or 0.0) >= threshold]
    period = [min(busy_times), max(busy_times)] if busy_times else None

    workers = {}
    for name, rows in by_worker.items():
        entry: dict[str, Any] = {"samples": len(rows), "first_t": rows[0].get("t"), "last_t": rows[-1].get("t"),
                                 "nthreads": rows[-1].get("nthreads")}
        for key, values in (("cpu", _values(rows, "cpu")), ("memory", _values(rows, "memory")),
                            ("gpu_utilization", _values(rows, "gpu_utilization")),
                            ("gpu_memory", _values(rows, "gpu_memory"))):
            rounding = int if key in ("memory", "gpu_memory") else _round  # bytes stay whole
            entry[f"{key}_mean"] = rounding(sum(values) / len(values)) if values else None
            entry[f"{key}_peak"] = rounding(max(values)) if values else None
        in_period = [r for r in rows if period and period[0] <= r.get("t", -1.0) <= period[1]]
        busy = _values(in_period, field)
        entry["busy_mean"] = _round(sum(busy) / len(busy)) if busy else None
        workers[name] = entry

    means = [w["busy_mean"] for w in workers.values() if w["busy_mean"] is not None]
    balance = None
    if len(means) >= 2 and max(means) > 0:
        balance = _round(min(means) / max(means))
    times = [s["t"] for s in samples if isinstance(s.get("t"), (int, float))]
    return {
        "samples": len(samples),
        "duration_s": _round(max(times) - min(times)) if times else 0.0,
        "workers": workers,
        "basis": basis if samples else None,
        "busy_period": period,
        "balance": balance,
        "definition": (f"balance = min/max over workers of the mean {field} during the busy period "
                       f"(first to last sample with any worker >= {threshold:g} %); 1.0 = perfectly even"),
    }


def _values(rows: list[dict[str, Any]], key: str) -> list[float]:
    return [float(r[key]) for r in rows if isinstance(r.get(key), (int, float)) and not isinstance(r[key], bool)
            and math.isfinite(r[key])]


def _number(value: Any) -> float | int | None:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    return value if math.isfinite(value) else None


def _round(value: float) -> float:
    return round(float(value), 3)
