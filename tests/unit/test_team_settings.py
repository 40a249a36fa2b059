"""The ``users`` setting (a team on one stack): each person parsed into their own namespace,
GPU quota and idle timeout, and everything that could not work refused at ``pulumi preview``,
naming ``dask-tkg:users[<i>].<field>`` and what is allowed.

What the program declares for each person: tests/program/test_team_graph.py; what a person
may do on a real API server: tests/apiserver/test_team_access.py.
"""
from __future__ import annotations

import pytest

from components.settings.team import member_namespace, team_warnings
from tests.operator.support import OPERATOR
from tests.unit.support import current_problems, load_current, problems

ALICE = "name=alice@vsphere.local,gpus=2"
BOB = "name=bob@vsphere.local,gpus=1"


def team_settings(**overrides):
    """Today's platform (a VKr: a team needs Kubernetes 1.30+) with the operator backend."""
    return load_current(**{**OPERATOR, **overrides})


def refused(**overrides) -> str:
    return str(current_problems(**{**OPERATOR, **overrides}))


def test_no_users_is_no_team():
    assert team_settings().team == ()


def test_each_person_gets_a_namespace_gpus_and_an_idle_timeout():
    s = team_settings(users=[ALICE, "name=Bob.Smith@corp.example,gpus=1,idleTimeout=600",
                                 "name=data-science@vsphere.local,gpus=3,kind=Group"])
    got = [(m.name, m.kind, m.gpus, m.idle_timeout, m.namespace) for m in s.team]
    assert got == [("alice@vsphere.local", "User", 2, 3600, "dask-alice"),
                   ("Bob.Smith@corp.example", "User", 1, 600, "dask-bob-smith"),
                   ("data-science@vsphere.local", "Group", 3, 3600, "dask-data-science")]


def test_the_stacks_idle_timeout_is_every_persons_default_and_zero_is_never():
    s = team_settings(users=[ALICE, "name=bob@vsphere.local,gpus=1,idleTimeout=0"], teamIdleTimeout=900)
    assert [m.idle_timeout for m in s.team] == [900, 0]


@pytest.mark.parametrize("name, namespace", [
    ("alice@vsphere.local", "dask-alice"),
    ("Alice_O'Neil@corp.example", "dask-alice-o-neil"),
    ("__x__@vsphere.local", "dask-x"),
    (f"{'a' * 70}@vsphere.local", f"dask-{'a' * 58}"),
    (f"{'a' * 57}.b@vsphere.local", f"dask-{'a' * 57}"),  # trimmed at 58, no trailing '-'
])
def test_a_namespace_is_the_local_part_as_a_dns_label(name, namespace):
    assert member_namespace(name) == namespace
    assert len(namespace) <= 63


@pytest.mark.parametrize("users, key, words", [
    ([ALICE, "name=Alice@vsphere.local,gpus=1"], "users[1].name", "is listed twice (users[0])"),
    ([ALICE, "name=alice@corp.example,gpus=1"], "users[1].name",
     "maps to namespace dask-alice, as users[0] (alice@vsphere.local) does"),
    (["name=alice@vsphere.local,gpus=-1"], "users[0].gpus", "must be >= 0"),
    (["name=alice@vsphere.local,gpus=two"], "users[0].gpus", "must be an integer"),
    (["name=alice@vsphere.local,gpus=1.5"], "users[0].gpus", "must be an integer"),
    (["name=alice,gpus=1"], "users[0].name", "must be a vSphere SSO identity <user>@<domain>"),
    (["name=alice@,gpus=1"], "users[0].name", "must be a vSphere SSO identity <user>@<domain>"),
    (["name=alice bob@vsphere.local,gpus=1"], "users[0].name", "must be a vSphere SSO identity <user>@<domain>"),
    (["name=sso:alice@vsphere.local,gpus=1"], "users[0].name", "without the sso: prefix"),
    (["name=___@vsphere.local,gpus=1"], "users[0].name", "leaves no letter or digit for a namespace"),
    (["name=alice@vsphere.local,gpus=1,kind=Robot"], "users[0].kind", "must be one of User, Group"),
    (["name=alice@vsphere.local,gpus=1,idleTimeout=-5"], "users[0].idleTimeout", "must be >= 0"),
    (["gpus=1"], "users[0].name", "is required"),
    (["name=alice@vsphere.local"], "users[0].gpus", "is required"),
    (["name=alice@vsphere.local,gpus=9"], "users[0].gpus",
     "9 is more than the 8 GPUs the stack's GPU workers have"),
    (["name=operator@vsphere.local,gpus=1"], "users[0].name",
     "maps to namespace dask-operator, the program's own daskOperatorNamespace"),
])
def test_a_bad_person_is_refused_at_preview_naming_the_entry(users, key, words):
    text = refused(users=users)
    assert f"dask-tkg:{key}: " in text, text
    assert words in text, text


