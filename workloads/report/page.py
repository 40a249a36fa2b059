"""``report.html``: one self-contained page (figures as data URIs, inline CSS, no script,
nothing fetched) with the figures, every run in a table, failures with their errors, the
input runs went without (each file skipped, the first images that failed, with the reason
each), and the comparison when there is one.

The markup is the Jinja2 template ``templates/report.html.j2``, rendered with autoescaping
on, so every value a record brings (error texts, labels, notes, paths) is escaped by the
template engine. This module decides what the page shows: which sections, which rows,
numbers formatted for reading, links relative to the page."""
from __future__ import annotations

import base64
import functools
import math
import os
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import quote

import jinja2

from workloads.runs.results import GPU_USAGE, NAMED, RESULTS_FILE, SkippedInput

from .runs import Comparison, ResultSet, Run, describe

TEMPLATE = "report.html.j2"
STATUSES = ("succeeded", "failed", "interrupted")


@dataclass(frozen=True)
class Figure:
    section: str  # which section it belongs to
    title: str
    caption: str
    path: Path


SECTIONS = (
    ("throughput", "Throughput by number of workers"),
    ("phases", "Where the time goes"),
    ("quality", "Model quality"),
    ("utilization", "Utilization per worker"),
    ("gpu", "GPU held and busy"),
    ("compare", "Comparison"),
)

RUNS_HEAD = ("#", "benchmark", "status", "started (UTC)", "profile", "device / variant", "workers",
             "key metrics / error", "phases (s)", "total (s)", "utilization", "files")
WORKER_HEAD = ("run", "worker", "samples", "CPU mean (%)", "CPU peak (%)", "memory peak (GiB)", "GPU mean (%)",
               "GPU peak (%)", "GPU memory peak (GiB)", "busy-period mean (%)")
COMPARISON_HEAD = ("configuration", "measure", "unit", "better when", "this", "other", "ratio", "")


@dataclass(frozen=True)
class RunRow:
    """One line of the runs table: the run and its values formatted for the page."""

    run: Run
    started: tuple[str, ...]  # date, time
    metrics: list[tuple[str, str]]  # the key metrics of a succeeded run
    why_not: list[str]  # "<metric> n/a: <the benchmark's reason>" for a key metric it did not measure
    phases: list[tuple[str, str]]
    unfinished: list[tuple[str, str]]  # "<phase> (unfinished)", seconds
    utilization: list[tuple[str, str]]  # empty: not sampled
    files: list[tuple[str, str | None]]  # title, link relative to the page (None: the file is missing)
    skipped: SkippedInput | None = None  # the input a succeeded run went without


@dataclass(frozen=True)
class Skipped:
    """A run that went without some input, and the first items to name on the page."""

    run: Run
    input: SkippedInput
    items: tuple[tuple[str, str], ...]
    more: int  # items not named here


@dataclass(frozen=True)
class WorkerRow:
    """One worker of one sampled run in the per-worker utilization table."""

    run_label: str
    worker: str
    values: tuple[str, ...]  # samples, then the WORKER_HEAD measures in order


@functools.cache
def environment() -> jinja2.Environment:
    """The templates of this package. ``autoescape=True`` rather than ``select_autoescape``:
    that one decides by the name's last extension, and ``.j2`` is not among its HTML ones.
    Undefined names fail the rendering instead of leaving a blank in the page."""
    env = jinja2.Environment(loader=jinja2.PackageLoader(__package__, "templates"), autoescape=True,
                             undefined=jinja2.StrictUndefined, trim_blocks=True, lstrip_blocks=True)
    env.filters.update(num=_num, ratio=_ratio, describe=describe, data_uri=_data_uri)
    return env


