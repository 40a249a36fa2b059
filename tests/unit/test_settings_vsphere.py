"""Settings of the vSphere layer that a real vCenter 7.0 U3 / vSphere 8 would refuse late:
each fails at preview naming its key (docs/reliability.md, Settings, SV1-SV11)."""
from __future__ import annotations

import pytest

from components.settings import DictSource, SettingsError, load
from tests.unit.support import CREATE, PROVIDER
from tests.unit.support import ONE_HOST_SITE as SITE

VSPHERE8 = {"vsphereVersion": 8, "supervisorId": "domain-c8", "clusterApi": "run.tanzu.vmware.com/v1alpha3"}


def load_with(**overrides):
    return load(DictSource({**SITE, **overrides}, PROVIDER))


def problems_of(**overrides) -> tuple[list[str], str]:
    with pytest.raises(SettingsError) as info:
        load_with(**overrides)
    return [str(p) for p in info.value.problems], str(info.value)


@pytest.mark.parametrize(
    "overrides, key, words",
    [
        # item 3: v1alpha3 with a TKR older than 1.21 (vSphere 8: COMPATIBLE False)
        (VSPHERE8, "tkr", "is not compatible with clusterApi run.tanzu.vmware.com/v1alpha3"),
        # item 4: searchDomains for supervisorMode=create (resource_vsphere_supervisor.go: exactly one, non-empty)
        ({"supervisorMode": "create", "supervisorCreateSpec": CREATE}, "supervisorCreateSpec",
         "needs searchDomains"),
        ({"supervisorMode": "create", "supervisorCreateSpec": [*CREATE, "searchDomains="]},
         "supervisorCreateSpec", "searchDomains must be exactly one DNS domain"),
        ({"supervisorMode": "create", "supervisorCreateSpec": [*CREATE, "searchDomains=a.example, b.example"]},
         "supervisorCreateSpec", "searchDomains must be exactly one DNS domain"),
        ({"supervisorMode": "create", "supervisorCreateSpec": [*CREATE, "searchDomains=corp_example!"]},
         "supervisorCreateSpec", "is not a DNS domain name"),
        # item 8: vim.vsan.FileShareConfig.name rules
        ({"fileShareName": "ml_share"}, "fileShareName", "at most 80 letters, digits and '-'"),
        ({"fileShareName": "ml--share"}, "fileShareName", "each '-' between letters or digits"),
        ({"fileShareName": "-ml-share"}, "fileShareName", "each '-' between letters or digits"),
        ({"fileShareName": "ml-share-"}, "fileShareName", "each '-' between letters or digits"),
        ({"fileShareName": "m" * 81}, "fileShareName", "at most 80"),
        ({"fileShareName": "ml.share"}, "fileShareName", "at most 80 letters, digits and '-'"),
        # item 10, 11, 5: the new settings
        ({"fileShareNfsAddress": "dns"}, "fileShareNfsAddress", "must be one of fqdn, ip"),
        ({"supervisorCaPem": "not a certificate"}, "supervisorCaPem", "must be PEM text"),
        ({"supervisorSetTkrLibrary": True, "supervisorMode": "create",
          "supervisorCreateSpec": [*CREATE, "searchDomains=corp.example.com"]},
         "supervisorSetTkrLibrary", "applies to supervisorMode=existing"),
    ],
)
def test_bad_vsphere_setting_fails_at_preview_naming_the_key(overrides, key, words):
    problems, message = problems_of(**overrides)
    matching = [p for p in problems if p.startswith(f"{key}:")]
    assert any(words in p for p in matching), problems
    assert f"dask-tkg:{key}" in message


def test_the_same_settings_done_right_load():
    s = load_with(**{**VSPHERE8, "tkr": "v1.21.6---vmware.1-tkg.1"})
    assert s.cluster.kubernetes_version == (1, 21, 6)
    s = load_with(supervisorMode="create", supervisorCreateSpec=[*CREATE, "searchDomains=corp.example.com"])
    assert s.supervisor.create_spec["searchDomains"] == "corp.example.com"
    s = load_with(fileShareName="ML-share-2", fileShareNfsAddress="ip", fileShareDomain="fs.corp.example.com")
    assert (s.file_share.name, s.file_share.nfs_address, s.file_share.domain) == (
        "ML-share-2", "ip", "fs.corp.example.com")
    assert load_with(fileShareName="m" * 80).file_share.name == "m" * 80
    # v1alpha2 (vSphere 7U3) keeps the paper's 1.20 TKR
    assert load_with().cluster.tkr == "v1.20.8---vmware.1-tkg.2"


def test_the_docs_do_not_promise_a_supervisor_creation_validation_refuses():
    """Item 12: Pulumi.yaml said create used SupervisorV2 on vSphere 8, which validation refuses."""
    from components.settings.schema import project

    _, decls = project()
    docs = decls["supervisorMode"].description + decls["vsphereVersion"].description
    assert "SupervisorV2" not in docs and "vSphere 7 with NSX only" in docs
    problems, _ = problems_of(vsphereVersion=8, supervisorId="sv-1", supervisorMode="create")
    assert any(p.startswith("supervisorMode: create is supported on vSphere 7") for p in problems)
