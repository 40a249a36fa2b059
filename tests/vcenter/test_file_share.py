"""The vSAN file share provider: real vcsim for login and inventory, a local FAKE of
``/vsanHealth`` for the file service (vcsim serves none; see ``fakes.py``).

The fake's failure modes are the real API's (vSAN Management API 7.0):
``vim.vsan.FileShareConfig`` (domainName "required for file share creation"; the
share-name rule), ``vim.vsan.VsanFileServiceSystem`` (create, reconfigure and remove
return a ``vim.Task``, declared faults InvalidArgument/InvalidState), and a task that
fails reports ``TaskInfo.state = error`` with a ``LocalizedMethodFault``."""

from __future__ import annotations

import logging
import time
import xml.etree.ElementTree as ET

import pytest
from pulumi.output import Unknown

from components.vsphere.providers.file_share import (
    VsanFileShareProvider,
    access_point,
    format_quota,
    parse_quota,
    validate_permissions,
)
from components.vsphere.providers.session import VCenterError, vcenter

from .fakes import FakeVsanFileService

pytestmark = pytest.mark.vcsim

POLICY = "3b7ba3e4-6c37-4a47-b0a4-5c2ab01f3ba2"
EVERYONE = [{"ips": "*", "permissions": "READ_WRITE", "allow_root": True}]


@pytest.fixture(scope="module")
def cluster_id(vcsim):
    from pyVmomi import vim

    with vcenter(vcsim.connection()) as si:
        view = si.content.viewManager.CreateContainerView(si.content.rootFolder, [vim.ClusterComputeResource], True)
        [cluster] = [c for c in view.view if c.name == "DC0_C0"]
        return cluster._moId


@pytest.fixture
def vsan(vcsim):
    with FakeVsanFileService(vcsim.cert_file, vcsim.key_file, vcsim_port=vcsim.port) as fake:
        yield fake


@pytest.fixture
def provider():
    return VsanFileShareProvider(timeout_s=5, poll_s=0.01)


@pytest.fixture(autouse=True)
def no_password_in_logs(vcsim, caplog):
    caplog.set_level(logging.DEBUG)
    yield
    assert vcsim.password not in caplog.text


def props(vcsim, vsan, cluster, **overrides) -> dict:
    values = {
        "share_name": "ml-share",
        "cluster": cluster,
        "quota_gib": 2048,
        "policy_id": POLICY,
        "net_permissions": EVERYONE,
        **vcsim.props(port=vsan.port),
    }
    values.update(overrides)
    return values


def sent(vsan, method: str) -> list[ET.Element]:
    """The request bodies (SOAP Body's first element) of ``method``."""
    soap = "{http://schemas.xmlsoap.org/soap/envelope/}Body"
    return [ET.fromstring(raw).findall(soap)[0][0] for m, _, raw in vsan.calls if m == method]


def test_create_sends_the_share_config_and_waits_for_the_access_point(vcsim, vsan, cluster_id, provider):
    result = provider.create(props(vcsim, vsan, cluster_id))

    assert result.outs["nfs_server"] == "fs1.vsan.example"
    assert result.outs["nfs_path"] == "/vsanfs/ml-share"
    assert result.outs["adopted"] is False
    [share] = vsan.shares.values()
    assert result.id == result.outs["share_uuid"] == share.uuid
    assert (share.name, share.cluster, share.quota, share.policy_id) == ("ml-share", cluster_id, "2048G", POLICY)
    assert share.domain == result.outs["domain_name"] == "fs.vsan.example"  # the cluster's only domain
    assert share.permissions == EVERYONE
    [create] = sent(vsan, "VsanCreateFileShare")
    ns = {"v": "urn:vsan"}
    assert create.find("v:_this", ns).get("type") == "VsanFileServiceSystem"
    assert create.find("v:cluster", ns).get("type") == "ClusterComputeResource"
    policy = create.find("v:config/v:storagePolicy", ns)
    assert policy.get("{http://www.w3.org/2001/XMLSchema-instance}type") == "vim25:VirtualMachineDefinedProfileSpec"
    # Completion came from the task (running for one request, then success).
    [task] = vsan.tasks.values()
    assert (task.method, task.state) == ("VsanCreateFileShare", "success")
    assert all(action == "urn:vsan/7.0" for _, action, _ in vsan.calls)


def test_a_cluster_can_be_named_instead_of_its_id(vcsim, vsan, cluster_id, provider):
    result = provider.create(props(vcsim, vsan, "DC0_C0"))
    assert next(iter(vsan.shares.values())).cluster == cluster_id
    with pytest.raises(VCenterError, match="no compute cluster with id or name 'nope'"):
        provider.create(props(vcsim, vsan, "nope", share_name="other"))
    provider.delete(result.id, result.outs)


