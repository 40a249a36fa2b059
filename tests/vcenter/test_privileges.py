"""The preview check of the vCenter account's privileges (issue 37, item 9), against vcsim.

vcsim keeps roles and permissions as vCenter does, and our build of it answers
``HasPrivilegeOnEntities`` from them (scripts/vcsim/privileges.go: the stock simulator grants
every privilege). The login user starts with the Admin role on the root folder; a test gives it
a role without one privilege, as a site's service account would be, and restores it after."""
from __future__ import annotations

import pytest

from components.vsphere.privileges import by_entity, required
from components.vsphere.providers.privileges import VCenterPrivilegesProvider
from components.vsphere.providers.session import vcenter

pytestmark = pytest.mark.vcsim

# the paper's stack: vSphere 7, an existing Supervisor, a subscribed library, custom VM classes, a vSAN share
NEEDS = by_entity(required(7, "existing", False, True, True, True))


def props(vcsim, **overrides):
    return vcsim.props(**{"needs": NEEDS, "datacenter": "DC0", "cluster": "DC0_C0", "datastore": "LocalDS_0",
                          **overrides})


@pytest.fixture
def role_without(vcsim):
    """Give the login user, on the root folder (propagating), a role of every needed privilege but
    the ones named; the Admin permission comes back afterwards."""
    from pyVmomi import vim

    with vcenter(vcsim.connection()) as si:
        manager, root = si.content.authorizationManager, si.content.rootFolder
        saved = list(manager.RetrieveEntityPermissions(entity=root, inherited=False))

    def grant(*left_out: str, propagate: bool = True) -> None:
        wanted = sorted({p for privileges in NEEDS.values() for p in privileges} - set(left_out))
        name = f"dask-tkg-without-{'-'.join(left_out) or 'nothing'}-{propagate}"
        with vcenter(vcsim.connection()) as si:
            manager = si.content.authorizationManager
            manager.AddAuthorizationRole(name=name, privIds=wanted)
            [role] = [r for r in manager.roleList if r.name == name]
            others = [p for p in saved if p.principal.lower() != vcsim.user.lower()]
            mine = vim.AuthorizationManager.Permission(entity=si.content.rootFolder, principal=vcsim.user,
                                                       group=False, roleId=role.roleId, propagate=propagate)
            manager.SetEntityPermissions(entity=si.content.rootFolder, permission=[*others, mine])

    yield grant
    with vcenter(vcsim.connection()) as si:
        si.content.authorizationManager.SetEntityPermissions(entity=si.content.rootFolder, permission=saved)


def test_an_administrator_passes_the_check(vcsim):
    assert VCenterPrivilegesProvider().check({}, props(vcsim)).failures == []


def test_the_minimal_role_passes_the_check(vcsim, role_without):
    role_without()
    assert VCenterPrivilegesProvider().check({}, props(vcsim)).failures == []


def test_a_missing_privilege_fails_the_preview_naming_it(vcsim, role_without):
    role_without("Host.Config.Storage")
    [failure] = VCenterPrivilegesProvider().check({}, props(vcsim)).failures
    assert failure.property == "needs"
    assert f"the vCenter account {vcsim.user!r} lacks 1 privilege(s)" in failure.reason
    assert "Host.Config.Storage on compute cluster 'DC0_C0' (for: vSAN file share)" in failure.reason
    assert 'docs/deploy.md, "The vCenter account"' in failure.reason
    with pytest.raises(Exception, match=r"Host\.Config\.Storage"):
        VCenterPrivilegesProvider().create(props(vcsim))


def test_a_role_that_does_not_propagate_holds_nothing_below_the_root(vcsim, role_without):
    role_without(propagate=False)
    [failure] = VCenterPrivilegesProvider().check({}, props(vcsim)).failures
    assert "Namespaces.Configure on compute cluster 'DC0_C0'" in failure.reason
    assert "Datastore.AllocateSpace on datastore 'LocalDS_0' (for: TKR content library)" in failure.reason
    assert "on the vCenter root folder" not in failure.reason


def test_a_read_only_preview_account_may_skip_the_preview_check_but_not_up(vcsim, role_without):
    role_without("Namespaces.Configure")
    assert VCenterPrivilegesProvider().check({}, props(vcsim, at_preview=False)).failures == []
    with pytest.raises(Exception, match=r"Namespaces\.Configure on compute cluster 'DC0_C0'"):
        VCenterPrivilegesProvider().create(props(vcsim, at_preview=False))


def test_an_unknown_cluster_is_named(vcsim):
    [failure] = VCenterPrivilegesProvider().check({}, props(vcsim, cluster="nope")).failures
    assert "no compute cluster 'nope' in datacenter 'DC0'" in failure.reason
