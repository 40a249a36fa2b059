"""``python -m bench --compare A.json B.json``: two result files, figure by figure.

For each figure in either file: its value in A and in B, the change (B / A - 1), both
spreads, both verdicts, and the two denominators (a ratio can move because either side
moved). A figure measured in one file only is listed with ``-`` for the other.
"""
from __future__ import annotations

import json
from pathlib import Path
from typing import Any


class ResultFileError(ValueError):
    """A file that is not a ``python -m bench`` result (a JSON list of figure records)."""


def load(path: str | Path) -> dict[str, dict[str, Any]]:
    """{figure name: its record} of one result file."""
    path = Path(path)
    try:
        records = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise ResultFileError(f"{path}: no such file") from None
    except json.JSONDecodeError as error:
        raise ResultFileError(f"{path}: not JSON ({error})") from None
    if not isinstance(records, list):
        raise ResultFileError(f"{path}: expected a list of figures, got {type(records).__name__}")
    figures = {}
    for index, record in enumerate(records):
        if not isinstance(record, dict) or not {"name", "value", "goal", "holds"} <= set(record):
            raise ResultFileError(f"{path}: item {index} is not a figure record (name, value, goal, holds)")
        figures[record["name"]] = record
    return figures


def change(before: float | None, after: float | None) -> float | None:
    """``after / before - 1``, None where either is missing or ``before`` is 0."""
    if before is None or after is None or before == 0:
        return None
    return after / before - 1.0


def compare(first: str | Path, second: str | Path) -> str:
    """The figure-by-figure table of ``second`` against ``first``."""
    a, b = load(first), load(second)
    names = list(a) + [name for name in b if name not in a]
    rows = [("figure", "goal", "A", "B", "change", "A spread", "B spread", "A verdict", "B verdict",
             "denominator A -> B")]
    for name in names:
        ra, rb = a.get(name, {}), b.get(name, {})
        rows.append((name, rb.get("goal") or ra.get("goal") or "-", _num(ra.get("value")), _num(rb.get("value")),
                     _pct(change(ra.get("value"), rb.get("value"))), _spread(ra), _spread(rb),
                     _verdict(ra), _verdict(rb), f"{_side(ra)} -> {_side(rb)}"))
    widths = [max(len(row[i]) for row in rows) for i in range(len(rows[0]))]
    lines = ["  ".join(cell.ljust(width) for cell, width in zip(row, widths)).rstrip() for row in rows]
    lines.insert(1, "-" * max(len(line) for line in lines))
    held = [sum(r.get("holds") is True for r in side.values()) for side in (a, b)]
    lines += ["", f"A: {first} ({held[0]} of {len(a)} goals hold)",
              f"B: {second} ({held[1]} of {len(b)} goals hold)"]
    return "\n".join(lines)


def _num(value: float | None) -> str:
    if value is None:
        return "-"
    return f"{value:.3g}" if abs(value) < 1e4 else f"{value:,.0f}"


def _pct(value: float | None) -> str:
    return "-" if value is None else f"{value:+.1%}"


def _spread(record: dict[str, Any]) -> str:
    spread = record.get("spread")
    return f"{_num(spread[0])}-{_num(spread[1])}" if spread else "-"


def _verdict(record: dict[str, Any]) -> str:
    if not record:
        return "-"
    return {True: "holds", False: "MISSED", None: "not measured"}[record.get("holds")]


def _side(record: dict[str, Any]) -> str:
    denominator = record.get("denominator") or {}
    return _num(denominator.get("value")) if denominator else "-"


def markdown_table(paths: list[str | Path]) -> str:
    """The README's results table: one row per figure, one column per result file, each
    cell ``value (low-high)`` with `` MISSED`` where the goal was missed (``-``: not
    measured in that file)."""
    from bench.cli import FIGURES
    from bench.figures import _short

    files = [load(path) for path in paths]
    lines = ["| figure | goal | " + " | ".join(f"`{Path(p).as_posix()}`" for p in paths) + " |",
             "|---|---|" + "---|" * len(paths)]
    for name in FIGURES:
        cells = []
        for figures in files:
            record = figures.get(name)
            if record is None or record.get("value") is None:
                cells.append("-")
                continue
            low, high = record["spread"]
            cells.append(f"{_short(record['value'])} ({_short(low)}-{_short(high)})"
                         + (" MISSED" if record["holds"] is False else ""))
        lines.append(f"| `{name}` | {FIGURES[name][2]} | " + " | ".join(cells) + " |")
    return "\n".join(lines)
