"""``usage.html``: one self-contained page, like ``report.html`` (the same Jinja2 environment
with autoescaping, figures as data URIs, inline CSS, no script, nothing fetched): the rate,
what was left out, GPU-hours per person, per week and per run, and what each number means.

The tables show the values the CSV files hold (:mod:`workloads.report.usage_data`'s rows),
formatted for reading: GPU-hours to two decimals, busy of held in percent, and ``not
measured`` where a run measured no busy time."""
from __future__ import annotations

import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from .page import Figure, environment
from .usage_data import Rate, Usage, run_row, totals_row

TEMPLATE = "usage.html.j2"
NOT_MEASURED = "not measured"
HEADS = {"person": "person", "week": "week", "runs": "runs", "busy_measured_runs": "busy measured (runs)",
         "most_gpus": "GPUs (most at once)", "held_gpu_hours": "held (GPU-h)", "waiting_gpu_hours": "waiting (GPU-h)",
         "working_gpu_hours": "working (GPU-h)", "idle_gpu_hours": "idle (GPU-h)", "busy_gpu_hours": "busy (GPU-h)",
         "busy_of_held": "busy of held", "cost": "cost"}
RUN_COLUMNS = ("person", "run", "week", "most_gpus", "held_gpu_hours", "waiting_gpu_hours", "working_gpu_hours",
               "idle_gpu_hours", "busy_gpu_hours", "busy_of_held", "cost", "where from")
TEXT = {"person", "week", "run", "where from"}


@dataclass(frozen=True)
class Table:
    """One table of the page: its head and its rows of formatted cells, and which columns are text."""

    key: str
    head: tuple[str, ...]
    rows: list[tuple[str, ...]]
    text: frozenset[int]  # the indices of the text columns; the others are numbers


def build(usage: Usage, rate: Rate, figures: list[Figure], csv_files: list[str]) -> str:
    """The page's HTML; ``csv_files`` are the CSVs' names, beside the page."""
    people = usage.people()
    return environment().get_template(TEMPLATE).render(
        runs=len(usage.runs), people=len(people), files=usage.files, rate=rate.describe(),
        generated=time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()),
        notes=usage.left_out() + usage.notes,
        figures=figures, csv_files=csv_files, tables={
            "people": _table("people", ("person",), [({"person": t.key} | totals_row(t, rate)) for t in people]),
            "weeks": _table("weeks", ("week", "person"), [{"week": week, "person": t.key} | totals_row(t, rate)
                                                          for week, t in usage.week_people()]),
            "runs": _table("runs", (), [_run_cells(row) for row in (run_row(run, rate) for run in usage.runs)])})


def _table(key: str, first: tuple[str, ...], rows: list[dict[str, Any]]) -> Table:
    columns = list(rows[0]) if rows else [*first, "runs"]
    columns = [c for c in columns if c != "currency"]
    head = tuple(HEADS.get(c, c) for c in columns)
    return Table(key, head, [tuple(cell(c, row.get(c), row.get("currency")) for c in columns) for row in rows],
                 frozenset(i for i, c in enumerate(columns) if c in TEXT))


def _run_cells(row: dict[str, Any]) -> dict[str, Any]:
    """A run's row as the page shows it: the run named by file and number, where its numbers come from."""
    shown = {"person": row["person"], "run": f"{row['results_file']} #{row['run']} ({row['benchmark']}, "
             f"{row['status']})", "week": row["week"]}
    shown |= {c: row[c] for c in (*RUN_COLUMNS, "currency") if c in row and c not in shown}
    busy = f"; busy from {row['busy_source']}" if row.get("busy_source") else ""
    return shown | {"where from": f"{row.get('source') or '?'}{busy}: {row.get('note') or ''}".rstrip(": ")}


def cell(column: str, value: Any, currency: str | None = None) -> str:
    """One value as the page writes it."""
    if value is None:
        return NOT_MEASURED if column.startswith("busy") else ""
    if column.endswith("_gpu_hours"):
        return f"{value:,.2f}"
    if column == "busy_of_held":
        return f"{value:.0%}"
    if column == "cost":
        return f"{value:,.2f} {currency or ''}".rstrip()
    return str(value)


def figure_paths(output: Path) -> dict[str, Path]:
    """Where the page's figures are written (also embedded in it): ``usage-figures/`` under ``output``."""
    folder = output / "usage-figures"
    return {"people": folder / "usage-people.png", "weeks": folder / "usage-weeks.png"}
