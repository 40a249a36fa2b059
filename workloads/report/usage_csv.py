"""The usage report's CSV files: per person, per week and person, per run, one row each, the
columns those of :func:`workloads.report.usage_data.totals_row` and ``run_row``. Numbers to six
decimals (a GPU-second is 0.000278 GPU-hours); a number not measured (busy time) is an empty
cell, never 0; ``cost`` and ``currency`` only where a rate is set."""
from __future__ import annotations

import csv
from pathlib import Path
from typing import Any

from .usage_data import Rate, Usage, run_row, totals_row

PEOPLE, WEEKS, RUNS = "usage-people.csv", "usage-weeks.csv", "usage-runs.csv"


def write(usage: Usage, rate: Rate, output: Path) -> list[Path]:
    """Write the three files into ``output``; their paths."""
    people = [{"person": t.key} | totals_row(t, rate) for t in usage.people()]
    weeks = [{"week": week, "person": t.key} | totals_row(t, rate) for week, t in usage.week_people()]
    runs = [run_row(run, rate) for run in usage.runs]
    return [_write(output / name, rows) for name, rows in ((PEOPLE, people), (WEEKS, weeks), (RUNS, runs))]


def _write(path: Path, rows: list[dict[str, Any]]) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("w", encoding="utf-8", newline="") as fh:
        if rows:
            writer = csv.DictWriter(fh, fieldnames=list(rows[0]))
            writer.writeheader()
            writer.writerows({key: _value(value) for key, value in row.items()} for row in rows)
    return path


def _value(value: Any) -> Any:
    if value is None:
        return ""
    return round(value, 6) if isinstance(value, float) else value
