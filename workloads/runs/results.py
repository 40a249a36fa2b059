"""The results record: one JSON line per run, the same schema for every benchmark.

A record carries ``benchmark``, ``status`` (succeeded | failed | interrupted),
``config``, ``phases`` (seconds per named phase, in the order they ran), ``metrics``,
``versions``, ``hardware``, ``cluster``, ``started_at`` and, where it applies, ``error``,
``unfinished_phases`` (seconds spent in phases that raised or were interrupted) and
``artifacts`` (paths of files written beside the results, relative to the results
directory); a record of the runner carries ``gpu_usage`` too (what its cluster held of the GPUs
over the record's window, and how busy its workers kept them: ``workloads/observe/gpu_usage.py``).
Lines are only ever appended: an earlier result is never overwritten.

A run that went without some of its input (a taxi file that gave no rows, an image that
did not decode) still succeeds, and its metrics say so in one shape for every benchmark,
``skipped_input`` (:class:`SkippedInput`): the terminal summary, the report and a pipeline
reading the JSON then tell the same story from the same place.
"""
from __future__ import annotations

import json
import logging
import os
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from workloads.core.errors import DatasetError

logger = logging.getLogger(__name__)

RESULTS_FILE = "results.jsonl"
# ``gpu_usage`` (issue 52): what a run held of the GPUs and what it used of them. These keys are a
# contract with ``dask-tkg usage`` (workloads/report/usage*.py) and the cluster's recording rules,
# built by three people at once: add keys, never rename these.
#   person (--user of an --own-cluster run, else the runner's OS user), namespace, dask_cluster,
#   source ("pods" | "local" | "none"), note (one line: where the numbers come from, or why zero),
#   gpus (most held at once), held_gpu_seconds, waiting_gpu_seconds (scheduled, worker not yet
#   joined), working_gpu_seconds (during the timed phases), idle_gpu_seconds (the rest of held),
#   busy_gpu_seconds (utilisation 0..1 x dt; None when not measured), busy_source ("nvml" |
#   "dcgm" | None), window {start, end} (ISO 8601), pods [{name, gpus, start, joined, end}].
# Added beside them (workloads/observe/gpu_usage.py): unscheduled_gpu_seconds (asked for, not yet
#   scheduled: holds nothing, shows a wait for nodes), sampling_step_s (how often the pods were
#   looked at; None without pods), pods[].created and pods[].running (still there at the end).
#   Numbers the runner could not read (no kubeconfig for the pods) are None, the note says why.
GPU_USAGE = "gpu_usage"
NAMED = 10  # skipped input a warning or the report names by name; the rest are counted
STATUSES = ("succeeded", "failed", "interrupted")


@dataclass
class PhaseTimer:
    """Times named phases. A phase that raises is recorded as not finished (its time so
    far goes to ``unfinished``) so the record still shows everything measured up to the
    failure."""

    phases: dict[str, float] = field(default_factory=dict)
    unfinished: dict[str, float] = field(default_factory=dict)

    @contextmanager
    def phase(self, name: str) -> Iterator[None]:
        if name in self.phases:
            raise ValueError(f"phase {name!r} timed twice")
        start = time.perf_counter()
        try:
            yield
        except BaseException:
            self.unfinished[name] = time.perf_counter() - start
            raise
        self.phases[name] = time.perf_counter() - start

    def record(self, name: str, seconds: float) -> None:
        """Record a phase measured elsewhere (e.g. on the workers)."""
        self.phases[name] = float(seconds)


@dataclass(frozen=True)
class SkippedInput:
    """The input a run went without: how many of how many ``what`` (files, images) were
    ``verb`` (skipped, failed), and the first of them by name with the reason, one line each."""

    what: str
    verb: str
    total: int
    count: int
    items: tuple[tuple[str, str], ...] = ()  # (name, reason): the first ``count`` at most

    def describe(self) -> str:
        """``1 of 3 files skipped``."""
        return f"{self.count} of {self.total} {self.what} {self.verb}"

    def listing(self, first: int = NAMED) -> str:
        """The first ``first`` items as ``name (reason)``, and how many more there are."""
        shown = self.items[:first]
        text = "; ".join(f"{name} ({reason})" for name, reason in shown)
        more = self.count - len(shown)
        return text + (f"; and {more} more" if more > 0 else "")

    def as_metric(self) -> dict[str, Any]:
        """The record's ``metrics.skipped_input``."""
        return {"what": self.what, "verb": self.verb, "total": self.total, "count": self.count,
                "items": [{"name": name, "reason": reason} for name, reason in self.items]}

    @classmethod
    def of(cls, metrics: dict[str, Any]) -> SkippedInput | None:
        """What a record's ``metrics`` say was skipped; None when nothing was (or an older
        record that does not say)."""
        found = metrics.get(SKIPPED_INPUT)
        if not isinstance(found, dict) or not found.get("count"):
            return None
        items = tuple((str(i.get("name")), str(i.get("reason"))) for i in found.get("items") or ()
                      if isinstance(i, dict))
        return cls(str(found.get("what")), str(found.get("verb")), int(found.get("total") or 0),
                   int(found["count"]), items)