def test_an_existing_share_is_adopted_and_left_on_delete(vcsim, vsan, cluster_id, provider, caplog):
    existing = vsan.seed("ml-share", cluster_id, quota="1T")

    result = provider.create(props(vcsim, vsan, cluster_id))

    assert result.id == existing.uuid and result.outs["adopted"] is True
    assert sent(vsan, "VsanCreateFileShare") == []
    assert "quota: server '1T', wanted '2048G'" in caplog.text
    provider.delete(result.id, result.outs)
    assert existing.uuid in vsan.shares and sent(vsan, "VsanClusterRemoveShare") == []


def test_update_reconfigures_quota_and_permissions(vcsim, vsan, cluster_id, provider):
    created = provider.create(props(vcsim, vsan, cluster_id))
    news = props(
        vcsim, vsan, cluster_id, quota_gib=3000, net_permissions=[{"ips": "10.0.0.0/24", "permissions": "READ_ONLY"}]
    )
    assert provider.diff(created.id, created.outs, news).replaces == []
    assert provider.diff(created.id, created.outs, props(vcsim, vsan, cluster_id, share_name="x")).replaces == [
        "share_name"
    ]
    assert provider.diff(created.id, created.outs, props(vcsim, vsan, cluster_id)).changes is False
    pending = props(vcsim, vsan, cluster_id, policy_id=Unknown())  # preview: policy id not known yet
    assert provider.diff(created.id, created.outs, pending).changes is True
    assert provider.check({}, pending).failures == []

    updated = provider.update(created.id, created.outs, news)

    share = vsan.shares[created.id]
    assert share.quota == "3000G"
    assert share.permissions == [{"ips": "10.0.0.0/24", "permissions": "READ_ONLY", "allow_root": False}]
    assert updated.outs["quota_gib"] == 3000


def test_delete_removes_the_share_and_read_notices(vcsim, vsan, cluster_id, provider):
    created = provider.create(props(vcsim, vsan, cluster_id))
    assert provider.read(created.id, created.outs).outs["nfs_server"] == "fs1.vsan.example"

    provider.delete(created.id, created.outs)

    assert vsan.shares == {}
    assert provider.read(created.id, created.outs).id == ""
    provider.delete(created.id, created.outs)  # already gone: no error


def test_the_fake_only_accepts_sessions_vcsim_issued(vcsim, vsan, cluster_id):
    from pyVmomi import vim

    from components.vsphere.providers.file_share import file_service

    with vcenter(vcsim.connection(port=vsan.port)) as si:
        fs = file_service(si)
        fs._stub.cookie = 'vmware_soap_session="forged"'
        with pytest.raises(vim.fault.NotAuthenticated):
            fs.QueryFileShares(querySpec=vim.vsan.FileShareQuerySpec(), cluster=vim.ClusterComputeResource(cluster_id))


def test_failures_surface_the_server_message_without_the_password(vcsim, vsan, cluster_id, provider):
    with pytest.raises(VCenterError) as info:
        provider.create(props(vcsim, vsan, cluster_id, password=vcsim.password + "!"))
    assert "refused" in str(info.value) and vcsim.password not in str(info.value)

    slow = VsanFileShareProvider(timeout_s=0.05, poll_s=0.01)
    vsan.task_ticks = 10_000
    with pytest.raises(VCenterError,
                       match=r"timed out after 0 s waiting for creating vSAN file share 'ml-share' \(task"):
        slow.create(props(vcsim, vsan, cluster_id))


def test_pure_helpers():
    assert format_quota(2048) == "2048G" and format_quota(500) == "500G"
    assert parse_quota("2T") == 2048 and parse_quota("500G") == 500 and parse_quota("512M") == 0.5
    assert parse_quota(None) is None
    assert validate_permissions([{"ips": "*"}]) == [{"ips": "*", "permissions": "READ_WRITE", "allow_root": False}]
    with pytest.raises(ValueError, match=r"net_permissions\[0\].permissions: 'RW'"):
        validate_permissions([{"ips": "*", "permissions": "RW"}])
    from pyVmomi import vim

    share = vim.vsan.FileShare(
        uuid="u",
        runtime=vim.vsan.FileShareRuntimeInfo(
            accessPoints=[
                vim.KeyValue(key="NFSv3", value="10.0.0.5:/vsanfs/a"),
                vim.KeyValue(key="NFSv4.1", value="fs.example.com:/vsanfs/a"),
            ]
        ),
    )
    assert access_point(share) == ("fs.example.com", "/vsanfs/a")


