"""The pack's rule on the vSAN file share (issue 37, item 1): no client open to every address
with READ_WRITE, no root for a range wider than a /16. The pack sees the share as the
program's dynamic resource ``pulumi-python:dynamic/vsphere:VsanFileShare`` whose input
``net_permissions`` is a list of ``{ips, permissions, allow_root}``."""
from __future__ import annotations

import pytest

from policy.rules import POLICIES, file_share_clients_closed
from policy.rules.common import VSAN_FILE_SHARE
from tests.policy.support import inputs, resource_args, violations
from tests.program.graph import Graph

CLOSED = {"ips": "192.168.106.0/24", "permissions": "READ_WRITE", "allow_root": True}


def share(graph: Graph):
    [resource] = graph.of_type(":VsanFileShare")
    assert resource.type == VSAN_FILE_SHARE
    return resource


def with_clients(graph: Graph, *clients: dict):
    resource = share(graph)
    props = inputs(resource)
    props["net_permissions"] = list(clients)
    return resource_args(resource, inputs=props)


@pytest.mark.parametrize("stack", ["reference", "reference_dev", "dev", "full"])
def test_the_stacks_shares_pass(stack: str, request: pytest.FixtureRequest) -> None:
    graph: Graph = request.getfixturevalue(stack)
    assert "*" not in {c["ips"] for c in share(graph).inputs["net_permissions"]}
    assert violations(file_share_clients_closed, resource_args(share(graph))) == []


@pytest.mark.parametrize("ips", ["*", "0.0.0.0/0", "0.0.0.0-255.255.255.255"])
def test_a_share_read_write_to_everyone_fails(reference: Graph, ips: str) -> None:
    [message] = violations(file_share_clients_closed, with_clients(
        reference, CLOSED, {"ips": ips, "permissions": "READ_WRITE", "allow_root": False}))
    assert message.startswith("VsanFileShare 'ml-share' (Pulumi resource 'vsphere-fileshare-share'):")
    assert f"net_permissions[1] ips={ips} is READ_WRITE to every address" in message
    assert "stack setting fileShareClients" in message


def test_root_for_a_wide_range_fails(reference: Graph) -> None:
    [message] = violations(file_share_clients_closed, with_clients(
        reference, {"ips": "10.0.0.0/8", "permissions": "READ_WRITE", "allow_root": True}))
    assert "net_permissions[0] ips=10.0.0.0/8 gives root to 16777216 addresses" in message


def test_read_only_and_squashed_wide_clients_pass(reference: Graph) -> None:
    assert violations(file_share_clients_closed, with_clients(
        reference, CLOSED, {"ips": "*", "permissions": "READ_ONLY", "allow_root": False},
        {"ips": "10.0.0.0/8", "permissions": "READ_WRITE", "allow_root": False})) == []


@pytest.mark.parametrize("clients, words", [
    ([{"ips": "0.0.0.0/1", "permissions": "READ_WRITE", "allow_root": False},
      {"ips": "128.0.0.0/1", "permissions": "READ_WRITE", "allow_root": False}], "together are READ_WRITE to every"),
    ([{"ips": "10.20.0.0/16", "permissions": "READ_WRITE", "allow_root": True},
      {"ips": "10.21.0.0/16", "permissions": "READ_WRITE", "allow_root": True}], "together give root to 131072"),
])
def test_entries_that_together_open_the_share_fail(reference: Graph, clients: list, words: str) -> None:
    [message] = violations(file_share_clients_closed, with_clients(reference, *clients))
    assert words in message, message


def test_the_rule_is_in_the_pack() -> None:
    assert file_share_clients_closed in POLICIES