SKIPPED_INPUT = "skipped_input"  # the metric a SkippedInput is recorded under


def hold_input(metrics: dict[str, Any], require_all: bool, log: logging.Logger, benchmark: str,
               consequence: str) -> None:
    """A run that went without some input: one warning on ``log`` naming the first of it
    (``<benchmark>: 1 of 3 files skipped, <consequence>: ...``); with ``require_all``
    (``--require-all-files``) the run fails instead."""
    skipped = SkippedInput.of(metrics)
    if skipped is None:
        return
    if require_all:
        raise DatasetError(f"{skipped.describe()} and --require-all-files is set: {skipped.listing()}")
    log.warning("%s: %s, %s: %s", benchmark, skipped.describe(), consequence, skipped.listing())


def make_record(
    *,
    benchmark: str,
    status: str,
    config: dict[str, Any],
    phases: dict[str, float],
    metrics: dict[str, Any],
    versions: dict[str, Any],
    hardware: dict[str, Any],
    cluster: dict[str, Any],
    started_at: str,
    error: str | None = None,
    artifacts: dict[str, str] | None = None,
    unfinished: dict[str, float] | None = None,
    gpu_usage: dict[str, Any] | None = None,
) -> dict[str, Any]:
    if status not in STATUSES:
        raise ValueError(f"status must be one of {STATUSES}, got {status!r}")
    record: dict[str, Any] = {
        "benchmark": benchmark,
        "status": status,
        "config": config,
        "phases": {k: round(v, 6) for k, v in phases.items()},
        "metrics": metrics,
        "versions": versions,
        "hardware": hardware,
        "cluster": cluster,
        "started_at": started_at,
    }
    if error is not None:
        record["error"] = error
    if unfinished:
        record["unfinished_phases"] = {k: round(v, 6) for k, v in unfinished.items()}
    if artifacts:
        record["artifacts"] = artifacts
    if gpu_usage is not None:
        record[GPU_USAGE] = gpu_usage
    return record


def append_record(results_dir: str | os.PathLike, record: dict[str, Any]) -> Path:
    """Append one record to ``results_dir/results.jsonl`` and flush it to disk. After a
    torn last line (a process killed mid-write) the record starts a line of its own, so
    only the torn line is unreadable, never the new record."""
    directory = Path(results_dir)
    directory.mkdir(parents=True, exist_ok=True)
    path = directory / RESULTS_FILE
    line = json.dumps(record, sort_keys=False, default=_jsonable) + "\n"
    with open(path, "a+b") as fh:
        if fh.tell() > 0:
            fh.seek(-1, os.SEEK_END)
            if fh.read(1) != b"\n":
                line = "\n" + line
        fh.write(line.encode("utf-8"))
        fh.flush()
        os.fsync(fh.fileno())
    return path


def read_records(results_dir: str | os.PathLike) -> list[dict[str, Any]]:
    """Every record in ``results_dir/results.jsonl``; a torn last line is skipped."""
    path = Path(results_dir) / RESULTS_FILE
    if not path.exists():
        return []
    records = []
    for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
        if not line.strip():
            continue
        try:
            records.append(json.loads(line))
        except json.JSONDecodeError:
            logger.warning("%s:%d is not valid JSON; skipped", path, number)
    return records


def config_key(benchmark: str, config: dict[str, Any]) -> str:
    """What makes two runs the same configuration (``--resume``): the benchmark, the
    profile, the device the run used, its worker count, and the benchmark's own options
    (its config less ``workers``, the addresses a run was restricted to, which differ from
    one cluster start to the next). Where the cluster came from and the runner's own
    policies (``max_lost_workers``) are not part of it; an adaptive run's bounds are.
    ``config`` is a record's ``config``; tuples and lists compare equal (as they do once written)."""
    options = dict(config.get("benchmark") or {})
    options.pop("workers", None)
    key = [benchmark, config.get("profile"), config.get("device"), config.get("workers"), options]
    if config.get("adaptive"):
        key.append({"adaptive": list(config["adaptive"])})
    return json.dumps(key, sort_keys=True, default=_jsonable)


def succeeded_configs(results_dir: str | os.PathLike) -> dict[str, dict[str, Any]]:
    """The configurations already recorded as ``succeeded`` in ``results_dir``, by
    :func:`config_key`, each with its latest succeeded record."""
    return {config_key(r.get("benchmark", ""), r.get("config") or {}): r
            for r in read_records(results_dir) if r.get("status") == "succeeded"}


def utc_now() -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())


def _jsonable(value: Any) -> Any:
    if hasattr(value, "item"):  # numpy scalars
        return value.item()
    if isinstance(value, (set, tuple)):
        return list(value)
    if isinstance(value, Path):
        return str(value)
    raise TypeError(f"not JSON serialisable: {type(value).__name__}")
