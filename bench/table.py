"""Print the results table of docs/benchmarks.md for result files: one row per figure, one
column per file, each cell ``value (low-high)`` with `` MISSED`` where the goal is missed
(``-``: the figure is not in that file).
Exit codes: 0 printed, 2 a file is not a result file (the message says which).
"""
from __future__ import annotations

import argparse
import sys
from pathlib import Path

from bench import registry
from bench.figures import short
from bench.results import ResultFileError, load


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("files", nargs="+", metavar="FILE.json", help="result files, one column each")


def run(args: argparse.Namespace) -> int:
    try:
        print(markdown_table(args.files))
    except ResultFileError as error:
        print(f"error: {error}", file=sys.stderr)
        return 2
    return 0


def markdown_table(paths: list[str | Path]) -> str:
    """The table, in Markdown, with the figures in the report's order."""
    files = [load(path) for path in paths]
    lines = ["| figure | goal | " + " | ".join(f"`{Path(p).as_posix()}`" for p in paths) + " |",
             "|---|---|" + "---|" * len(paths)]
    for name, spec in registry.figures().items():
        cells = []
        for figures in files:
            record = figures.get(name)
            if record is None or record.get("value") is None:
                cells.append("-")
                continue
            low, high = record["spread"]
            cells.append(f"{short(record['value'])} ({short(low)}-{short(high)})"
                         + (" MISSED" if record["holds"] is False else ""))
        lines.append(f"| `{name}` | {spec.goal} | " + " | ".join(cells) + " |")
    return "\n".join(lines)
