"""The dynamic providers as ``pulumi up`` and ``pulumi preview`` run them (item 14).

The program runs under Pulumi's mocks (``tests/program/harness.py``); each dynamic
resource it registers carries its serialized provider in ``__provider``. Those
properties are sent, as the engine sends them, to the SDK's own dynamic-provider host
(``python -m pulumi.dynamic``) in a fresh interpreter (``tests/program/provider_host.py``),
which deserializes the provider and runs it against the stand-ins: vcsim for SPBM, the
local fakes for the namespace API and the vSAN file service (``fakes.py``).

Only what the engine would have resolved differently is replaced: the connection (the
stand-ins' address and login, instead of the stack's vCenter) and ids that came from
mocked invokes. ``pulumi preview`` calls only ``Check`` and ``Diff``; values that other
resources produce are ``rpc.UNKNOWN`` in a first preview. Preview must change nothing.
"""

from __future__ import annotations

import uuid

import pytest
from pulumi.runtime import rpc

from components.vsphere.providers.session import vcenter
from components.vsphere.providers.spbm import find_policies, profile_manager, read_policy
from tests.program.graph import run_program
from tests.program.provider_host import ProviderHost

from .fakes import FakeVsanFileService, fake_namespace_api, provider_props

pytestmark = pytest.mark.vcsim

TKR = "v1.20.8---vmware.1-tkg.2"
MUTATING = ("POST", "PATCH", "PUT", "DELETE")


@pytest.fixture(scope="module")
def program():
    graph = run_program("reference")
    assert graph.error is None, graph.traceback
    return graph


@pytest.fixture(scope="module")
def host():
    with ProviderHost() as running:
        yield running


@pytest.fixture(scope="module")
def cluster_id(vcsim):
    from pyVmomi import vim

    with vcenter(vcsim.connection()) as si:
        view = si.content.viewManager.CreateContainerView(si.content.rootFolder, [vim.ClusterComputeResource], True)
        return next(c._moId for c in view.view if c.name == "DC0_C0")


def registered(program, kind: str):
    """(urn, inputs) of each resource of ``kind``: the inputs the engine would send."""
    found = [(r.urn, dict(r.inputs)) for r in program.of_type(f"dynamic/vsphere:{kind}")]
    assert found and all(inputs.get("__provider") for _, inputs in found), kind
    return found


def rest_changes(api) -> list[tuple[str, str]]:
    return [(m, p) for m, p, _, _ in api.requests if m in MUTATING and p != "/api/session"]


def test_storage_policies_check_diff_create_update_delete_through_the_sdk_host(vcsim, program, host):
    with vcenter(vcsim.connection(), "test") as si:
        pm = profile_manager(si)
        for urn, inputs in registered(program, "VsanStoragePolicy"):
            name = f"{inputs['policy_name']}-{uuid.uuid4().hex[:6]}"
            news = {**inputs, **vcsim.props(), "policy_name": name}

            # pulumi preview of a new stack: Check only; nothing exists afterwards.
            checked, failures = host.check(urn, {}, news)
            assert failures == [] and checked["__provider"] == inputs["__provider"]
            assert find_policies(pm, name) == []

            # pulumi up: Check, then Create in the host process.
            policy_id, outs = host.create(urn, checked)
            assert read_policy(pm, policy_id).rules == inputs["rules"]

            # preview of an edit: Check + Diff say "update", the server is unchanged.
            edited = {**news, "description": "edited"}
            host.check(urn, outs, edited)
            diff = host.diff(policy_id, urn, outs, edited)
            assert diff.changes and diff.replaces == []
            assert read_policy(pm, policy_id).description == inputs["description"]
            renamed = host.diff(policy_id, urn, outs, {**news, "policy_name": name + "-b"})
            assert renamed.replaces == ["policy_name"]

            outs = host.update(policy_id, urn, outs, edited)
            assert read_policy(pm, outs["policy_id"]).description == "edited"
            host.delete(policy_id, urn, outs)
            assert find_policies(pm, name) == []


@pytest.fixture
def api(vcsim):
    with fake_namespace_api(vcsim, "ns-", supervisor_libraries={"domain-c8": "lib-tkr"},
                            library_items={"lib-tkr": [f"ob-18186591-photon-3-k8s-{TKR}"],
                                           "vsphere-library-library-id": []}) as fake:
        yield fake


def rest_props(api, vcsim) -> dict:
    return provider_props(api, vcsim, {}, {})


