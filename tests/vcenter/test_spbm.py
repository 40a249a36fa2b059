"""vSAN storage policies against a real vCenter simulator (SPBM at /pbm/sdk).

The provider's methods are called directly, with the property bags Pulumi would
pass; what they did is checked by querying SPBM on the simulator.
"""

from __future__ import annotations

import logging
import uuid

import pytest
from pulumi.dynamic.dynamic import serialize_provider
from pulumi.output import Unknown

from components.vsphere.providers.session import VCenterError, vcenter
from components.vsphere.providers.spbm import (
    RAID1,
    RAID5_6,
    StoragePolicyConflict,
    VsanStoragePolicyProvider,
    create_policy,
    find_policies,
    profile_manager,
    read_policy,
    validate_rules,
)

pytestmark = pytest.mark.vcsim

PAPER = {
    "vsan-r5": {"hostFailuresToTolerate": 1, "replicaPreference": RAID5_6},
    "vsan-r1-sw8": {"hostFailuresToTolerate": 1, "replicaPreference": RAID1, "stripeWidth": 8},
}


@pytest.fixture
def pm(vcsim):
    with vcenter(vcsim.connection(), "test") as si:
        yield profile_manager(si)


@pytest.fixture
def provider():
    return VsanStoragePolicyProvider()


@pytest.fixture(autouse=True)
def no_password_in_logs(vcsim, caplog):
    caplog.set_level(logging.DEBUG)
    yield
    assert vcsim.password not in caplog.text


def unique(prefix: str) -> str:
    return f"{prefix}-{uuid.uuid4().hex[:8]}"


def props(vcsim, name: str, rules: dict, description: str = "", **connection) -> dict:
    return {"policy_name": name, "description": description, "rules": rules, **vcsim.props(**connection)}


def test_creates_the_papers_policies_and_reads_their_rules_back(vcsim, pm, provider):
    created = {}
    for name, rules in PAPER.items():
        result = provider.create(props(vcsim, name, rules, f"{name} (test)"))
        created[name] = result
        assert result.outs["policy_id"] == result.id
        assert result.outs["adopted"] is False
    try:
        for name, rules in PAPER.items():
            on_server = read_policy(pm, created[name].id)
            assert on_server is not None
            assert (on_server.name, on_server.rules) == (name, rules)
            assert on_server.description == f"{name} (test)"
            assert [p.policy_id for p in find_policies(pm, name)] == [created[name].id]
            read = provider.read(created[name].id, created[name].outs)
            assert read.id == created[name].id
            assert read.outs["rules"] == rules
    finally:
        for result in created.values():
            provider.delete(result.id, result.outs)
    assert all(read_policy(pm, r.id) is None for r in created.values())


def test_adopts_an_existing_policy_with_the_same_rules_and_leaves_it_on_delete(vcsim, pm, provider, caplog):
    name = unique("vsan-r5-adopt")
    existing_id = create_policy(pm, name, "made by hand", PAPER["vsan-r5"])

    result = provider.create(props(vcsim, name, dict(PAPER["vsan-r5"])))

    assert result.id == existing_id
    assert result.outs["adopted"] is True
    assert [p.policy_id for p in find_policies(pm, name)] == [existing_id]  # no duplicate
    provider.delete(result.id, result.outs)
    assert read_policy(pm, existing_id) is not None
    assert "adopted" in caplog.text and "leaving it" in caplog.text


def test_same_name_with_other_rules_fails_naming_the_policy_and_the_rules(vcsim, pm, provider):
    name = unique("vsan-r1")
    create_policy(pm, name, "", {"hostFailuresToTolerate": 1, "replicaPreference": RAID1})

    with pytest.raises(StoragePolicyConflict) as info:
        provider.create(props(vcsim, name, PAPER["vsan-r1-sw8"]))

    message = str(info.value)
    assert name in message
    assert "stripeWidth: server '(unset)', wanted 8" in message
    assert vcsim.password not in message
    assert len(find_policies(pm, name)) == 1


