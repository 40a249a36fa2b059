"""Run the steps before the model ahead of it: while the model classifies batch n, one
thread decodes batch n+1 and another reads the files of batch n+2.

:func:`pipeline` chains steps (``read -> decode``), each on its own thread, joined by
bounded queues of ``depth`` items, so at most ``depth`` finished items wait per step
(memory stays bounded: a GPU holds a few decoded batches, not the whole task). Items come
out in the order they went in, each exactly once. An exception in a step stops the
steps and is raised to the consumer at that item's place, after the items before it;
a consumer that stops early (``break``, an exception of its own) stops the threads.
"""
from __future__ import annotations

import queue
import threading
from collections.abc import Callable, Iterable, Iterator, Sequence
from typing import Any

_END = object()


class _Failed:
    def __init__(self, error: BaseException):
        self.error = error


def pipeline(items: Iterable[Any], steps: Sequence[Callable[[Any], Any]], depth: int = 2,
             name: str = "prefetch") -> Iterator[Any]:
    """``steps[-1](...steps[0](item))`` for each item, in order, computed ahead of the
    consumer (see the module docstring). ``depth`` < 1 runs everything in the consumer's
    thread, one item at a time (no overlap: the baseline the overlap is measured against)."""
    if not steps:
        raise ValueError("pipeline needs at least one step")
    if depth < 1:
        yield from _inline(items, steps)
        return
    stop = threading.Event()
    source: queue.Queue = queue.Queue(maxsize=depth)
    threads = [threading.Thread(target=_feed, args=(iter(items), source, stop), name=f"{name}-source", daemon=True)]
    inbox = source
    for number, step in enumerate(steps):
        outbox: queue.Queue = queue.Queue(maxsize=depth)
        threads.append(threading.Thread(target=_work, args=(step, inbox, outbox, stop),
                                        name=f"{name}-step{number}", daemon=True))
        inbox = outbox
    for thread in threads:
        thread.start()
    try:
        while True:
            item = inbox.get()
            if item is _END:
                return
            if isinstance(item, _Failed):
                raise item.error
            yield item
    finally:
        stop.set()
        for box in (source, inbox):  # unblock threads waiting to put into a full queue
            _drain(box)
        for thread in threads:
            thread.join(timeout=10)


def _inline(items: Iterable[Any], steps: Sequence[Callable[[Any], Any]]) -> Iterator[Any]:
    for item in items:
        value = item
        for step in steps:
            value = step(value)
        yield value


def _feed(items: Iterator[Any], outbox: queue.Queue, stop: threading.Event) -> None:
    try:
        for item in items:
            if not _put(outbox, item, stop):
                return
    except BaseException as exc:  # the items' own iterator failed
        _put(outbox, _Failed(exc), stop)
        return
    _put(outbox, _END, stop)


def _work(step: Callable[[Any], Any], inbox: queue.Queue, outbox: queue.Queue, stop: threading.Event) -> None:
    while not stop.is_set():
        try:
            item = inbox.get(timeout=0.1)
        except queue.Empty:
            continue
        if item is _END or isinstance(item, _Failed):
            _put(outbox, item, stop)
            return
        try:
            result = step(item)
        except BaseException as exc:
            _put(outbox, _Failed(exc), stop)
            return
        if not _put(outbox, result, stop):
            return


def _put(box: queue.Queue, item: Any, stop: threading.Event) -> bool:
    """Put ``item`` unless the consumer stopped; False when it did."""
    while not stop.is_set():
        try:
            box.put(item, timeout=0.1)
            return True
        except queue.Full:
            continue
    return False


def _drain(box: queue.Queue) -> None:
    try:
        while True:
            box.get_nowait()
    except queue.Empty:
        pass
