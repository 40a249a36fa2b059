"""``dask-tkg team-outputs`` (workloads/cluster/team_outputs.py): the document a person runs with,
from the program's own outputs for the dev stack with ``users`` (run under Pulumi's mocks), as
``pulumi stack output --json`` shows them (each secret ``"[secret]"``): only what a person's run
reads, no secret, and refused for a stack without a team or from ``--show-secrets`` output."""
from __future__ import annotations

import io
import json

import pytest

from tests.program.graph import run_program
from workloads.cluster import team, team_outputs
from workloads.contract import ContractError

USERS = ["name=alice@vsphere.local,gpus=2", "name=bob@vsphere.local,gpus=1"]


@pytest.fixture(scope="module")
def stack_outputs() -> dict:
    """``pulumi stack output --json`` of the dev stack with users: secrets shown as "[secret]"."""
    graph = run_program("dev", config={"users": USERS})
    assert graph.error is None, graph.traceback
    return {k: "[secret]" if isinstance(v, dict) and "__secret__" in v else v for k, v in graph.outputs.items()}


def test_the_document_holds_what_a_persons_run_reads_and_no_secret(stack_outputs):
    assert {k for k, v in stack_outputs.items() if v == "[secret]"}, "the stack exports secrets: none may pass"
    doc = team_outputs.document(stack_outputs, "stack dev")
    assert set(doc) == set(team_outputs.KEPT) and set(doc) < set(stack_outputs)
    assert "[secret]" not in json.dumps(doc)
    people = team.parse(doc, "the document").people
    assert {p.namespace for p in people.values()} == {"dask-alice", "dask-bob"}


def test_the_command_writes_it_from_standard_input(stack_outputs, monkeypatch, capsys):
    monkeypatch.setattr("sys.stdin", io.StringIO(json.dumps(stack_outputs)))
    assert team_outputs.main([]) == 0
    assert json.loads(capsys.readouterr().out) == team_outputs.document(stack_outputs, "-")


def test_a_stack_without_a_team_is_refused_saying_so(stack_outputs, tmp_path, capsys):
    path = tmp_path / "outputs.json"
    path.write_text(json.dumps({k: v for k, v in stack_outputs.items() if k != "teamUsers"}))
    assert team_outputs.main([str(path)]) == 2
    assert f"error: {path} exports no 'teamUsers': the stack has no users" in capsys.readouterr().err


def test_show_secrets_output_is_refused(stack_outputs):
    """With --show-secrets a secret is its value; none of the kept outputs is one, but a PEM or a
    token pasted into one would be: refused, whatever is kept."""
    leaked = {**stack_outputs, "daskImage": "-----BEGIN PRIVATE KEY-----\nMII...\n"}
    with pytest.raises(ContractError, match=r"hold '-----BEGIN'.*without --show-secrets"):
        team_outputs.document(leaked, "stack dev")
