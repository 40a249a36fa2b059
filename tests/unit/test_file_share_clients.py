"""The vSAN file share's clients (issue 37, item 1): only the workload cluster's node network
mounts the share, never every address; root is kept only where the NFS provisioner needs it.

fileShareClients is always required: the Supervisor's egress CIDRs, once the default, are the
SNAT addresses of every vSphere Namespace's traffic, other teams' included. Preview refuses a client
open to every address with READ_WRITE, root on a wide range, and entries that do either together
(docs/reliability.md, V1-V4, SV42-SV45)."""
from __future__ import annotations

import pytest

from components.settings import DictSource, SettingsError, load
from components.settings.model import NetPermission
from components.settings.schema import project
from tests.unit.support import CREATE, PROVIDER
from tests.unit.support import ONE_HOST_SITE as SITE

NODE_NETWORK = "ips=10.20.30.0/24,permissions=READ_WRITE,allowRoot=true"
CREATE_MODE = {"supervisorMode": "create", "supervisorCreateSpec": [*CREATE, "searchDomains=corp.example.com"]}


def load_with(**overrides):
    values = {**SITE, "fileShareClients": [NODE_NETWORK], **overrides}
    return load(DictSource({k: v for k, v in values.items() if v is not None}, PROVIDER))


def refused(**overrides) -> tuple[list[str], str]:
    with pytest.raises(SettingsError) as info:
        load_with(**overrides)
    return [str(p) for p in info.value.problems], str(info.value)


def test_the_declared_default_opens_the_share_to_nobody():
    _, decls = project()
    assert decls["fileShareClients"].default == []


def test_without_a_node_network_the_clients_are_required():
    problems, message = refused(fileShareClients=None)
    [problem] = [p for p in problems if p.startswith("fileShareClients:")]
    assert "dask-tkg:fileShareClients" in message
    assert problem.startswith("fileShareClients: is required with fileShareMode=vsan")
    # what to put: the workload network's CIDR, read-write, without root; with NSX the namespace's SNAT address
    assert "ips=<the workload network's CIDR>,permissions=READ_WRITE,allowRoot=false" in problem
    assert "the vSphere Namespace's SNAT address with NSX" in problem


def test_supervisor_create_mode_does_not_open_the_share_to_its_whole_egress_range():
    """NSX gives every namespace's traffic an address of the egress CIDRs: they are not the node network."""
    problems, _ = refused(fileShareClients=None, **CREATE_MODE)
    [problem] = [p for p in problems if p.startswith("fileShareClients:")]
    assert "never the whole range" in problem


def test_given_clients_are_the_clients():
    s = load_with(fileShareClients=["ips=10.20.30.0/24,permissions=READ_WRITE"], **CREATE_MODE)
    assert s.file_share.clients == (NetPermission("10.20.30.0/24", "READ_WRITE", False),)


@pytest.mark.parametrize("clients, words", [
    (["ips=0.0.0.0/1,permissions=READ_WRITE", "ips=128.0.0.0/1,permissions=READ_WRITE"],
     "together open the share read-write to every address"),
    (["ips=0.0.0.0-127.255.255.255,permissions=READ_WRITE", "ips=128.0.0.0/1,permissions=READ_WRITE",
      "ips=10.0.0.1,permissions=READ_WRITE"], "together open the share read-write to every address"),
    (["ips=10.20.0.0/16,permissions=READ_WRITE,allowRoot=true",
      "ips=10.21.0.0/16,permissions=READ_WRITE,allowRoot=true"],
     "together give root on the share to 131072 addresses"),
])
def test_entries_that_together_open_the_share_fail_at_preview(clients, words):
    problems, message = refused(fileShareClients=clients)
    assert any(p.startswith("fileShareClients:") and words in p for p in problems), problems
    assert "dask-tkg:fileShareClients:" in message


def test_overlapping_entries_are_counted_once():
    s = load_with(fileShareClients=["ips=10.20.0.0/16,permissions=READ_WRITE,allowRoot=true",
                                    "ips=10.20.30.0/24,permissions=READ_WRITE,allowRoot=true"])
    assert len(s.file_share.clients) == 2


def test_an_existing_export_needs_no_clients():
    s = load_with(fileShareClients=None, fileShareMode="existing", nfsServer="nfs.example", nfsPath="/export")
    assert s.file_share.clients == ()


@pytest.mark.parametrize("client, words", [
    ("ips=*,permissions=READ_WRITE", "opens the share read-write to every address"),
    ("ips=0.0.0.0/0,permissions=READ_WRITE", "opens the share read-write to every address"),
    ("ips=0.0.0.0-255.255.255.255,permissions=READ_WRITE", "opens the share read-write to every address"),
    ("ips=*,permissions=READ_ONLY,allowRoot=true", "gives root on the share to 4294967296 addresses"),
    ("ips=10.0.0.0/8,permissions=READ_WRITE,allowRoot=true", "gives root on the share to 16777216 addresses"),
    ("ips=10.0.0.0-10.3.255.255,permissions=READ_WRITE,allowRoot=true",
     "gives root on the share to 262144 addresses"),
    ("ips=10.20.30.0/33,permissions=READ_WRITE", "is not an IPv4 address, CIDR, range a-b or *"),
])
def test_wide_clients_fail_at_preview_naming_the_entry(client, words):
    problems, message = refused(fileShareClients=[NODE_NETWORK, client])
    assert any(p.startswith("fileShareClients[1]:") and words in p for p in problems), problems
    assert "dask-tkg:fileShareClients[1]" in message


@pytest.mark.parametrize("client", [
    "ips=10.20.0.0/16,permissions=READ_WRITE,allowRoot=true",  # root up to a /16
    "ips=10.0.0.0/8,permissions=READ_WRITE",  # wide, but squashed
    "ips=*,permissions=READ_ONLY",  # read-only, squashed
    "ips=192.168.1.10,permissions=READ_WRITE,allowRoot=true",
    "ips=192.168.1.10-192.168.1.40,permissions=NO_ACCESS",
])
def test_node_network_sized_clients_load(client):
    s = load_with(fileShareClients=[client])
    assert len(s.file_share.clients) == 1
