"""Watching the workers while a run is on: which leave unexpectedly, whether the run can
go on without them, and how long each took to be replaced. The runner's stop handling
(``workloads.cluster.stopping``) turns a verdict into a stopped run."""
from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Iterable
from typing import Any

from workloads.cluster.endpoint import redact

logger = logging.getLogger(__name__)


class WorkerWatch:
    """The workers that leave the scheduler unexpectedly while a run is on, from the
    scheduler's ``remove-worker``/``add-worker`` events (topic ``all``), and how long
    each took to be replaced (scheduler clock).

    An unrestricted run uses every worker: Dask recomputes a lost worker's tasks on the
    others (and on the worker that replaces it), so up to ``allowed`` losses are absorbed.
    A restricted run (``restricted``: the addresses it may use) loses a worker it uses: if a
    connected worker it does not use is left (``spares``), ``on_replace(message)`` asks for
    the run to go on there; else it goes on with the workers it has left. More than
    ``allowed`` losses, or the loss of every worker a restricted run may use with no spare
    left, sets :attr:`exceeded` to a message naming the lost workers and calls
    ``on_exceeded(message)`` once. Both callbacks run on the client's event-loop thread.
    Use as a context manager around the run.
    """

    def __init__(self, client, allowed: int, restricted: Iterable[str] | None = None,
                 on_exceeded: Callable[[str], None] | None = None, spares: Iterable[str] = (),
                 on_replace: Callable[[str], None] | None = None):
        self.client = client
        self.allowed = allowed
        self.restricted = frozenset(restricted or ())
        self.spares = [a for a in spares if a not in self.restricted]
        self.on_exceeded = on_exceeded
        self.on_replace = on_replace
        self.lost: list[tuple[str, float]] = []  # (address, scheduler time), in order
        self.joined: list[tuple[str, float]] = []
        self.exceeded: str | None = None
        self.replacement: tuple[str, str] | None = None  # (lost, spare) asked for
        self._lock = threading.Lock()
        self._active = False

    def __enter__(self) -> WorkerWatch:
        self._active = True
        self.client.subscribe_topic("all", self._on_event)
        return self

    def __exit__(self, *exc_info) -> None:
        with self._lock:  # after this, no callback is called
            self._active = False
        try:
            self.client.unsubscribe_topic("all")
        except Exception as exc:  # a lost scheduler: nothing left to unsubscribe from
            logger.debug("could not unsubscribe from worker events: %s", exc)

    def _on_event(self, event: tuple[float, dict[str, Any]]) -> None:
        stamp, message = event
        if not isinstance(message, dict):
            return
        action, address = message.get("action"), message.get("worker")
        if not isinstance(address, str):  # no worker named: nothing to track
            return
        if action == "add-worker":
            self.joined.append((address, stamp))
            if self.restricted and address not in self.restricted:
                self.spares.append(address)
            return
        if action != "remove-worker" or message.get("expected"):
            return
        if self.restricted and address not in self.restricted:  # a worker this run does not use
            self.spares = [a for a in self.spares if a != address]
            return
        self.lost.append((address, stamp))
        logger.warning("worker %s lost (%d so far; %d allowed)", redact(address), len(self.lost), self.allowed)
        self._judge(address)

    def _judge(self, address: str) -> None:
        names = ", ".join(redact(a) for a, _ in self.lost)
        with self._lock:
            if self.exceeded is not None or self.replacement is not None or not self._active:
                return
            if len(self.lost) > self.allowed:
                self._exceed(f"{len(self.lost)} worker(s) lost during the run, more than the {self.allowed}"
                             f" allowed (--max-lost-workers): {names}")
            elif self.restricted and self.spares and self.on_replace is not None:
                self.replacement = (address, self.spares.pop(0))
                self.on_replace(f"worker {redact(address)} lost: the run goes on with"
                                f" {redact(self.replacement[1])} in its place")
            elif self.restricted and self.restricted <= {a for a, _ in self.lost}:
                self._exceed(f"every worker this run is restricted to was lost and no other is connected: {names}")

    def _exceed(self, reason: str) -> None:
        self.exceeded = reason
        if self.on_exceeded is not None:
            self.on_exceeded(reason)

    def losses(self) -> list[dict[str, Any]]:
        """Each lost worker and the seconds until a worker joined after it (None if none
        did before the run ended)."""
        out = []
        for address, stamp in self.lost:
            after = [t for _, t in self.joined if t >= stamp]
            out.append({"address": redact(address),
                        "replaced_after_s": round(min(after) - stamp, 3) if after else None})
        return out
