"""The Supervisor namespace provider against a local FAKE of vCenter's namespace API.

vcsim serves no ``/api/vcenter/namespaces/instances`` (see ``fakes.py``); the fake
checks the session header and every field name the provider sends.
"""

from __future__ import annotations

import json

import pytest
import requests
from pulumi.output import Unknown

from components.vsphere.providers.namespace_rest import (
    NamespaceConflict,
    SupervisorNamespaceProvider,
    build_spec,
)
from components.vsphere.providers.session import VCenterError, rest_api, rest_session

from .fakes import fake_namespace_api, provider_props

pytestmark = [pytest.mark.vcsim, pytest.mark.usefixtures("fake_api_password_not_logged")]

CLUSTER = "domain-c8"
R5, R1 = "aa6d5a82-1c88-45da-85d3-3d74b91a5bad", "f4e5bade-15a2-4805-bf8e-52318c4ce443"


@pytest.fixture
def provider():
    return SupervisorNamespaceProvider(timeout_s=5, poll_s=0.01)


@pytest.fixture
def api(vcsim):
    with fake_namespace_api(vcsim, "ns-", clusters={CLUSTER, "domain-c99"}, known_policies={R5, R1}) as fake:
        yield fake


def props(api, vcsim, **overrides) -> dict:
    values = {
        "namespace": "dask",
        "cluster": CLUSTER,
        "description": "Dask on TKG",
        "access_list": [{"subject_type": "GROUP", "subject": "devs", "domain": "vsphere.local", "role": "EDIT"}],
        "storage_specs": [{"policy": R5, "limit": 512000}, {"policy": R1}],
        "vm_classes": ["best-effort-xlarge", "best-effort-medium"],
        "content_libraries": ["lib-1"],
    }
    return provider_props(api, vcsim, values, overrides)


def bodies(api, method: str) -> list[dict]:
    return [json.loads(raw) for m, path, _, raw in api.requests if m == method and path.startswith("/api/vcenter")]


def test_create_sends_the_vsphere7_spec_and_waits_for_running(api, vcsim, provider):
    result = provider.create(props(api, vcsim))

    assert result.id == "dask"
    assert (result.outs["namespace"], result.outs["cluster"], result.outs["config_status"]) == (
        "dask",
        CLUSTER,
        "RUNNING",
    )
    assert result.outs["adopted"] is False
    [body] = bodies(api, "POST")
    assert body == {
        "cluster": CLUSTER,
        "namespace": "dask",
        "description": "Dask on TKG",
        "access_list": [{"subject_type": "GROUP", "subject": "devs", "domain": "vsphere.local", "role": "EDIT"}],
        "storage_specs": [{"policy": R5, "limit": 512000}, {"policy": R1}],
        "vm_service_spec": {"vm_classes": ["best-effort-medium", "best-effort-xlarge"], "content_libraries": ["lib-1"]},
    }
    assert api.namespaces["dask"]["config_status"] == "RUNNING"
    gets = [path for m, path, _, _ in api.requests if m == "GET"]
    assert len(gets) >= 3  # exists? -> CONFIGURING -> RUNNING
    for method, path, headers, _ in api.requests:
        if path != "/api/session":
            assert "vmware-api-session-id" in {k.lower() for k in headers}, (method, path)
    assert api.tokens == set()  # logged out


def test_adopts_a_namespace_on_the_same_cluster_and_patches_it(api, vcsim, provider, caplog):
    api.seed("dask", CLUSTER, description="made by hand", storage_specs=[{"policy": R1}])

    result = provider.create(props(api, vcsim))

    assert result.outs["adopted"] is True
    assert bodies(api, "POST") == []
    [patch] = bodies(api, "PATCH")
    assert "cluster" not in patch and "namespace" not in patch
    info = api.namespaces["dask"]
    assert info["description"] == "Dask on TKG"
    assert info["storage_specs"] == [{"policy": R5, "limit": 512000}, {"policy": R1}]
    provider.delete(result.id, result.outs)
    assert "dask" in api.namespaces and "leaving it" in caplog.text


def test_a_namespace_on_another_cluster_is_a_clear_error(api, vcsim, provider):
    api.seed("dask", "domain-c99")
    with pytest.raises(NamespaceConflict, match=r"'dask' already exists on cluster 'domain-c99', not on 'domain-c8'"):
        provider.create(props(api, vcsim))
    assert bodies(api, "PATCH") == []


