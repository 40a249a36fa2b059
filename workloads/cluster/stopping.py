"""Stopping a run from outside the benchmark: SIGINT / SIGTERM, and the worker-loss watch's
verdict, both delivered in the runner's main thread as :class:`RunStopped`.

A benchmark's ``run`` blocks the main thread on Dask futures; a ``KeyboardInterrupt`` raised
there is what makes distributed cancel what it waits on, so the watch (which runs on the
client's event-loop thread) stops a run by sending SIGINT to the main thread, and the handler
tells that SIGINT from a user's.
"""
from __future__ import annotations

import contextlib
import signal
import threading
from collections.abc import Iterator
from typing import Any

from workloads.core.errors import RunStopped

EXIT_FAILED = 1


class Stopper:
    """The runner's signal handling and stop reasons."""

    def __init__(self) -> None:
        self.installed = False  # handlers are installed (main thread only)
        self.in_run = False  # a benchmark's run() is executing
        self.reason: str | None = None  # the worker-loss watch's last verdict
        self.status = "failed"  # what that verdict makes of the run
        self._stops_sent = 0  # SIGINTs sent by stop_run and not yet handled

    def stop_run(self, reason: str, status: str = "failed") -> None:
        """The worker-loss watch's verdict (event-loop thread): stop the run in the main
        thread the way Ctrl-C would. ``status`` failed ends the run; replace asks the runner
        to run it again on a replacement worker."""
        self.reason, self.status = reason, status
        if self.installed:
            self._stops_sent += 1
            main = threading.main_thread().ident
            if main is not None:  # always so once Python runs; the type allows None
                signal.pthread_kill(main, signal.SIGINT)

    def on_signal(self, signum: int, frame: Any) -> None:
        """SIGINT and SIGTERM stop the run (``interrupted``); a SIGINT sent by
        :meth:`stop_run` fails it instead, naming the lost workers."""
        if signum == signal.SIGINT and self._stops_sent:
            self._stops_sent -= 1
            if self.in_run:
                raise RunStopped(self.reason or "stopped", status=self.status, exit_code=EXIT_FAILED)
            return  # the run already ended: the watch's verdict fails it all the same
        raise RunStopped(f"interrupted ({signal.Signals(signum).name})", exit_code=128 + signum)

    @contextlib.contextmanager
    def running(self) -> Iterator[None]:
        """Mark a benchmark's ``run`` as executing (a watch verdict then stops it)."""
        self.in_run = True
        try:
            yield
        finally:
            self.in_run = False

    @contextlib.contextmanager
    def handlers(self) -> Iterator[None]:
        """SIGINT and SIGTERM go to :meth:`on_signal` meanwhile (main thread only: elsewhere
        Python cannot install handlers, and Ctrl-C stays KeyboardInterrupt)."""
        if threading.current_thread() is not threading.main_thread():
            yield
            return
        previous = {number: signal.signal(number, self.on_signal) for number in (signal.SIGINT, signal.SIGTERM)}
        self.installed = True
        try:
            yield
        finally:
            self.installed = False
            for number, handler in previous.items():
                signal.signal(number, handler)


def stop_reason(exc: BaseException) -> str:
    return exc.reason if isinstance(exc, RunStopped) else "interrupted (SIGINT)"
