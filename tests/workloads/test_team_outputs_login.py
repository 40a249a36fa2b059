"""The team's document says where a person logs in (``kubectl vsphere login --server ...
--tanzu-kubernetes-cluster-namespace ... --tanzu-kubernetes-cluster-name ...``): the vSphere
Namespace, the cluster's name and the Supervisor's address, from the dev stack's own outputs (run
under Pulumi's mocks); outputs of a stack that has none of them (an older version's) say so.
Before, the document held none of the three, so a person had to ask where to log in
(docs/dask.md, A person's day)."""
from __future__ import annotations

import io
import json

import pytest

from tests.program.graph import run_program
from workloads.cluster import team_outputs

USERS = ["name=alice@vsphere.local,gpus=2"]


@pytest.fixture(scope="module")
def stack_outputs() -> dict:
    """``pulumi stack output --json`` of the dev stack with a user: secrets shown as "[secret]"."""
    graph = run_program("dev", config={"users": USERS})
    assert graph.error is None, graph.traceback
    return {k: "[secret]" if isinstance(v, dict) and "__secret__" in v else v for k, v in graph.outputs.items()}


def test_the_document_names_the_logins_server_namespace_and_cluster(stack_outputs, monkeypatch, capsys):
    monkeypatch.setattr("sys.stdin", io.StringIO(json.dumps(stack_outputs)))
    assert team_outputs.main([]) == 0
    captured = capsys.readouterr()
    doc = json.loads(captured.out)
    assert doc["supervisorServer"] == stack_outputs["supervisorServer"] == "10.20.0.2"  # Pulumi.dev.yaml's
    assert doc["supervisorNamespace"] == stack_outputs["supervisorNamespace"] and doc["supervisorNamespace"]
    assert doc["clusterName"] == stack_outputs["clusterName"] and doc["clusterName"]
    assert captured.err == ""


def test_a_document_without_the_server_says_so(stack_outputs, monkeypatch, capsys):
    older = {k: v for k, v in stack_outputs.items() if k != "supervisorServer"}
    monkeypatch.setattr("sys.stdin", io.StringIO(json.dumps(older)))
    assert team_outputs.main([]) == 0
    captured = capsys.readouterr()
    assert "supervisorServer" not in json.loads(captured.out)
    assert captured.err == ("note: the outputs hold no supervisorServer, so the document does not say where a person"
                            " logs in: a stack last updated by an older version has none (pulumi up, then write it"
                            " again)\n")
