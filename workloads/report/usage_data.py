"""What ``dask-tkg usage`` counts: each run's ``gpu_usage`` (workloads/runs/results.py names its
keys), read from one or many results directories through the run report's reader, and the
totals per person and per ISO week of the run's window start.

A record is taken through :func:`gpu_usage` alone, so that a renamed key is a one-line change.
A record without it (a run from before it was recorded), or whose GPU-seconds the runner could
not read (its ``note`` says why), is listed as left out, never counted as zero; a run whose
busy time was not measured keeps ``busy`` None, and the totals say over how many held
GPU-hours their busy time was measured."""
from __future__ import annotations

import datetime as dt
import math
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from workloads.runs.results import GPU_USAGE, RESULTS_FILE

from . import runs
from .runs import NoResults

HOUR = 3600.0
PARTS = ("held", "waiting", "working", "idle")  # <part>_gpu_seconds: a run counts only with all four


def gpu_usage(record: dict[str, Any]) -> dict[str, Any] | None:
    """The record's ``gpu_usage``; None when it has none (a run from before it was recorded)."""
    found = record.get(GPU_USAGE)
    return found if isinstance(found, dict) else None


@dataclass(frozen=True)
class RunUsage:
    """One run's GPU usage, in GPU-seconds as recorded."""

    file: str  # the results.jsonl it came from
    number: int  # its position among that file's records
    benchmark: str
    status: str
    usage: dict[str, Any]

    @property
    def person(self) -> str:
        return str(self.usage.get("person") or "?")

    @property
    def start(self) -> str:
        return str((self.usage.get("window") or {}).get("start") or "")

    @property
    def end(self) -> str:
        return str((self.usage.get("window") or {}).get("end") or "")

    @property
    def week(self) -> str:
        """The ISO week (``2026-W49``) of the window's start, in UTC; ``?`` without one."""
        return iso_week(self.start)

    @property
    def gpus(self) -> int:
        return int(_number(self.usage.get("gpus")) or 0)

    def seconds(self, key: str) -> float:
        """``<key>_gpu_seconds``, one of ``PARTS`` (a run is counted only when it has them all)."""
        return _number(self.usage.get(f"{key}_gpu_seconds")) or 0.0

    @property
    def busy(self) -> float | None:
        """Busy GPU-seconds; None when not measured."""
        return _number(self.usage.get("busy_gpu_seconds"))

    @property
    def label(self) -> str:
        return f"{self.file} #{self.number}"


@dataclass(frozen=True)
class Totals:
    """The GPU usage of a group of runs (one person's, one week's), in GPU-seconds."""

    key: str
    runs: int
    gpus: int  # the most any one run held at once
    held: float
    waiting: float
    working: float
    idle: float
    busy: float | None  # over the runs that measured it; None when none did
    measured: int  # runs whose busy time was measured
    measured_held: float  # what those runs held

    @property
    def ratio(self) -> float | None:
        """Busy of held, over the runs that measured busy time."""
        return self.busy / self.measured_held if self.busy is not None and self.measured_held else None


def total(key: str, members: list[RunUsage]) -> Totals:
    """The totals of ``members`` under ``key``."""
    measured = [run for run in members if run.busy is not None]

    def summed(name: str, group: list[RunUsage]) -> float:
        return sum(run.seconds(name) for run in group)

    return Totals(key, len(members), max((run.gpus for run in members), default=0), summed("held", members),
                  summed("waiting", members), summed("working", members), summed("idle", members),
                  sum(run.busy or 0.0 for run in measured) if measured else None, len(measured),
                  summed("held", measured))


def by(members: Iterable[RunUsage], what: str) -> dict[str, list[RunUsage]]:
    """``members`` grouped by the attribute ``what`` (person, week), the groups in sorted order."""
    groups: dict[str, list[RunUsage]] = {}
    for run in members:
        groups.setdefault(getattr(run, what), []).append(run)
    return dict(sorted(groups.items()))


@dataclass
class Usage:
    """Every run with a ``gpu_usage`` from the files read, and what was left out."""

    files: list[str]
    runs: list[RunUsage]
    not_recorded: list[str] = field(default_factory=list)  # labels of records without gpu_usage
    unread: list[tuple[str, str]] = field(default_factory=list)  # (label, note): held GPU-seconds not read
    notes: list[str] = field(default_factory=list)  # lines the reader skipped, per file

    def people(self) -> list[Totals]:
        return [total(person, members) for person, members in by(self.runs, "person").items()]

    def weeks(self) -> list[Totals]:
        return [total(week, members) for week, members in by(self.runs, "week").items()]

    def week_people(self) -> list[tuple[str, Totals]]:
        """(week, one person's totals in that week), by week then person."""
        return [(week, total(person, members)) for week, runs_of_week in by(self.runs, "week").items()
                for person, members in by(runs_of_week, "person").items()]

    def left_out(self) -> list[str]:
        """One line for the runs without ``gpu_usage``, one for those whose GPU-seconds the runner
        could not read (its note says why): neither is counted, rather than counted as zero."""
        lines = []
        if self.not_recorded:
            lines.append(f"{len(self.not_recorded)} run(s) without {GPU_USAGE} (recorded before GPU usage was): not"
                         f" recorded, left out of every number here rather than counted as zero"
                         f" ({_first(self.not_recorded)})")
        if self.unread:
            lines.append(f"{len(self.unread)} run(s) whose GPU-seconds the runner could not read"
                         f" ({self.unread[0][1] or 'no note'}): left out of every number here rather than counted as"
                         f" zero ({_first([label for label, _ in self.unread])})")
        return lines


