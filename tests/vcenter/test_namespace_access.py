"""The vSphere 8/9 namespace's access list and storage limits against the local FAKE of
vCenter's namespace API.

``vsphere.Namespace`` creates the namespace (``instances/v2``: no access list, no limits);
the namespace is seeded here as it leaves it. ``NamespaceAccessAndLimits`` then sets the
program's entries with ``PATCH /api/vcenter/namespaces/instances/{namespace}``
(``Instances.UpdateSpec``, which the fake checks field by field, rejecting unknown ones).
"""

from __future__ import annotations

import json

import pytest

from components.vsphere.providers.namespace_access import NamespaceAccessAndLimitsProvider, build_wanted
from components.vsphere.providers.session import VCenterConnection, VCenterError, rest_api

from .fakes import fake_namespace_api, provider_props

pytestmark = [pytest.mark.vcsim, pytest.mark.usefixtures("fake_api_password_not_logged")]

CLUSTER = "domain-c8"
SUPERVISOR = "5c4b6e1e-0b1d-4c3a-9a53-2b8a6f0e9d11"
R5, R1 = "aa6d5a82-1c88-45da-85d3-3d74b91a5bad", "f4e5bade-15a2-4805-bf8e-52318c4ce443"
CREATOR = {"subject_type": "USER", "subject": "devops", "domain": "vsphere.local", "role": "OWNER"}
DEVS = {"subject_type": "GROUP", "subject": "data-science", "domain": "vsphere.local", "role": "EDIT"}
CLASSES = {"vm_classes": ["best-effort-xlarge"], "content_libraries": []}


@pytest.fixture
def api(vcsim):
    with fake_namespace_api(vcsim, "ns-", known_policies={R5, R1}) as fake:
        yield fake


@pytest.fixture
def made_by_vsphere_namespace(api):
    """The namespace as vsphere.Namespace leaves it: its policies without limits, its classes,
    and the creator vCenter made owner."""
    api.seed("dask", CLUSTER, access_list=[CREATOR], storage_specs=[{"policy": R5}, {"policy": R1}],
             vm_service_spec=dict(CLASSES))


@pytest.fixture
def provider():
    return NamespaceAccessAndLimitsProvider(timeout_s=5, poll_s=0.01)


def props(api, vcsim, **overrides) -> dict:
    values = {
        "namespace": "dask",
        "supervisor": SUPERVISOR,
        "access_list": [DEVS],
        "storage_limits": [{"policy": R5, "limit": 512000}],
        "namespace_spec": {"storage_policies": [R5, R1], "vm_services": [{"vm_classes": ["best-effort-xlarge"]}]},
    }
    return provider_props(api, vcsim, values, overrides)


def patches(api) -> list[dict]:
    return [json.loads(raw) for method, path, _, raw in api.requests
            if method == "PATCH" and path == "/api/vcenter/namespaces/instances/dask"]


def test_create_adds_the_access_list_and_limits_to_what_vsphere_namespace_made(
        api, vcsim, provider, made_by_vsphere_namespace):
    created = provider.create(props(api, vcsim))

    assert created.id == "dask:access-and-limits"
    [patch] = patches(api)
    assert patch == {"access_list": [CREATOR, DEVS], "storage_specs": [{"policy": R5, "limit": 512000}, {"policy": R1}]}
    info = api.namespaces["dask"]
    assert info["config_status"] == "RUNNING"
    assert info["access_list"] == [CREATOR, DEVS]
    assert info["storage_specs"] == [{"policy": R5, "limit": 512000}, {"policy": R1}]
    assert info["vm_service_spec"] == CLASSES  # vsphere.Namespace's part is untouched
    assert (created.outs["access_list"], created.outs["storage_limits"]) == ([DEVS], [{"policy": R5, "limit": 512000}])
    assert api.tokens == set()  # logged out


