"""Print the figure-by-figure change from result file A to result file B.

For each figure in either file: its value in A and in B, the change (B / A - 1), both
spreads, both verdicts, and the two denominators (a ratio can move because either side
moved). A figure measured in one file only is listed with ``-`` for the other.
Exit codes: 0 printed, 2 a file is not a result file (the message says which).
"""
from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

from bench.figures import short, verdict
from bench.results import ResultFileError, load


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("first", metavar="A.json", help="the result file to compare from")
    parser.add_argument("second", metavar="B.json", help="the result file to compare with it")


def run(args: argparse.Namespace) -> int:
    try:
        print(compare(args.first, args.second))
    except ResultFileError as error:
        print(f"error: {error}", file=sys.stderr)
        return 2
    return 0


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
        rows.append((name, rb.get("goal") or ra.get("goal") or "-", short(ra.get("value")), short(rb.get("value")),
                     _pct(change(ra.get("value"), rb.get("value"))), _spread(ra), _spread(rb),
                     _verdict(ra), _verdict(rb), f"{_side(ra)} -> {_side(rb)}"))
    widths = [max(len(row[i]) for row in rows) for i in range(len(rows[0]))]
    lines = ["  ".join(cell.ljust(width) for cell, width in zip(row, widths, strict=True)).rstrip() for row in rows]
    lines.insert(1, "-" * max(len(line) for line in lines))
    held = [sum(r.get("holds") is True for r in side.values()) for side in (a, b)]
    lines += ["", f"A: {first} ({held[0]} of {len(a)} goals hold)",
              f"B: {second} ({held[1]} of {len(b)} goals hold)"]
    return "\n".join(lines)


def _pct(value: float | None) -> str:
    return "-" if value is None else f"{value:+.1%}"


def _spread(record: dict[str, Any]) -> str:
    spread = record.get("spread")
    return f"{short(spread[0])}-{short(spread[1])}" if spread else "-"


def _verdict(record: dict[str, Any]) -> str:
    return verdict(record.get("holds")) if record else "-"


def _side(record: dict[str, Any]) -> str:
    denominator = record.get("denominator") or {}
    return short(denominator.get("value")) if denominator else "-"