def _first(labels: list[str], shown: int = 5) -> str:
    """The first ``shown`` labels, and how many more there are."""
    more = len(labels) - shown
    return ", ".join(labels[:shown]) + (f" and {more} more" if more > 0 else "")


def load(paths: list[str]) -> Usage:
    """The GPU usage of every run in ``paths`` (results directories or files of run records).

    Raises
    ------
    workloads.report.runs.NoResults
        A path does not exist, or holds no run record.
    """
    usage = Usage([], [])
    for records in dict.fromkeys(records_path(path) for path in paths):
        found = runs.load(records)
        file = str(records / RESULTS_FILE if records.is_dir() else records)
        usage.files.append(file)
        usage.notes.extend(f"{file}: {note}" for note in _line_notes(found))
        for run in found.runs:
            _add(usage, file, run)
    return usage


def records_path(path: str) -> Path:
    """What ``path`` names, once it is there: a results directory (its ``results.jsonl``) or a
    file of run records itself, whatever its name (a team's collected ``alice.jsonl``)."""
    given = Path(path)
    if not given.exists():
        raise NoResults(f"{path} does not exist: name a results directory, or a file of run records"
                        f" ({RESULTS_FILE}, or a team's collected one)")
    return given


def output_folder(path: str) -> Path:
    """Where the page goes by default: the results directory, or the folder of a file of records."""
    given = records_path(path)
    return given if given.is_dir() else given.parent


def iso_week(stamp: str) -> str:
    """``2026-W49`` for an ISO 8601 time (UTC when it names no zone); ``?`` when it is none."""
    try:
        moment = dt.datetime.fromisoformat(stamp)
    except ValueError:
        return "?"
    if moment.tzinfo is not None:
        moment = moment.astimezone(dt.UTC)
    year, week, _ = moment.isocalendar()
    return f"{year}-W{week:02d}"


def _line_notes(found: runs.ResultSet) -> list[str]:
    """The reader's notes on the file's lines; not those on the runs' utilization files, which
    the usage report does not read (a team's collected records often come without them)."""
    sidecars = {f"run #{run.number}: {note}" for run in found.runs for note in run.notes}
    return [note for note in found.notes if note not in sidecars]


def _add(usage: Usage, file: str, run: runs.Run) -> None:
    found = gpu_usage(run.record)
    label = f"{file} #{run.number}"
    if found is None:
        usage.not_recorded.append(label)
    elif any(_number(found.get(f"{part}_gpu_seconds")) is None for part in PARTS):
        usage.unread.append((label, str(found.get("note") or "")))
    else:
        usage.runs.append(RunUsage(file, run.number, run.benchmark, run.status, found))


def _number(value: Any) -> float | None:
    if isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value):
        return float(value)
    return None


@dataclass(frozen=True)
class Rate:
    """The site's price of one GPU held for an hour; 0: none (no cost anywhere)."""

    per_hour: float
    currency: str

    def cost(self, held_seconds: float) -> float | None:
        return held_seconds / HOUR * self.per_hour if self.per_hour else None

    def describe(self) -> str:
        return f"{self.per_hour:g} {self.currency} per GPU-hour held" if self.per_hour else "no rate set"


def totals_row(totals: Totals, rate: Rate) -> dict[str, Any]:
    """The values a totals row shows, by column (the CSV's header): GPU-hours, None where not measured."""
    row: dict[str, Any] = {"runs": totals.runs, "busy_measured_runs": totals.measured, "most_gpus": totals.gpus}
    row.update(_hours(totals.held, totals.waiting, totals.working, totals.idle, totals.busy))
    row["busy_of_held"] = totals.ratio
    return row | _cost(totals.held, rate)


def run_row(run: RunUsage, rate: Rate) -> dict[str, Any]:
    """The values a run's row shows, by column (the CSV's header)."""
    row: dict[str, Any] = {"results_file": run.file, "run": run.number, "benchmark": run.benchmark,
                           "status": run.status, "person": run.person, "namespace": run.usage.get("namespace"),
                           "dask_cluster": run.usage.get("dask_cluster"), "week": run.week, "start": run.start,
                           "end": run.end, "most_gpus": run.gpus}
    row.update(_hours(run.seconds("held"), run.seconds("waiting"), run.seconds("working"), run.seconds("idle"),
                      run.busy))
    busy = run.busy
    row["busy_of_held"] = busy / run.seconds("held") if busy is not None and run.seconds("held") else None
    row |= _cost(run.seconds("held"), rate)
    return row | {"busy_source": run.usage.get("busy_source"), "source": run.usage.get("source"),
                  "note": run.usage.get("note")}


def _hours(held: float, waiting: float, working: float, idle: float, busy: float | None) -> dict[str, float | None]:
    return {"held_gpu_hours": held / HOUR, "waiting_gpu_hours": waiting / HOUR, "working_gpu_hours": working / HOUR,
            "idle_gpu_hours": idle / HOUR, "busy_gpu_hours": None if busy is None else busy / HOUR}


def _cost(held: float, rate: Rate) -> dict[str, Any]:
    cost = rate.cost(held)
    return {} if cost is None else {"cost": cost, "currency": rate.currency}
