"""What a run held of the GPUs and how much of that its workers kept busy: the record's
``gpu_usage`` (its keys: ``workloads/runs/results.py``, beside ``GPU_USAGE``).

Held is counted per holder, in GPU-seconds: for each pod of the run's Dask cluster, the GPUs
it requests x the time it held them (``gpu_pods.py`` reads the pods); for a local CUDA
cluster, each of its GPUs (one worker each) x the time the cluster ran. A holder holds from
the moment it is given its GPUs (a pod's ``PodScheduled`` condition: from then on the node's
GPUs are the pod's, whether its container has started or not) until it gives them back (the
pod gone from the API, or terminated; the local cluster closed), or until the record is
written for a holder still holding then: an interrupted run is charged up to its end. What
it held splits three ways: *waiting* (held, its Dask worker not yet joined the scheduler:
the image pulled, the container started, the worker connecting), *working* (joined, while a
benchmark ran: the timed phases) and *idle* (the rest: joined while nothing ran, between runs,
during the preflight or the resizing). *Unscheduled* is what was asked for and not given yet
(a pod created, not yet scheduled: a run that waited for nodes), which holds nothing.

Each record is charged its own window: from where the invocation's previous record ended
(the first: when the invocation made or reached its cluster) to the moment it is written,
so the records of one invocation add up to what its cluster held meanwhile and nothing is
counted twice. Busy is each worker's GPU utilization (NVML, in Dask's own monitor, sampled by
``utilization.py`` about once a second while a benchmark runs) x the time between samples,
summed: GPU-seconds at 100 %. Between runs nothing is sampled, and nothing runs.

All times here are this process's clock (``time.time()``); the pods' and the scheduler's
times are brought onto it (``gpu_pods.py``).
"""
from __future__ import annotations

import datetime as dt
import getpass
import logging
import math
import os
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any, Protocol

logger = logging.getLogger(__name__)

STEP_S = 2.0  # seconds between two looks at the pods: a pod that comes or goes is seen this late at most
MAX_GAP_S = 5.0  # a worker's utilization sample counts until its next one, for this long at most
LAST_SAMPLE_S = 1.0  # and a worker's last sample of a run for this long (the sampler's interval)
PODS_LISTED = 200  # the record names this many holders at most (the most recent)


@dataclass
class Holding:
    """One holder of GPUs: a pod of the run's Dask cluster, or one GPU of a local CUDA cluster."""

    name: str
    gpus: int
    created: float | None = None  # asked for (a pod created); None: not known
    start: float | None = None  # given its GPUs (a pod scheduled); None: not (yet)
    joined: float | None = None  # its Dask worker joined the scheduler; None: not (yet), or no worker
    end: float | None = None  # gave them back; None: still holding

    def until(self, now: float) -> float:
        return self.end if self.end is not None else now


@dataclass(frozen=True)
class Split:
    """GPU-seconds of a window: held, and held split into waiting, working and idle."""

    held: float
    waiting: float
    working: float
    idle: float
    unscheduled: float  # asked for, not given (held nothing)
    most: int  # the most GPUs held at once


def overlap(a: float, b: float, c: float, d: float) -> float:
    """The length of [a, b] ∩ [c, d]."""
    return max(0.0, min(b, d) - max(a, c))


def within(a: float, b: float, spans: Iterable[tuple[float, float]]) -> float:
    """The length of [a, b] inside the (disjoint) ``spans``."""
    return sum(overlap(a, b, c, d) for c, d in spans)


def account(holdings: Iterable[Holding], window: tuple[float, float],
            working: Iterable[tuple[float, float]] = ()) -> Split:
    """The GPU-seconds ``holdings`` held in ``window``, split by ``working`` (the spans in
    which a benchmark ran; disjoint). A holder whose worker never joined waited all along."""
    begin, end = window
    runs = list(working)
    held = waiting = busy_time = unscheduled = 0.0
    found = list(holdings)
    for h in found:
        if h.gpus <= 0:
            continue
        stop = h.until(end)
        if h.created is not None:
            unscheduled += h.gpus * overlap(h.created, h.start if h.start is not None else stop, begin, end)
        if h.start is None:
            continue
        joined = min(max(h.joined, h.start), stop) if h.joined is not None else stop
        held += h.gpus * overlap(h.start, stop, begin, end)
        waiting += h.gpus * overlap(h.start, joined, begin, end)
        busy_time += h.gpus * within(max(joined, begin), min(stop, end), runs)
    return Split(held, waiting, busy_time, max(0.0, held - waiting - busy_time), unscheduled,
                 most_at_once(found, window))


