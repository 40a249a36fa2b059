"""The pods of the run's Dask cluster, looked at every ``STEP_S`` seconds while the runner runs,
for what they held of the GPUs (``gpu_usage.py`` counts it): which GPUs each requests, when it
was created, scheduled and gone, and when its Dask worker joined the scheduler.

The pods are read with the identity the runner already reaches the cluster with: the stack's
runner identity, whose Role reads pods in the Dask namespace (components/dask/runner_access.py),
or a person's own kubeconfig, whose Role reads pods in their namespace
(components/dask/team/access.py). Looking again and again, not once at the end, counts the pods
that come and go during the run (resizing, an autoscaler, a replaced worker): a pod that is
gone is charged until the look that no longer found it (at most one step late), a pod that
ended (``Succeeded``, ``Failed``) until its containers did.

- Requested GPUs: each container's ``*/gpu`` extended resource (``nvidia.com/gpu``; limits,
  which the API makes the requests too), summed, or an init container's if more: the pod's
  effective request, what the scheduler takes from the node.
- Held from: the ``PodScheduled`` condition's ``lastTransitionTime``, when the scheduler bound the
  pod to a node and the node's GPUs became the pod's, not ``status.startTime`` (when the
  kubelet took the pod up, after the binding): a pod pulling its image holds its GPUs already.
  A pod without the condition (taken up by a kubelet directly) holds from its ``startTime``.
- Joined: the scheduler logs an ``add-worker`` event under each worker's address, stamped with
  its own clock. A worker is the pod's when its name is the pod's ``DASK_WORKER_NAME`` (the
  operator's workers run with ``--name $(DASK_WORKER_NAME)``), or, for a pod without one (the
  dask chart's), when its host is the pod's IP; a worker that joined before the pod was
  scheduled belonged to an earlier pod of that name or address. Where the scheduler gives no
  event, the runner's own first sight of the worker stands in.

Clocks: the pods' times are the API server's, written to the second, the events' the
scheduler's, and the runner's machine may be set otherwise. Each look compares the API
server's ``Date`` header with this process's clock around the call; when the median differs by
more than ``SKEW_S`` (a whole second of truncation is in every header), the cluster's times are
moved onto this machine's by it (the scheduler runs on a node of the cluster, on its clock).

A look that fails (the API away a moment, the login expired) changes nothing: no pod is taken
for gone, and the error is named in the record's note. Nothing here can fail the run.
"""
from __future__ import annotations

import contextlib
import datetime as dt
import email.utils
import json
import logging
import statistics
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from .gpu_usage import STEP_S, Holding, Split

logger = logging.getLogger(__name__)

SKEW_S = 2.0  # the cluster's clock is corrected when it differs from this machine's by more
CALL_TIMEOUT_S = 10.0  # one call to the API server or the scheduler
LAST_LOOK_TIMEOUT_S = 5.0  # the look before a record is written
WORKER_NAME_ENV = "DASK_WORKER_NAME"


@dataclass
class Pod:
    """One pod as the looks found it; times on the cluster's clock, ``last_seen``/``gone`` on this one."""

    name: str
    gpus: int
    created: float | None
    scheduled: float | None
    ip: str | None
    worker_name: str | None
    finished: float | None  # its containers ended (Succeeded or Failed)
    last_seen: float
    ended_seen: float | None = None  # first found ended, where its containers name no end
    gone: float | None = None


@dataclass
class Worker:
    """A Dask worker the scheduler named: its name and host, when it joined by the scheduler's
    clock (None: no event), and when the runner first saw it (this machine's clock)."""

    name: str
    host: str
    event: float | None
    seen: float


def gpus_requested(spec: dict[str, Any]) -> int:
    """The GPUs a pod's spec requests (its effective request: containers summed, or the
    largest init container's if more)."""
    def of(container: dict[str, Any]) -> int:
        resources = container.get("resources") or {}
        found: dict[str, int] = {}
        for part in ("limits", "requests"):
            for key, value in (resources.get(part) or {}).items():
                if str(key).endswith("/gpu"):
                    found[key] = max(found.get(key, 0), _quantity(value))
        return sum(found.values())

    running = sum(of(c) for c in spec.get("containers") or ())
    return max(running, max((of(c) for c in spec.get("initContainers") or ()), default=0))


def _quantity(value: Any) -> int:
    try:
        return max(0, int(float(str(value))))
    except ValueError:
        return 0


