#!/usr/bin/env python3
"""List the longest functions and methods of the given folders (lines from ``def`` to the
last line of the body, decorators excluded), longest first.

Usage: scripts/longest_functions.py [--top N] [--limit LINES] PATH...
  --limit   exit 1 if any function is longer (the project keeps workloads/ and bench/ at 80)
"""
from __future__ import annotations

import argparse
import ast
import sys
from pathlib import Path


def functions(path: Path) -> list[tuple[int, str, int]]:
    """(length, qualified name, first line) of every function in one file."""
    tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    found = []

    def visit(node: ast.AST, prefix: str) -> None:
        for child in ast.iter_child_nodes(node):
            if isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef)):
                name = f"{prefix}{child.name}"
                found.append((child.end_lineno - child.lineno + 1, name, child.lineno))
                visit(child, f"{name}.")
            elif isinstance(child, ast.ClassDef):
                visit(child, f"{prefix}{child.name}.")

    visit(tree, "")
    return found


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("paths", nargs="+", type=Path)
    parser.add_argument("--top", type=int, default=15)
    parser.add_argument("--limit", type=int)
    args = parser.parse_args(argv)
    rows = []
    for root in args.paths:
        for path in sorted(root.rglob("*.py") if root.is_dir() else [root]):
            rows += [(n, f"{path}:{line}", name) for n, name, line in functions(path)]
    rows.sort(reverse=True)
    for length, where, name in rows[:args.top]:
        print(f"{length:5d}  {name}  ({where})")
    over = [r for r in rows if args.limit and r[0] > args.limit]
    if over:
        print(f"{len(over)} function(s) longer than {args.limit} lines", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