def test_update_patches_and_diff_sorts_changes_from_replacements(api, vcsim, provider):
    created = provider.create(props(api, vcsim))
    same_in_other_order = props(
        api,
        vcsim,
        vm_classes=["best-effort-medium", "best-effort-xlarge"],
        storage_specs=[{"policy": R1}, {"policy": R5, "limit": 512000.0}],
    )
    assert provider.diff("dask", created.outs, same_in_other_order).changes is False
    assert provider.diff("dask", created.outs, props(api, vcsim, cluster="domain-c99")).replaces == ["cluster"]
    assert provider.diff("dask", created.outs, props(api, vcsim, namespace="dask2")).replaces == ["namespace"]

    pending = props(api, vcsim, storage_specs=[{"policy": Unknown()}])  # preview: policy id not known yet
    assert provider.diff("dask", created.outs, pending).changes is True
    assert provider.check({}, pending).failures == []

    news = props(api, vcsim, storage_specs=[{"policy": R5, "limit": 1024000}], vm_classes=["best-effort-2xlarge"])
    diff = provider.diff("dask", created.outs, news)
    assert diff.changes is True and diff.replaces == []
    updated = provider.update("dask", created.outs, news)

    assert updated.outs["config_status"] == "RUNNING"
    info = api.namespaces["dask"]
    assert info["storage_specs"] == [{"policy": R5, "limit": 1024000}]
    assert info["vm_service_spec"]["vm_classes"] == ["best-effort-2xlarge"]

    patches = len(bodies(api, "PATCH"))
    reconnected = provider.update("dask", updated.outs, {**news, "insecure": True, "ca_pem": None})
    assert reconnected.outs["insecure"] is True and len(bodies(api, "PATCH")) == patches  # no vCenter call


def test_read_reports_the_server_side_and_notices_deletion(api, vcsim, provider):
    created = provider.create(props(api, vcsim))
    api.namespaces["dask"]["description"] = "edited in the vSphere Client"
    assert provider.read("dask", created.outs).outs["description"] == "edited in the vSphere Client"
    del api.namespaces["dask"]
    assert provider.read("dask", created.outs).id == ""


def test_delete_waits_until_the_namespace_is_gone(api, vcsim, provider):
    created = provider.create(props(api, vcsim))
    provider.delete("dask", created.outs)
    assert "dask" not in api.namespaces
    provider.delete("dask", created.outs)  # already gone: no error


def test_server_errors_name_the_call_and_the_message_but_not_the_password(api, vcsim, provider):
    with pytest.raises(VCenterError) as info:
        provider.create(props(api, vcsim, storage_specs=[{"policy": "no-such-policy"}]))
    message = str(info.value)
    assert f"POST https://127.0.0.1:{api.port}/api/vcenter/namespaces/instances -> HTTP 400 INVALID_ARGUMENT" in message
    assert "Storage policy no-such-policy does not exist." in message
    assert api.password not in message

    with pytest.raises(VCenterError, match="refused") as refused:
        provider.create(props(api, vcsim, password=api.password + "x"))
    assert api.password not in str(refused.value)


def test_the_fake_rejects_what_vcenter_rejects(api, vcsim):
    conn_props = props(api, vcsim)
    from components.vsphere.providers.session import VCenterConnection

    conn = VCenterConnection.from_props(conn_props)
    url = f"{conn.base_url}/api/vcenter/namespaces/instances"
    plain = requests.post(url, json={"cluster": CLUSTER, "namespace": "x"}, verify=vcsim.cert_file, timeout=30)
    assert plain.status_code == 401
    with rest_api(conn) as http:
        unknown = http.post(url, json={"cluster": CLUSTER, "namespace": "x", "storage_policies": []})
        missing = http.post(url, json={"namespace": "x"})
        nested = http.post(url, json={"cluster": CLUSTER, "namespace": "x", "storage_specs": [{"id": R5}]})
    assert unknown.status_code == missing.status_code == nested.status_code == 400
    assert "Unexpected field 'storage_policies'" in unknown.json()["messages"][0]["default_message"]
    assert "Missing required field 'cluster'" in missing.json()["messages"][0]["default_message"]


def test_spec_validation_names_the_setting():
    with pytest.raises(ValueError, match="namespace: 'Dask_NS'"):
        build_spec({"namespace": "Dask_NS", "cluster": CLUSTER})
    with pytest.raises(ValueError, match=r"access_list\[0\].role: 'ADMIN'"):
        build_spec(
            {
                "namespace": "d",
                "cluster": CLUSTER,
                "access_list": [{"subject_type": "USER", "subject": "a", "domain": "b", "role": "ADMIN"}],
            }
        )
    with pytest.raises(ValueError, match=r"storage_specs\[0\].limit"):
        build_spec({"namespace": "d", "cluster": CLUSTER, "storage_specs": [{"policy": R5, "limit": -1}]})


