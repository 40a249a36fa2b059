"""The third benchmark's part of the suite: one figure (summing in one process against
summing chunk by chunk) and one subcommand; its sizes are the ``third`` section of a
bench profile, else the defaults here."""
from __future__ import annotations

import argparse
import time
from collections.abc import Callable
from typing import Any

from bench.registry import FigureSpec

FIGURES = {"third_chunks_vs_whole": FigureSpec(
    "third", "Third: sum of squares chunk by chunk vs in one go", ">= 0.1", "chunked_seconds", "whole_seconds", "s")}
MEASURE = __name__  # measure() below
COMMANDS = {"third-sizes": ("tests.workloads.third_benchmark.bench", "the third benchmark's bench sizes")}
DEFAULTS = {"numbers": 20000, "chunk": 1000}


def _timed(function: Callable[[], Any]) -> float:
    started = time.perf_counter()
    function()
    return time.perf_counter() - started


def measure(ctx: Any, wanted: list[str], make: Callable[[str], Any]) -> dict[str, Any]:
    sizes = {**DEFAULTS, **(ctx.profile.get("third") or {})}
    values = list(range(sizes["numbers"]))
    chunks = [values[i:i + sizes["chunk"]] for i in range(0, len(values), sizes["chunk"])]
    figures = {name: make(name) for name in wanted}
    for _ in range(ctx.repeats):
        for figure in figures.values():
            figure.numerator.samples.append(_timed(lambda: sum(sum(v * v for v in c) for c in chunks)))
            figure.denominator.samples.append(_timed(lambda: sum(v * v for v in values)))
    return figures


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--numbers", type=int, default=DEFAULTS["numbers"])


def run(args: argparse.Namespace) -> int:
    print(f"numbers: {args.numbers}")
    return 0