def most_at_once(holdings: Iterable[Holding], window: tuple[float, float]) -> int:
    """The most GPUs the holders held at one moment of ``window``."""
    begin, end = window
    changes: list[tuple[float, int]] = []
    for h in holdings:
        if h.gpus > 0 and h.start is not None and overlap(h.start, h.until(end), begin, end) > 0:
            changes += [(max(h.start, begin), h.gpus), (min(h.until(end), end), -h.gpus)]
    most = now = 0
    for _, change in sorted(changes, key=lambda c: (c[0], c[1])):  # a release before a take at one moment
        now += change
        most = max(most, now)
    return most


def busy_seconds(samples: Iterable[dict[str, Any]]) -> float | None:
    """GPU-seconds at 100 % in the utilization samples (``utilization.py``): each worker's
    GPU utilization until its next sample (``MAX_GAP_S`` at most; its last one
    ``LAST_SAMPLE_S``). None when no sample measured a GPU."""
    by_worker: dict[str, list[tuple[float, float | None]]] = {}
    for s in samples:
        if isinstance(s, dict) and _number(s.get("t")):
            value: Any = s.get("gpu_utilization")
            by_worker.setdefault(str(s.get("address") or s.get("worker")), []).append(
                (float(s["t"]), float(value) if _number(value) else None))
    measured, total = False, 0.0
    for rows in by_worker.values():
        rows.sort(key=lambda r: r[0])
        for (t, value), following in zip(rows, [*rows[1:], None], strict=True):
            if value is None:
                continue
            measured = True
            gap = min(following[0] - t, MAX_GAP_S) if following is not None else LAST_SAMPLE_S
            total += min(max(value, 0.0), 100.0) / 100.0 * gap
    return total if measured else None


def iso(t: float | None) -> str | None:
    """``2026-11-29T21:53:20.125Z`` (UTC, milliseconds); None for None."""
    if t is None:
        return None
    moment = dt.datetime.fromtimestamp(t, dt.UTC)
    return moment.isoformat(timespec="milliseconds").replace("+00:00", "Z")


def os_user() -> str:
    """The runner's OS user (a person's run names them by ``--user`` instead)."""
    try:
        return getpass.getuser()
    except (KeyError, OSError):  # no passwd entry (a container's arbitrary uid)
        return f"uid {os.getuid()}"


def _number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)


# ---------------------------------------------------------------------- where holdings come from
class Holders(Protocol):
    """Where the holdings come from: the pods (``gpu_pods.PodSampler``), a local cluster
    (:class:`LocalGpus`), or nowhere (:class:`Unread`)."""

    @property
    def source(self) -> str:
        """``pods`` | ``local`` | ``none``."""

    def start(self) -> None: ...

    def stop(self) -> None: ...

    def refresh(self) -> None:
        """Look once more, now (before a record is written)."""

    def holdings(self, now: float) -> list[Holding]: ...

    def known(self) -> bool:
        """Whether what was held is known (False: nothing could be read)."""

    def note(self, split: Split) -> str:
        """One line: where the held numbers come from, or why they are zero or unknown."""


class Unsampled:
    """Holders told what they hold (a local cluster) or that nothing can be read: no thread
    samples them, so starting, stopping and looking again have nothing to do."""

    def start(self) -> None:
        """Nothing samples in the background."""

    def stop(self) -> None:
        """Nothing samples in the background."""

    def refresh(self) -> None:
        """What is held is known without looking."""


class LocalGpus(Unsampled):
    """A local cluster's GPUs, as the runner starts it: a local CUDA cluster holds one GPU per
    worker from its start (the workers start with it) until it is closed or restarted."""

    def __init__(self) -> None:
        self.found: list[Holding] = []
        self.why_none = "no GPU: a local cluster of CPU workers"
        self.started = 0

    @property
    def source(self) -> str:
        return "local" if any(h.gpus for h in self.found) else "none"

    def cluster_started(self, gpus: int, at: float, why_none: str = "") -> None:
        """A (re)started local cluster with ``gpus`` GPU workers, asked for at ``at``; the
        previous one's GPUs are given back then."""
        for h in self.found:
            if h.end is None:
                h.end = at
        self.started += 1
        self.found += [Holding(f"local-{self.started}-gpu-{i}", 1, at, at) for i in range(gpus)]
        if not gpus and why_none:
            self.why_none = f"no GPU: {why_none}"

    def workers_joined(self, at: float) -> None:
        for h in self.found:
            if h.joined is None and h.end is None:
                h.joined = at

    def holdings(self, now: float) -> list[Holding]:
        return list(self.found)

    def known(self) -> bool:
        return True

    def note(self, split: Split) -> str:
        if not split.held:
            return f"{self.why_none}; nothing held"
        return (f"a local CUDA cluster: its {split.most} GPU(s) (one per worker) x the time it ran, from its start;"
                " waiting: until its workers had started")


class Unread(Unsampled):
    """Holdings that cannot be read (no kubeconfig to read the pods with): unknown, not zero."""

    source = "none"

    def __init__(self, why: str):
        self.why = why

    def holdings(self, now: float) -> list[Holding]:
        return []

    def known(self) -> bool:
        return False

    def note(self, split: Split) -> str:
        return f"held not measured: {self.why}"


