"""The report's view of ``results.jsonl``: one :class:`Run` per record, the utilization
sidecars they name, and the ratios between two result sets."""
from __future__ import annotations

import json
import logging
import math
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from workloads.core.errors import WorkloadError
from workloads.observe.utilization import read_samples, summarize
from workloads.runs import benchmarks
from workloads.runs.benchmarks import Report
from workloads.runs.results import RESULTS_FILE

logger = logging.getLogger(__name__)

class NoResults(WorkloadError):
    """The results directory holds no readable record."""


@dataclass
class Run:
    """One record, with the fields the report groups and labels by."""

    number: int  # 1-based position in results.jsonl (its line number among records)
    record: dict[str, Any]
    samples: list[dict[str, Any]] | None = None  # the utilization sidecar, when present
    notes: list[str] = field(default_factory=list)

    @property
    def benchmark(self) -> str:
        return str(self.record.get("benchmark") or "?")

    @property
    def status(self) -> str:
        return str(self.record.get("status") or "?")

    @property
    def ok(self) -> bool:
        return self.status == "succeeded"

    @property
    def config(self) -> dict[str, Any]:
        return self.record.get("config") or {}

    @property
    def metrics(self) -> dict[str, Any]:
        return self.record.get("metrics") or {}

    @property
    def phases(self) -> dict[str, float]:
        return {k: float(v) for k, v in (self.record.get("phases") or {}).items() if _is_number(v)}

    @property
    def unfinished(self) -> dict[str, float]:
        return {k: float(v) for k, v in (self.record.get("unfinished_phases") or {}).items() if _is_number(v)}

    @property
    def artifacts(self) -> dict[str, str]:
        return {k: str(v) for k, v in (self.record.get("artifacts") or {}).items() if v}

    @property
    def device(self) -> str:
        return str(self.config.get("device") or "?")

    @property
    def workers(self) -> int | None:
        value: Any = self.config.get("workers", (self.record.get("cluster") or {}).get("workers"))
        return int(value) if _is_number(value) else None

    @property
    def spec(self) -> Report:
        """How the report shows this run's benchmark (:func:`workloads.runs.benchmarks.report`)."""
        return benchmarks.report(self.benchmark)

    @property
    def variant(self) -> str | None:
        """What the benchmark says sets this run apart beyond device and workers (the taxi
        runs' dataframe backend): the first of its ``variant`` paths the record has."""
        for path in self.spec.variant:
            value: Any = self.record
            for part in path.split("."):
                value = value.get(part) if isinstance(value, dict) else None
            if value:
                return str(value)
        return None

    @property
    def profile(self) -> str | None:
        return self.config.get("profile")

    @property
    def started_at(self) -> str:
        return str(self.record.get("started_at") or "")

    @property
    def error(self) -> str | None:
        return self.record.get("error")

    @property
    def key(self) -> tuple[str, str, int | None, str | None, str | None]:
        """What makes two runs comparable: benchmark, device, workers, variant, profile."""
        return (self.benchmark, self.device, self.workers, self.variant, self.profile)

    @property
    def label(self) -> str:
        return f"#{self.number} {describe(self.key)}"

    @property
    def seconds(self) -> float:
        return sum(self.phases.values()) + sum(self.unfinished.values())

    def utilization(self) -> dict[str, Any] | None:
        """The utilization summary: the record's own, else computed from the sidecar."""
        summary = self.metrics.get("utilization")
        if isinstance(summary, dict) and summary.get("workers"):
            return summary
        return summarize(self.samples) if self.samples else None


def describe(key: tuple[Any, ...]) -> str:
    """``images · cuda · 4 workers · small`` for a run key."""
    benchmark, device, workers, variant, profile = key
    parts = [benchmark, device]
    if variant:
        parts.append(str(variant))
    if workers is not None:
        parts.append(f"{workers} worker{'s' if workers != 1 else ''}")
    if profile:
        parts.append(str(profile))
    return " · ".join(str(p) for p in parts)


@dataclass
class ResultSet:
    directory: Path
    runs: list[Run]
    notes: list[str]  # lines skipped, sidecars missing


