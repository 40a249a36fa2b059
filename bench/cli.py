"""``python -m bench``: measure each workload against its physical limit, side by side in
one run, and write ``docs/results/<timestamp>.json`` (a list of figures).

Exit codes: 0 every figure was measured (goals held or not: a missed goal is reported,
not an error); 1 a figure could not be measured, or, with ``--check``, a goal was missed;
2 bad arguments.
"""
from __future__ import annotations

import argparse
import json
import logging
import os
import platform
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable


from bench.figures import Figure, Goal, Measurement, render
from workloads.core.commands import load_yaml, prog, setup_logging

logger = logging.getLogger("bench")

PROFILES_FILE = Path(__file__).with_name("profiles.yaml")
RESULTS_DIR = Path(__file__).resolve().parents[1] / "docs" / "results"

# name -> (group, title, goal, numerator, denominator, unit); the order is the report's
FIGURES: dict[str, tuple[str, str, str, str, str, str]] = {
    "images_pipeline_vs_model": ("images", "Images: Dask path end to end vs model-only forward (the limit)",
                                 ">= 0.85", "dask_path_images_per_second", "model_only_images_per_second", "img/s"),
    "images_dask_vs_plain_loop": ("images", "Images: Dask path vs a tuned single-process loop (same decoder,"
                                  " folding, allocator, threads)", ">= 1.0",
                                  "dask_path_images_per_second", "tuned_loop_images_per_second", "img/s"),
    "images_dask_vs_naive_loop": ("images", "Images: Dask path vs the naive loop (PIL, no folding, glibc defaults)",
                                  ">= 1.5", "dask_path_images_per_second", "naive_loop_images_per_second", "img/s"),
    "images_scaling_2x1_vs_1x1": ("images", "Images: 2 workers x 1 thread vs 1 worker x 1 thread", ">= 1.8",
                                  "two_workers_images_per_second", "one_worker_images_per_second", "img/s"),
    "taxi_load_vs_pyarrow": ("taxi", "Taxi: load + cleanse + persist vs pyarrow.csv.read_csv (same columns, types,"
                             " threads), rows/s", ">= 0.7",
                             "benchmark_load_cleanse_rows_per_second", "pyarrow_read_csv_rows_per_second", "rows/s"),
    "taxi_train_dask_vs_single": ("taxi", "Taxi: xgboost.dask training time vs single-process xgboost.train"
                                  " (same rows, params, environment)", "<= 1.25",
                                  "xgboost_dask_train_seconds", "xgboost_single_train_seconds", "s"),
    "taxi_peak_memory_vs_frame": ("taxi", "Taxi: peak worker memory over the whole run (load to evaluate) vs the"
                                  " cleaned frame", "<= 3", "peak_worker_memory_bytes", "cleaned_frame_bytes", "bytes"),
    "taxi_scale_default_vs_quick": ("taxi", "Taxi: load + cleanse rows/s at the default size vs the quick size",
                                    ">= 0.9", "default_size_rows_per_second", "quick_size_rows_per_second",
                                    "rows/s"),
    "images_bf16_vs_fp32": ("images", "Images: ResNet-50 bf16 vs fp32 images/s on this CPU (agreement >= 99% on"
                            " held-out textured images)", ">= 2.5", "bf16_images_per_second",
                            "fp32_images_per_second", "img/s"),
}


@dataclass
class Context:
    """What every figure group gets: the profile's sizes, repetitions, where data lives."""

    profile_name: str
    profile: dict[str, Any]
    repeats: int
    data_dir: Path
    echo: Callable[[str], None] = field(default=print)
    started_at: str = field(default_factory=lambda: _utc())
    load_average: list[float] = field(default_factory=lambda: _load_average())
    profiles: dict[str, dict[str, Any]] = field(default_factory=dict)  # all of them (the scale figure)
    data_root: Path | None = None  # other profiles' data: <data_root>/<profile> (default: beside data_dir)

    def data_dir_for(self, profile: str) -> Path:
        """Where the data of ``profile``'s sizes is kept (the scale figure reads two sizes)."""
        if profile == self.profile_name:
            return self.data_dir
        return (self.data_root or self.data_dir.parent) / profile


def make_figure(name: str) -> Figure:
    """An unmeasured figure with its goal and its two (empty) sides."""
    _, title, goal, numerator, denominator, unit = FIGURES[name]
    return Figure(name, title, Goal.parse(goal), Measurement(numerator, unit), Measurement(denominator, unit))


def load_profiles(path: Path = PROFILES_FILE) -> dict[str, dict[str, Any]]:
    return load_yaml(path)


