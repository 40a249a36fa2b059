"""Measure each workload against its physical limit, side by side in one run, and write
``<output>/<UTC stamp>.json`` (a list of figures).

Exit codes: 0 every figure is measured (goals held or not: a missed goal is reported,
not an error); 1 a figure cannot be measured, or, with ``--check``, a goal is missed;
2 bad arguments.
"""
from __future__ import annotations

import argparse
import logging
import platform
import sys
import time
from pathlib import Path
from typing import Any

from bench import registry, results
from bench.figures import Figure, render
from bench.registry import Context

logger = logging.getLogger("bench")

VERSIONS = ("dask", "distributed")  # and each benchmark's (its bench package's VERSIONS)


def add_arguments(parser: argparse.ArgumentParser) -> None:
    profiles = list(registry.load_profiles())
    size = parser.add_mutually_exclusive_group()
    size.add_argument("--quick", action="store_const", const="quick", dest="profile",
                      help="the quick profile (the smallest sizes whose ratios still mean something)")
    size.add_argument("--profile", choices=profiles, help="sizes (default: default)")
    parser.add_argument("--only", type=_names, metavar="NAME[,NAME...]",
                        help=f"measure only these figures: {', '.join(registry.figures())}")
    parser.add_argument("--repeats", type=int, metavar="N", help="repetitions per figure (default: the profile's)")
    parser.add_argument("--data-dir", metavar="PATH",
                        help="where generated data is kept (default: bench/<profile> in the project's cache,"
                             " Dask config tkg.cache, environment DASK_TKG__CACHE)")
    parser.add_argument("--output", metavar="DIR", default=str(results.DEFAULT_OUTPUT),
                        help=f"results directory (default: {results.DEFAULT_OUTPUT} in the current directory)")
    parser.add_argument("--check", action="store_true", help="exit 1 when a goal is missed")
    parser.add_argument("-v", "--verbose", action="store_true")


def _names(text: str) -> list[str]:
    names = [part.strip() for part in text.split(",") if part.strip()]
    known = registry.figures()
    unknown = [n for n in names if n not in known]
    if unknown or not names:
        shown = ", ".join(unknown) or repr(text)
        raise argparse.ArgumentTypeError(f"unknown figure(s) {shown}; known: {', '.join(known)}")
    return names


def measure(ctx: Context, names: list[str]) -> list[Figure]:
    """Measure the figures ``names``, group by group; a group that fails marks its
    figures with the error instead of stopping the others."""
    known = registry.figures()
    measured: dict[str, Figure] = {}
    for group, package in registry.groups().items():
        wanted = [n for n in names if known[n].group == group]
        if not wanted:
            continue
        started = time.perf_counter()
        try:
            measured.update(registry.measure(package, ctx, wanted))
        except Exception as exc:
            logger.exception("%s figures failed", group)
            for name in wanted:
                figure = measured.get(name) or registry.make_figure(name)
                figure.error = f"{type(exc).__name__}: {exc}"
                measured[name] = figure
        ctx.echo(f"{group}: {time.perf_counter() - started:.0f} s")
    return [measured[name] for name in known if name in measured]


def run_facts(ctx: Context) -> dict[str, Any]:
    """What the figures are measured on (copied into every figure)."""
    from workloads.cluster import local
    from workloads.observe import environment

    return {"profile": ctx.profile_name, "repeats": ctx.repeats, "started_at": ctx.started_at,
            "finished_at": results.utc_now(), "host": platform.node(), "cpu": environment.cpu_model(),
            "cores": environment.usable_cores(), "tcmalloc": local.find_tcmalloc(),
            "load_average_at_start": ctx.load_average, "load_average_at_end": registry.load_average(),
            "python": platform.python_version(), "versions": results.package_versions(versions())}


def versions() -> tuple[str, ...]:
    """The packages whose versions the figures record: the suite's and each benchmark's."""
    extra = [name for package in registry.groups().values() for name in getattr(package, "VERSIONS", ())]
    return tuple(dict.fromkeys([*extra, *VERSIONS]))


def context(args: argparse.Namespace) -> Context | None:
    """The run's context from the parsed options (None: ``--repeats`` below 1, said why)."""
    profile_name = args.profile or "default"
    profiles = registry.load_profiles()
    profile = profiles[profile_name]
    repeats = args.repeats or profile["repeats"]
    if repeats < 1:
        print("error: --repeats must be >= 1", file=sys.stderr)
        return None
    data_dir = Path(args.data_dir) if args.data_dir else registry.default_data_dir(profile_name)
    return Context(profile_name, profile, repeats, data_dir.absolute(), echo=lambda text: print(text, flush=True),
                   profiles=profiles, data_root=(data_dir / "sizes").absolute() if args.data_dir else None)


def run(args: argparse.Namespace) -> int:
    from workloads.core.commands import setup_logging

    setup_logging(args.verbose)
    ctx = context(args)
    if ctx is None:
        return 2
    names = args.only or list(registry.figures())
    ctx.echo(f"bench: profile {ctx.profile_name}, {ctx.repeats} repetition(s), figures: {', '.join(names)}")
    figures = measure(ctx, names)
    path = results.write(figures, run_facts(ctx), Path(args.output))
    print("\n" + render(figures))
    print(f"\nwritten to {path}")
    if any(f.holds is None for f in figures):
        return 1
    return 1 if args.check and any(f.holds is False for f in figures) else 0