def build(results: ResultSet, figures: list[Figure], output: Path,
          comparison: Comparison | None = None, other: ResultSet | None = None) -> str:
    """The page's HTML for ``results`` (with ``figures``, written under ``output``, which
    the links are relative to) and, when given, its ``comparison`` with ``other``."""
    runs = results.runs
    counts = {status: sum(r.status == status for r in runs) for status in STATUSES}
    held_nothing = nothing_held(runs)
    present = [(key, title) for key, title in SECTIONS if any(f.section == key for f in figures)
               or (key == "compare" and comparison is not None) or (key == "gpu" and held_nothing)]
    failures = [r for r in runs if not r.ok]
    skipped = skipped_input(runs)
    links = (present + [("runs", "All runs")] + ([("skipped", "Input left out")] if skipped else [])
             + ([("failures", "Failures")] if failures else []))
    return environment().get_template(TEMPLATE).render(
        title=title(runs),
        directory=str(results.directory),
        results_file=str(results.directory / RESULTS_FILE),
        runs=runs,
        counts=[f"{n} {status}" for status, n in counts.items() if n],
        generated=time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()),
        notes=results.notes + (other.notes if other else []),
        links=links,
        sections=present,
        figures=figures,
        comparison=comparison if other is not None else None,
        other_file=str(other.directory / RESULTS_FILE) if other is not None else "",
        comparison_head=COMPARISON_HEAD,
        worker_head=WORKER_HEAD,
        worker_rows=[row for run in runs for row in _worker_rows(run)],
        runs_head=RUNS_HEAD,
        run_rows=[_run_row(run, results.directory, output) for run in runs],
        failures=failures,
        skipped=skipped,
        nothing_held=held_nothing,
    )


def nothing_held(runs: list[Run]) -> list[tuple[str, str]]:
    """The runs whose record says their cluster held no GPU, or that what it held could not be
    read, as (``No GPU held by runs #1, #2``, the record's note), one line per kind and note:
    said in words, where the figure would draw nothing."""
    by_note: dict[tuple[bool, str], list[str]] = {}
    for run in runs:
        usage = run.record.get(GPU_USAGE)
        if not isinstance(usage, dict):
            continue  # a record from before it was recorded
        held: Any = usage.get("held_gpu_seconds")
        known = isinstance(held, (int, float)) and not isinstance(held, bool)
        if not known or held <= 0:
            by_note.setdefault((known, str(usage.get("note") or "no note")), []).append(f"#{run.number}")
    lines = []
    for (known, note), numbers in by_note.items():
        which = ("run " if len(numbers) == 1 else "runs ") + ", ".join(numbers)
        lines.append((f"No GPU held by {which}" if known else f"GPU held not known for {which}", note))
    return lines


def skipped_input(runs: list[Run]) -> list[Skipped]:
    """The succeeded runs that went without some input, each with its first ``NAMED`` items."""
    found = []
    for run in runs:
        what = SkippedInput.of(run.metrics) if run.ok else None
        if what is not None:
            found.append(Skipped(run, what, what.items[:NAMED], what.count - len(what.items[:NAMED])))
    return found


PLATFORM = "Dask on vSphere with Tanzu"  # where a stack's runs ran (--stack, --outputs, --own-cluster)


def title(runs: list[Run]) -> str:
    """The page's heading, named for where its runs ran: the stack's platform, a local
    cluster (and its host), or a cluster reached at a scheduler address."""
    places = list(dict.fromkeys(_place(run) for run in runs))
    if len(places) == 1:
        return f"{places[0][0].upper()}{places[0][1:]}: benchmark report"
    return f"Benchmark report: {', '.join(places[:-1])} and {places[-1]}"


def _place(run: Run) -> str:
    cluster = run.record.get("cluster") or {}
    endpoint = run.config.get("endpoint") or ("local" if cluster.get("kind") == "local" else None)
    if endpoint in ("stack", "outputs", "own-cluster"):
        return PLATFORM
    if endpoint == "local":
        host = ((run.record.get("hardware") or {}).get("client") or {}).get("host")
        return "a local Dask cluster" + (f" (host {host})" if host else "")
    if endpoint in ("address", "environment") and cluster.get("scheduler"):
        return f"a Dask cluster at {cluster['scheduler']}"
    return "a remote Dask cluster"


