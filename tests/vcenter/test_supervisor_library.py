"""The Supervisor's TKR library (item 5) against the local FAKE of vCenter's REST API.

vcsim 0.24.2 serves no ``/api/vcenter/namespace-management/clusters/{cluster}`` and no
``/api/content`` (see ``fakes.py``). Behaviour from the vSphere Automation API 7.0:
``Clusters.Info.default_kubernetes_service_content_library`` (the library holding the
VM images for the Kubernetes service), ``Clusters.UpdateSpec`` (unset fields unchanged),
``content.library.Item.list(library_id)`` / ``Item.get``."""

from __future__ import annotations

import pytest

from components.vsphere.providers.supervisor_library import SupervisorTkrLibraryProvider, TkrLibraryError

from .fakes import fake_namespace_api, provider_props

pytestmark = pytest.mark.vcsim

CLUSTER = "domain-c8"
TKR = "v1.20.8---vmware.1-tkg.2"
FEED = ["ob-18186591-photon-3-k8s-v1.20.8---vmware.1-tkg.2", "ob-17861429-photon-3-k8s-v1.20.7---vmware.1-tkg.1"]


@pytest.fixture
def api(vcsim):
    libraries = {"lib-tkr": list(FEED), "lib-old": FEED[1:], "lib-ours": list(FEED)}
    with fake_namespace_api(vcsim, "sv-", library_items=libraries, supervisor_libraries={CLUSTER: "lib-tkr"}) as fake:
        yield fake


def props(api, vcsim, **overrides):
    fields = {"cluster": CLUSTER, "tkr": TKR, "library_id": "lib-ours", "set_library": False}
    return provider_props(api, vcsim, fields, overrides)


def test_check_at_preview_reads_the_supervisors_library_and_changes_nothing(api, vcsim):
    provider = SupervisorTkrLibraryProvider(timeout_s=1, poll_s=0.01)
    assert provider.check({}, props(api, vcsim)).failures == []
    api.supervisor_libraries[CLUSTER] = "lib-old"
    [failure] = provider.check({}, props(api, vcsim)).failures
    assert failure.property == "tkr"
    assert (f"the Supervisor's default_kubernetes_service_content_library (cluster {CLUSTER}) (lib-old) does not"
            f" hold TKR {TKR}; it holds: ob-17861429-photon-3-k8s-v1.20.7---vmware.1-tkg.1") in failure.reason
    assert [m for m, *_ in api.requests if m not in ("GET", "POST", "DELETE")] == []  # no PATCH
    assert api.supervisor_libraries[CLUSTER] == "lib-old"


def test_set_library_points_the_supervisor_at_ours_and_delete_restores(api, vcsim):
    provider = SupervisorTkrLibraryProvider(timeout_s=1, poll_s=0.01)
    created = provider.create(props(api, vcsim, set_library=True))
    assert api.supervisor_libraries[CLUSTER] == "lib-ours" == created.outs["supervisor_library"]
    assert created.outs["previous_library"] == "lib-tkr"
    provider.delete(created.id, created.outs)
    assert api.supervisor_libraries[CLUSTER] == "lib-tkr"


def test_a_library_without_the_tkr_fails_up_naming_it(api, vcsim):
    provider = SupervisorTkrLibraryProvider(timeout_s=0.05, poll_s=0.01)
    api.library_items["lib-ours"] = []
    with pytest.raises(TkrLibraryError, match=f"contentLibraryName's library \\(lib-ours\\) does not hold TKR {TKR};"
                                              " it holds: no TKR"):
        provider.create(props(api, vcsim, set_library=True))
    api.supervisor_libraries[CLUSTER] = ""
    [failure] = provider.check({}, props(api, vcsim)).failures
    assert "the Supervisor has no TKR content library" in failure.reason
