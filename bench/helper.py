"""Plain (non-Dask) processes the benchmarks compare the Dask path with.

A :class:`Helper` is one long-lived child process, started with the environment we give
it (allocator preload, thread variables: the same as the Dask workers', or a naive
one), that loads a model once and then runs timed jobs on request. Keeping it alive
lets the suite alternate "Dask path" and "plain process" repetitions without paying
for ``import torch`` and the model build each time.

Timing uses ``time.perf_counter`` (CLOCK_MONOTONIC on Linux, so it is comparable across
processes): a job returns its start and end, and several helpers running one job at
the same time are timed from the first start to the last end.
"""
from __future__ import annotations

import contextlib
import logging
import multiprocessing
import time
import traceback
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from workloads.observe.environment import patched_environ

logger = logging.getLogger(__name__)


def _serve(connection) -> None:
    """The child's loop: receive (function, kwargs), send back ("ok", result) or ("error", text)."""
    state: dict[str, Any] = {}
    while True:
        try:
            message = connection.recv()
        except EOFError:
            return
        if message is None:
            return
        function, kwargs = message
        try:
            connection.send(("ok", function(state, **kwargs)))
        except Exception:  # reported to the parent, which raises
            connection.send(("error", traceback.format_exc()))


class Helper:
    """A child process started with ``env`` applied (spawned: a fresh interpreter, so an
    ``LD_PRELOAD`` in ``env`` takes effect)."""

    def __init__(self, name: str, env: Mapping[str, str | None]):
        self.name = name
        self.env = dict(env)
        context = multiprocessing.get_context("spawn")
        self._connection, child = context.Pipe()
        self._process = context.Process(target=_serve, args=(child,), name=name, daemon=True)
        with patched_environ(self.env):
            self._process.start()
        child.close()

    def send(self, function: Callable[..., Any], **kwargs: Any) -> None:
        """Start ``function(state, **kwargs)`` in the child (``state`` is a dict the child keeps)."""
        self._connection.send((function, kwargs))

    def receive(self) -> Any:
        status, result = self._connection.recv()
        if status == "error":
            raise RuntimeError(f"helper {self.name} failed:\n{result}")
        return result

    def call(self, function: Callable[..., Any], **kwargs: Any) -> Any:
        self.send(function, **kwargs)
        return self.receive()

    def close(self) -> None:
        with contextlib.suppress(OSError):  # BrokenPipeError among them: the helper is gone already
            self._connection.send(None)
        self._process.join(timeout=10)
        if self._process.is_alive():
            self._process.kill()


def call_all(helpers: Sequence[Helper], function: Callable[..., Any], **kwargs: Any) -> list[Any]:
    """Run ``function`` in every helper at once; results in helper order."""
    for helper in helpers:
        helper.send(function, **kwargs)
    return [helper.receive() for helper in helpers]


def span(results: Sequence[dict[str, Any]]) -> float:
    """Wall time of jobs that ran at once: first ``started`` to last ``finished``."""
    return max(r["finished"] for r in results) - min(r["started"] for r in results)


def now() -> float:
    return time.perf_counter()
