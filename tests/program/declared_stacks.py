"""What the paper's stacks declare, recorded: every resource the program registers under
Pulumi's mocks for ``Pulumi.reference.yaml`` and ``Pulumi.reference-dev.yaml`` (type, name,
parent, inputs, dependencies, provider) and their outputs. The preview's warnings are not
declarations: what they say of the paper's platform may grow as its support ends.

The paper's platform stays deployable exactly as published while the current defaults move
on; ``tests/program/test_paper_stacks.py`` compares a fresh run with the files in
``tests/program/declared/``. A change that is meant to reach the paper's stacks records them
anew, and the diff shows what it changed:

    .venv/bin/python -m tests.program.declared_stacks --record

A change meant to declare nothing new (a refactor) is held to every stack, the current ones too:
``--snapshot DIR`` writes each stack's declarations before it, ``--against DIR`` compares after.
"""
from __future__ import annotations

import argparse
import json
from pathlib import Path

from components.artifacts.store import cache_root
from tests.program.graph import REPO, run_program

PAPER_STACKS = ("reference", "reference-dev")
ALL_STACKS = (*PAPER_STACKS, "dev", "full")
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
    parser.add_argument("--snapshot", metavar="DIR", type=Path, help="write every stack's declarations to DIR")
    parser.add_argument("--against", metavar="DIR", type=Path, help="compare every stack with DIR's snapshot")
    args = parser.parse_args()
    if args.snapshot or args.against:
        return snapshot(args.snapshot) if args.snapshot else against(args.against)
    for stack in PAPER_STACKS:
        now = declared(stack)
        if args.record:
            record_path(stack).write_text(json.dumps(now, indent=1, sort_keys=True) + "\n")
            print(f"recorded {record_path(stack)} ({len(now['resources'])} resources)")
        else:
            same = json.loads(record_path(stack).read_text()) == now
            print(f"{stack}: {'unchanged' if same else 'CHANGED'}")
    return 0


def snapshot(folder: Path) -> int:
    folder.mkdir(parents=True, exist_ok=True)
    for stack in ALL_STACKS:
        now = declared(stack)
        (folder / f"{stack}.json").write_text(json.dumps(now, indent=1, sort_keys=True) + "\n")
        print(f"{stack}: {len(now['resources'])} resources, {len(now['outputs'])} outputs")
    return 0


def against(folder: Path) -> int:
    """1 when any stack's declarations differ from the snapshot, naming each resource that did."""
    changed = 0
    for stack in ALL_STACKS:
        before, now = json.loads((folder / f"{stack}.json").read_text()), declared(stack)
        keyed = [{(r["type"], r["name"]): r for r in d["resources"]} for d in (before, now)]
        differ = sorted(f"{t} {n}" for t, n in keyed[0].keys() | keyed[1].keys()
                        if keyed[0].get((t, n)) != keyed[1].get((t, n)))
        outputs = sorted(k for k in before["outputs"].keys() | now["outputs"].keys()
                         if before["outputs"].get(k) != now["outputs"].get(k))
        changed += bool(differ or outputs)
        print(f"{stack}: {'unchanged' if not (differ or outputs) else 'CHANGED'}"
              + "".join(f"\n  resource {d}" for d in differ) + "".join(f"\n  output {o}" for o in outputs))
    return 1 if changed else 0


if __name__ == "__main__":
    raise SystemExit(main())