def test_the_namespace_lifecycle_through_the_sdk_host(vcsim, program, host, api):
    [(urn, inputs)] = registered(program, "SupervisorNamespace")
    news = {**inputs, **rest_props(api, vcsim)}

    # First preview: the storage policies do not exist yet, so their ids are unknown.
    pending = {**news, "storage_specs": [{**s, "policy": rpc.UNKNOWN} for s in news["storage_specs"]]}
    _, failures = host.check(urn, {}, pending)
    assert failures == [] and api.requests == [] and api.namespaces == {}

    checked, _ = host.check(urn, {}, news)
    ns_id, outs = host.create(urn, checked)
    assert (ns_id, api.namespaces["dask"]["config_status"]) == ("dask", "RUNNING")
    assert api.namespaces["dask"]["vm_service_spec"]["content_libraries"] == []  # item 5

    # Preview of a change: namespaceName "replaces the cluster" (Pulumi.yaml), and the
    # namespace itself is replaced; Check + Diff touch nothing on vCenter.
    before = len(api.requests)
    renamed = {**news, "namespace": "dask-2"}
    host.check(urn, outs, renamed)
    diff = host.diff(ns_id, urn, outs, renamed)
    assert diff.replaces == ["namespace"] and diff.delete_before_replace
    fewer = {**news, "vm_classes": news["vm_classes"][:2]}
    assert host.diff(ns_id, urn, outs, fewer).replaces == []
    assert api.requests[before:] == [] and set(api.namespaces) == {"dask"}

    outs = host.update(ns_id, urn, outs, fewer)
    assert sorted(api.namespaces["dask"]["vm_service_spec"]["vm_classes"]) == sorted(news["vm_classes"][:2])
    host.delete(ns_id, urn, outs)
    assert api.namespaces == {}


def test_the_supervisor_tkr_check_through_the_sdk_host(vcsim, program, host, api):
    [(urn, inputs)] = registered(program, "SupervisorTkrLibrary")
    news = {**inputs, **rest_props(api, vcsim)}
    assert news["tkr"] == TKR

    # First preview: the library is created in the same run, its id unknown: no call.
    _, failures = host.check(urn, {}, {**news, "library_id": rpc.UNKNOWN})
    assert failures == [] and api.requests == []
    # Known ids (a later preview): the Supervisor's library is read, nothing is changed.
    _, failures = host.check(urn, {}, news)
    assert failures == [] and rest_changes(api) == []
    api.library_items["lib-tkr"] = []
    _, failures = host.check(urn, {}, news)
    assert failures and failures[0][0] == "tkr" and f"does not hold TKR {TKR}" in failures[0][1]
    api.library_items["lib-tkr"] = [f"ob-18186591-photon-3-k8s-{TKR}"]

    id_, outs = host.create(urn, news)
    assert outs["supervisor_library"] == "lib-tkr" and rest_changes(api) == []  # set_library is false
    assert host.diff(id_, urn, outs, {**news, "set_library": True}).changes
    host.delete(id_, urn, outs)
    assert api.supervisor_libraries == {"domain-c8": "lib-tkr"}


def test_the_file_share_lifecycle_through_the_sdk_host(vcsim, program, host, cluster_id):
    [(urn, inputs)] = registered(program, "VsanFileShare")
    with FakeVsanFileService(vcsim.cert_file, vcsim.key_file, vcsim_port=vcsim.port) as vsan:
        # The cluster id comes from an invoke (mocked as domain-c8): the engine would resolve vcsim's.
        news = {**inputs, **vcsim.props(port=vsan.port), "cluster": cluster_id}

        pending = {**news, "policy_id": rpc.UNKNOWN}
        _, failures = host.check(urn, {}, pending)
        assert failures == [] and vsan.calls == [] and vsan.shares == {}

        checked, _ = host.check(urn, {}, news)
        share_id, outs = host.create(urn, checked)
        assert outs["nfs_server"] == "fs1.vsan.example" and outs["nfs_path"] == "/vsanfs/ml-share"
        assert vsan.shares[share_id].domain == "fs.vsan.example"

        calls = len(vsan.calls)
        bigger = {**news, "quota_gib": 4096}
        host.check(urn, outs, bigger)
        assert host.diff(share_id, urn, outs, bigger).replaces == []
        renamed = host.diff(share_id, urn, outs, {**news, "share_name": "ml-share-2"})
        assert renamed.replaces == ["share_name"] and renamed.delete_before_replace
        assert len(vsan.calls) == calls and vsan.shares[share_id].quota == "2048G"  # preview changed nothing

        outs = host.update(share_id, urn, outs, bigger)
        assert vsan.shares[share_id].quota == "4096G"
        host.delete(share_id, urn, outs)
        assert vsan.shares == {}