def test_a_bad_team_idle_timeout_is_refused():
    assert "dask-tkg:teamIdleTimeout: must be >= 0" in refused(users=[ALICE], teamIdleTimeout=-1)


def test_users_with_the_helm_backend_is_refused_saying_why():
    text = str(problems(users=[ALICE]))  # the paper's platform: daskBackend=helm
    assert "dask-tkg:users: needs daskBackend=operator" in text
    assert "the Helm backend does not deploy" in text


def test_a_person_with_edit_on_the_vsphere_namespace_is_refused():
    """VKS makes "Can edit" on the vSphere Namespace cluster-admin in its clusters: the person's
    namespace would be no boundary."""
    text = refused(users=[ALICE, BOB], namespaceAccess=[
        "role=VIEW,subjectType=USER,subject=alice,domain=vsphere.local",
        "role=EDIT,subjectType=USER,subject=Bob,domain=vsphere.local"])
    assert "dask-tkg:users[1].name: bob@vsphere.local has EDIT on the vSphere Namespace (namespaceAccess[1])" in text
    assert "cluster-admin" in text and "users[0]" not in text


def test_an_sso_group_with_edit_on_the_vsphere_namespace_is_said_plainly():
    """Preview cannot see who is in an SSO group: it warns that a member of one with EDIT would be
    bound by nothing, naming the entry; a group with VIEW is no concern."""
    s = team_settings(users=[ALICE], namespaceAccess=[
        "role=EDIT,subjectType=GROUP,subject=ml-admins,domain=vsphere.local",
        "role=VIEW,subjectType=GROUP,subject=ml-users,domain=vsphere.local"])
    [warning] = [w for w in team_warnings(s) if "namespaceAccess" in w]
    assert warning.startswith("dask-tkg:namespaceAccess[0]: the SSO group ml-admins@vsphere.local has EDIT")
    assert "preview cannot see who is in the group" in warning


def test_more_gpus_than_the_stack_has_is_a_warning_not_a_refusal():
    """Quotas cap what a person may hold and reserve nothing: a team may share 8 GPUs among
    people who ask for more in total (overcommitting), so preview warns and goes on."""
    s = team_settings(users=["name=alice@vsphere.local,gpus=6", "name=bob@vsphere.local,gpus=4"],
                          autoscaleMinWorkers=0)
    [warning] = team_warnings(s)
    assert "dask-tkg:users: the people's gpus add up to 10, more than the 8 GPUs" in warning
    assert "reserve nothing" in warning and "Pending" in warning


def test_a_shared_cluster_that_keeps_idle_gpus_is_warned_about_with_a_team():
    s = team_settings(users=[ALICE])  # autoscaleMinWorkers defaults to 1
    [warning] = team_warnings(s)
    assert "dask-tkg:autoscaleMinWorkers: the shared cluster keeps 1 GPU worker(s) even when idle" in warning
    assert "autoscaleMinWorkers=0" in warning
    assert team_warnings(team_settings(users=[ALICE], autoscaleMinWorkers=0)) == []
    assert team_warnings(team_settings()) == []  # no team, nothing to share


def test_a_team_on_a_kubernetes_without_admission_policies_is_refused_naming_the_release():
    """The people's namespaces are held by ValidatingAdmissionPolicies (v1 from Kubernetes 1.30):
    the paper's TKR 1.20, even with the operator backend, cannot hold them."""
    text = str(problems(**{**OPERATOR, "users": [ALICE]}))
    assert "dask-tkg:users: needs Kubernetes 1.30 or later (tkr v1.20.8---vmware.1-tkg.2 is 1.20.8)" in text, text
    assert team_settings(users=[ALICE]).cluster.kubernetes_version >= (1, 30, 0)


def test_each_person_gets_a_maximum_lifetime_the_stacks_by_default_and_zero_is_none():
    s = team_settings(users=[ALICE, "name=bob@vsphere.local,gpus=1,maxLifetime=0"], teamMaxLifetime=7200)
    assert [m.max_lifetime for m in s.team] == [7200, 0]
    assert "dask-tkg:users[0].maxLifetime" in refused(users=["name=alice@vsphere.local,gpus=1,maxLifetime=-5"])
