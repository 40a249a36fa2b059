"""Running the sides of a figure group the same way: one discarded warm-up each, then
repetitions in which every side runs once, the order reversed every other repetition.

Every side (the Dask path and each baseline) is a function returning one sample; it is
called once before the first repetition and that sample is dropped, so a baseline is
never timed colder than its Dask side (imports, allocator arenas, kernel choices,
page cache). Within a repetition the sides run back to back, so each figure's pair
``A_i / B_i`` sees the same machine load; :class:`bench.load.LoadMonitor` records how
much of the machine other processes take meanwhile.

:func:`process_facts` is what each side reports about the process it ran in (the
allocator actually mapped, the malloc and thread variables, torch's threads), so that
the record shows, side by side, that a baseline ran in the environment it claims.
"""
from __future__ import annotations

import os
from collections.abc import Callable
from typing import Any

from bench.figures import short
from bench.load import LoadMonitor

Side = Callable[[], "float | dict[str, float]"]  # one sample, or several taken by one run


def interleave(sides: dict[str, Side], repeats: int, echo: Callable[[str], None], label: str,
               unit: str) -> tuple[dict[str, list[float]], dict[str, Any]]:
    """{side: its ``repeats`` samples} (after one discarded warm-up call each) and the
    machine load over the timed calls. A side that returns a dict gives a sample to each
    of its keys (one run of the Dask benchmark times several phases)."""
    for side in sides.values():
        side()  # warm-up, discarded
    samples: dict[str, list[float]] = {}
    monitor = LoadMonitor()
    order = list(sides)
    for repetition in range(repeats):
        for name in (order if repetition % 2 == 0 else order[::-1]):
            with monitor.watch():
                result = sides[name]()
            for key, value in (result.items() if isinstance(result, dict) else [(name, result)]):
                samples.setdefault(key, []).append(value)
        echo(f"{label}: repetition {repetition + 1}/{repeats}: "
             + ", ".join(f"{name} {short(values[-1])} {unit}" for name, values in samples.items()))
    return samples, {**monitor.summary(), "load_average": [round(v, 2) for v in os.getloadavg()]}


def process_facts() -> dict[str, Any]:
    """This process's allocator and thread settings, read from the process itself: the
    malloc library mapped into it (``/proc/self/maps``), the variables glibc malloc and
    OpenMP read, and torch's intra-op threads where torch is imported."""
    import sys

    with open("/proc/self/maps", encoding="utf-8") as fh:
        maps = fh.read()
    allocator = "tcmalloc" if "libtcmalloc" in maps else ("jemalloc" if "libjemalloc" in maps else "glibc")
    torch = sys.modules.get("torch")
    return {"allocator": allocator,
            "MALLOC_TRIM_THRESHOLD_": os.environ.get("MALLOC_TRIM_THRESHOLD_"),
            "OMP_NUM_THREADS": os.environ.get("OMP_NUM_THREADS"),
            "torch_threads": torch.get_num_threads() if torch is not None else None}


def worker_facts(client) -> dict[str, Any]:
    """:func:`process_facts` of every worker behind ``client`` ({address: facts})."""
    return dict(sorted(client.run(process_facts).items()))

