"""dask-tkg: the project's command, one subcommand per tool.

    dask-tkg run       run the paper's benchmarks on a Dask cluster (python -m workloads.run)
    dask-tkg report    render the results as tables and plots
    dask-tkg bench     the benchmark suite's ratios against baselines (python -m bench)
    dask-tkg prepare   download and lay out the datasets (python -m workloads.prepare)
    dask-tkg team-outputs  the document a person of the team runs with (from the stack's outputs)
    dask-tkg check     every settings problem of a stack at once, offline (no CLI, backend or secrets)
    dask-tkg dashboard the Dask dashboard of one's own cluster, through a port-forward, as a local URL
    dask-tkg usage     GPU-hours held and busy, per person, run and week, from run records (HTML and CSV)

``dask-tkg SUBCOMMAND --help`` shows each one's options.
"""
from __future__ import annotations

import argparse
import importlib
import os
import sys

from workloads.core.commands import PROG_ENV

SUBCOMMANDS = {  # name -> (module with main(argv), one line of help)
    "run": ("workloads.run", "run the paper's benchmarks on a Dask cluster and record the results"),
    "report": ("workloads.report.command", "render results.jsonl as tables and plots (HTML)"),
    "bench": ("bench.cli", "measure the benchmark suite's ratios against fair baselines"),
    "prepare": ("workloads.prepare", "download, verify and lay out the datasets (what the data Job runs)"),
    "team-outputs": ("workloads.cluster.team_outputs",
                     "write the non-secret document a person of the team runs with, from the stack's outputs"),
    "check": ("components.settings.check_stack",
              "check a stack's settings offline: every problem at once, no network, no secrets"),
    "dashboard": ("workloads.cluster.dashboard",
                  "open the Dask dashboard of your own cluster: a port-forward, printing the local URL"),
    "usage": ("workloads.report.usage",
              "GPU-hours held and busy per person, run and week, at a site rate, from run records (HTML, CSV)"),
}


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="dask-tkg", description=__doc__.split("\n\n")[0],
                                     formatter_class=argparse.RawDescriptionHelpFormatter,
                                     epilog="Run 'dask-tkg SUBCOMMAND --help' for a subcommand's options.")
    commands = parser.add_subparsers(dest="command", metavar="SUBCOMMAND", required=True)
    for name, (_, help_text) in SUBCOMMANDS.items():
        commands.add_parser(name, help=help_text, add_help=False)
    return parser


def main(argv: list[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    parser = build_parser()
    if not argv or argv[0] in ("-h", "--help"):
        parser.print_help()
        return 0 if argv else 2
    if argv[0] not in SUBCOMMANDS:
        parser.parse_args(argv[:1])  # exits with argparse's message naming the choices
    name, rest = argv[0], argv[1:]
    os.environ[PROG_ENV] = f"dask-tkg {name}"
    module = importlib.import_module(SUBCOMMANDS[name][0])
    return int(module.main(rest) or 0)


if __name__ == "__main__":
    sys.exit(main())
