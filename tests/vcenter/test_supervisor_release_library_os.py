"""The vSphere 8/9 library check per OS, against the local fake of vCenter's REST API (with
vcsim's certificate, as ``test_supervisor_release_library.py``).

GPU pools ask for Ubuntu (``components.cluster.manifests.UBUNTU_ANNOTATION``), so the
Supervisor's Kubernetes-service library must hold an item whose name carries both the
release and ``ubuntu``: VKr items look like ``ob-22757567-ubuntu-2204-amd64-vmi-k8s-v1.32.3---
vmware.1-fips-vkr.2`` and ``...-photon-5-amd64-vmi-k8s-...`` (build numbers made up). A
library with only the Photon image passed before the check looked at the OS."""
from __future__ import annotations

import pytest

from .fakes import fake_namespace_api
from .release_library import (  # noqa: F401 - provider: a fixture
    CLUSTER,
    SUPERVISOR,
    TOPOLOGY,
    VKR,
    props,
    provider,
)

pytestmark = pytest.mark.vcsim

PHOTON = f"ob-22757567-photon-5-amd64-vmi-k8s-{VKR}"
UBUNTU = f"ob-22757567-ubuntu-2204-amd64-vmi-k8s-{VKR}"
OLD_UBUNTU = "ob-24425287-ubuntu-2204-amd64-vmi-k8s-v1.31.4---vmware.1-fips-vkr.3"


@pytest.fixture
def api(vcsim):
    libraries = {"lib-photon": [PHOTON, OLD_UBUNTU], "lib-both": [PHOTON, UBUNTU]}
    with fake_namespace_api(vcsim, "sv-", library_items=libraries, supervisor_libraries={CLUSTER: "lib-photon"},
                            supervisor_topology=TOPOLOGY) as fake:
        yield fake


def test_a_library_with_only_the_photon_image_of_the_release_fails_for_gpu_pools(api, vcsim, provider):
    [failure] = provider.check({}, props(api, vcsim, os_names=["ubuntu"])).failures
    assert failure.property == "tkr"
    assert (f"the Supervisor's default_kubernetes_service_content_library (supervisor {SUPERVISOR}) (lib-photon)"
            f" holds no ubuntu image of TKR {VKR}, which nodePools ask for") in failure.reason
    assert f"of {VKR} it holds: {PHOTON}" in failure.reason  # the other release's Ubuntu image does not count
    assert provider.check({}, props(api, vcsim)).failures == []  # no OS asked: the release alone (vSphere 7 rule)


def test_the_ubuntu_image_of_the_release_passes(api, vcsim, provider):
    api.supervisor_libraries[CLUSTER] = "lib-both"
    assert provider.check({}, props(api, vcsim, os_names=["ubuntu"])).failures == []
    assert provider.create(props(api, vcsim, os_names=["ubuntu"])).outs["os_names"] == ["ubuntu"]

