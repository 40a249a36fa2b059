"""The vSAN file share provider: real vcsim for login and inventory, a local FAKE of
``/vsanHealth`` for the file service (vcsim serves none; see ``fakes.py``)."""

from __future__ import annotations

import logging
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
    return [ET.fromstring(raw).find(soap)[0] for m, _, raw in vsan.calls if m == method]


def test_create_sends_the_share_config_and_waits_for_the_access_point(vcsim, vsan, cluster_id, provider):
    result = provider.create(props(vcsim, vsan, cluster_id))

    assert result.outs["nfs_server"] == "192.168.100.20"
    assert result.outs["nfs_path"] == "/vsanfs/ml-share"
    assert result.outs["adopted"] is False
    [share] = vsan.shares.values()
    assert result.id == result.outs["share_uuid"] == share.uuid
    assert (share.name, share.cluster, share.quota, share.policy_id) == ("ml-share", cluster_id, "2T", POLICY)
    assert share.permissions == EVERYONE
    [create] = sent(vsan, "VsanCreateFileShare")
    ns = {"v": "urn:vsan"}
    assert create.find("v:_this", ns).get("type") == "VsanFileServiceSystem"
    assert create.find("v:cluster", ns).get("type") == "ClusterComputeResource"
    policy = create.find("v:config/v:storagePolicy", ns)
    assert policy.get("{http://www.w3.org/2001/XMLSchema-instance}type") == "vim25:VirtualMachineDefinedProfileSpec"
    # Completion came from polling the share list (the fake hides a new share for one query).
    assert len(sent(vsan, "VsanClusterQueryFileShares")) >= 3
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
    assert "quota: server '1T', wanted '2T'" in caplog.text
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
    assert provider.read(created.id, created.outs).outs["nfs_server"] == "192.168.100.20"

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
    vsan.settle_queries = 1000
    with pytest.raises(VCenterError, match="timed out after 0 s waiting for vSAN file share 'ml-share'"):
        slow.create(props(vcsim, vsan, cluster_id))


def test_pure_helpers():
    assert format_quota(2048) == "2T" and format_quota(500) == "500G"
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
