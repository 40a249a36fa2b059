"""The 1.20 stand-in validates custom resources as a real 1.20 does: ``""`` is a string.

Go >= 1.16's shared zero value made the CRD type validator of the vendored kube-openapi see
``""`` as null (``must be of type string: "null"``), which a real 1.20 never said (upstream
kubernetes#99804, fixed in kube-openapi#230; the build script applies that fix). The GPU
operator's ClusterPolicy renders ``""`` in many string fields, against its own chart's CRD.
"""
from __future__ import annotations

import copy

import pytest

from tests.kube.crds import install_crd
from tests.kube.rest import KubeApiError, apply_manifest
from tests.render.program import program_releases

pytestmark = pytest.mark.apiserver


@pytest.fixture(scope="module")
def cluster_policy_crd(paper_apiserver, helm):
    release = program_releases("reference")["gpu-operator"]
    rendered = release.render()
    install_crd(paper_apiserver.api_client, rendered.named("CustomResourceDefinition", "clusterpolicies.nvidia.com"))
    return rendered.named("ClusterPolicy", "cluster-policy")


def policy(rendered: dict, name: str, **driver) -> dict:
    """The rendered ClusterPolicy (it has every required section) with ``driver`` fields set."""
    obj = copy.deepcopy(rendered)
    obj["metadata"] = {"name": name}
    obj["spec"]["driver"].update(driver)
    return obj


def test_empty_strings_in_string_fields_are_accepted(paper_apiserver, cluster_policy_crd):
    obj = policy(cluster_policy_crd, "empty-strings", repoConfig={"configMapName": ""}, certConfig={"name": ""},
                 licensingConfig={"configMapName": "", "nlsEnabled": False}, virtualTopology={"config": ""})
    answer = apply_manifest(paper_apiserver.api_client, obj, dry_run=True)
    assert answer["spec"]["driver"]["repoConfig"] == {"configMapName": ""}
    assert answer["spec"]["driver"]["licensingConfig"]["configMapName"] == ""


def test_a_number_in_a_string_field_is_rejected(paper_apiserver, cluster_policy_crd):
    obj = policy(cluster_policy_crd, "wrong-type", licensingConfig={"configMapName": 5})
    with pytest.raises(KubeApiError) as refused:
        apply_manifest(paper_apiserver.api_client, obj, dry_run=True)
    assert refused.value.status == 422
    assert "spec.driver.licensingConfig.configMapName" in refused.value.message
    assert "must be of type string" in refused.value.message and '"integer"' in refused.value.message