def build_parser() -> argparse.ArgumentParser:
    profiles = list(load_profiles())
    parser = argparse.ArgumentParser(prog=prog("python -m bench"), description=__doc__.split("\n\n")[0])
    size = parser.add_mutually_exclusive_group()
    size.add_argument("--quick", action="store_const", const="quick", dest="profile",
                      help="the quick profile (about 2.5 minutes on 2 cores)")
    size.add_argument("--profile", choices=profiles, help="sizes (default: default)")
    parser.add_argument("--only", type=_names, metavar="NAME[,NAME...]",
                        help=f"measure only these figures: {', '.join(FIGURES)}")
    parser.add_argument("--repeats", type=int, metavar="N", help="repetitions per figure (default: the profile's)")
    parser.add_argument("--data-dir", metavar="PATH",
                        help="where generated data is kept (default: $DASK_TKG_CACHE/bench/<profile>)")
    parser.add_argument("--output", metavar="DIR", default=str(RESULTS_DIR),
                        help="results directory (default: docs/results)")
    parser.add_argument("--check", action="store_true", help="exit 1 when a goal is missed")
    parser.add_argument("--compare", nargs=2, metavar=("A.json", "B.json"),
                        help="print the figure-by-figure change from result file A to B (measures nothing)")
    parser.add_argument("--table", nargs="+", metavar="FILE.json",
                        help="print the README's results table for these result files (measures nothing)")
    parser.add_argument("-v", "--verbose", action="store_true")
    return parser


def _names(text: str) -> list[str]:
    names = [part.strip() for part in text.split(",") if part.strip()]
    unknown = [n for n in names if n not in FIGURES]
    if unknown or not names:
        shown = ", ".join(unknown) or repr(text)
        raise argparse.ArgumentTypeError(f"unknown figure(s) {shown}; known: {', '.join(FIGURES)}")
    return names


def measure(ctx: Context, names: list[str]) -> list[Figure]:
    """Measure the figures ``names``, group by group; a group that fails marks its
    figures with the error instead of stopping the others."""
    from bench import images, taxi

    groups = {"images": images.measure, "taxi": taxi.measure}
    measured: dict[str, Figure] = {}
    for group, function in groups.items():
        wanted = [n for n in names if FIGURES[n][0] == group]
        if not wanted:
            continue
        started = time.perf_counter()
        try:
            measured.update(function(ctx, wanted, make_figure))
        except Exception as exc:
            logger.exception("%s figures failed", group)
            for name in wanted:
                figure = measured.get(name) or make_figure(name)
                figure.error = f"{type(exc).__name__}: {exc}"
                measured[name] = figure
        ctx.echo(f"{group}: {time.perf_counter() - started:.0f} s")
    return [measured[name] for name in FIGURES if name in measured]


def run_facts(ctx: Context) -> dict[str, Any]:
    """What the figures were measured on (copied into every figure)."""
    from workloads.observe import environment
    from workloads.cluster import local

    versions = {}
    for package in ("torch", "torchvision", "xgboost", "dask", "distributed", "pyarrow", "pandas"):
        try:
            from importlib.metadata import version

            versions[package] = version(package)
        except Exception:
            versions[package] = None
    return {"profile": ctx.profile_name, "repeats": ctx.repeats, "started_at": ctx.started_at,
            "finished_at": _utc(), "host": platform.node(), "cpu": environment.cpu_model(),
            "cores": environment.usable_cores(), "tcmalloc": local.find_tcmalloc(),
            "load_average_at_start": ctx.load_average, "load_average_at_end": _load_average(),
            "python": platform.python_version(), "versions": versions}


def _utc() -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())


def _load_average() -> list[float]:
    """The kernel's 1, 5 and 15 minute load averages (how busy the shared machine was)."""
    return [round(v, 2) for v in os.getloadavg()]


def write(figures: list[Figure], facts: dict[str, Any], output: Path, prefix: str = "") -> Path:
    """``<output>/<prefix><UTC timestamp>.json``: the list of figures (never overwriting one)."""
    output.mkdir(parents=True, exist_ok=True)
    stamp = prefix + time.strftime("%Y%m%dT%H%M%SZ", time.gmtime())
    path = output / f"{stamp}.json"
    number = 1
    while path.exists():
        number += 1
        path = output / f"{stamp}-{number}.json"
    records = [{**figure.as_dict(), "run": facts} for figure in figures]
    partial = path.with_suffix(".json.partial")
    partial.write_text(json.dumps(records, indent=1) + "\n", encoding="utf-8")
    os.replace(partial, path)
    return path


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    if args.compare or args.table:
        from bench.compare import ResultFileError, compare, markdown_table

        try:
            print(compare(*args.compare) if args.compare else markdown_table(args.table))
        except ResultFileError as error:
            print(f"error: {error}", file=sys.stderr)
            return 2
        return 0
    setup_logging(args.verbose)
    profile_name = args.profile or "default"
    profiles = load_profiles()
    profile = profiles[profile_name]
    repeats = args.repeats or profile["repeats"]
    if repeats < 1:
        print("error: --repeats must be >= 1", file=sys.stderr)
        return 2
    from workloads.core.config import cache_dir

    data_dir = Path(args.data_dir) if args.data_dir else cache_dir() / "bench" / profile_name
    ctx = Context(profile_name, profile, repeats, data_dir.absolute(), echo=lambda text: print(text, flush=True),
                  profiles=profiles, data_root=(data_dir / "sizes").absolute() if args.data_dir else None)
    names = args.only or list(FIGURES)
    ctx.echo(f"bench: profile {profile_name}, {repeats} repetition(s), figures: {', '.join(names)}")
    figures = measure(ctx, names)
    path = write(figures, run_facts(ctx), Path(args.output))
    print("\n" + render(figures))
    print(f"\nwritten to {path}")
    if any(f.holds is None for f in figures):
        return 1
    return 1 if args.check and any(f.holds is False for f in figures) else 0
