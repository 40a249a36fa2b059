"""``dask-tkg report [RESULTS_DIR] [--compare OTHER_DIR] [--output DIR]``.

Exit codes: 0 the report was written; 2 there is nothing to report (no results.jsonl, or
no record in it, here or in the --compare directory).
"""
from __future__ import annotations

import argparse
import logging
import sys

from workloads.core.commands import prog, setup_logging

from .runs import NoResults

EXIT_OK, EXIT_NO_RESULTS = 0, 2


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog=prog("dask-tkg report"),
        description="Render figures and a self-contained report.html from a results directory.")
    parser.add_argument("results_dir", nargs="?", default="results", metavar="RESULTS_DIR",
                        help="the directory holding results.jsonl (default: results/)")
    parser.add_argument("--compare", metavar="OTHER_DIR",
                        help="another results directory: add ratios this / other per matched configuration")
    parser.add_argument("--output", metavar="DIR", help="where to write (default: RESULTS_DIR, beside results.jsonl)")
    parser.add_argument("--utilization-runs", type=int, default=6, metavar="N",
                        help="draw the utilization of the latest N sampled runs (0: all; default 6)")
    parser.add_argument("-v", "--verbose", action="store_true")
    return parser


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    setup_logging(args.verbose, level=logging.WARNING)
    from .build import render

    try:
        report = render(args.results_dir, compare=args.compare, output=args.output,
                        utilization_runs=args.utilization_runs)
    except NoResults as exc:
        print(f"error: {exc}", file=sys.stderr)
        return EXIT_NO_RESULTS
    print(f"report: {report}")
    return EXIT_OK

