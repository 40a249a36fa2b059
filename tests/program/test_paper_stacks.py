"""The paper's stacks declare exactly what they declared when recorded
(``tests/program/declared_stacks.py``): the current defaults move without touching them."""
from __future__ import annotations

import json

import pytest

from tests.program.declared_stacks import PAPER_STACKS, declared, record_path


def _differences(recorded: dict, now: dict) -> list[str]:
    """Readable differences: resources added or gone, and the first changed field of each."""
    key = lambda r: f"{r['type']}::{r['name']}"  # noqa: E731
    before = {key(r): r for r in recorded["resources"]}
    after = {key(r): r for r in now["resources"]}
    out = [f"new: {k}" for k in sorted(after.keys() - before.keys())]
    out += [f"gone: {k}" for k in sorted(before.keys() - after.keys())]
    for k in sorted(before.keys() & after.keys()):
        changed = [field for field in before[k] if before[k][field] != after[k].get(field)]
        if changed:
            out.append(f"changed: {k} ({', '.join(changed)})")
    if recorded["outputs"] != now["outputs"]:
        out.append("changed: outputs")
    return out


@pytest.mark.parametrize("stack", PAPER_STACKS)
def test_paper_stack_declares_what_it_declared(stack):
    recorded = json.loads(record_path(stack).read_text())
    now = declared(stack)
    assert _differences(recorded, now) == [], (
        f"stack {stack} no longer declares what the paper's stack declared; if that is meant,"
        " record it anew: python -m tests.program.declared_stacks --record")
    assert recorded == now