def test_a_vcenter_without_the_api_session_endpoint_is_refused_naming_the_version(vcsim, monkeypatch):
    """vcsim 0.24.2 serves only the old ``/rest`` session, like a vCenter before 7.0 U2: the
    providers' ``/api`` calls would fail there, so the login says what is needed (item 12)."""
    import certifi

    # The environment's CA bundle must not override the per-connection CA (a TLS error would hide this).
    monkeypatch.setenv("REQUESTS_CA_BUNDLE", certifi.where())
    with pytest.raises(VCenterError, match=r"does not serve POST /api/session \(HTTP 404\): the program needs"
                                           r" vCenter 7.0 U2 or later"):
        rest_session(vcsim.connection())


ALICE = {"subject_type": "USER", "subject": "alice", "domain": "corp.example", "role": "OWNER"}
DEVS = {"subject_type": "GROUP", "subject": "devs", "domain": "vsphere.local", "role": "EDIT"}


def test_adopting_keeps_the_namespaces_own_owner_policies_and_classes(api, vcsim, provider):
    """UpdateSpec: an unset field is not modified and a list replaces the server's, so
    the PATCH carries the server's entries plus the program's (item 9)."""
    api.seed("dask", CLUSTER, access_list=[ALICE], storage_specs=[{"policy": "pbm-gold", "limit": 100}],
             vm_service_spec={"vm_classes": ["guaranteed-small"], "content_libraries": ["vm-images"]})
    api.known_policies.add("pbm-gold")

    created = provider.create(props(api, vcsim))

    info = api.namespaces["dask"]
    assert ALICE in info["access_list"] and DEVS in info["access_list"]
    assert {"policy": "pbm-gold", "limit": 100} in info["storage_specs"]
    assert {"policy": R5, "limit": 512000} in info["storage_specs"] and {"policy": R1} in info["storage_specs"]
    assert sorted(info["vm_service_spec"]["vm_classes"]) == [
        "best-effort-medium", "best-effort-xlarge", "guaranteed-small"]
    assert info["vm_service_spec"]["content_libraries"] == ["vm-images", "lib-1"]
    # What the program owns is what it reports; a refresh does not take the owner's entries in.
    assert created.outs["access_list"] == [DEVS]
    refreshed = provider.read("dask", created.outs).outs
    assert refreshed["access_list"] == [DEVS] and refreshed["vm_classes"] == ["best-effort-medium",
                                                                              "best-effort-xlarge"]

    # Dropping one of the program's classes and its group removes those, nothing else.
    news = props(api, vcsim, access_list=[], vm_classes=["best-effort-medium"])
    provider.update("dask", refreshed, news)
    info = api.namespaces["dask"]
    assert info["access_list"] == [ALICE]
    assert sorted(info["vm_service_spec"]["vm_classes"]) == ["best-effort-medium", "guaranteed-small"]
    assert {"policy": "pbm-gold", "limit": 100} in info["storage_specs"]


def test_a_patch_carries_only_fields_that_change_something(api, vcsim, provider):
    api.seed("dask", CLUSTER, access_list=[ALICE])
    provider.create(props(api, vcsim, access_list=[], vm_classes=[], content_libraries=[]))
    [patch] = bodies(api, "PATCH")
    assert "access_list" not in patch and "vm_service_spec" not in patch  # unset: not modified
    assert api.namespaces["dask"]["access_list"] == [ALICE]


def test_a_namespace_that_goes_to_error_fails_with_the_servers_message(api, vcsim, provider):
    api.fail_config["dask"] = "Storage policy aa6d5a82 is not compatible with the Supervisor's datastores."
    with pytest.raises(VCenterError) as failed:
        provider.create(props(api, vcsim))
    assert ("namespace 'dask' is ERROR: Storage policy aa6d5a82 is not compatible with the Supervisor's"
            " datastores." in str(failed.value))
    assert api.password not in str(failed.value)

    del api.fail_config["dask"]
    api.seed("dask", CLUSTER)
    created = provider.create(props(api, vcsim))  # adopts and patches it to RUNNING
    api.fail_config["dask"] = "VM class best-effort-2xlarge is not available on the Supervisor."
    with pytest.raises(VCenterError, match="namespace 'dask' is ERROR: VM class best-effort-2xlarge is not available"):
        provider.update("dask", created.outs, props(api, vcsim, vm_classes=["best-effort-2xlarge"]))


def test_the_fake_refuses_namespace_names_vcenter_refuses(api, vcsim):
    from components.vsphere.providers.session import VCenterConnection

    conn = VCenterConnection.from_props(props(api, vcsim))
    with rest_api(conn) as http:
        for bad in ("Dask_NS", "-dask", "d" * 64):
            resp = http.post(f"{conn.base_url}/api/vcenter/namespaces/instances",
                             json={"cluster": CLUSTER, "namespace": bad})
            assert resp.status_code == 400 and resp.json()["error_type"] == "INVALID_ARGUMENT", bad
            assert "must be a DNS label" in resp.json()["messages"][0]["default_message"]
    assert api.namespaces == {}
