"""An asyncio event loop in a thread of its own, for ``KubeCluster`` (own_cluster.py).

``KubeCluster`` run synchronously starts itself in its constructor and waits for the
scheduler pod and for the scheduler's first answer without end (dask-kubernetes 2026.3.0
operator/networking.py ``wait_for_scheduler``, ``wait_for_scheduler_comm``: loops with no
deadline). Run asynchronously here, every wait on it is bounded and can be cancelled, by the
deadline or by Ctrl-C in the runner's main thread.
"""
from __future__ import annotations

import asyncio
import threading
from collections.abc import Callable
from typing import Any


class DeadlineExceeded(TimeoutError):
    """The runner's own bound on a wait ran out (not a timeout raised by what it waited on)."""


class LoopThread:
    """An asyncio loop in a daemon thread; ``run`` waits for a coroutine, bounded."""

    def __init__(self) -> None:
        self.loop = asyncio.new_event_loop()
        self.thread = threading.Thread(target=self.loop.run_forever, name="own-cluster loop", daemon=True)
        self.thread.start()

    def run(self, make: Callable[[], Any], timeout: float) -> Any:
        future = asyncio.run_coroutine_threadsafe(_awaited(make), self.loop)
        try:
            return future.result(timeout)
        except TimeoutError:
            if future.done():  # the coroutine's own TimeoutError
                raise
            future.cancel()
            raise DeadlineExceeded(f"not done within {timeout:.0f} s") from None
        except BaseException:  # Ctrl-C: the coroutine is cancelled, not left running
            future.cancel()
            raise

    def stop(self) -> None:
        self.loop.call_soon_threadsafe(self.loop.stop)
        self.thread.join(5)


async def _awaited(make: Callable[[], Any]) -> Any:
    return await make()
