"""The Supervisor and VKr the release-library tests share, the provider under test as a fixture,
and its properties against the local fake of vCenter's REST API."""
from __future__ import annotations

import pytest

from components.vsphere.providers.supervisor_library import SupervisorReleaseLibraryProvider

from .fakes import provider_props

SUPERVISOR = "5c4b6e1e-0b1d-4c3a-9a53-2b8a6f0e9d11"
CLUSTER = "domain-c8"
VKR = "v1.32.3---vmware.1-fips-vkr.2"
# Item names end with the release name (the rule SupervisorTkrLibrary checks on vSphere 7);
# the build prefixes are made up.
FEED = ["ob-24718405-photon-5-amd64-v1.32.3---vmware.1-fips-vkr.2",
        "ob-24425287-ubuntu-2204-amd64-v1.31.4---vmware.1-fips-vkr.3"]
TOPOLOGY = {SUPERVISOR: [{"zone": "zone-a", "clusters": [CLUSTER]}]}


@pytest.fixture
def provider():
    return SupervisorReleaseLibraryProvider(timeout_s=1, poll_s=0.01)


def props(api, vcsim, **overrides):
    fields = {"supervisor": SUPERVISOR, "tkr": VKR, "library_id": "", "set_library": False}
    return provider_props(api, vcsim, fields, overrides)