# ---------------------------------------------------------------------- one invocation
class GpuUsage:
    """One invocation's GPU usage: told when each benchmark ran and what its workers reported,
    it gives each record its ``gpu_usage`` (:meth:`record`), over the record's own window.

    A context manager: the holders (the pod sampler's thread) run while the block does."""

    def __init__(self, holders: Holders, person: str | None = None, namespace: str | None = None,
                 dask_cluster: str | None = None, since: float | None = None,
                 clock: Callable[[], float] = time.time, step_s: float = STEP_S):
        self.holders = holders
        self.person = person or os_user()
        self.namespace, self.dask_cluster = namespace, dask_cluster
        self.clock = clock
        self.since = since if since is not None else clock()
        self.step_s = step_s
        self.runs: list[tuple[float, float]] = []
        self.busy: list[float | None] = []

    def __enter__(self) -> GpuUsage:
        self.holders.start()
        return self

    def __exit__(self, *exc_info: Any) -> None:
        self.holders.stop()

    def ran(self, start: float, end: float, samples: Iterable[dict[str, Any]] = ()) -> None:
        """A benchmark ran from ``start`` to ``end``; ``samples``: its utilization samples."""
        self.runs.append((start, max(start, end)))
        self.busy.append(busy_seconds(samples))

    def record(self) -> dict[str, Any]:
        """The next record's ``gpu_usage``: its window runs from the previous record's end to now.
        Never raises (the record it goes into is written whatever happens here)."""
        try:
            return self._record()
        except Exception as exc:
            logger.warning("GPU usage not recorded", exc_info=True)
            end = max(self.clock(), self.since)
            usage: dict[str, Any] = {
                "person": self.person, "namespace": self.namespace, "dask_cluster": self.dask_cluster,
                "source": "none", "note": f"not measured: {type(exc).__name__}: {exc}", "gpus": None,
                **{f"{key}_gpu_seconds": None for key in ("held", "waiting", "working", "idle", "unscheduled", "busy")},
                "busy_source": None, "window": {"start": iso(self.since), "end": iso(end)}, "sampling_step_s": None,
                "pods": []}
            self.since, self.runs, self.busy = end, [], []
            return usage

    def _record(self) -> dict[str, Any]:
        self.holders.refresh()
        end = max(self.clock(), self.since)
        holdings = self.holders.holdings(end)
        split = account(holdings, (self.since, end), self.runs)
        known = self.holders.known()
        measured = [b for b in self.busy if b is not None]
        busy = sum(measured) if measured else None
        usage: dict[str, Any] = {
            "person": self.person, "namespace": self.namespace, "dask_cluster": self.dask_cluster,
            "source": self.holders.source,
            "note": f"{self.holders.note(split)}; {self._busy_note(busy, holdings, split)}",
            "gpus": split.most if known else None,
            **{f"{key}_gpu_seconds": round(getattr(split, key), 3) if known else None
               for key in ("held", "waiting", "working", "idle", "unscheduled")},
            "busy_gpu_seconds": None if busy is None else round(busy, 3),
            "busy_source": None if busy is None else "nvml",
            "window": {"start": iso(self.since), "end": iso(end)},
            "sampling_step_s": self.step_s if self.holders.source == "pods" else None,
            "pods": pods_listed(holdings, (self.since, end)) if self.holders.source == "pods" else [],
        }
        self.since, self.runs, self.busy = end, [], []
        return usage

    @staticmethod
    def _busy_note(busy: float | None, holdings: list[Holding], split: Split) -> str:
        if busy is None and not split.held:
            return "busy not measured (no GPU held)"
        if busy is None:
            return ("busy not measured: no worker reported a GPU utilization (NVML: nvidia-ml-py on the workers"
                    " and a GPU they see)")
        first = " (a worker of several GPUs: its first)" if any(h.gpus > 1 for h in holdings) else ""
        return f"busy: each worker's GPU utilization (NVML, Dask's monitor){first}, sampled about once a second"


def pods_listed(holdings: Iterable[Holding], window: tuple[float, float]) -> list[dict[str, Any]]:
    """The holders that existed in ``window``, as the record lists them (the latest
    ``PODS_LISTED``); ``end`` is what they were charged to, ``running`` whether they still were."""
    begin, end = window
    shown = []
    for h in holdings:
        since = h.start if h.start is not None else h.created
        if since is None or since > end or h.until(end) < begin:
            continue
        shown.append({"name": h.name, "gpus": h.gpus, "created": iso(h.created), "start": iso(h.start),
                      "joined": iso(h.joined) if h.joined is not None and h.joined <= h.until(end) else None,
                      "end": iso(min(h.until(end), end)), "running": h.end is None or h.end > end})
    shown.sort(key=lambda p: (p["start"] or p["created"] or "", p["name"]))
    return shown[-PODS_LISTED:]
