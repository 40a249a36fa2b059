"""The table printed at the end of a run: one row per record written. A run that went
without some of its input says so in its status (``succeeded, 1 of 3 files skipped``): a
count hidden in the record alone reads as a complete run."""
from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from workloads.runs.results import SkippedInput

COLUMNS = ("benchmark", "workers", "device", "status", "seconds", "headline")


def headline(record: dict[str, Any], keys: Sequence[str] | None = None) -> str:
    """``key=value`` for the benchmark's headline metrics (all scalar metrics, at most
    four, when it names none), or the error on one line (100 characters at most)."""
    if record.get("status") != "succeeded":
        error = " ".join((record.get("error") or "").split())
        return error if len(error) <= 100 else error[:99] + "…"
    metrics = record.get("metrics") or {}
    if not keys:
        keys = [k for k, v in metrics.items() if isinstance(v, (int, float)) and not isinstance(v, bool)][:4]
    return ", ".join(f"{key}={_metric(metrics, key)}" for key in keys if key in metrics)


def status(record: dict[str, Any]) -> str:
    """The record's status, with the input it went without when it skipped any."""
    skipped = SkippedInput.of(record.get("metrics") or {})
    text = str(record.get("status", "?"))
    return f"{text}, {skipped.describe()}" if skipped else text


def _metric(metrics: dict[str, Any], key: str) -> str:
    """The value; for a metric not measured, ``n/a`` and the benchmark's reason when it
    gives one (``<key>_note``: accuracy under random weights)."""
    value, note = metrics.get(key), metrics.get(f"{key}_note")
    return f"n/a ({note})" if value is None and note else _format(value)


def render(records: Iterable[dict[str, Any]], headlines: Mapping[str, Sequence[str] | None] | None = None) -> str:
    """A plain-text table of ``records``."""
    rows = []
    for record in records:
        config, cluster = record.get("config") or {}, record.get("cluster") or {}
        rows.append((
            record.get("benchmark", "?"),
            str(cluster.get("workers", config.get("workers", ""))),
            str(config.get("device", "")),
            status(record),
            _format(seconds(record)),
            headline(record, (headlines or {}).get(record.get("benchmark") or "")),
        ))
    if not rows:
        return "no runs"
    widths = [max(len(COLUMNS[i]), *(len(row[i]) for row in rows)) for i in range(len(COLUMNS))]
    def line(cells):
        return "  ".join(cell.ljust(width) for cell, width in zip(cells, widths, strict=True)).rstrip()
    return "\n".join([line(COLUMNS), line(["-" * w for w in widths]), *(line(row) for row in rows)])


def seconds(record: dict[str, Any]) -> float:
    """Time spent in the run's phases, the unfinished one (failed, interrupted) included."""
    return sum((record.get("phases") or {}).values()) + sum((record.get("unfinished_phases") or {}).values())


def _format(value: Any) -> str:
    if value is None:
        return "n/a"
    if isinstance(value, float):
        return f"{value:.4g}" if abs(value) < 1000 else f"{value:,.0f}"
    return str(value)