def load(results: str | os.PathLike) -> ResultSet:
    """Every record in ``results/results.jsonl``, or in the records file ``results`` itself
    (a team's collected ``alice.jsonl``), with its utilization sidecar beside it.

    Raises
    ------
    NoResults
        The file is missing, or holds no valid record.
    """
    given = Path(results)
    path = given if given.is_file() else given / RESULTS_FILE
    directory = path.parent
    if not path.is_file():
        raise NoResults(f"no {RESULTS_FILE} in {directory}: run `python -m workloads.run` first"
                        " (or name the results directory)")
    notes: list[str] = []
    runs: list[Run] = []
    lines = path.read_text(encoding="utf-8", errors="replace").splitlines()
    for number, line in enumerate(lines, 1):
        if not line.strip():
            continue
        try:
            record = json.loads(line)
        except json.JSONDecodeError:
            torn = number == len(lines)
            notes.append(f"{path.name} line {number} is not valid JSON"
                         + (" (a torn last line: a run still writing, or one cut short)" if torn else "")
                         + "; skipped")
            continue
        if not isinstance(record, dict) or "benchmark" not in record:
            notes.append(f"{path.name} line {number} is not a run record; skipped")
            continue
        runs.append(Run(len(runs) + 1, record))
    if not runs:
        raise NoResults(f"{path} holds no run records" + (f" ({'; '.join(notes)})" if notes else ""))
    for run in runs:
        _attach_samples(directory, run)
        notes.extend(f"run #{run.number}: {note}" for note in run.notes)
    return ResultSet(directory, runs, notes)


def _attach_samples(directory: Path, run: Run) -> None:
    relative = run.artifacts.get("utilization")
    if not relative:
        return
    path = directory / relative
    try:
        run.samples = read_samples(path)
    except FileNotFoundError:
        run.notes.append(f"utilization file {relative} is missing")
    except OSError as exc:
        run.notes.append(f"utilization file {relative} not readable ({exc.strerror or exc})")


# ---------------------------------------------------------------------- comparison
@dataclass(frozen=True)
class Ratio:
    """One measure of one configuration in both sets: ``ratio = this / other``."""

    key: tuple[Any, ...]
    measure: str  # a metric name, "phase <name>" or "total time"
    unit: str
    higher_is_better: bool
    this: float
    other: float
    n_this: int
    n_other: int

    @property
    def ratio(self) -> float:
        return self.this / self.other if self.other else math.inf

    @property
    def better(self) -> bool | None:
        """Whether this set did better on this measure (None when equal)."""
        if math.isclose(self.this, self.other, rel_tol=1e-9):
            return None
        return (self.this > self.other) == self.higher_is_better


@dataclass
class Comparison:
    ratios: list[Ratio]
    only_here: list[tuple[Any, ...]]
    only_there: list[tuple[Any, ...]]


def compare(this: list[Run], other: list[Run]) -> Comparison:
    """Ratios between two sets of runs, matched by :attr:`Run.key`.

    Only succeeded runs count; several runs of one configuration are averaged (the mean
    of each measure over the runs that have it). Throughput metrics are better when
    higher, phase times and the total time when lower.
    """
    mine, theirs = _group(this), _group(other)
    ratios = []
    for key in sorted(set(mine) & set(theirs), key=_sort_key):
        a, b = _measures(mine[key]), _measures(theirs[key])
        for measure in [m for m in a if m in b]:
            (value_a, n_a, unit, higher), (value_b, n_b, _, _) = a[measure], b[measure]
            ratios.append(Ratio(key, measure, unit, higher, value_a, value_b, n_a, n_b))
    return Comparison(ratios, sorted(set(mine) - set(theirs), key=_sort_key),
                      sorted(set(theirs) - set(mine), key=_sort_key))


def _group(runs: list[Run]) -> dict[tuple[Any, ...], list[Run]]:
    groups: dict[tuple[Any, ...], list[Run]] = {}
    for run in runs:
        if run.ok:
            groups.setdefault(run.key, []).append(run)
    return groups


def _measures(runs: list[Run]) -> dict[str, tuple[float, int, str, bool]]:
    """measure -> (mean over runs, how many runs, unit, higher is better), in display order."""
    values: dict[str, list[float]] = {}
    units: dict[str, tuple[str, bool]] = {}
    for run in runs:
        for name, unit in run.spec.throughput.items():
            if _is_number(run.metrics.get(name)):
                values.setdefault(name, []).append(float(run.metrics[name]))
                units[name] = (unit, True)
        for phase, seconds in run.phases.items():
            values.setdefault(f"phase {phase}", []).append(seconds)
            units[f"phase {phase}"] = ("s", False)
        if run.phases:
            values.setdefault("total time", []).append(sum(run.phases.values()))
            units["total time"] = ("s", False)
    return {m: (sum(v) / len(v), len(v), *units[m]) for m, v in values.items()}


def _sort_key(key: tuple[Any, ...]) -> tuple[Any, ...]:
    return tuple("" if v is None else (f"{v:08d}" if isinstance(v, int) else str(v)) for v in key)


def _is_number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)