def test_delete_removes_the_policy(vcsim, pm, provider):
    name = unique("vsan-del")
    result = provider.create(props(vcsim, name, PAPER["vsan-r5"]))
    assert read_policy(pm, result.id) is not None

    provider.delete(result.id, result.outs)

    assert read_policy(pm, result.id) is None
    assert find_policies(pm, name) == []
    assert provider.read(result.id, result.outs).id == ""  # refresh sees it gone
    provider.delete(result.id, result.outs)  # deleting again is a no-op


def test_update_leaves_the_new_rules_on_the_server(vcsim, pm, provider, caplog):
    name = unique("vsan-upd")
    created = provider.create(props(vcsim, name, PAPER["vsan-r5"]))
    news = props(vcsim, name, PAPER["vsan-r1-sw8"], "now RAID-1")

    diff = provider.diff(created.id, created.outs, news)
    assert diff.changes is True and diff.replaces == []
    updated = provider.update(created.id, created.outs, news)

    # vcsim has no PbmUpdate: the provider deleted and re-created the policy, and said so.
    assert "PbmUpdate not served" in caplog.text
    new_id = updated.outs["policy_id"]
    on_server = read_policy(pm, new_id)
    assert on_server.rules == PAPER["vsan-r1-sw8"]
    assert on_server.description == "now RAID-1"
    assert [p.policy_id for p in find_policies(pm, name)] == [new_id]
    assert provider.read(created.id, updated.outs).outs["rules"] == PAPER["vsan-r1-sw8"]
    # A later connection-only update keeps pointing at the re-created policy.
    rotated = {**news, "insecure": True, "ca_pem": None}
    assert provider.update(created.id, updated.outs, rotated).outs["policy_id"] == new_id
    provider.delete(created.id, updated.outs)
    assert find_policies(pm, name) == []


def test_an_adopted_policy_is_not_recreated_when_the_server_cannot_update_it(vcsim, pm, provider):
    name = unique("vsan-adopted-upd")
    existing_id = create_policy(pm, name, "", PAPER["vsan-r5"])
    adopted = provider.create(props(vcsim, name, PAPER["vsan-r5"]))

    with pytest.raises(VCenterError, match="adopted, not created by this stack"):
        provider.update(adopted.id, adopted.outs, props(vcsim, name, PAPER["vsan-r1-sw8"]))
    assert read_policy(pm, existing_id).rules == PAPER["vsan-r5"]


def test_diff(vcsim, provider):
    olds = {**props(vcsim, "p", PAPER["vsan-r5"]), "policy_id": "id", "adopted": False}
    assert (
        provider.diff(
            "id", olds, props(vcsim, "p", {"hostFailuresToTolerate": 1.0, "replicaPreference": RAID5_6})
        ).changes
        is False
    )
    assert provider.diff("id", olds, props(vcsim, "q", PAPER["vsan-r5"])).replaces == ["policy_name"]
    described = provider.diff("id", olds, props(vcsim, "p", PAPER["vsan-r5"], "new words"))
    assert described.changes is True and described.replaces == []
    # Preview: a policy id or rule not known yet counts as a change, and check lets it through.
    assert provider.diff("id", olds, {**props(vcsim, "p", {}), "rules": Unknown()}).changes is True
    assert provider.check({}, {"policy_name": "p", "rules": {"stripeWidth": Unknown()}}).failures == []
    # A new password is stored for later calls but replaces nothing; update makes no vCenter call.
    rotated = props(vcsim, "p", PAPER["vsan-r5"], password="rotated-secret")
    diff = provider.diff("id", olds, rotated)
    assert diff.replaces == []
    assert provider.update("id", olds, rotated).outs["password"] == "rotated-secret"


def test_rules_are_validated_with_the_policy_and_setting_named():
    assert validate_rules({"stripeWidth": 8.0}) == {"stripeWidth": 8}
    with pytest.raises(ValueError, match=r"storage policy 'x': rules: unknown VSAN capability 'stripWidth'"):
        validate_rules({"stripWidth": 8}, "x")
    with pytest.raises(ValueError, match=r"rules.replicaPreference: 'RAID-6' is not one of"):
        validate_rules({"replicaPreference": "RAID-6"})
    with pytest.raises(ValueError, match=r"rules.checksumDisabled: expected bool"):
        validate_rules({"checksumDisabled": 1})
    with pytest.raises(ValueError, match=r"rules.stripeWidth: 13 is not one of 1-12"):
        validate_rules({"stripeWidth": 13})
    assert VsanStoragePolicyProvider().check({}, {"policy_name": "x", "rules": {"bad": 1}}).failures


