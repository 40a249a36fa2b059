"""A terminal progress bar over Dask futures (tqdm), quiet when not on a terminal."""
from __future__ import annotations

import sys
from typing import Iterable, Iterator

from distributed import Future, as_completed


def track(futures: Iterable[Future], description: str, total_units: int | None = None,
          units_of=None) -> Iterator[Future]:
    """Yield futures as they complete while a bar shows the work done.

    ``units_of(future)`` gives the units a finished future stands for (e.g. the images in
    a batch); the bar counts futures when it is None.
    """
    from tqdm import tqdm

    futures = list(futures)
    total = total_units if total_units is not None else len(futures)
    with tqdm(total=total, desc=description, unit="", disable=not sys.stderr.isatty(),
              dynamic_ncols=True, leave=False) as bar:
        for future in as_completed(futures):
            bar.update(units_of(future) if units_of else 1)
            yield future
