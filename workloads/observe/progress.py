"""A progress bar over Dask futures: tqdm on a terminal; elsewhere (CI logs, pipes) a
plain line at every tenth of the work."""
from __future__ import annotations

import collections
import sys
from collections.abc import Callable, Iterable, Iterator
from typing import TextIO

from distributed import Future, as_completed


def track(futures: Iterable[Future], description: str, total_units: int | None = None,
          units_of: Callable[[Future], int] | None = None, stream: TextIO | None = None) -> Iterator[Future]:
    """Yield futures as they complete while a bar shows the work done.

    ``units_of(future)`` gives the units a finished future stands for (e.g. the images in
    a batch); the bar counts futures when it is None.
    """
    from tqdm import tqdm

    futures = list(futures)
    if not futures:
        return
    total = total_units if total_units is not None else len(futures)
    stream = stream or sys.stderr
    tty = stream.isatty()
    done, next_tenth = 0, 1
    with tqdm(total=total, desc=description, unit="", disable=not tty, file=stream,
              dynamic_ncols=True, leave=False) as bar:
        # on the futures' own client's loop: as_completed defaults to the *default* client's,
        # and a future first awaited there cannot be awaited again on its own loop (after a
        # lost worker, future.result() then fails with "bound to a different event loop")
        for future in as_completed(futures, loop=futures[0].client.loop):
            units = units_of(future) if units_of else 1
            bar.update(units)
            done += units
            if not tty and total and done * 10 >= next_tenth * total:
                print(f"{description}: {done}/{total} ({100 * done // total}%)", file=stream, flush=True)
                next_tenth = done * 10 // total + 1
            yield future


def wait_for(futures: Iterable[Future], description: str) -> None:
    """Block until every one of ``futures`` is done, the bar showing how many are."""
    collections.deque(track(futures, description), maxlen=0)  # consumed only for its bar