def _run_row(run: Run, results_dir: Path, output: Path) -> RunRow:
    metrics = []
    if run.ok:
        keys = run.spec.key_metrics or [k for k, v in run.metrics.items() if _scalar(v)][:4]
        metrics = [(k, _num(run.metrics.get(k))) for k in keys if k in run.metrics]
    return RunRow(
        run=run,
        started=tuple(run.started_at.rstrip("Z").split("T")),
        metrics=metrics,
        why_not=[f"{key} n/a: {note}" for key, _ in metrics if (note := _why_not(run.metrics, key))],
        phases=[(p, _num(s)) for p, s in run.phases.items()],
        unfinished=[(f"{p} (unfinished)", _num(s)) for p, s in run.unfinished.items()],
        utilization=_utilization_summary(run),
        files=_files(run, results_dir, output),
        skipped=SkippedInput.of(run.metrics) if run.ok else None,
    )


def _utilization_summary(run: Run) -> list[tuple[str, str]]:
    summary = run.utilization()
    if not summary:
        return []
    workers = summary.get("workers") or {}
    cpu = [w["cpu_mean"] for w in workers.values() if isinstance(w.get("cpu_mean"), (int, float))]
    gpu = [w["gpu_utilization_mean"] for w in workers.values()
           if isinstance(w.get("gpu_utilization_mean"), (int, float))]
    basis = f" ({summary['basis']})" if summary.get("basis") else ""
    items = [("balance", _num(summary.get("balance")) + basis)]
    if cpu:
        items.append(("mean CPU", f"{_num(sum(cpu) / len(cpu))} %"))
    if gpu:
        items.append(("mean GPU", f"{_num(sum(gpu) / len(gpu))} %"))
    return items


def _worker_rows(run: Run) -> list[WorkerRow]:
    summary = run.utilization() or {}
    return [WorkerRow(run.label, str(name), (
        str(w.get("samples", "")), _num(w.get("cpu_mean")), _num(w.get("cpu_peak")), _gib(w.get("memory_peak")),
        _num(w.get("gpu_utilization_mean")), _num(w.get("gpu_utilization_peak")),
        _gib(w.get("gpu_memory_peak")), _num(w.get("busy_mean"))))
        for name, w in (summary.get("workers") or {}).items()]


def _files(run: Run, results_dir: Path, output: Path) -> list[tuple[str, str | None]]:
    links = []
    for key, title in (("performance_report", "performance report"), ("utilization", "utilization samples")):
        relative = run.artifacts.get(key)
        if not relative:
            continue
        target = results_dir / relative
        href = quote(Path(os.path.relpath(target, output)).as_posix()) if target.exists() else None
        links.append((title, href))
    return links


def _data_uri(path: Path) -> str:
    return "data:image/png;base64," + base64.b64encode(Path(path).read_bytes()).decode("ascii")


def _num(value: Any) -> str:
    if value is None:
        return "n/a"
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return str(value)
    if isinstance(value, float) and not math.isfinite(value):
        return "n/a"
    if isinstance(value, int) or abs(value) >= 1000:
        return f"{value:,.0f}"
    return f"{value:.4g}"


def _why_not(metrics: dict[str, Any], key: str) -> str | None:
    """The benchmark's reason (``<key>_note``) for a metric it did not measure."""
    note = metrics.get(f"{key}_note")
    return str(note) if metrics.get(key) is None and note else None


def _ratio(value: float) -> str:
    return "∞" if not math.isfinite(value) else f"{value:.3f}"


def _gib(value: Any) -> str:
    return f"{value / 1024 ** 3:.2f}" if isinstance(value, (int, float)) else "n/a"


def _scalar(value: Any) -> bool:
    return isinstance(value, (int, float, str)) and not isinstance(value, bool)