def timestamp(text: Any) -> float | None:
    """Seconds since the epoch for an RFC 3339 time of the API (``2026-11-29T21:53:20Z``)."""
    if not isinstance(text, str) or not text:
        return None
    try:
        return dt.datetime.fromisoformat(text.replace("Z", "+00:00")).timestamp()
    except ValueError:
        return None


def scheduled_at(status: dict[str, Any], spec: dict[str, Any]) -> float | None:
    """When the pod was bound to a node (module docstring); None: not yet."""
    for condition in status.get("conditions") or ():
        if condition.get("type") == "PodScheduled":
            return timestamp(condition.get("lastTransitionTime")) if condition.get("status") == "True" else None
    return timestamp(status.get("startTime")) if spec.get("nodeName") else None


def finished_at(status: dict[str, Any]) -> float | None:
    """When an ended pod's (``Succeeded``, ``Failed``) last container ended; None for a live pod."""
    if status.get("phase") not in ("Succeeded", "Failed"):
        return None
    ends = [timestamp(((c.get("state") or {}).get("terminated") or {}).get("finishedAt"))
            for c in status.get("containerStatuses") or ()]
    known = [t for t in ends if t is not None]
    return max(known) if known else None


def worker_name(spec: dict[str, Any]) -> str | None:
    for container in spec.get("containers") or ():
        for variable in container.get("env") or ():
            if variable.get("name") == WORKER_NAME_ENV and variable.get("value"):
                return str(variable["value"])
    return None


def read_pod(item: dict[str, Any], now: float) -> tuple[str, Pod]:
    """(uid, :class:`Pod`) from one item of the API's pod list."""
    meta, spec, status = item.get("metadata") or {}, item.get("spec") or {}, item.get("status") or {}
    return str(meta.get("uid") or meta.get("name")), Pod(
        name=str(meta.get("name")), gpus=gpus_requested(spec), created=timestamp(meta.get("creationTimestamp")),
        scheduled=scheduled_at(status, spec), ip=status.get("podIP"), worker_name=worker_name(spec),
        finished=finished_at(status), last_seen=now)


def server_offset(date: str | None, sent: float, received: float) -> float | None:
    """The API server's clock minus this machine's, from one response's ``Date`` header
    (whole seconds: its middle, half a second on)."""
    if not date:
        return None
    try:
        server = email.utils.parsedate_to_datetime(date).timestamp() + 0.5
    except (TypeError, ValueError):
        return None
    return server - (sent + received) / 2


