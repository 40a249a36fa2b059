"""How much of the machine other processes take while a figure is measured.

The suite's ratios are taken side by side, so both sides see the same load; but a
shared machine can leave the suite fewer cores than it has (two workers on two cores
scale by well under 2 while another job keeps a core busy). :class:`LoadMonitor` reads
the machine's busy CPU time (``/proc/stat``) and this process tree's own CPU time
(this process, its Dask workers and helpers) around each measured run; the difference
is what the rest of the machine used, reported in cores.
"""
from __future__ import annotations

import os
import time
from collections.abc import Iterator
from contextlib import contextmanager

import psutil


def machine_busy_seconds() -> float:
    """CPU seconds all cores spent busy since boot (user, nice, system, irq, softirq, steal)."""
    with open("/proc/stat") as fh:
        fields = fh.readline().split()[1:]
    user, nice, system, _idle, _iowait, irq, softirq, steal = (int(v) for v in fields[:8])
    return (user + nice + system + irq + softirq + steal) / os.sysconf("SC_CLK_TCK")


def own_seconds() -> float:
    """CPU seconds used by this process and every live descendant."""
    total = 0.0
    me = psutil.Process()
    for process in [me, *me.children(recursive=True)]:
        try:
            times = process.cpu_times()
        except psutil.Error:
            continue
        total += times.user + times.system
    return total


class LoadMonitor:
    """Accumulates, over the runs it watches, the cores other processes used."""

    def __init__(self) -> None:
        self.wall = 0.0
        self.foreign = 0.0
        self.own = 0.0

    @contextmanager
    def watch(self) -> Iterator[None]:
        busy, own, wall = machine_busy_seconds(), own_seconds(), time.perf_counter()
        try:
            yield
        finally:
            d_wall = time.perf_counter() - wall
            d_own = own_seconds() - own
            d_busy = machine_busy_seconds() - busy
            self.wall += d_wall
            self.own += d_own
            self.foreign += max(0.0, d_busy - d_own)

    def summary(self) -> dict[str, float | None]:
        if self.wall <= 0:
            return {"other_processes_cores": None, "suite_cores": None}
        return {"other_processes_cores": round(self.foreign / self.wall, 2),
                "suite_cores": round(self.own / self.wall, 2)}
