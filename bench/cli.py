"""The benchmark suite's command (``dask-tkg bench``, or ``python -m bench`` where the
``dask-tkg`` command is not installed, as on the GPU machine): parses the arguments and
hands them to the module that does the work.

With no subcommand it measures (:mod:`bench.suite`); each subcommand is a module with
``add_arguments(parser)`` and ``run(args) -> exit code``: the suite's own below, and each
benchmark's from its bench package (``COMMANDS``, :func:`bench.registry.commands`). A
subcommand's module is imported only when it runs, so ``gpu`` starts with what the GPU
machine has.
"""
from __future__ import annotations

import argparse
import importlib
import sys
from types import ModuleType

from workloads.core.commands import prog

# name -> (module with add_arguments(parser) and run(args), one line of help); the benchmarks' own
# come from their bench packages (all_commands)
COMMANDS = {
    "compare": ("bench.compare", "the figure-by-figure change from result file A to B (measures nothing)"),
    "table": ("bench.table", "docs/benchmarks.md's results table for these result files (measures nothing)"),
    "wheels": ("bench.wheels", "collect the wheels bench/gpu.sh installs offline on a GPU machine"),
}


def all_commands() -> dict[str, tuple[str, str]]:
    """The suite's subcommands and every benchmark's own."""
    from bench import registry

    return {**COMMANDS, **registry.commands()}


def _description(module: ModuleType) -> str:
    return (module.__doc__ or "").split("\n\n")[0]


def _epilog() -> str:
    commands = all_commands()
    width = max(len(name) for name in commands)
    lines = [f"  {name.ljust(width)}  {help_text}" for name, (_, help_text) in commands.items()]
    return "subcommands (each with its own --help):\n" + "\n".join(lines)


def build_parser(base: str = "python -m bench") -> argparse.ArgumentParser:
    """The measuring command's parser; its help lists the subcommands too."""
    from bench import suite

    parser = argparse.ArgumentParser(prog=base, description=_description(suite), epilog=_epilog(),
                                     usage=f"%(prog)s [options]\n       %(prog)s {{{','.join(all_commands())}}} ...",
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    suite.add_arguments(parser)
    return parser


def command_parser(name: str, base: str = "python -m bench") -> tuple[argparse.ArgumentParser, ModuleType]:
    """Subcommand ``name``'s parser (prog ``<base> <name>``) and its module."""
    module = importlib.import_module(all_commands()[name][0])
    parser = argparse.ArgumentParser(prog=f"{base} {name}", description=_description(module))
    module.add_arguments(parser)
    return parser, module


def main(argv: list[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    base = prog("python -m bench")
    if argv and argv[0] in all_commands():
        parser, module = command_parser(argv[0], base)
        return int(module.run(parser.parse_args(argv[1:])) or 0)
    from bench import suite

    return suite.run(build_parser(base).parse_args(argv))
