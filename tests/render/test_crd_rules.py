"""CEL validation rules (``x-kubernetes-validations``) of a CRD the current stacks install, enforced
by the current stacks' 1.33 server and ignored by the paper's 1.20, which has no such field.

The GPU operator v26.7.0 chart (the dev stack's, rendered by the real Helm engine from the
program's values) ships the NVIDIADriver CRD with three rules (its ``crds/nvidia.com_nvidiadrivers.yaml``
at that tag): ``spec`` "default NVIDIADriver must not use nodeSelector" and ``driverType`` /
``usePrecompiled`` immutable (``self == oldSelf``). A platform engineer moving from the
ClusterPolicy's driver to per-pool NVIDIADrivers writes such objects; only the rule refuses them.

Cluster API's CRDs (v1.10.10, v1.11.11 in the mirror) carry no rule for the API server: the
``rule`` entries in the ClusterClass CRD are the schema of a ClusterClass variable's own
``x-kubernetes-validations`` (evaluated by Cluster API's webhook, which does not run here).
"""
from __future__ import annotations

import copy

import pytest

from tests.kube.crds import install_crd
from tests.kube.rest import KubeApiError, apply_manifest, delete_object, patch_object
from tests.render.program import program_releases

pytestmark = pytest.mark.apiserver

CRD_NAME = "nvidiadrivers.nvidia.com"
DEFAULT_WITH_SELECTOR = "default NVIDIADriver must not use nodeSelector"
DRIVER_TYPE_IMMUTABLE = "driverType is an immutable field"


@pytest.fixture(scope="module")
def nvidia_driver_crd(helm) -> dict:
    rendered = program_releases("dev")["gpu-operator"].render()
    return rendered.named("CustomResourceDefinition", CRD_NAME)


def driver(name: str, **spec) -> dict:
    """An NVIDIADriver for the vGPU guest driver (the required fields, then ``spec``)."""
    return {"apiVersion": "nvidia.com/v1alpha1", "kind": "NVIDIADriver", "metadata": {"name": name},
            "spec": {"default": True, "driverType": "vgpu", "image": "vgpu-guest-driver",
                     "repository": "registry.example/nvidia", "version": "580.159.03", **spec}}


def rules(crd: dict) -> list[str]:
    found: list[str] = []

    def walk(node):
        if isinstance(node, dict):
            for key, value in node.items():
                if key == "x-kubernetes-validations" and isinstance(value, list):
                    found.extend(rule["message"] for rule in value if isinstance(rule, dict) and "rule" in rule)
                walk(value)
        elif isinstance(node, list):
            for item in node:
                walk(item)

    walk(crd["spec"]["versions"])
    return found


def test_the_crd_carries_the_rules(nvidia_driver_crd):
    messages = rules(nvidia_driver_crd)
    assert DEFAULT_WITH_SELECTOR in messages
    assert any(m.startswith(DRIVER_TYPE_IMMUTABLE) for m in messages)


def test_the_current_server_refuses_a_default_driver_with_a_node_selector(kube_apiserver, nvidia_driver_crd):
    api = kube_apiserver.api_client
    install_crd(api, copy.deepcopy(nvidia_driver_crd))
    with pytest.raises(KubeApiError) as refused:
        apply_manifest(api, driver("default-with-selector", nodeSelector={"nvidia.com/vgpu.present": "true"}),
                       dry_run=True)
    assert refused.value.status == 422
    assert DEFAULT_WITH_SELECTOR in refused.value.message, refused.value.message
    assert apply_manifest(api, driver("default-everywhere"), dry_run=True)["spec"]["default"] is True


def test_the_current_server_refuses_a_change_of_driver_type(kube_apiserver, nvidia_driver_crd):
    api = kube_apiserver.api_client
    install_crd(api, copy.deepcopy(nvidia_driver_crd))
    apply_manifest(api, driver("type-fixed"), update_existing=True)
    try:
        with pytest.raises(KubeApiError) as refused:
            patch_object(api, "nvidia.com/v1alpha1", "NVIDIADriver", "type-fixed", {"spec": {"driverType": "gpu"}})
        assert refused.value.status == 422
        assert DRIVER_TYPE_IMMUTABLE in refused.value.message, refused.value.message
    finally:
        delete_object(api, "nvidia.com/v1alpha1", "NVIDIADriver", "type-fixed")


def test_the_paper_server_ignores_the_rules(paper_apiserver, nvidia_driver_crd):
    """What the old server hid: 1.20 drops ``x-kubernetes-validations`` from the CRD it stores and
    takes the object only the rule refuses."""
    api = paper_apiserver.api_client
    held = install_crd(api, copy.deepcopy(nvidia_driver_crd))
    assert rules(held) == []
    answer = apply_manifest(api, driver("default-with-selector", nodeSelector={"nvidia.com/vgpu.present": "true"}),
                            dry_run=True)
    assert answer["spec"]["nodeSelector"] == {"nvidia.com/vgpu.present": "true"}