def test_the_domain_is_looked_up_and_named_when_it_cannot_be_chosen(vcsim, vsan, cluster_id, provider):
    vsan.domains = {"d1": "fs-a.example", "d2": "fs-b.example"}
    with pytest.raises(VCenterError, match=r"has 2 vSAN file service domains \(fs-a.example, fs-b.example\): set"
                                           " fileShareDomain"):
        provider.create(props(vcsim, vsan, cluster_id))
    with pytest.raises(VCenterError, match=r"'fs-c.example' \(fileShareDomain\) is not on cluster 'DC0_C0'; it has:"
                                           " fs-a.example, fs-b.example"):
        provider.create(props(vcsim, vsan, cluster_id, domain_name="fs-c.example"))
    result = provider.create(props(vcsim, vsan, cluster_id, domain_name="fs-b.example"))
    assert vsan.shares[result.id].domain == "fs-b.example"
    vsan.domains = {}
    with pytest.raises(VCenterError, match="has no vSAN file service domain: enable the file service"):
        provider.create(props(vcsim, vsan, cluster_id, share_name="other"))
    assert sent(vsan, "VsanCreateFileShare")[-1].find("{urn:vsan}config/{urn:vsan}domainName").text == "fs-b.example"


def test_the_fake_refuses_what_the_file_service_refuses(vcsim, vsan, cluster_id):
    """No domain, an unknown domain, a bad name: InvalidArgument naming the property."""
    from pyVmomi import vim, vmodl

    from components.vsphere.providers.file_share import build_share_config, file_service

    with vcenter(vcsim.connection(port=vsan.port)) as si:
        fs, cluster = file_service(si), vim.ClusterComputeResource(cluster_id)
        for name, domain, prop in (("ml-share", None, "config.domainName"),
                                   ("ml-share", "nope.example", "config.domainName"),
                                   ("ml_share", "fs.vsan.example", "config.name"),
                                   ("ml--share", "fs.vsan.example", "config.name"),
                                   ("m" * 81, "fs.vsan.example", "config.name")):
            with pytest.raises(vmodl.fault.InvalidArgument) as refused:
                fs.CreateFileShare(config=build_share_config(name, 10, None, EVERYONE, domain), cluster=cluster)
            assert refused.value.invalidProperty == prop
    assert vsan.shares == {}


@pytest.mark.parametrize("method", ["VsanCreateFileShare", "VsanReconfigureFileShare", "VsanClusterRemoveShare"])
def test_a_failing_vsan_task_is_raised_with_its_message_at_once(vcsim, vsan, cluster_id, method):
    patient = VsanFileShareProvider(timeout_s=30, poll_s=0.01)  # a timeout would take 30 s
    created = None if method == "VsanCreateFileShare" else patient.create(props(vcsim, vsan, cluster_id))
    vsan.fail_tasks[method] = "vSAN file service: the file server VM on host-21 is not reachable"
    started = time.monotonic()
    with pytest.raises(VCenterError) as failed:
        if created is None:
            patient.create(props(vcsim, vsan, cluster_id))
        elif method == "VsanReconfigureFileShare":
            patient.update(created.id, created.outs, props(vcsim, vsan, cluster_id, quota_gib=4096))
        else:
            patient.delete(created.id, created.outs)
    assert time.monotonic() - started < 10
    message = str(failed.value)
    assert "the file server VM on host-21 is not reachable" in message and "failed on vCenter (task-9" in message
    assert vcsim.password not in message
    if created is None:
        assert vsan.shares == {}  # a failed create leaves nothing
    else:
        assert vsan.shares[created.id].quota == "2048G"  # neither reconfigured nor removed


def test_nfs_address_ip_reports_the_file_servers_ip(vcsim, vsan, cluster_id, provider):
    result = provider.create(props(vcsim, vsan, cluster_id, nfs_address="ip"))
    assert (result.outs["nfs_server"], result.outs["nfs_path"]) == ("192.168.100.20", "/vsanfs/ml-share")
    switched = props(vcsim, vsan, cluster_id, nfs_address="fqdn")
    diff = provider.diff(result.id, result.outs, switched)
    assert diff.changes is True and diff.replaces == []
    assert provider.update(result.id, result.outs, switched).outs["nfs_server"] == "fs1.vsan.example"
    assert sent(vsan, "VsanReconfigureFileShare") == []  # only the reported address changed


def test_share_names_follow_the_file_services_rule():
    provider = VsanFileShareProvider()
    for bad in ("ml_share", "ml--share", "-ml", "ml-", "m" * 81, "ml.share"):
        [failure] = provider.check({}, {"share_name": bad, "cluster": "domain-c8", "quota_gib": 1}).failures
        assert "each '-' between letters or digits" in failure.reason
    assert provider.check({}, {"share_name": "ML-share-2", "cluster": "domain-c8", "quota_gib": 1}).failures == []
