"""The tables of measured numbers in docs/benchmarks.md, generated from the committed result
files under docs/results/ (the documents quote no measured number of their own)::

    python -m tests.docs.tables                          # rewrite the tables from the files they name
    python -m tests.docs.tables --files A.json B.json    # the same, with these files as the columns
    python -m tests.docs.tables --check                  # exit 1 when a table is not what its files give

Two tables, each between marker comments: the results (``dask-tkg bench table`` of the files:
each figure's value, spread and verdict) and the bounds (what each file recorded, in the same
repetitions, about what limits a figure: the ceilings measured without Dask and Dask's fixed
cost). The columns are the files the results table's header names.
"""
from __future__ import annotations

import argparse
import re
import sys
from collections.abc import Callable
from pathlib import Path

from bench.results import load
from tests.docs import generated
from tests.docs.generated import check_or_rewrite

REPO = Path(__file__).resolve().parents[2]
DOC = REPO / "docs" / "benchmarks.md"
RESULTS = ("<!-- bench-results -->", "<!-- /bench-results -->")
BOUNDS = ("<!-- bench-bounds -->", "<!-- /bench-bounds -->")
FILE_CELL = re.compile(r"`(docs/results/[^`]+\.json)`")


def _number(value: float) -> str:
    return f"{value:.3g}"


def _median_and_range(entry: dict | None, key: str = "ratios") -> str:
    if not isinstance(entry, dict) or not entry.get(key):
        return "-"
    values = entry[key]
    middle = entry.get("median")
    shown = _number(middle) if middle is not None and key == "ratios" else ""
    span = f"{_number(min(values))}-{_number(max(values))}"
    return f"{shown} ({span})" if shown else span


def _notes(records: dict[str, dict], figure: str) -> dict:
    return (records.get(figure) or {}).get("notes") or {}


def _bf16_flags(notes: dict) -> str:
    if "cpu_bf16_flags" not in notes:
        return "-"
    flags = notes["cpu_bf16_flags"]
    capability = notes.get("torch_cpu_capability")
    return (", ".join(f"`{f}`" for f in flags) or "none") + (f" (torch: {capability})" if capability else "")


# (figure, what the row shows, where in the figure's record, the cell from the file's records)
BOUND_ROWS: list[tuple[str, str, str, Callable[[dict[str, dict]], str]]] = [
    ("images_scaling_2x1_vs_1x1", "the same scaling without Dask: the tuned loop in 2 plain processes / 1",
     "`notes.ceiling`", lambda r: _median_and_range(_notes(r, "images_scaling_2x1_vs_1x1").get("ceiling"))),
    ("taxi_load_vs_pyarrow", "the load and cleanse tasks' own functions in plain processes / the baseline",
     "`notes.ceiling`", lambda r: _median_and_range(_notes(r, "taxi_load_vs_pyarrow").get("ceiling"))),
    ("taxi_load_vs_pyarrow", "that ceiling with Dask's fixed cost of the two phases added / the baseline",
     "`notes.with_dask_fixed_cost`",
     lambda r: _median_and_range(_notes(r, "taxi_load_vs_pyarrow").get("with_dask_fixed_cost"))),
    ("taxi_load_vs_pyarrow", "Dask's fixed cost of load + cleanse, seconds (min-max)",
     "`notes.with_dask_fixed_cost.fixed_seconds`",
     lambda r: _median_and_range(_notes(r, "taxi_load_vs_pyarrow").get("with_dask_fixed_cost"), "fixed_seconds")),
    ("images_bf16_vs_fp32", "the CPU's bf16 instructions", "`notes.cpu_bf16_flags`",
     lambda r: _bf16_flags(_notes(r, "images_bf16_vs_fp32"))),
]


def bounds_table(paths: list[str]) -> str:
    files = [load(REPO / path) for path in paths]
    lines = ["| figure | bound | from | " + " | ".join(f"`{p}`" for p in paths) + " |",
             "|---|---|---|" + "---|" * len(paths)]
    for figure, what, where, cell in BOUND_ROWS:
        lines.append(f"| `{figure}` | {what} | {where} | " + " | ".join(cell(records) for records in files) + " |")
    return "\n".join(lines)


def results_table(paths: list[str]) -> str:
    from bench.table import markdown_table

    return markdown_table([REPO / p for p in paths]).replace(f"`{REPO.as_posix()}/", "`")


def block(text: str, markers: tuple[str, str]) -> str:
    return generated.block(text, markers, DOC)


def columns(text: str) -> list[str]:
    """The result files the results table's header names, in order."""
    header = block(text, RESULTS).splitlines()[0]
    return FILE_CELL.findall(header)


def render(text: str, paths: list[str] | None = None) -> str:
    paths = paths or columns(text)
    text = generated.replace_block(text, RESULTS, results_table(paths), DOC)
    return generated.replace_block(text, BOUNDS, bounds_table(paths), DOC)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m tests.docs.tables", description=__doc__.split("\n\n")[0])
    parser.add_argument("--files", nargs="+", metavar="FILE.json",
                        help="result files under docs/results/ as the columns")
    parser.add_argument("--check", action="store_true", help="exit 1 if a table is not what its files give")
    args = parser.parse_args(argv)
    files = [Path(f).resolve().relative_to(REPO).as_posix() for f in args.files] if args.files else None
    rendered = render(DOC.read_text(encoding="utf-8"), files)
    return check_or_rewrite(DOC, rendered, args.check, "tables out of date",
                            f"from {', '.join(files or columns(rendered))}")


if __name__ == "__main__":
    sys.exit(main())
