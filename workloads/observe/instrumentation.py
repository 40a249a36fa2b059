"""What the runner wraps around each run: Dask's performance report and the per-worker
utilization samples, written beside the results.

>>> with instrument(client, "results", "images-20261129T215320Z-w2") as inst:  # doctest: +SKIP
...     metrics = module.run(client, config, timer)
>>> inst.artifacts  # doctest: +SKIP
{'performance_report': 'reports/images-20261129T215320Z-w2-performance.html',
 'utilization': 'utilization/images-20261129T215320Z-w2.jsonl'}
>>> inst.metrics["balance"]  # doctest: +SKIP
0.97

Both are best effort: neither can fail the run or hide its error. The utilization file
grows while the run goes on, so a run that raises (or is interrupted) keeps what was
measured up to then; the performance report is written on the way out whatever happened
in the block, and a report that cannot be made is logged and noted in ``inst.notes``.
"""
from __future__ import annotations

import contextlib
import logging
import os
import re
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from .utilization import UtilizationSampler, summarize

logger = logging.getLogger(__name__)

REPORTS = "reports"
UTILIZATION = "utilization"


@dataclass
class Instrumentation:
    """What one instrumented run left behind.

    Attributes
    ----------
    run_id : str
        The name the files share (made unique within ``results_dir``).
    artifacts : dict
        ``performance_report`` and ``utilization``: paths relative to ``results_dir``, for
        the record's ``artifacts`` (a key is present only when its file was written).
    metrics : dict
        The utilization summary (:func:`workloads.observe.utilization.summarize`), filled in when
        the block ends; empty until then.
    notes : list of str
        Why something could not be measured or written.
    samples : list of dict
        The utilization samples (:mod:`workloads.observe.utilization`), when the block ends.
    """

    results_dir: Path
    run_id: str
    artifacts: dict[str, str] = field(default_factory=dict)
    metrics: dict[str, Any] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)
    samples: list[dict[str, Any]] = field(default_factory=list)


def make_run_id(benchmark: str, workers: int | None = None, started_at: str | None = None) -> str:
    """A file-safe run name: ``<benchmark>-<UTC time>-w<workers>``."""
    stamp = re.sub(r"[^0-9TZ]", "", started_at or "") or time.strftime("%Y%m%dT%H%M%SZ", time.gmtime())
    return f"{benchmark}-{stamp}" + (f"-w{workers}" if workers else "")


@contextlib.contextmanager
def instrument(client: Any, results_dir: str | os.PathLike, run_id: str, *, interval: float = 1.0,
               performance_report: bool = True, report_mode: str = "inline",
               report_timeout: float = 120.0) -> Iterator[Instrumentation]:
    """Record a performance report and per-worker utilization while the block runs.

    Parameters
    ----------
    client : distributed.Client
        The run's (synchronous) client.
    results_dir : str or os.PathLike
        The results directory; files go to ``reports/<run_id>-performance.html`` and
        ``utilization/<run_id>.jsonl`` under it.
    run_id : str
        Names the files (characters other than letters, digits, ``.``, ``_`` and ``-``
        become ``-``; a suffix is added rather than overwrite an earlier run's files).
    interval : float
        Seconds between utilization samples.
    performance_report : bool
        Whether to write Dask's HTML performance report.
    report_mode : str
        Bokeh's resources mode for the report: ``"inline"`` (default: Bokeh inside the
        page, opens without a network) or ``"cdn"`` (small, loads Bokeh from the internet).
    report_timeout : float
        Seconds the scheduler may take to start or produce the report.

    Yields
    ------
    Instrumentation
        Its ``artifacts`` and ``metrics`` are filled in when the block ends, also when it
        raised; the exception then carries on unchanged.
    """
    results_dir = Path(results_dir)
    inst = Instrumentation(results_dir, _unique_id(results_dir, run_id))
    report_rel = f"{REPORTS}/{inst.run_id}-performance.html"
    utilization_rel = f"{UTILIZATION}/{inst.run_id}.jsonl"

    report = None
    if performance_report:
        report = _start_report(client, results_dir / report_rel, report_mode, report_timeout, inst)
    sampler: UtilizationSampler | None = None
    try:
        sampler = UtilizationSampler(client, results_dir / utilization_rel, interval).__enter__()
    except Exception as exc:  # e.g. the results folder is not writable
        _note(inst, f"utilization not sampled: {type(exc).__name__}: {exc}")
        sampler = None
    try:
        yield inst
    finally:
        if sampler is not None:
            _finish_sampler(sampler, utilization_rel, inst)
        if report is not None:
            _finish_report(client, report, report_rel, report_timeout, inst)


def _finish_sampler(sampler: UtilizationSampler, relative: str, inst: Instrumentation) -> None:
    try:
        sampler.stop()
        inst.samples = list(sampler.samples)
        inst.metrics.update(summarize(sampler.samples))
        inst.artifacts["utilization"] = relative
        if sampler.errors:
            inst.metrics["errors"] = list(sampler.errors)
        for message in sampler.errors:
            _note(inst, f"utilization: {message}")
    except Exception as exc:
        _note(inst, f"utilization not summarized: {type(exc).__name__}: {exc}")


def _start_report(client: Any, path: Path, mode: str, timeout: float, inst: Instrumentation) -> Any:
    """A started ``distributed.performance_report``, or None (noted) if it cannot start."""
    try:
        from distributed import performance_report

        path.parent.mkdir(parents=True, exist_ok=True)
        report = performance_report(filename=str(path), mode=mode)
        with client.as_current():  # the report asks for "the current client"
            client.sync(report.__aenter__, callback_timeout=timeout)
        return report
    except Exception as exc:
        _note(inst, f"performance report not started: {type(exc).__name__}: {exc}")
        return None


def _finish_report(client: Any, report: Any, relative: str, timeout: float, inst: Instrumentation) -> None:
    path = inst.results_dir / relative
    if getattr(client, "status", "running") != "running":  # the scheduler is gone: nobody to ask
        _note(inst, f"performance report not written: the client is {client.status} (scheduler lost?)")
        return
    try:
        with client.as_current():
            client.sync(report.__aexit__, None, None, None, code=f"run {inst.run_id}",
                        callback_timeout=timeout)
        inst.artifacts["performance_report"] = relative
    except Exception as exc:
        _note(inst, f"performance report not written: {type(exc).__name__}: {exc}")
        with contextlib.suppress(OSError):
            path.unlink()  # a half-written report is worse than none


def _unique_id(results_dir: Path, run_id: str) -> str:
    base = re.sub(r"[^A-Za-z0-9._-]", "-", run_id).strip(".-") or "run"
    candidate, n = base, 1
    while ((results_dir / REPORTS / f"{candidate}-performance.html").exists()
           or (results_dir / UTILIZATION / f"{candidate}.jsonl").exists()):
        n += 1
        candidate = f"{base}-{n}"
    return candidate


def _note(inst: Instrumentation, message: str) -> None:
    logger.warning("%s: %s", inst.run_id, message)
    inst.notes.append(message)
