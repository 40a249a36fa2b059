"""``python -m workloads.run``: run the paper's benchmarks on a Dask cluster and append one
JSON line per run to ``<output>/results.jsonl``.

Where: ``--stack NAME`` | ``--outputs FILE`` | ``--scheduler-address ADDR`` | ``--local``
(default: ``DASK_SCHEDULER_ADDRESS`` when set, else a local cluster); a person of the stack's
``users`` adds ``--own-cluster`` to run on a cluster of their own (``workloads/cluster/own_run.py``). What:
``--benchmark images|taxi|all``, ``--profile smoke|small|reference``, ``--workers 1,2``
(a sweep), ``--device cpu|cuda|auto``, ``--data-dir`` (else the stack's dataset mount, or
data generated with a fixed seed for the local cluster).

Faults: a run survives up to ``--max-lost-workers`` (default 1) workers lost while it runs
(Dask recomputes their work; the taxi benchmark retries its training); one more fails it,
naming the lost workers. A lost scheduler fails the run and ends the sweep. SIGINT
(Ctrl-C) and SIGTERM stop the run the same way: its record says ``interrupted``, with the
phases measured so far. ``--resume`` skips the configurations ``results.jsonl`` already
holds as succeeded (:func:`workloads.runs.results.config_key` says what "the same" means).

Exit codes: 0 all runs succeeded; 1 a run failed; 2 the setup is wrong (bad outputs,
unreachable scheduler, too few workers, failed preflight); 130 interrupted (SIGINT);
143 terminated (SIGTERM).
"""
from __future__ import annotations

import signal
import sys


def _interrupted_while_starting(signum: int, frame: object) -> None:
    """Ctrl-C while the modules below import (half a second): nothing has run, so nothing is
    recorded; one line and the interrupted exit code, as later in the run, not a traceback."""
    print("interrupted (SIGINT) while starting: nothing ran, nothing was recorded", file=sys.stderr, flush=True)
    raise SystemExit(130)


# Only when started as the command, and only where Ctrl-C would raise (not when SIGINT is ignored)
_GUARDED = __name__ == "__main__" and signal.getsignal(signal.SIGINT) is signal.default_int_handler
if _GUARDED:
    signal.signal(signal.SIGINT, _interrupted_while_starting)

import argparse
import logging
from pathlib import Path
from types import ModuleType

from workloads.cluster import local, own_run
from workloads.cluster.stopping import stop_reason
from workloads.contract import ContractError
from workloads.core.commands import load_yaml, prog, setup_logging
from workloads.core.errors import WorkloadError
from workloads.runs import benchmarks, results, summary
from workloads.runs.sweep import EXIT_INTERRUPTED, EXIT_SETUP, PROFILES_FILE, Runner

if _GUARDED:  # imported: from here the run's own handling says what was interrupted
    signal.signal(signal.SIGINT, signal.default_int_handler)

logger = logging.getLogger("workloads.run")

DEFAULT_MAX_LOST_WORKERS = 1  # one loss is Dask's to absorb; a second says something is wrong


def import_benchmarks() -> tuple[dict[str, ModuleType], dict[str, str]]:
    """Every registered benchmark that imports, and why the others do not."""
    modules, unavailable = {}, {}
    for name in benchmarks.BENCHMARKS:
        try:
            modules[name] = benchmarks.load(name)
        except ImportError as exc:
            unavailable[name] = f"{type(exc).__name__}: {exc}"
    return modules, unavailable


def worker_counts(text: str) -> list[int]:
    try:
        counts = [int(part) for part in text.split(",") if part.strip()]
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected worker counts like 1,2,4, got {text!r}") from None
    if not counts or min(counts) < 1:
        raise argparse.ArgumentTypeError(f"worker counts must be >= 1, got {text!r}")
    return counts


def adaptive_bounds(text: str) -> tuple[int, int]:
    from workloads.cluster import scaling

    try:
        return scaling.parse_adaptive(text)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