def test_limits_that_a_vsphere_namespace_update_drops_are_set_again(api, vcsim, provider, made_by_vsphere_namespace):
    """pulumi-vsphere's update PATCHes storage_specs with policies only (terraform-provider-vsphere
    resourceVSphereNamespaceUpdate); namespace_spec changing with it brings the limits back."""
    created = provider.create(props(api, vcsim))
    conn = VCenterConnection.from_props(props(api, vcsim))
    with rest_api(conn) as http:
        resp = http.patch(f"{conn.base_url}/api/vcenter/namespaces/instances/dask", json={
            "storage_specs": [{"policy": R5}, {"policy": R1}],
            "vm_service_spec": {"vm_classes": ["best-effort-2xlarge"], "content_libraries": []}})
    assert resp.status_code == 204 and api.namespaces["dask"]["storage_specs"] == [{"policy": R5}, {"policy": R1}]

    news = props(api, vcsim, namespace_spec={"storage_policies": [R5, R1],
                                              "vm_services": [{"vm_classes": ["best-effort-2xlarge"]}]})
    diff = provider.diff(created.id, created.outs, news)
    assert diff.changes is True and diff.replaces == []
    provider.update(created.id, created.outs, news)
    assert api.namespaces["dask"]["storage_specs"] == [{"policy": R5, "limit": 512000}, {"policy": R1}]


def test_update_removes_only_what_the_program_dropped(api, vcsim, provider, made_by_vsphere_namespace):
    created = provider.create(props(api, vcsim))
    news = props(api, vcsim, access_list=[], storage_limits=[{"policy": R1, "limit": 2048}])
    provider.update(created.id, created.outs, news)

    info = api.namespaces["dask"]
    assert info["access_list"] == [CREATOR]
    assert info["storage_specs"] == [{"policy": R5}, {"policy": R1, "limit": 2048}]


def test_delete_takes_the_programs_entries_out_and_leaves_the_namespace(
        api, vcsim, provider, made_by_vsphere_namespace):
    created = provider.create(props(api, vcsim))
    provider.delete(created.id, created.outs)

    info = api.namespaces["dask"]
    assert info["access_list"] == [CREATOR]
    assert info["storage_specs"] == [{"policy": R5}, {"policy": R1}]
    del api.namespaces["dask"]
    provider.delete(created.id, created.outs)  # namespace already gone: nothing to do


def test_nothing_to_change_sends_no_patch(api, vcsim, provider):
    api.seed("dask", CLUSTER, access_list=[CREATOR, DEVS], storage_specs=[{"policy": R5, "limit": 512000}])
    provider.create(props(api, vcsim))
    assert patches(api) == []


def test_a_refresh_sees_a_limit_removed_by_hand(api, vcsim, provider, made_by_vsphere_namespace):
    created = provider.create(props(api, vcsim))
    api.namespaces["dask"]["storage_specs"] = [{"policy": R5}, {"policy": R1}]
    refreshed = provider.read(created.id, created.outs)
    assert refreshed.outs["storage_limits"] == [] and refreshed.outs["access_list"] == [DEVS]
    assert provider.diff(created.id, refreshed.outs, props(api, vcsim)).changes is True
    del api.namespaces["dask"]
    assert provider.read(created.id, created.outs).id == ""


def test_a_namespace_that_does_not_exist_is_named(api, vcsim, provider):
    with pytest.raises(VCenterError, match=r"namespace 'dask' does not exist on vCenter 127\.0\.0\.1"):
        provider.create(props(api, vcsim))
    assert patches(api) == []


def test_diff_replaces_with_the_namespace_and_ignores_order(api, vcsim, provider, made_by_vsphere_namespace):
    created = provider.create(props(api, vcsim))
    reordered = props(api, vcsim, storage_limits=[{"policy": R5, "limit": 512000.0}])
    assert provider.diff(created.id, created.outs, reordered).changes is False
    assert provider.diff(created.id, created.outs, props(api, vcsim, namespace="dask2")).replaces == ["namespace"]
    assert provider.diff(created.id, created.outs, props(api, vcsim, supervisor="sv-2")).replaces == ["supervisor"]


def test_bad_entries_are_refused_naming_the_property():
    with pytest.raises(ValueError, match=r"storage_limits\[0\].limit: a limit in MiB is required"):
        build_wanted({"namespace": "d", "storage_limits": [{"policy": R5}]})
    with pytest.raises(ValueError, match=r"access_list\[0\].role: 'ADMIN'"):
        build_wanted({"namespace": "d", "access_list": [{**DEVS, "role": "ADMIN"}]})
    with pytest.raises(ValueError, match="namespace: 'Dask_NS'"):
        build_wanted({"namespace": "Dask_NS"})
