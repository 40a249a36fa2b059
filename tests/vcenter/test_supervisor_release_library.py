"""The vSphere 8/9 release check against the local FAKE of vCenter's REST API.

A vSphere 8/9 Supervisor is addressed by its id (``supervisorId``). Its cluster comes from
``GET /api/vcenter/namespace-management/supervisors/{supervisor}/topology`` (vSphere API
8.0.0.1 ``Topology.get``: "Use the vSphere Cluster IDs obtained from Topology.get to call
the APIs that requires a vSphere Cluster ID instead of a Supervisor"), and its
Kubernetes-service library from that cluster's ``Clusters.Info``. vcsim serves neither
(see ``fakes.py``)."""

from __future__ import annotations

import pytest

from components.vsphere.providers.supervisor_library import TkrLibraryError

from .fakes import fake_namespace_api
from .release_library import (  # noqa: F401 - provider: a fixture
    CLUSTER,
    FEED,
    SUPERVISOR,
    TOPOLOGY,
    VKR,
    props,
    provider,
)

pytestmark = pytest.mark.vcsim


@pytest.fixture
def api(vcsim):
    libraries = {"lib-vks": list(FEED), "lib-old": FEED[1:], "lib-ours": list(FEED)}
    with fake_namespace_api(vcsim, "sv-", library_items=libraries, supervisor_libraries={CLUSTER: "lib-vks"},
                            supervisor_topology=TOPOLOGY) as fake:
        yield fake


def paths(api) -> list[str]:
    return [f"{method} {path}" for method, path, *_ in api.requests if path != "/api/session"]


def test_preview_finds_the_supervisors_cluster_then_its_library_and_changes_nothing(api, vcsim, provider):
    assert provider.check({}, props(api, vcsim)).failures == []
    assert paths(api)[:2] == [f"GET /api/vcenter/namespace-management/supervisors/{SUPERVISOR}/topology",
                              f"GET /api/vcenter/namespace-management/clusters/{CLUSTER}"]
    assert [p for p in paths(api) if not p.startswith("GET")] == []

    api.supervisor_libraries[CLUSTER] = "lib-old"
    [failure] = provider.check({}, props(api, vcsim)).failures
    assert failure.property == "tkr"
    assert (f"the Supervisor's default_kubernetes_service_content_library (supervisor {SUPERVISOR}) (lib-old)"
            f" does not hold TKR {VKR}; it holds: {FEED[1]}") in failure.reason


def test_an_unknown_supervisor_id_fails_the_preview_naming_supervisor_id(api, vcsim, provider):
    [failure] = provider.check({}, props(api, vcsim, supervisor="domain-c8")).failures
    assert failure.property == "supervisor"
    assert "supervisorId 'domain-c8' is not a Supervisor on this vCenter" in failure.reason
    assert "HTTP 404" in failure.reason
    [missing] = provider.check({}, props(api, vcsim, supervisor="")).failures
    assert missing.property == "supervisor"


def test_up_records_the_supervisors_cluster_and_library(api, vcsim, provider):
    created = provider.create(props(api, vcsim))
    assert created.id == f"{SUPERVISOR}:tkr-library"
    outs = created.outs
    assert (outs["supervisor"], outs["cluster"], outs["supervisor_library"]) == (SUPERVISOR, CLUSTER, "lib-vks")
    assert provider.diff(created.id, outs, props(api, vcsim, supervisor="other")).replaces == ["supervisor"]
    api.library_items["lib-vks"] = []
    with pytest.raises(TkrLibraryError, match=f"does not hold TKR {VKR}"):
        provider.create(props(api, vcsim))


def test_set_library_points_the_supervisors_cluster_at_an_existing_library_and_delete_restores(api, vcsim, provider):
    created = provider.create(props(api, vcsim, library_id="lib-ours", set_library=True))
    assert api.supervisor_libraries[CLUSTER] == "lib-ours" and created.outs["previous_library"] == "lib-vks"
    [patch] = [p for p in paths(api) if p.startswith("PATCH")]
    assert patch == f"PATCH /api/vcenter/namespace-management/clusters/{CLUSTER}"
    provider.delete(created.id, created.outs)
    assert api.supervisor_libraries[CLUSTER] == "lib-vks"


def test_a_supervisor_without_clusters_in_its_topology_is_named(api, vcsim, provider):
    api.supervisor_topology[SUPERVISOR] = []
    with pytest.raises(TkrLibraryError, match=f"Supervisor '{SUPERVISOR}' reports no vSphere cluster"):
        provider.create(props(api, vcsim))