def lost_workers_limit(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        value = -1
    if value < 0:
        raise argparse.ArgumentTypeError(f"expected a worker count >= 0, got {text!r}")
    return value


def build_parser(modules: dict[str, ModuleType], unavailable: dict[str, str]) -> argparse.ArgumentParser:
    profiles = list(load_yaml(PROFILES_FILE))
    folders = ", ".join(f"{d.directory}/..." for d in map(benchmarks.data, modules.values()) if d) or "its data"
    parser = argparse.ArgumentParser(
        prog=prog("python -m workloads.run"), description=__doc__.split("\n\n")[0],
        epilog="".join(f"benchmark {n!r} is not available here: {why}\n" for n, why in unavailable.items()) or None)
    where = parser.add_argument_group("where (one of; default: DASK_SCHEDULER_ADDRESS if set, else --local)")
    where.add_argument("--stack", metavar="NAME", help="read the outputs of this Pulumi stack (needs the pulumi CLI)")
    where.add_argument("--outputs", metavar="FILE", help="the JSON of `pulumi stack output --json --show-secrets`")
    where.add_argument("--scheduler-address", metavar="ADDR", help="tcp://host:8786")
    where.add_argument("--local", action="store_true", help="start a local cluster sized to this machine")
    what = parser.add_argument_group("what")
    what.add_argument("--benchmark", choices=[*benchmarks.BENCHMARKS, "all"], default="all")
    what.add_argument("--profile", choices=profiles, default="smoke", help="sizes (default: smoke)")
    what.add_argument("--data-dir", metavar="PATH",
                      help=f"dataset root as the workers see it ({folders}); default: the stack's dataset mount,"
                           " or generated data for the local cluster")
    what.add_argument("--device", choices=("cpu", "cuda", "auto"), default="auto",
                      help="auto: cuda when every worker has it (default)")
    what.add_argument("--workers", type=worker_counts, metavar="N[,N...]",
                      help="worker counts to sweep (default: the profile's)")
    what.add_argument("--output", metavar="DIR", default="results", help="results directory (default: results/)")
    what.add_argument("--wait-timeout", type=float, metavar="SECONDS", help="wait for workers (default: profile's)")
    what.add_argument("--performance-report", action=argparse.BooleanOptionalAction, default=True,
                      help="write distributed's HTML performance report of each run beside the results (default)")
    what.add_argument("--report", action=argparse.BooleanOptionalAction, default=True,
                      help="render <output>/report.html at the end (default)")
    what.add_argument("--allocator", choices=local.ALLOCATORS, default="auto",
                      help="local cluster: tcmalloc when installed (auto), or glibc")
    what.add_argument("--dashboard-address", default="127.0.0.1:8787",
                      help="local cluster's dashboard (default: this machine only; :0 for any free port)")
    what.add_argument("--max-lost-workers", type=lost_workers_limit, default=DEFAULT_MAX_LOST_WORKERS,
                      metavar="N", help="fail a run that loses more than N workers while it runs"
                                        f" (default: {DEFAULT_MAX_LOST_WORKERS})")
    what.add_argument("--adaptive", type=adaptive_bounds, metavar="MIN,MAX",
                      help="operator backend: let the DaskAutoscaler scale between MIN and MAX workers during"
                           " each run, recording the worker count over time")
    what.add_argument("--resume", action="store_true",
                      help="skip the configurations results.jsonl already records as succeeded (same"
                           " benchmark, profile, device, worker count and benchmark options)")
    what.add_argument("--require-all-files", action=argparse.BooleanOptionalAction, default=None,
                      help="fail a run that skipped an input file (a taxi file that gave no rows, an image that"
                           " did not decode) instead of going on without it (default: profile, else off)")
    what.add_argument("-v", "--verbose", action="store_true")
    own_run.add_arguments(parser)
    for module in dict.fromkeys(modules.values()):  # a module registered twice adds its options once
        module.add_arguments(parser)
    return parser


def main(argv: list[str] | None = None) -> int:
    try:
        return start(argv)
    except KeyboardInterrupt:  # Ctrl-C before the runner's handlers are there (the benchmarks' imports)
        print("interrupted (SIGINT)", file=sys.stderr)
        return EXIT_INTERRUPTED


def start(argv: list[str] | None) -> int:
    modules, unavailable = import_benchmarks()
    parser = build_parser(modules, unavailable)
    args = parser.parse_args(argv)
    problem = own_run.option_problem(args)
    if problem:
        parser.error(problem)
    setup_logging(args.verbose)
    names = list(benchmarks.BENCHMARKS) if args.benchmark == "all" else [args.benchmark]
    missing = [n for n in names if n not in modules]
    if missing:
        print("error: " + "; ".join(f"benchmark {n!r} is not available: {unavailable[n]}" for n in missing),
              file=sys.stderr)
        return EXIT_SETUP

    runner = Runner(args, {n: modules[n] for n in names})
    code = EXIT_SETUP
    try:
        with runner.stopper.handlers(), own_run.around(args, runner):
            code = runner.execute()
    except (ContractError, WorkloadError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        code = EXIT_SETUP
    except KeyboardInterrupt as exc:
        print(stop_reason(exc), file=sys.stderr)
        code = getattr(exc, "exit_code", EXIT_INTERRUPTED)
    finally:
        if runner.records:
            headlines = {n: getattr(m, "HEADLINE_METRICS", None) for n, m in runner.modules.items()}
            print("\n" + summary.render(runner.records, headlines))
            print(f"\n{len(runner.records)} record(s) appended to {Path(args.output) / results.RESULTS_FILE}")
            if args.report:
                print(render_report(args.output))
    return code


def render_report(output: str) -> str:
    """Render the report of everything in ``output``; a report problem never changes the
    exit code (the records are already safe on disk)."""
    try:
        from workloads.report import render

        return f"report: {render(output)}"
    except Exception as exc:
        logger.debug("report failed", exc_info=True)
        return f"report: not rendered ({type(exc).__name__}: {exc}); try dask-tkg report {output}"


if __name__ == "__main__":
    sys.exit(main())
