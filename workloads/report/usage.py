"""``dask-tkg usage [RESULTS ...] [--rate R] [--currency C] [--output DIR]``: GPU-hours held and
busy per person, per week and per run, at a site rate, from the runs' records (each record's
``gpu_usage``), over one or many results directories or files of run records (a results
directory's ``results.jsonl``, or a team's collected ``alice.jsonl``). Writes ``usage.html``
(figures like the run report's) and three CSV files, and prints one line per person.

The rate's default is the runner's setting ``tkg.usage.gpu_hour_rate`` (and ``tkg.usage.currency``,
``workloads/core/dask-tkg.yaml``); 0 means no rate and no cost. The numbers come from the records
alone: a Prometheus's recording rules are not read.

Exit codes: 0 the report was written; 2 a path is no results directory or file, holds no
record, or the rate is not a number of 0 or more.
"""
from __future__ import annotations

import argparse
import logging
import sys
from pathlib import Path
from typing import Any

from workloads.core import config
from workloads.core.commands import prog, setup_logging
from workloads.tuning import dask_env_name

from . import usage_csv, usage_data, usage_page
from .page import Figure
from .runs import NoResults
from .usage_data import HOUR, Rate, Totals, Usage

EXIT_OK, EXIT_NO_RESULTS = 0, 2
REPORT_FILE = "usage.html"
RATE_KEY, CURRENCY_KEY = "tkg.usage.gpu_hour_rate", "tkg.usage.currency"


class BadRate(ValueError):
    """The rate is not a number of 0 or more."""


def rate_value(value: Any, where: str) -> float:
    """``value`` as a rate: a number of 0 or more, else :class:`BadRate` naming ``where`` it came from."""
    try:
        rate = float(value)
    except (TypeError, ValueError):
        rate = -1.0
    if not rate >= 0 or rate == float("inf"):
        raise BadRate(f"{where} is {value!r}: give the price of one GPU-hour, a number of 0 or more (0: no cost)")
    return rate


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog=prog("dask-tkg usage"),
        description="GPU-hours held and busy per person, week and run, at a site rate, from run records: "
                    "usage.html and CSV files.")
    parser.add_argument("results", nargs="*", default=["results"], metavar="RESULTS",
                        help="results directories or files of run records (results.jsonl, or a team's"
                             " collected alice.jsonl; default: results/)")
    parser.add_argument("--rate", metavar="PER_GPU_HOUR",
                        help=f"the site's price of one GPU held for an hour; 0: no cost (default: {RATE_KEY},"
                             f" now {config.get(RATE_KEY)})")
    parser.add_argument("--currency", help=f"the rate's unit (default: {CURRENCY_KEY}, now {config.get(CURRENCY_KEY)})")
    parser.add_argument("--output", metavar="DIR",
                        help="where to write usage.html and the CSV files (default: the folder of the first RESULTS)")
    parser.add_argument("-v", "--verbose", action="store_true")
    return parser


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    setup_logging(args.verbose, level=logging.WARNING)
    try:
        rate = _rate(args)
        usage, page = render(args.results, rate, Path(args.output) if args.output else None)
    except (NoResults, BadRate) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return EXIT_NO_RESULTS
    for line in summary(usage, rate):
        print(line)
    print(f"usage: {page}")
    return EXIT_OK


def render(paths: list[str], rate: Rate, output: Path | None = None) -> tuple[Usage, Path]:
    """Read ``paths``, write ``usage.html``, its figures and the CSV files into ``output``
    (default: the first results directory); the usage read and the page written."""
    from . import usage_figures  # matplotlib, only when a page is drawn

    usage = usage_data.load(paths)
    out = output if output is not None else usage_data.output_folder(paths[0])
    drawn = usage_page.figure_paths(out)
    for stale in drawn.values():
        stale.unlink(missing_ok=True)
    people, week_people = usage.people(), usage.week_people()
    figures = [Figure(section, title, caption, path) for section, title, caption, path in (
        ("people", "GPU-hours held and busy per person", usage_figures.held_busy_caption(people),
         usage_figures.held_busy(people, drawn["people"])),
        ("weeks", "GPU-hours held per week, by person", usage_figures.WEEKLY_CAPTION,
         usage_figures.weekly(week_people, drawn["weeks"]))) if path is not None]
    written = usage_csv.write(usage, rate, out)
    page = out / REPORT_FILE
    page.write_text(usage_page.build(usage, rate, figures, [p.name for p in written]), encoding="utf-8")
    return usage, page


def summary(usage: Usage, rate: Rate) -> list[str]:
    """What the terminal shows: the notes, then one line per person."""
    lines = [f"note: {note}" for note in usage.left_out() + usage.notes]
    return lines + [_person_line(person, rate) for person in usage.people()]


def _person_line(person: Totals, rate: Rate) -> str:
    busy = "busy not measured" if person.busy is None else f"{person.busy / HOUR:.2f} busy" + _share(person)
    cost = rate.cost(person.held)
    return (f"{person.key}: {person.held / HOUR:.2f} GPU-hours held, {busy}, {person.runs} run(s)"
            + (f", {cost:,.2f} {rate.currency}" if cost is not None else ""))


def _share(totals: Totals) -> str:
    """`` (43% of held)``, or of what the runs that measured busy time held, where some did not."""
    ratio = totals.ratio
    if ratio is None:
        return ""
    if totals.measured == totals.runs:
        return f" ({ratio:.0%} of held)"
    return f" ({ratio:.0%} of the {totals.measured_held / HOUR:.2f} held where measured)"


def _rate(args: argparse.Namespace) -> Rate:
    per_hour = (rate_value(args.rate, "--rate") if args.rate is not None
                else rate_value(config.get(RATE_KEY), f"the setting {RATE_KEY} ({dask_env_name(RATE_KEY)})"))
    return Rate(per_hour, str(args.currency or config.get(CURRENCY_KEY) or ""))
