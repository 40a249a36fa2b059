"""What the paper's stacks declare, recorded: every resource the program registers under
Pulumi's mocks for ``Pulumi.reference.yaml`` and ``Pulumi.reference-dev.yaml`` (type, name,
parent, inputs, dependencies, provider) and their outputs. The preview's warnings are not
declarations: what they say of the paper's platform may grow as its support ends.

The paper's platform stays deployable exactly as published while the current defaults move
on; ``tests/program/test_paper_stacks.py`` compares a fresh run with the files in
``tests/program/declared/``. A change that is meant to reach the paper's stacks records them
anew, and the diff shows what it changed:

    .venv/bin/python -m tests.program.declared_stacks --record
"""
from __future__ import annotations

import argparse
import json
from pathlib import Path

from components.artifacts.store import cache_root
from tests.program.graph import REPO, run_program

PAPER_STACKS = ("reference", "reference-dev")
RECORDS = Path(__file__).with_name("declared")


def declared(stack: str) -> dict:
    """The stack's declarations in a stable order (a dict that JSON round-trips)."""
    graph = run_program(stack)
    if graph.error is not None:
        raise RuntimeError(f"the program failed for stack {stack}: {graph.traceback}")
    resources = [{"type": r.type, "name": r.name, "parent": r.parent, "inputs": r.raw["inputs"],
                  "dependencies": sorted(r.raw["dependencies"]), "provider": r.raw.get("provider")}
                 for r in graph.resources]
    resources.sort(key=lambda r: (r["type"], r["name"]))
    text = json.dumps({"resources": resources, "outputs": graph.raw["outputs"]})
    # the checkout's own path (the post-renderer's) and the cache's (the verified chart archives)
    return json.loads(text.replace(str(REPO), "$REPO").replace(str(cache_root()), "$CACHE"))


def record_path(stack: str) -> Path:
    return RECORDS / f"{stack}.json"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--record", action="store_true", help="write tests/program/declared/<stack>.json")
    args = parser.parse_args()
    for stack in PAPER_STACKS:
        now = declared(stack)
        if args.record:
            record_path(stack).write_text(json.dumps(now, indent=1, sort_keys=True) + "\n")
            print(f"recorded {record_path(stack)} ({len(now['resources'])} resources)")
        else:
            same = json.loads(record_path(stack).read_text()) == now
            print(f"{stack}: {'unchanged' if same else 'CHANGED'}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