def test_the_password_never_appears_in_errors(vcsim, provider):
    wrong = vcsim.password + "-wrong"
    with pytest.raises(VCenterError) as refused:
        provider.create(props(vcsim, unique("p"), PAPER["vsan-r5"], password=wrong))
    assert "refused" in str(refused.value) and vcsim.user in str(refused.value)

    with pytest.raises(VCenterError) as untrusted:
        provider.create(props(vcsim, unique("p"), PAPER["vsan-r5"], ca_pem=None))
    assert "not trusted" in str(untrusted.value)

    with pytest.raises(VCenterError) as closed:  # nothing listens on port 1
        provider.create(props(vcsim, unique("p"), PAPER["vsan-r5"], port=1))

    for exc, password in ((refused.value, wrong), (untrusted.value, vcsim.password), (closed.value, vcsim.password)):
        assert password not in str(exc) and password not in repr(exc)
        assert (exc.__cause__ is None and exc.__context__ is None) or password not in str(exc.__context__)
    assert vcsim.password not in repr(vcsim.connection())


def test_insecure_skips_verification(vcsim, pm):
    with vcenter(vcsim.connection(ca_pem=None, insecure=True)) as si:
        assert profile_manager(si) is not None


def test_the_provider_pickles_without_connections():
    assert serialize_provider(VsanStoragePolicyProvider())


def _pbm_content(si, request_context=None, with_cookie=True):
    """SPBM's content over a stub of our own: the vim cookie and/or the SOAP header."""
    from pyVmomi import SoapStubAdapter, pbm

    stub = SoapStubAdapter(url=f"https://{si._stub.host}/pbm/sdk", version="pbm.version.version11",
                           sslContext=si._stub.schemeArgs.get("context"), requestContext=request_context or {})
    if with_cookie:
        stub.cookie = si._stub.cookie
    return pbm.ServiceInstance("ServiceInstance", stub).RetrieveContent(), stub


def test_the_stand_in_refuses_spbm_calls_without_the_vcSessionCookie_header(vcsim):
    """Real SPBM takes the session from the ``vcSessionCookie`` SOAP header only: govmomi
    v0.47.0 pbm/client_test.go TestClientCookie (cookie sent, header renamed ->
    ``ServerFaultCode: NotAuthenticated``); scripts/vcsim/main.go makes vcsim 0.24.2 do the same."""
    from pyVmomi import vim

    from components.vsphere.providers.session import session_id

    storage = __import__("pyVmomi").pbm.profile.ResourceType(resourceType="STORAGE")
    with vcenter(vcsim.connection(), "test") as si:
        content, stub = _pbm_content(si)  # the vim HTTP cookie alone, as session.py sent before
        with pytest.raises(vim.fault.NotAuthenticated) as refused:
            content.profileManager.PbmQueryProfile(resourceType=storage, profileCategory="REQUIREMENT")
        assert refused.value.privilegeId == "System.View"
        stub.DropConnections()

        header_only = {"vcSessionCookie": session_id(si._stub.cookie)}
        content, stub = _pbm_content(si, header_only, with_cookie=False)
        assert content.profileManager.PbmQueryProfile(resourceType=storage, profileCategory="REQUIREMENT") is not None
        stub.DropConnections()

        content, stub = _pbm_content(si, {"vcSessionCookie": "not-a-session"})  # cookie valid, header not
        with pytest.raises(vim.fault.NotAuthenticated):
            content.profileManager.PbmQueryProfile(resourceType=storage, profileCategory="REQUIREMENT")
        stub.DropConnections()


def test_session_id_reads_quoted_and_bare_cookies():
    from components.vsphere.providers.session import session_id

    # vCenter quotes the value (pyVmomi's samples split on '"'); vcsim does not.
    assert session_id('vmware_soap_session="52a1-ff"; Path=/; HttpOnly; Secure;') == "52a1-ff"
    assert session_id("vmware_soap_session=52a1-ff; Path=/") == "52a1-ff"
    with pytest.raises(VCenterError, match="no vmware_soap_session cookie"):
        session_id("other=1")