class PodSampler:
    """The pods of one Dask cluster (``namespace``, ``selector``), looked at every ``step_s``
    in a daemon thread while started; ``client`` gives the runner's Dask client when there is
    one (None before it connects), for the workers' joins. A :class:`gpu_usage.Holders`."""

    source = "pods"

    def __init__(self, core: Any, namespace: str, selector: str, describe: str,
                 client: Callable[[], Any] | None = None, step_s: float = STEP_S,
                 clock: Callable[[], float] = time.time, call_timeout: float = CALL_TIMEOUT_S):
        self.core, self.namespace, self.selector, self.describe = core, namespace, selector, describe
        self.client, self.step_s, self.clock, self.call_timeout = client, step_s, clock, call_timeout
        self.pods: dict[str, Pod] = {}
        self.workers: dict[str, Worker] = {}
        self.offsets: list[float] = []
        self.looks = 0  # looks that read the pods
        self.errors: list[str] = []
        self.failed = 0
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    # ------------------------------------------------------------------ the thread
    def start(self) -> None:
        self._thread = threading.Thread(target=self._loop, name="gpu-pods", daemon=True)
        self._thread.start()

    def stop(self) -> None:
        """No more looks (a look under way is left to end by itself: a daemon thread, and no
        record is written from it)."""
        self._stop.set()
        if self._thread is not None:
            self._thread.join(1.0)
        if self._thread is None or not self._thread.is_alive():
            with contextlib.suppress(Exception):
                self.core.api_client.close()

    def _loop(self) -> None:
        while not self._stop.is_set():
            self.look()
            self._stop.wait(self.step_s)

    def refresh(self) -> None:
        self.look(LAST_LOOK_TIMEOUT_S)

    # ------------------------------------------------------------------ one look
    def look(self, timeout: float | None = None) -> None:
        """Read the pods, then the workers the scheduler knows (each step; never raises)."""
        with self._lock:
            try:
                self._read_pods(timeout or self.call_timeout)
            except Exception as exc:
                self._note(f"{type(exc).__name__}: {_first_line(exc)}")
            with contextlib.suppress(Exception):  # the client closing, a scheduler gone: joins stay as seen
                self._read_workers(timeout or self.call_timeout)

    def _read_pods(self, timeout: float) -> None:
        sent = self.clock()
        response = self.core.list_namespaced_pod(self.namespace, label_selector=self.selector,
                                                 _request_timeout=timeout, _preload_content=False)
        received = self.clock()
        items = json.loads(response.data).get("items") or []
        offset = server_offset(response.headers.get("Date"), sent, received)
        if offset is not None:
            self.offsets.append(offset)
        now = (sent + received) / 2
        listed = set()
        for item in items:
            uid, pod = read_pod(item, received)
            listed.add(uid)
            before = self.pods.get(uid)
            if (item.get("status") or {}).get("phase") in ("Succeeded", "Failed") and pod.finished is None:
                pod.ended_seen = before.ended_seen if before is not None and before.ended_seen else now
            self.pods[uid] = pod
        for uid, pod in self.pods.items():
            if uid not in listed and pod.gone is None:
                pod.gone = now
        self.looks += 1

    def _read_workers(self, timeout: float) -> None:
        client = self.client() if self.client is not None else None
        if client is None or getattr(client, "status", "running") != "running":
            return
        identity = client.sync(client.scheduler.identity, n_workers=-1, callback_timeout=timeout)
        now = self.clock()
        for address, info in (identity.get("workers") or {}).items():
            if address in self.workers:
                continue
            try:
                events = client.sync(client.scheduler.events, topic=address, callback_timeout=timeout)
            except Exception:
                events = ()
            joins = [float(t) for t, message in events or ()
                     if isinstance(message, dict) and message.get("action") == "add-worker"]
            self.workers[address] = Worker(str(info.get("name") or address), str(info.get("host") or ""),
                                           min(joins) if joins else None, now)

    def _note(self, message: str) -> None:
        self.failed += 1
        if message not in self.errors:
            logger.warning("GPU held: reading the pods of %s: %s", self.describe, message)
            self.errors.append(message)

    # ------------------------------------------------------------------ what was found
    @property
    def offset(self) -> float:
        """The cluster's clock minus this machine's, when it is off by more than ``SKEW_S``; else 0."""
        found = statistics.median(self.offsets) if self.offsets else 0.0
        return found if abs(found) > SKEW_S else 0.0

    def holdings(self, now: float) -> list[Holding]:
        with self._lock:
            shift = self.offset
            return [self._holding(pod, shift) for pod in self.pods.values()]

    def _holding(self, pod: Pod, shift: float) -> Holding:
        def here(t: float | None) -> float | None:
            return None if t is None else t - shift

        start = here(pod.scheduled)
        end = here(pod.finished) if pod.finished is not None else pod.ended_seen or pod.gone
        return Holding(pod.name, pod.gpus, here(pod.created), start, self._joined(pod, start, shift), end)

    def _joined(self, pod: Pod, start: float | None, shift: float) -> float | None:
        """When the pod's worker first joined after the pod was scheduled (module docstring)."""
        if pod.worker_name:
            mine = [w for w in self.workers.values() if w.name == pod.worker_name]
        else:
            mine = [w for w in self.workers.values() if pod.ip and w.host == pod.ip]
        times = [w.event - shift if w.event is not None else w.seen for w in mine]
        after = [t for t in times if start is None or t >= start - 1.0]  # the pod's times are whole seconds
        return min(after) if after else None

    def known(self) -> bool:
        return self.looks > 0

    def note(self, split: Split) -> str:
        if not self.looks:
            why = self.errors[-1] if self.errors else "no look finished"
            return f"held not measured: the pods of {self.describe} could not be read ({why})"
        if not any(p.gpus for p in self.pods.values()):
            return f"no GPU: the pods of {self.describe} request none; nothing held"
        parts = [f"held: the GPUs each pod of {self.describe} requests, from its PodScheduled time until it was"
                 f" gone (looked for every {self.step_s:g} s) or the record was written; joined: its worker's"
                 " add-worker event on the scheduler"]
        if self.offset:
            parts.append(f"the cluster's clock is {self.offset:+.1f} s off this machine's, corrected")
        if self.failed:
            parts.append(f"{self.failed} look(s) at the pods failed, the last: {self.errors[-1]}")
        return "; ".join(parts)


def _first_line(exc: BaseException) -> str:
    status, reason = getattr(exc, "status", None), getattr(exc, "reason", None)
    if status is not None:
        return f"HTTP {status} {reason or ''}".strip()
    return (str(exc).splitlines() or [""])[0][:200]
