"""``dask-tkg check --stack NAME``: every settings problem of a stack in one round, offline.

``pulumi preview`` is where the settings are checked, but it needs the Pulumi CLI, a backend,
the stack's secrets and a reachable vCenter and Supervisor. This command reads only
``Pulumi.yaml`` and ``Pulumi.<NAME>.yaml`` and runs the checks preview runs (``build.load``,
the same functions), so a person finds every mistake before any of those is set up:

    dask-tkg check --stack dev

Each problem is one line naming the key, as the stack file spells it; a clean stack gets one
line saying so, after the warnings preview would give. A secret the stack file holds
encrypted counts as set and is never decrypted; vCenter and the Supervisor are not contacted,
so what only they know (the hosts' vGPU profiles, the Supervisor's releases, the account's
privileges) is left to preview. Exit status: 0 clean, 1 problems, 2 a command line or stack
name that is wrong.
"""
from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from components.settings import SettingsError, load
from components.settings.errors import Problem
from components.settings.model import Settings
from components.settings.notices import preview_notices
from components.settings.schema import project
from components.settings.stack_file import (
    REPO,
    StackFileError,
    is_secret,
    stack_config,
    stack_path,
    stack_source,
    undeclared,
)

PROG_ENV = "DASK_TKG_CLI_PROG"  # the name the project's command gives a subcommand (dask-tkg check)
NOT_CHECKED = ("Not checked offline: vCenter and the Supervisor (not contacted) and the secrets' values (not"
               " decrypted); pulumi preview checks them.")


def parse_args(argv: Sequence[str]) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        prog=os.environ.get(PROG_ENV) or "python -m components.settings.check_stack",
        description="Check a stack's settings offline: every problem at once, no network, no secrets.")
    parser.add_argument("--stack", required=True, help="the stack's name: reads Pulumi.<stack>.yaml")
    parser.add_argument("--dir", type=Path, default=REPO,
                        help="the folder of the stack files (default: this checkout)")
    return parser.parse_args(list(argv))


def report(name: str, path: Path) -> int:
    """Print the stack's problems (the keys the CLI refuses, then preview's), or the warnings
    preview would give and one line saying the stack is clean."""
    config = stack_config(path)
    problems = undeclared(config)
    try:
        settings = load(stack_source(config))
    except SettingsError as exc:
        problems += exc.problems
    else:
        if not problems:
            return _clean(name, path, config, settings)
    return _refused(name, path, problems)


def _refused(name: str, path: Path, problems: list[Problem]) -> int:
    project_name = project()[0]
    for problem in problems:
        print(f"stack {name}: {problem.config_key(project_name)}: {problem.message}")
    print(f"stack {name}: {len(problems)} problem(s) in {path.name}; pulumi preview refuses it the same way."
          f" {NOT_CHECKED}")
    return 1


def _clean(name: str, path: Path, config: dict[str, Any], settings: Settings) -> int:
    for notice in preview_notices(settings):
        print(f"stack {name}: warning: {notice}")
    secrets = sum(is_secret(v) for v in config.values())
    print(f"stack {name}: OK: no problem in {path.name} ({len(config)} key(s) set, {secrets} of them secret and not"
          f" decrypted; every other setting Pulumi.yaml's default). {NOT_CHECKED}")
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    args = parse_args(sys.argv[1:] if argv is None else argv)
    try:
        path = stack_path(args.dir, args.stack)
    except StackFileError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    try:
        return report(args.stack, path)
    except StackFileError as exc:
        print(f"stack {args.stack}: {exc}", file=sys.stderr)
        return 1


if __name__ == "__main__":
    raise SystemExit(main())
